package daemon

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The daemon's metrics, on its metrics endpoint; each carries the node.
var (
	updateDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "ndp_daemon_update_duration_seconds",
		Help:    "Time from the start of an update to its completion, reboots included.",
		Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 600, 1200, 3600},
	}, []string{"node"})
	stepDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "ndp_daemon_step_duration_seconds",
		Help:    "Time a phase of an update took: drain (cordon and drain), files (backup, files, units, current config), os, actions, reboot, uncordon.",
		Buckets: []float64{0.1, 0.5, 1, 5, 15, 30, 60, 300, 900, 3600},
	}, []string{"node", "phase"})
	actionsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ndp_daemon_actions_total",
		Help: "Plan actions executed, by type (Reload, Restart, DaemonReload, Reboot).",
	}, []string{"node", "type"})
	drainBlockedPods = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "ndp_daemon_drain_blocked_pods",
		Help: "Pods a drain under way still waits for (a PodDisruptionBudget refusing their eviction, most often); 0 when no drain waits.",
	}, []string{"node"})
	degraded = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "ndp_daemon_degraded",
		Help: "1 while the node is Degraded: a step of its update failed, or its plan was refused.",
	}, []string{"node"})
)

func init() {
	metrics.Registry.MustRegister(updateDuration, stepDuration, actionsTotal, drainBlockedPods, degraded)
}

// phase groups the journal's steps into the phases administrators watch.
func phase(step string) string {
	switch step {
	case StepCordon, StepDrain:
		return "drain"
	case StepBackup, StepFiles, StepCurrentConfig:
		return "files"
	case StepOS:
		return "os"
	case StepAction:
		return "actions"
	}
	return step // reboot, uncordon
}
