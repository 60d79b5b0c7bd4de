package executor

import (
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
)

func TestOperatorConditions(t *testing.T) {
	pool := func(name string, updated, total int32, conds ...mcfgv1.MachineConfigPoolCondition) mcfgv1.MachineConfigPool {
		p := mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: name}}
		p.Spec.Configuration.Name = "rendered-" + name + "-2"
		p.Status.UpdatedMachineCount, p.Status.MachineCount, p.Status.Conditions = updated, total, conds
		return p
	}
	cond := func(typ mcfgv1.MachineConfigPoolConditionType, msg string) mcfgv1.MachineConfigPoolCondition {
		return mcfgv1.MachineConfigPoolCondition{Type: typ, Status: corev1.ConditionTrue, Message: msg}
	}
	active := v1alpha1.NodeDisruptionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	active.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionActive, Status: metav1.ConditionTrue}}
	for _, tc := range []struct {
		name     string
		pools    []mcfgv1.MachineConfigPool
		policies []v1alpha1.NodeDisruptionPolicy
		want     map[configv1.ClusterStatusConditionType]string // status: message
	}{
		{"settled", []mcfgv1.MachineConfigPool{pool("worker", 3, 3)}, []v1alpha1.NodeDisruptionPolicy{active},
			map[configv1.ClusterStatusConditionType]string{
				configv1.OperatorAvailable:   "True: 1 NodeDisruptionPolicies active (default); 1 pools",
				configv1.OperatorProgressing: "False: every pool is on its target or paused",
				configv1.OperatorDegraded:    "False: ",
			}},
		{"updating", []mcfgv1.MachineConfigPool{pool("worker", 1, 3, cond(mcfgv1.MachineConfigPoolUpdating, ""))}, []v1alpha1.NodeDisruptionPolicy{active},
			map[configv1.ClusterStatusConditionType]string{
				configv1.OperatorProgressing: "True: pool worker: 1 of 3 nodes updated to rendered-worker-2",
			}},
		// Held: the operator says why the pool does not move.
		{"updating, held", []mcfgv1.MachineConfigPool{pool("worker", 1, 3, cond(mcfgv1.MachineConfigPoolUpdating, ""),
			cond(ndpmcv1.ConditionRolloutHeld, "waiting: alert BackupRunning firing [rolloutpolicy workers]"))}, []v1alpha1.NodeDisruptionPolicy{active},
			map[configv1.ClusterStatusConditionType]string{
				configv1.OperatorProgressing: "True: pool worker: 1 of 3 nodes updated to rendered-worker-2 (waiting: alert BackupRunning firing [rolloutpolicy workers])",
			}},
		{"degraded, no policy", []mcfgv1.MachineConfigPool{pool("worker", 3, 3, cond(mcfgv1.MachineConfigPoolDegraded, "node w1 failed"))}, nil,
			map[configv1.ClusterStatusConditionType]string{
				configv1.OperatorAvailable:   "False: no NodeDisruptionPolicy is active: no update can be planned",
				configv1.OperatorDegraded:    "True: pool worker: node w1 failed",
				configv1.OperatorUpgradeable: "False: degraded pools: pool worker: node w1 failed",
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := map[configv1.ClusterStatusConditionType]string{}
			for _, c := range OperatorConditions(tc.pools, tc.policies) {
				got[c.Type] = string(c.Status) + ": " + c.Message
			}
			for typ, want := range tc.want {
				if got[typ] != want {
					t.Errorf("%s: %q, want %q", typ, got[typ], want)
				}
			}
		})
	}
}
