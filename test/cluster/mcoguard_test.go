package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/controllers"
	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/mcoguard"
)

// mcoDaemonSet is the Machine Config Operator's daemon, as far as the API
// server's validation asks.
func mcoDaemonSet() *appsv1.DaemonSet {
	labels := map[string]string{"k8s-app": "machine-config-daemon"}
	return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: mcoguard.DaemonSetNamespace, Name: mcoguard.DaemonSetName},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{NodeSelector: map[string]string{"kubernetes.io/os": "linux"},
				Containers: []corev1.Container{{Name: "machine-config-daemon", Image: "quay.io/openshift/machine-config-operator:latest"}}},
		}}}
}

// While the Machine Config Operator is present — its ClusterOperator, its
// daemon's DaemonSet, or both — the rollout sends no node to a new target
// and taints none, and the pool says MCOPresent, naming what is there, and
// is Degraded; once both are gone, the rollout proceeds.
func TestRolloutStandsDownWhileTheMCOIsPresent(t *testing.T) {
	ctx := context.Background()
	const pool = "mcoguard"
	from := previewPool(t, pool, 2)
	nodes := []string{pool + "-a", pool + "-b"}
	for _, n := range nodes {
		var nd corev1.Node
		if err := k8s.Get(ctx, client.ObjectKey{Name: n}, &nd); err != nil {
			t.Fatal(err)
		}
		base := nd.DeepCopy()
		nd.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
		if err := k8s.Status().Patch(ctx, &nd, client.MergeFrom(base)); err != nil {
			t.Fatal(err)
		}
	}
	mcoPresent := func(status corev1.ConditionStatus, names ...string) {
		t.Helper()
		testkit.Eventually(t, fmt.Sprintf("pool %s: MCOPresent %s naming %q", pool, status, names), func() (bool, string) {
			var p mcfgv1.MachineConfigPool
			if err := k8s.Get(ctx, client.ObjectKey{Name: pool}, &p); err != nil {
				return false, err.Error()
			}
			var c, degraded *mcfgv1.MachineConfigPoolCondition
			for i := range p.Status.Conditions {
				switch p.Status.Conditions[i].Type {
				case ndpmcv1.ConditionMCOPresent:
					c = &p.Status.Conditions[i]
				case controllers.ConditionPoolDegraded:
					degraded = &p.Status.Conditions[i]
				}
			}
			if c == nil || degraded == nil || c.Status != status {
				return false, fmt.Sprintf("%+v", p.Status.Conditions)
			}
			if status == corev1.ConditionFalse {
				return !strings.Contains(degraded.Message, "MCOPresent"), fmt.Sprintf("%+v", p.Status.Conditions)
			}
			want := "the Machine Config Operator manages this cluster (" + strings.Join(names, ", ") + "): ndp's rollout and daemon stand down; remove one of the two"
			return c.Reason == mcoguard.Reason && c.Message == want && degraded.Status == corev1.ConditionTrue && strings.Contains(degraded.Message, "MCOPresent: "+want),
				fmt.Sprintf("%+v", p.Status.Conditions)
		})
	}
	// sent tells, per node, whether it was sent to target and whether it
	// carries the UpdateInProgress taint.
	sent := func(target string) (out []string) {
		t.Helper()
		for _, n := range nodes {
			var nd corev1.Node
			if err := k8s.Get(ctx, client.ObjectKey{Name: n}, &nd); err != nil {
				t.Fatal(err)
			}
			tainted := false
			for i := range nd.Spec.Taints {
				tainted = tainted || nd.Spec.Taints[i].MatchTaint(&controllers.UpdateInProgressTaint)
			}
			out = append(out, fmt.Sprintf("%s sent %t, tainted %t", n, nd.Annotations[ndpmcv1.DesiredConfigAnnotation] == target, tainted))
		}
		return out
	}
	// holds checks for a while that the rollout leaves the nodes alone: it
	// acts within a reconcile of a plan being ready, which came first.
	holds := func(target string, d time.Duration) {
		t.Helper()
		want := fmt.Sprintf("[%s-a sent false, tainted false %s-b sent false, tainted false]", pool, pool)
		for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
			if got := fmt.Sprint(sent(target)); got != want {
				t.Fatalf("the MCO is present, yet the rollout wrote the nodes: %s", got)
			}
		}
	}

	co := &configv1.ClusterOperator{ObjectMeta: metav1.ObjectMeta{Name: mcoguard.ClusterOperatorName}}
	create(t, co)
	mcoPresent(corev1.ConditionTrue, "ClusterOperator machine-config")
	waitEvent(t, pool, mcoguard.Reason)
	ensureNamespace(t, mcoguard.DaemonSetNamespace)
	ds := mcoDaemonSet()
	create(t, ds)
	mcoPresent(corev1.ConditionTrue, "ClusterOperator machine-config", "DaemonSet openshift-machine-config-operator/machine-config-daemon")

	// A new target, planned: the rollout would send one node and taint
	// the other.
	create(t, sourceMC("50-"+pool+"-chrony", pool).WithFile("/etc/chrony.conf", "pool ntp.example.com").Build())
	to := waitPool(t, pool, func(p *mcfgv1.MachineConfigPool) bool { return len(p.Spec.Configuration.Source) == 3 }).Spec.Configuration.Name
	waitMachineConfig(t, to, func(mc *ndpmcv1.MachineConfig) bool {
		return meta.IsStatusConditionTrue(mc.Status.Conditions, ndpmcv1.ConditionPlanReady) && mc.Status.PlanFrom(from) != nil
	})
	holds(to, 5*time.Second)

	// The DaemonSet alone still stands the rollout down.
	if err := k8s.Delete(ctx, co); err != nil {
		t.Fatal(err)
	}
	mcoPresent(corev1.ConditionTrue, "DaemonSet openshift-machine-config-operator/machine-config-daemon")
	holds(to, 3*time.Second)

	// Both gone: one node is sent (maxUnavailable 1), the other tainted.
	if err := k8s.Delete(ctx, ds); err != nil {
		t.Fatal(err)
	}
	mcoPresent(corev1.ConditionFalse)
	testkit.Eventually(t, "the rollout proceeds", func() (bool, string) {
		got := sent(to)
		return strings.Count(fmt.Sprint(got), "sent true, tainted false") == 1 && strings.Count(fmt.Sprint(got), "sent false, tainted true") == 1, fmt.Sprint(got)
	})
}
