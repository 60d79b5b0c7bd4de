package rolloutgates

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"reflect"
	"strings"
	"syscall"
	"testing"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/ndp-dev/ndp/rolloutcontrol"
)

func TestQuerySamples(t *testing.T) {
	for _, c := range []struct {
		name string
		v    model.Value
		want []rolloutcontrol.Sample
		err  string
	}{
		{"empty vector", model.Vector{}, []rolloutcontrol.Sample{}, ""},
		{"vector", model.Vector{{Metric: model.Metric{"job": "web"}, Value: 2}},
			[]rolloutcontrol.Sample{{Labels: map[string]string{"job": "web"}, Value: 2}}, ""},
		{"scalar", &model.Scalar{Value: 0}, []rolloutcontrol.Sample{{Value: 0}}, ""},
		{"matrix", model.Matrix{}, nil, "query returned a matrix, want an instant vector or a scalar"},
		{"string", &model.String{Value: "x"}, nil, "query returned a string, want an instant vector or a scalar"},
		{"nothing", nil, nil, "query returned no result"},
	} {
		got, err := querySamples(c.v)
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("%s: error %v, want %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %+v, %v; want %+v", c.name, got, err, c.want)
		}
	}
}

func TestDecodeAMAlerts(t *testing.T) {
	got, err := decodeAMAlerts([]byte(`[
	 {"labels":{"alertname":"A"},"status":{"state":"active","silencedBy":[],"inhibitedBy":[]}},
	 {"labels":{"alertname":"B"},"status":{"state":"suppressed","silencedBy":["x"]}},
	 {"labels":{"alertname":"C"},"status":{"state":"unprocessed"}},
	 {"status":{"state":"active"}}]`))
	want := []rolloutcontrol.Alert{
		{Labels: map[string]string{"alertname": "A"}, State: rolloutcontrol.AlertFiring},
		{Labels: map[string]string{"alertname": "B"}, State: rolloutcontrol.AlertSuppressed},
		// Not yet matched against silences: it holds.
		{Labels: map[string]string{"alertname": "C"}, State: rolloutcontrol.AlertFiring},
		{Labels: map[string]string{}, State: rolloutcontrol.AlertFiring},
	}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("%+v, %v; want %+v", got, err, want)
	}
	if _, err := decodeAMAlerts([]byte(`{"status":"success","data":[]}`)); err == nil || !strings.Contains(err.Error(), "not Alertmanager's v2 alerts") {
		t.Errorf("Prometheus' answer taken for Alertmanager's: %v", err)
	}
}

func TestCallError(t *testing.T) {
	const u = "http://prom:9090"
	refused := &url.Error{Op: "Post", URL: u + "/api/v1/query", Err: &net.OpError{Op: "dial", Net: "tcp",
		Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}}
	dns := &url.Error{Op: "Get", URL: u, Err: &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "prom", IsNotFound: true}}}
	for _, c := range []struct {
		err  error
		want string
	}{
		{refused, u + ": connection refused"},
		{dns, u + ": lookup prom: no such host"},
		{&url.Error{Op: "Get", URL: u, Err: fmt.Errorf("wrapped: %w", context.DeadlineExceeded)}, u + ": timed out"},
		{&promv1.Error{Type: promv1.ErrBadData, Msg: "parse error"}, u + ": bad_data: parse error"},
		{errors.New("odd"), u + ": odd"},
	} {
		if got := CallError(u, c.err).Error(); got != c.want {
			t.Errorf("%v: %q, want %q", c.err, got, c.want)
		}
	}
}

func TestSnippet(t *testing.T) {
	if got := Snippet([]byte("bad request\nmore")); got != "bad request" {
		t.Errorf("%q", got)
	}
	if got := Snippet([]byte(strings.Repeat("x", 300))); len(got) != 200+len("…") {
		t.Errorf("%d bytes", len(got))
	}
}
