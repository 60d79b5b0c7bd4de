package alertsilence

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/alertmanager/api/v2/models"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
)

func matcherString(m *models.Matcher) string {
	op := "="
	switch {
	case *m.IsRegex && (m.IsEqual == nil || *m.IsEqual):
		op = "=~"
	case *m.IsRegex:
		op = "!~"
	case m.IsEqual != nil && !*m.IsEqual:
		op = "!="
	}
	return *m.Name + op + *m.Value
}

func TestMatchers(t *testing.T) {
	for _, c := range []struct {
		spec, node, want string // want "" with err: an error containing err
		err              string
	}{
		{`node="{{node}}"`, "worker-1.example", "node=worker-1.example", ""},
		{`instance=~"{{node}}(:[0-9]+)?"`, "worker-1.example", `instance=~worker-1\.example(:[0-9]+)?`, ""},
		{`alertname!="Watchdog"`, "w", "alertname!=Watchdog", ""},
		{`job!~"node-exporter|kubelet"`, "w", "job!~node-exporter|kubelet", ""},
		{` severity = "critical" `, "w", "severity=critical", ""},
		{`instance=~"{{node}}:(9100"`, "w", "", "missing closing )"},
		{`instance=~"{{node}}{3"`, "w", `instance=~w{3`, ""},
		{`no matcher`, "w", "", "matchers[0]"},
	} {
		ms, err := Matchers([]v1alpha1.SilenceMatcher{v1alpha1.SilenceMatcher(c.spec)}, c.node)
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want one with %q", c.spec, err, c.err)
			}
		case err != nil:
			t.Errorf("%s: %v", c.spec, err)
		case len(ms) != 1 || matcherString(ms[0]) != c.want:
			t.Errorf("%s: %s, want %s", c.spec, matcherString(ms[0]), c.want)
		}
	}
}

func TestSilence(t *testing.T) {
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	spec := &v1alpha1.NodeSilences{URL: "http://am", Matchers: []v1alpha1.SilenceMatcher{`node="{{node}}"`, `alertname=~"KubeletDown|NodeNotReady"`}}
	s, err := Silence(spec, "worker-2", "worker", "", start, start.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(nil); err != nil {
		t.Errorf("not a valid silence: %v", err)
	}
	if *s.Comment != "ndp: node worker-2 is being updated (pool worker)" || *s.CreatedBy != "ndp" || len(s.Matchers) != 2 || s.ID != "" {
		t.Errorf("defaults: %q by %q, %d matchers, id %q", *s.Comment, *s.CreatedBy, len(s.Matchers), s.ID)
	}
	spec.Comment, spec.CreatedBy = "reboot of {{node}} (CHG-42)", "ops"
	s, _ = Silence(spec, "worker-2", "worker", "kept", start, start.Add(time.Hour))
	if *s.Comment != "reboot of worker-2 (CHG-42)" || *s.CreatedBy != "ops" || s.ID != "kept" {
		t.Errorf("given: %q by %q, id %q", *s.Comment, *s.CreatedBy, s.ID)
	}
}
