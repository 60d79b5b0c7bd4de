package rolloutgates

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/internal/testkit"
)

// post sends v as JSON to Alertmanager's v2 API, as a Prometheus or amtool
// would.
func post(t *testing.T, url string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %s", url, resp.Status)
	}
}

func TestAlertmanagerGate(t *testing.T) {
	url := testkit.StartAlertmanager(t)
	e := NewEvaluator(nil, Options{Interval: 200 * time.Millisecond})
	no := false
	sel := v1alpha1.AlertSelector{Names: []string{"NdpTestAlert"},
		Include: []v1alpha1.LabelMatcher{{Label: "namespace", Operator: v1alpha1.MatchRegex, Value: "web|api"}}}
	firing := policy("am", v1alpha1.RolloutGates{Alertmanager: &v1alpha1.AlertmanagerGate{URL: url, Alerts: sel}})
	selAll := sel
	selAll.FiringOnly = &no
	all := policy("am-all", v1alpha1.RolloutGates{Alertmanager: &v1alpha1.AlertmanagerGate{URL: url, Alerts: selAll}})

	if _, words := verdict(t, e, firing); words != "" {
		t.Fatalf("no alert yet: %q", words)
	}
	now := time.Now().UTC()
	post(t, url+"/api/v2/alerts", []map[string]any{
		{"labels": map[string]string{"alertname": "NdpTestAlert", "namespace": "web", "severity": "critical"},
			"startsAt": now, "endsAt": now.Add(time.Hour)},
		// Not selected: its namespace is neither web nor api.
		{"labels": map[string]string{"alertname": "NdpTestAlert", "namespace": "batch"},
			"startsAt": now, "endsAt": now.Add(time.Hour)},
	})
	testkit.Eventually(t, "the posted alert holds as firing", func() (bool, string) {
		_, words := verdict(t, e, firing)
		return words == "hold: waiting: alert NdpTestAlert firing (namespace=web) in alertmanager [rolloutpolicy am]", words
	}, testkit.Within(time.Minute))

	post(t, url+"/api/v2/silences", map[string]any{
		"matchers": []map[string]any{{"name": "alertname", "value": "NdpTestAlert", "isRegex": false, "isEqual": true}},
		"startsAt": now, "endsAt": now.Add(time.Hour), "createdBy": "ndp-test", "comment": "rolloutgates test",
	})
	testkit.Eventually(t, "the silenced alert is suppressed and does not hold (firingOnly)", func() (bool, string) {
		res, _ := e.Results(t.Context(), firing)
		if res.AlertmanagerAlerts == nil || res.AlertmanagerAlerts.Err != nil || len(res.AlertmanagerAlerts.Alerts) != 2 {
			return false, fmt.Sprintf("%+v", res.AlertmanagerAlerts)
		}
		for _, a := range res.AlertmanagerAlerts.Alerts {
			if a.State != "Suppressed" {
				return false, fmt.Sprintf("%v is %s", a.Labels, a.State)
			}
		}
		v, words := verdict(t, e, firing)
		return !v.Held("worker-0") && words == "", words
	}, testkit.Within(time.Minute))
	if _, words := verdict(t, e, all); !strings.Contains(words, "alert NdpTestAlert suppressed (namespace=web) in alertmanager") {
		t.Errorf("firingOnly=false: %q, want the suppressed alert to hold", words)
	}
}
