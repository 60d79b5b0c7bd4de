package executor

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/policy"
)

func TestRolloutStart(t *testing.T) {
	thursday := time.Date(2026, 11, 26, 11, 0, 0, 0, time.UTC)
	window := &v1alpha1.RolloutPolicy{ObjectMeta: metav1.ObjectMeta{Name: "workers"}, Spec: v1alpha1.RolloutPolicySpec{
		Windows: []v1alpha1.MaintenanceWindow{{Days: []v1alpha1.Weekday{"Sat"}, Start: "02:00", End: "04:00", TimeZone: "Europe/Berlin"}}}}
	gated := window.DeepCopy()
	gated.Spec.Gates = &v1alpha1.RolloutGates{Prometheus: &v1alpha1.PrometheusGate{URL: "http://prometheus:9090", Query: "up == 0"}}
	bad := window.DeepCopy()
	bad.Name, bad.Spec.Windows[0].TimeZone = "bad", "Mars/Olympus"
	reboot := &planner.Plan{Actions: []policy.Action{{Type: policy.ActionReboot}}, Reboot: true}
	restart := &planner.Plan{Actions: []policy.Action{policy.RestartAction("chronyd.service")}}
	for _, tc := range []struct {
		name     string
		policies []*v1alpha1.RolloutPolicy
		groups   []Group
		want     string
	}{
		{"no policy: nothing said", nil, []Group{{Nodes: 3, Plan: reboot}}, ""},
		{"a restart goes now", []*v1alpha1.RolloutPolicy{window}, []Group{{Nodes: 3, Plan: restart}}, "would start: now"},
		{"a reboot waits", []*v1alpha1.RolloutPolicy{window}, []Group{{Nodes: 3, Plan: reboot}},
			"would wait: outside the maintenance window, opens Sat 02:00 Europe/Berlin for plans that reboot"},
		{"both", []*v1alpha1.RolloutPolicy{window}, []Group{{From: "a", Nodes: 2, Plan: reboot}, {From: "b", Nodes: 1, Plan: restart}},
			"would wait for 2 nodes: outside the maintenance window, opens Sat 02:00 Europe/Berlin for plans that reboot; would start for 1 node: now"},
		{"gates", []*v1alpha1.RolloutPolicy{gated}, []Group{{Nodes: 1, Plan: restart}}, "would start: now (if the rollout policies' gates allow)"},
		{"an invalid policy holds", []*v1alpha1.RolloutPolicy{bad}, []Group{{Nodes: 1, Plan: restart}}, "would wait: rolloutpolicy bad: spec.windows[0]"},
	} {
		got := rolloutStart(tc.policies, &PoolPreview{Pool: "worker", Groups: tc.groups}, thursday)
		if got != tc.want && !(strings.HasPrefix(tc.want, "would wait: rolloutpolicy") && strings.HasPrefix(got, tc.want)) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestWithStartKeepsTheLimit(t *testing.T) {
	long := strings.Repeat("x", maxWarning)
	for _, start := range []string{"would start: now", strings.Repeat("y", 2*maxWarning)} {
		got := withStart(long, start)
		if len(got) > maxWarning {
			t.Errorf("%d bytes, more than %d", len(got), maxWarning)
		}
		if !strings.Contains(got, "; "+start[:10]) {
			t.Errorf("start lost: %q", got[len(got)-40:])
		}
	}
	if got := withStart("pool worker, 1 node: no action", ""); got != "pool worker, 1 node: no action" {
		t.Errorf("no start: %q", got)
	}
}
