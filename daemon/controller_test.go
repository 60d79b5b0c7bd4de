package daemon

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestTaintsOnly(t *testing.T) {
	waiting := corev1.Taint{Key: "UpdateInProgress", Effect: corev1.TaintEffectPreferNoSchedule}
	base := func() *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", ResourceVersion: "1", Annotations: map[string]string{"machineconfiguration.openshift.io/desiredConfig": "a"}},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	}
	for _, tc := range []struct {
		name   string
		change func(*corev1.Node)
		want   bool // the update is dropped
	}{
		{"a taint added, nothing else", func(n *corev1.Node) { n.Spec.Taints = []corev1.Taint{waiting} }, true},
		{"a new resourceVersion alone is no change of taints", func(n *corev1.Node) { n.ResourceVersion = "2" }, false},
		{"a taint and desiredConfig together", func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{waiting}
			n.Annotations["machineconfiguration.openshift.io/desiredConfig"] = "b"
		}, false},
		{"a taint and a cordon", func(n *corev1.Node) { n.Spec.Taints, n.Spec.Unschedulable = []corev1.Taint{waiting}, true }, false},
		{"a taint and the Ready condition", func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{waiting}
			n.Status.Conditions[0].Status = corev1.ConditionFalse
		}, false},
		{"a taint and a label", func(n *corev1.Node) { n.Spec.Taints, n.Labels = []corev1.Taint{waiting}, map[string]string{"a": "b"} }, false},
		{"desiredConfig alone", func(n *corev1.Node) { n.Annotations["machineconfiguration.openshift.io/desiredConfig"] = "b" }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, cur := base(), base()
			tc.change(cur)
			if got := TaintsOnly(old, cur); got != tc.want {
				t.Errorf("taintsOnly = %t, want %t", got, tc.want)
			}
		})
	}
}
