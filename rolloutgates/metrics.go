package rolloutgates

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Gate names, as the metrics label them.
const (
	GatePrometheusAlerts   = "prometheus-alerts"
	GatePrometheusQuery    = "prometheus-query"
	GateAlertmanagerAlerts = "alertmanager-alerts"
)

var (
	// Only the remote calls are counted: the blocking-pod gate reads the
	// cache on every reconcile, which costs no request.
	gateEvaluations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ndp_rollout_gate_evaluations_total",
		Help: "Calls to a rollout policy's remote gates (Prometheus alerts and query, Alertmanager alerts), by policy, gate and result (ok, error).",
	}, []string{"policy", "gate", "result"})
	gateErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ndp_rollout_gate_errors_total",
		Help: "Calls to a rollout policy's remote gates that failed (unreachable, timed out, a bad query or answer), by policy and gate.",
	}, []string{"policy", "gate"})
	gateSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "ndp_rollout_gate_request_duration_seconds",
		Help:    "How long a call to a rollout policy's remote gate took, by gate.",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}, []string{"gate"})
)

func init() { ctrlmetrics.Registry.MustRegister(gateEvaluations, gateErrors, gateSeconds) }
