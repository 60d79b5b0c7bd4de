package alertsilence

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/alertmanager/api/v2/models"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/internal/testkit"
)

func silenceByID(t *testing.T, url, id string) *models.GettableSilence {
	t.Helper()
	for _, s := range testkit.AlertmanagerSilences(t, url) {
		if *s.ID == id {
			return s
		}
	}
	t.Fatalf("no silence %s in %s", id, url)
	return nil
}

// A real Alertmanager takes the silence, keeps its id when only its end
// moves, and expires it; one it does not know is expired already.
func TestClientAgainstAlertmanager(t *testing.T) {
	url := testkit.StartAlertmanager(t)
	c := &Client{}
	spec := &v1alpha1.NodeSilences{URL: url, Matchers: []v1alpha1.SilenceMatcher{`instance=~"{{node}}(:[0-9]+)?"`}}
	now := time.Now()
	s, err := Silence(spec, "worker-1", "worker", "", now, now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	id, err := c.Post(t.Context(), url, s)
	if err != nil {
		t.Fatal(err)
	}
	got := silenceByID(t, url, id)
	if *got.Status.State != "active" || len(got.Matchers) != 1 || matcherString(got.Matchers[0]) != `instance=~worker-1(:[0-9]+)?` || *got.CreatedBy != "ndp" {
		t.Errorf("created: %s, %v by %s", *got.Status.State, got.Matchers, *got.CreatedBy)
	}

	s, _ = Silence(spec, "worker-1", "worker", id, now, now.Add(2*time.Hour))
	extended, err := c.Post(t.Context(), url, s)
	if err != nil {
		t.Fatal(err)
	}
	if extended != id {
		t.Errorf("extension got id %s, want %s kept", extended, id)
	}
	if end := time.Time(*silenceByID(t, url, id).EndsAt); end.Sub(now.Add(2*time.Hour)).Abs() > time.Second {
		t.Errorf("extended to %s, want %s", end, now.Add(2*time.Hour))
	}

	if err := c.Expire(t.Context(), url, id); err != nil {
		t.Fatal(err)
	}
	if st := *silenceByID(t, url, id).Status.State; st != "expired" {
		t.Errorf("after Expire: %s", st)
	}
	if err := c.Expire(t.Context(), url, id); err != nil {
		t.Errorf("Expire of an expired silence: %v", err)
	}
	if err := c.Expire(t.Context(), url, "00000000-0000-0000-0000-000000000000"); err != nil {
		t.Errorf("Expire of an unknown silence: %v", err)
	}
	if n := len(testkit.AlertmanagerSilences(t, url)); n != 1 {
		t.Errorf("%d silences, want the one", n)
	}

	// Alertmanager refuses a silence whose every matcher matches "".
	bad := &v1alpha1.NodeSilences{URL: url, Matchers: []v1alpha1.SilenceMatcher{`node=~".*"`}}
	s, _ = Silence(bad, "worker-1", "worker", "", now, now.Add(time.Hour))
	if _, err := c.Post(t.Context(), url, s); err == nil || !strings.Contains(err.Error(), url+": 400 Bad Request") {
		t.Errorf("an empty-matching silence: %v", err)
	}
}

func TestClientUnreachable(t *testing.T) {
	url := fmt.Sprintf("http://127.0.0.1:%d", testkit.FreePort(t))
	c := &Client{Timeout: time.Second}
	s, _ := Silence(&v1alpha1.NodeSilences{Matchers: []v1alpha1.SilenceMatcher{`node="{{node}}"`}}, "w", "p", "", time.Now(), time.Now().Add(time.Hour))
	if _, err := c.Post(t.Context(), url, s); err == nil || err.Error() != url+": connection refused" {
		t.Errorf("Post: %v", err)
	}
	if err := c.Expire(t.Context(), url, "x"); err == nil || err.Error() != url+": connection refused" {
		t.Errorf("Expire: %v", err)
	}
}
