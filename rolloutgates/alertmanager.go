package rolloutgates

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/ndp-dev/ndp/rolloutcontrol"
)

// Alertmanager is asked through client_golang's generic API client
// (api.Client: the same transport, URL joining and cancellation as the
// Prometheus calls), and its answer decoded into the few fields the gate
// reads. client_golang has no Alertmanager client, and Alertmanager's own
// generated one (github.com/prometheus/alertmanager/api/v2/client) pulls
// fifteen modules into ndp's build, go-openapi's runtime and a retracted
// mongo-driver among them, for one GET.

// amAlert is the part of Alertmanager's v2 gettableAlert the gate reads.
type amAlert struct {
	Labels map[string]string `json:"labels"`
	Status struct {
		// State: active, suppressed (silenced or inhibited) or unprocessed.
		State string `json:"state"`
	} `json:"status"`
}

// maxAlertsBody bounds what is decoded of an answer; client_golang reads
// the body whole, so this only stops a runaway answer from being parsed.
const maxAlertsBody = 64 << 20

// AlertmanagerAlerts asks an Alertmanager for its alerts (/api/v2/alerts:
// one request, silenced and inhibited ones included): active → Firing,
// suppressed → Suppressed; unprocessed (received, not yet matched against
// silences) → Firing, since a gate that cannot tell holds.
func AlertmanagerAlerts(ctx context.Context, rawURL string, rt http.RoundTripper) *rolloutcontrol.AlertsResult {
	c, err := NewClient(rawURL, rt)
	if err != nil {
		return &rolloutcontrol.AlertsResult{Err: err}
	}
	u := c.URL("/api/v2/alerts", nil)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return &rolloutcontrol.AlertsResult{Err: fmt.Errorf("%s: %w", rawURL, err)}
	}
	req.Header.Set("Accept", "application/json")
	resp, body, err := c.Do(ctx, req)
	if err != nil {
		return &rolloutcontrol.AlertsResult{Err: CallError(rawURL, err)}
	}
	if resp.StatusCode != http.StatusOK {
		return &rolloutcontrol.AlertsResult{Err: fmt.Errorf("%s: %s: %s", rawURL, resp.Status, Snippet(body))}
	}
	if len(body) > maxAlertsBody {
		return &rolloutcontrol.AlertsResult{Err: fmt.Errorf("%s: answer of %d bytes, more than %d", rawURL, len(body), maxAlertsBody)}
	}
	alerts, err := decodeAMAlerts(body)
	if err != nil {
		return &rolloutcontrol.AlertsResult{Err: fmt.Errorf("%s: %w", rawURL, err)}
	}
	return &rolloutcontrol.AlertsResult{Alerts: alerts}
}

func decodeAMAlerts(body []byte) ([]rolloutcontrol.Alert, error) {
	var raw []amAlert
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, fmt.Errorf("not Alertmanager's v2 alerts: %v", err)
	}
	out := make([]rolloutcontrol.Alert, 0, len(raw))
	for _, a := range raw {
		s := rolloutcontrol.AlertFiring
		if a.Status.State == "suppressed" {
			s = rolloutcontrol.AlertSuppressed
		}
		if a.Labels == nil {
			a.Labels = map[string]string{}
		}
		out = append(out, rolloutcontrol.Alert{Labels: a.Labels, State: s})
	}
	return out, nil
}

// Snippet is the start of an error answer's body, on one line.
func Snippet(b []byte) string {
	const n = 200
	s := string(b)
	if len(s) > n {
		s = s[:n] + "…"
	}
	for i, r := range s {
		if r == '\n' || r == '\r' {
			s = s[:i]
			break
		}
	}
	return s
}
