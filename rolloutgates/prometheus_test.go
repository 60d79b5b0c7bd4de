package rolloutgates

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/rolloutcontrol"
)

// startPrometheus starts Debian's prometheus on loopback, scraping target
// (host:port) every second and evaluating rules every second; it returns
// its URL.
func startPrometheus(t *testing.T, target, rules string) string {
	t.Helper()
	bin := testkit.RequirePrometheusTool(t, "prometheus", "prometheus")
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "rules.yml"), rules)
	writeFile(t, filepath.Join(dir, "prometheus.yml"), fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [%q]
scrape_configs:
- job_name: ndp-test
  static_configs:
  - targets: [%q]
`, filepath.Join(dir, "rules.yml"), target))
	addr := fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(t))
	url := "http://" + addr
	testkit.StartServer(t, url, bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr)
	return url
}

// gaugeTarget serves a real metric, ndp_test_gauge, for Prometheus to
// scrape; it returns the gauge and the target's address.
func gaugeTarget(t *testing.T) (prometheus.Gauge, string) {
	t.Helper()
	reg := prometheus.NewRegistry()
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "ndp_test_gauge", Help: "What the test sets."})
	reg.MustRegister(g)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return g, l.Addr().String()
}

const testRules = `groups:
- name: ndp-test
  rules:
  - alert: NdpTestGaugeHigh
    expr: ndp_test_gauge > 0
    for: 0s
    labels: {severity: warning, team: nodes}
  # Never fires within the test: its state stays pending.
  - alert: NdpTestGaugeLong
    expr: ndp_test_gauge > 0
    for: 1h
`

func policy(name string, gates v1alpha1.RolloutGates) *v1alpha1.RolloutPolicy {
	return &v1alpha1.RolloutPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Generation: 1},
		Spec:       v1alpha1.RolloutPolicySpec{Gates: &gates},
	}
}

// verdict evaluates p's gates through e and rolloutcontrol, with the
// reasons in words for messages.
func verdict(t *testing.T, e *Evaluator, p *v1alpha1.RolloutPolicy) (rolloutcontrol.GateVerdict, string) {
	t.Helper()
	c, err := rolloutcontrol.Compile(p)
	if err != nil {
		t.Fatal(err)
	}
	res, _ := e.Results(context.Background(), p)
	v := rolloutcontrol.EvaluateGates(c, res)
	var words []string
	for _, r := range v.Hold {
		words = append(words, "hold: "+r.String())
	}
	for n, rs := range v.NodeHold {
		for _, r := range rs {
			words = append(words, "node "+n+": "+r.String())
		}
	}
	for _, r := range v.Warnings {
		words = append(words, "warning: "+r.String())
	}
	slices.Sort(words)
	return v, strings.Join(words, "; ")
}

func TestPrometheusGates(t *testing.T) {
	gauge, target := gaugeTarget(t)
	url := startPrometheus(t, target, testRules)
	e := NewEvaluator(nil, Options{Interval: 200 * time.Millisecond})
	no := false
	alerts := policy("alerts", v1alpha1.RolloutGates{Prometheus: &v1alpha1.PrometheusGate{URL: url,
		Alerts: &v1alpha1.AlertSelector{Names: []string{"NdpTestGaugeHigh", "NdpTestGaugeLong"}}}})
	pendingToo := policy("pending-too", v1alpha1.RolloutGates{Prometheus: &v1alpha1.PrometheusGate{URL: url,
		Alerts: &v1alpha1.AlertSelector{Names: []string{"NdpTestGaugeLong"}, FiringOnly: &no}}})
	query := policy("query", v1alpha1.RolloutGates{Prometheus: &v1alpha1.PrometheusGate{URL: url,
		Query: `ndp_test_gauge{job="ndp-test"}`}})

	// Scraped once: the query has its sample (0), so a pass below is the
	// value's, not an empty answer's.
	testkit.Eventually(t, "the query returns the scraped gauge", func() (bool, string) {
		res, _ := e.Results(context.Background(), query)
		if res.PrometheusQuery == nil || res.PrometheusQuery.Err != nil {
			return false, fmt.Sprintf("%+v", res.PrometheusQuery)
		}
		return len(res.PrometheusQuery.Samples) == 1, fmt.Sprintf("%+v", res.PrometheusQuery.Samples)
	}, testkit.Within(time.Minute))
	for _, p := range []*v1alpha1.RolloutPolicy{alerts, pendingToo, query} {
		if v, words := verdict(t, e, p); v.Held("worker-0") || words != "" {
			t.Fatalf("%s with the gauge at 0: %s", p.Name, words)
		}
	}

	gauge.Set(3)
	testkit.Eventually(t, "the firing alert holds, named with its labels", func() (bool, string) {
		_, words := verdict(t, e, alerts)
		return words == "hold: waiting: alert NdpTestGaugeHigh firing (instance="+target+", job=ndp-test, team=nodes) [rolloutpolicy alerts]", words
	}, testkit.Within(time.Minute))
	testkit.Eventually(t, "the query holds with its value", func() (bool, string) {
		_, words := verdict(t, e, query)
		return strings.HasPrefix(words, `hold: waiting: query ndp_test_gauge{job="ndp-test"} is not zero: 3 (`), words
	}, testkit.Within(time.Minute))
	// The alert with for: 1h is pending: listed so, holding only where
	// firingOnly is false.
	res, _ := e.Results(context.Background(), alerts)
	var states []string
	for _, a := range res.PrometheusAlerts.Alerts {
		states = append(states, a.Name()+"="+string(a.State))
	}
	slices.Sort(states)
	if want := []string{"NdpTestGaugeHigh=Firing", "NdpTestGaugeLong=Pending"}; !slices.Equal(states, want) {
		t.Errorf("alerts %v, want %v", states, want)
	}
	if _, words := verdict(t, e, pendingToo); !strings.Contains(words, "alert NdpTestGaugeLong pending") {
		t.Errorf("firingOnly=false: %q, want the pending alert to hold", words)
	}

	gauge.Set(0)
	for _, p := range []*v1alpha1.RolloutPolicy{alerts, pendingToo, query} {
		testkit.Eventually(t, p.Name+" releases with the gauge back at 0", func() (bool, string) {
			v, words := verdict(t, e, p)
			return !v.Held("worker-0") && words == "", words
		}, testkit.Within(time.Minute))
	}

	// A query Prometheus rejects holds, and says why.
	bad := policy("bad-query", v1alpha1.RolloutGates{Prometheus: &v1alpha1.PrometheusGate{URL: url, Query: "sum(("}})
	if _, words := verdict(t, e, bad); !strings.Contains(words, "prometheus query failed: "+url+": bad_data:") || !strings.Contains(words, "holding (failOpen=false)") {
		t.Errorf("bad query: %q", words)
	}
	// A range vector is not a gate's answer.
	rng := policy("range", v1alpha1.RolloutGates{Prometheus: &v1alpha1.PrometheusGate{URL: url, Query: "ndp_test_gauge[1m]"}})
	if _, words := verdict(t, e, rng); !strings.Contains(words, "query returned a matrix, want an instant vector or a scalar") {
		t.Errorf("range query: %q", words)
	}
	// A scalar is one sample.
	sc := policy("scalar", v1alpha1.RolloutGates{Prometheus: &v1alpha1.PrometheusGate{URL: url, Query: "scalar(vector(2))"}})
	if _, words := verdict(t, e, sc); words != "hold: waiting: query scalar(vector(2)) is not zero: 2 [rolloutpolicy scalar]" {
		t.Errorf("scalar query: %q", words)
	}
}
