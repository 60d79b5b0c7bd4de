package rolloutgates

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/ndp-dev/ndp/rolloutcontrol"
)

// NewClient is client_golang's API client for a Prometheus or Alertmanager
// root URL; rt is shared, so connections are reused across evaluations.
// alertsilence calls Alertmanager's silences through it too.
func NewClient(rawURL string, rt http.RoundTripper) (api.Client, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("url %q: %w", rawURL, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("url %q: not an http(s) URL with a host", rawURL)
	}
	return api.NewClient(api.Config{Address: rawURL, RoundTripper: rt})
}

// PrometheusAlerts asks a Prometheus for its alerts (/api/v1/alerts: one
// request) with their states: firing → Firing, pending → Pending; inactive
// ones are left out (Prometheus does not list them anyway).
func PrometheusAlerts(ctx context.Context, rawURL string, rt http.RoundTripper) *rolloutcontrol.AlertsResult {
	c, err := NewClient(rawURL, rt)
	if err != nil {
		return &rolloutcontrol.AlertsResult{Err: err}
	}
	res, err := promv1.NewAPI(c).Alerts(ctx)
	if err != nil {
		return &rolloutcontrol.AlertsResult{Err: CallError(rawURL, err)}
	}
	out := &rolloutcontrol.AlertsResult{Alerts: make([]rolloutcontrol.Alert, 0, len(res.Alerts))}
	for _, a := range res.Alerts {
		var s rolloutcontrol.AlertState
		switch a.State {
		case promv1.AlertStateFiring:
			s = rolloutcontrol.AlertFiring
		case promv1.AlertStatePending:
			s = rolloutcontrol.AlertPending
		default:
			continue
		}
		out.Alerts = append(out.Alerts, rolloutcontrol.Alert{Labels: labelMap(a.Labels), State: s})
	}
	return out
}

// PrometheusQuery runs the gate's PromQL expression (/api/v1/query: one
// request) at Prometheus' own time, so a skewed clock here moves nothing. An instant vector gives its samples, a scalar one sample
// without labels; a range vector or a string is an error (the gate wants a
// value that must be empty or zero).
func PrometheusQuery(ctx context.Context, rawURL, query string, rt http.RoundTripper) *rolloutcontrol.QueryResult {
	c, err := NewClient(rawURL, rt)
	if err != nil {
		return &rolloutcontrol.QueryResult{Err: err}
	}
	v, _, _, err := promv1.NewAPI(c).Query(ctx, query, time.Time{})
	if err != nil {
		return &rolloutcontrol.QueryResult{Err: CallError(rawURL, err)}
	}
	samples, err := querySamples(v)
	if err != nil {
		return &rolloutcontrol.QueryResult{Err: fmt.Errorf("%s: %w", rawURL, err)}
	}
	return &rolloutcontrol.QueryResult{Samples: samples}
}

func querySamples(v model.Value) ([]rolloutcontrol.Sample, error) {
	switch v := v.(type) {
	case model.Vector:
		out := make([]rolloutcontrol.Sample, 0, len(v))
		for _, s := range v {
			out = append(out, rolloutcontrol.Sample{Labels: labelMap(model.LabelSet(s.Metric)), Value: float64(s.Value)})
		}
		return out, nil
	case *model.Scalar:
		return []rolloutcontrol.Sample{{Value: float64(v.Value)}}, nil
	case nil:
		return nil, errors.New("query returned no result")
	default:
		return nil, fmt.Errorf("query returned a %s, want an instant vector or a scalar", v.Type())
	}
}

func labelMap(ls model.LabelSet) map[string]string {
	m := make(map[string]string, len(ls))
	for k, v := range ls {
		m[string(k)] = string(v)
	}
	return m
}

// CallError is a failed call in few words, naming the URL: the reason
// shows in the pool's conditions and `kubectl ndp status`, where Go's
// nested "Post \"http://…/api/v1/query\": dial tcp …: connect: …" is noise.
func CallError(rawURL string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: timed out", rawURL)
	}
	var ae *promv1.Error
	if errors.As(err, &ae) {
		return fmt.Errorf("%s: %s: %s", rawURL, ae.Type, ae.Msg)
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		inner := oe.Err
		var se *os.SyscallError
		if errors.As(inner, &se) {
			inner = se.Err
		}
		return fmt.Errorf("%s: %v", rawURL, inner)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %v", rawURL, ue.Err)
	}
	return fmt.Errorf("%s: %w", rawURL, err)
}
