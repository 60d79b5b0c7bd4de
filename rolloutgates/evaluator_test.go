package rolloutgates

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/internal/testkit"
)

// clock is a settable clock for the Evaluator's interval.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// unreachable is a loopback URL nothing listens on.
func unreachable(t *testing.T) string {
	return fmt.Sprintf("http://127.0.0.1:%d", testkit.FreePort(t))
}

func TestUnreachableHoldsUnlessFailOpen(t *testing.T) {
	url := unreachable(t)
	gates := v1alpha1.RolloutGates{
		Prometheus:   &v1alpha1.PrometheusGate{URL: url, Alerts: &v1alpha1.AlertSelector{}, Query: "up == 0"},
		Alertmanager: &v1alpha1.AlertmanagerGate{URL: url},
	}
	e := NewEvaluator(nil, Options{})
	before := counterValue(gateErrors.WithLabelValues("down", GatePrometheusAlerts))
	beforeAM := counterValue(gateEvaluations.WithLabelValues("down", GateAlertmanagerAlerts, "error"))
	v, words := verdict(t, e, policy("down", gates))
	for _, want := range []string{
		"hold: waiting: prometheus unreachable: " + url + ": connection refused, holding (failOpen=false) [rolloutpolicy down]",
		"hold: waiting: prometheus query failed: " + url + ": connection refused, holding (failOpen=false)",
		"hold: waiting: alertmanager unreachable: " + url + ": connection refused, holding (failOpen=false)",
	} {
		if !strings.Contains(words, want) {
			t.Errorf("got %q\nwant it to contain %q", words, want)
		}
	}
	if len(v.Hold) != 3 || len(v.Warnings) != 0 {
		t.Errorf("%d holds and %d warnings, want 3 and 0: %s", len(v.Hold), len(v.Warnings), words)
	}
	if got := counterValue(gateErrors.WithLabelValues("down", GatePrometheusAlerts)) - before; got != 1 {
		t.Errorf("ndp_rollout_gate_errors_total{policy=down,gate=prometheus-alerts} rose by %v, want 1", got)
	}
	if got := counterValue(gateEvaluations.WithLabelValues("down", GateAlertmanagerAlerts, "error")) - beforeAM; got != 1 {
		t.Errorf("ndp_rollout_gate_evaluations_total{policy=down,gate=alertmanager-alerts,result=error} rose by %v, want 1", got)
	}

	gates.FailOpen = true
	v, words = verdict(t, e, policy("down-open", gates))
	if v.Held("worker-0") || len(v.Warnings) != 3 || !strings.Contains(words, "warning: waiting: prometheus unreachable: "+url+": connection refused, not holding (failOpen=true)") {
		t.Errorf("failOpen: held %v, %d warnings: %s", v.Held("worker-0"), len(v.Warnings), words)
	}
}

func TestBadURL(t *testing.T) {
	e := NewEvaluator(nil, Options{})
	_, words := verdict(t, e, policy("bad-url", v1alpha1.RolloutGates{Prometheus: &v1alpha1.PrometheusGate{URL: "prometheus:9090", Query: "up"}}))
	if !strings.Contains(words, `url "prometheus:9090": not an http(s) URL with a host, holding`) {
		t.Errorf("got %q", words)
	}
}

// A call that does not answer within Timeout holds, and says so.
func TestTimeout(t *testing.T) {
	// A listener that accepts and never answers.
	url := unreachable(t)
	stop := silentServer(t, strings.TrimPrefix(url, "http://"))
	defer stop()
	e := NewEvaluator(nil, Options{Timeout: 300 * time.Millisecond})
	start := time.Now()
	_, words := verdict(t, e, policy("slow", v1alpha1.RolloutGates{Alertmanager: &v1alpha1.AlertmanagerGate{URL: url}}))
	if !strings.Contains(words, "alertmanager unreachable: "+url+": timed out, holding") {
		t.Errorf("got %q", words)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("took %s with a timeout of 300ms", took)
	}
}

// The remote gates are asked once per interval, whatever the number of
// callers; a new generation is asked at once.
func TestEvaluatorAsksOncePerInterval(t *testing.T) {
	url := unreachable(t)
	c := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	e := NewEvaluator(nil, Options{Interval: time.Minute, Now: c.now})
	p := policy("once", v1alpha1.RolloutGates{Prometheus: &v1alpha1.PrometheusGate{URL: url, Alerts: &v1alpha1.AlertSelector{}, Query: "up"}})
	counted := func() float64 {
		return counterValue(gateEvaluations.WithLabelValues("once", GatePrometheusAlerts, "error")) +
			counterValue(gateEvaluations.WithLabelValues("once", GatePrometheusQuery, "error"))
	}
	base := counted() // from an earlier run (-count)
	calls := func() float64 { return counted() - base }
	var wg sync.WaitGroup
	nexts := make([]time.Time, 16)
	for i := range nexts {
		wg.Go(func() { _, nexts[i] = e.Results(context.Background(), p) })
	}
	wg.Wait()
	if got := calls(); got != 2 {
		t.Errorf("16 concurrent callers: %v calls, want 2 (1 alerts, 1 query)", got)
	}
	for _, n := range nexts {
		if want := c.now().Add(time.Minute); !n.Equal(want) {
			t.Errorf("next evaluation %s, want %s", n, want)
		}
	}
	c.add(59 * time.Second)
	if _, _ = e.Results(context.Background(), p); calls() != 2 {
		t.Errorf("within the interval: %v calls, want still 2", calls())
	}
	c.add(time.Second)
	if _, next := e.Results(context.Background(), p); calls() != 4 || !next.Equal(c.now().Add(time.Minute)) {
		t.Errorf("after the interval: %v calls, next %s; want 4 and %s", calls(), next, c.now().Add(time.Minute))
	}
	p.Generation++
	if _, _ = e.Results(context.Background(), p); calls() != 6 {
		t.Errorf("a new generation: %v calls, want 6", calls())
	}
	// No remote gate: nothing to ask again.
	if _, next := e.Results(context.Background(), policy("none", v1alpha1.RolloutGates{})); !next.IsZero() {
		t.Errorf("no remote gate: next %s, want zero", next)
	}
	if n := seriesOf(t, gateEvaluations, "once"); n == 0 {
		t.Errorf("no series of policy once before Forget")
	}
	e.Forget("once")
	if n := seriesOf(t, gateEvaluations, "once"); n != 0 {
		t.Errorf("Forget left %d series of policy once", n)
	}
	// A caller that gave up is not a gate's answer: not kept.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, next := e.Results(ctx, p); !next.Equal(c.now()) {
		t.Errorf("canceled: next %s, want now (%s): ask again", next, c.now())
	}
}

// counterValue reads a counter (client_golang's testutil would add a
// module to ndp's build for this).
func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return -1
	}
	return m.GetCounter().GetValue()
}

// seriesOf counts a vector's series of one policy.
func seriesOf(t *testing.T, c prometheus.Collector, policy string) int {
	t.Helper()
	ch := make(chan prometheus.Metric, 100)
	go func() { c.Collect(ch); close(ch) }()
	n := 0
	for m := range ch {
		var d dto.Metric
		if err := m.Write(&d); err != nil {
			t.Fatal(err)
		}
		for _, l := range d.GetLabel() {
			if l.GetName() == "policy" && l.GetValue() == policy {
				n++
			}
		}
	}
	return n
}
