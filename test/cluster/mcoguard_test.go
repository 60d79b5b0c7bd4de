package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/controllers/executor"
	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/mco/mcoguard"
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
// daemon's DaemonSet, or both — ndp writes what the MCO writes nowhere:
// the rollout sends no node to a new target and taints none, the render
// controller makes no new target, the registries controller does not
// recreate its MachineConfig; the pool says MCOPresent, naming what is
// there, and is Degraded. Once both are gone, all three proceed.
func TestStandsDownWhileTheMCOIsPresent(t *testing.T) {
	ctx := context.Background()
	const pool = "mcoguard"
	from := previewPool(t, pool, 2)
	nodes := []string{pool + "-a", pool + "-b"}

	// A new target, planned, while the nodes are not Ready yet (so that
	// the rollout, with both unavailable, sends none before the MCO is
	// there).
	create(t, sourceMC("50-"+pool+"-chrony", pool).WithFile("/etc/chrony.conf", "pool ntp.example.com").Build())
	to := waitPool(t, pool, func(p *mcfgv1.MachineConfigPool) bool { return len(p.Spec.Configuration.Source) == 3 }).Spec.Configuration.Name
	waitMachineConfig(t, to, func(mc *ndpmcv1.MachineConfig) bool {
		return meta.IsStatusConditionTrue(mc.Status.Conditions, ndpmcv1.ConditionPlanReady) && mc.Status.PlanFrom(from) != nil
	})
	// markReady makes the nodes Ready and waits until the replica's cache
	// holds them so.
	markReady := func() {
		t.Helper()
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
			cached(t, &nd)
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
				case executor.ConditionPoolDegraded:
					degraded = &p.Status.Conditions[i]
				}
			}
			if c == nil || degraded == nil || c.Status != status {
				return false, fmt.Sprintf("%+v", p.Status.Conditions)
			}
			if status == corev1.ConditionFalse {
				return !strings.Contains(degraded.Message, "MCOPresent"), fmt.Sprintf("%+v", p.Status.Conditions)
			}
			want := "the Machine Config Operator manages this cluster (" + strings.Join(names, ", ") + "): ndp stands down (it renders no configuration and writes no node); remove one of the two"
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
				tainted = tainted || nd.Spec.Taints[i].MatchTaint(&executor.UpdateInProgressTaint)
			}
			out = append(out, fmt.Sprintf("%s sent %t, tainted %t", n, nd.Annotations[ndpmcv1.DesiredConfigAnnotation] == target, tainted))
		}
		return out
	}
	// target is the pool's target, and registries whether its generated
	// registries MachineConfig exists.
	target := func() (string, bool) {
		t.Helper()
		var p mcfgv1.MachineConfigPool
		if err := k8s.Get(ctx, client.ObjectKey{Name: pool}, &p); err != nil {
			t.Fatal(err)
		}
		err := k8s.Get(ctx, client.ObjectKey{Name: "99-" + pool + "-generated-registries"}, &ndpmcv1.MachineConfig{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return p.Spec.Configuration.Name, err == nil
	}
	// holds checks that ndp left the pool and its nodes alone once the
	// rollout, render and registries controllers have each reconciled
	// the pool after the replica's cache held what would make them act:
	// each acts within the reconcile. A poke wakes all three for the
	// pool: an annotation of the pool (the rollout and registries
	// controllers) and a label of one of its MachineConfigs (render).
	var want string // the nodes as the MCO's arrival found them, none sent
	pokes := 0
	poke := func() {
		pokes++
		for _, obj := range []client.Object{&mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: pool}},
			&ndpmcv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: "60-" + pool + "-app"}}} {
			p := fmt.Sprintf(`{"metadata":{"annotations":{"test.ndp.dev/poke":"%d"},"labels":{"test.ndp.dev/poke":"%d"}}}`, pokes, pokes)
			if err := k8s.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(p))); err != nil {
				t.Fatal(err)
			}
		}
	}
	holds := func() {
		t.Helper()
		reconciledSince(t, pool, poke, "rollout", "render", "registries")
		if got := fmt.Sprint(sent(to)); got != want {
			t.Errorf("the MCO is present, yet the rollout wrote the nodes: %s", got)
		}
		if got, reg := target(); got != to || reg {
			t.Errorf("the MCO is present, yet ndp rendered: target %s (want %s), registries MachineConfig recreated %t", got, to, reg)
		}
	}

	co := &configv1.ClusterOperator{ObjectMeta: metav1.ObjectMeta{Name: mcoguard.ClusterOperatorName}}
	create(t, co)
	mcoPresent(corev1.ConditionTrue, "ClusterOperator machine-config")
	waitEvent(t, pool, mcoguard.Reason)
	// The rollout may have tainted the nodes waiting for the new target
	// before the MCO came; it then neither adds nor removes a taint.
	want = fmt.Sprint(sent(to))
	if strings.Contains(want, "sent true") {
		t.Fatalf("a node was sent while none was ready: %s", want)
	}
	ensureNamespace(t, mcoguard.DaemonSetNamespace)
	ds := mcoDaemonSet()
	create(t, ds)
	mcoPresent(corev1.ConditionTrue, "ClusterOperator machine-config", "DaemonSet openshift-machine-config-operator/machine-config-daemon")

	// The nodes Ready: the rollout would send one and taint the other. A
	// new MachineConfig: the render controller would make a new target.
	// The registries MachineConfig deleted: its controller would
	// recreate it.
	markReady()
	app := sourceMC("60-"+pool+"-app", pool).WithFile("/etc/app.conf", "v1").Build()
	create(t, app)
	cached(t, app)
	registries := &ndpmcv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: "99-" + pool + "-generated-registries"}}
	if err := k8s.Delete(ctx, registries); err != nil {
		t.Fatal(err)
	}
	uncached(t, registries)
	holds()

	// The DaemonSet alone still stands ndp down.
	if err := k8s.Delete(ctx, co); err != nil {
		t.Fatal(err)
	}
	mcoPresent(corev1.ConditionTrue, "DaemonSet openshift-machine-config-operator/machine-config-daemon")
	holds()

	// Both gone: the registries MachineConfig is back, a target of all
	// four MachineConfigs rendered and planned, one node sent to it
	// (maxUnavailable 1), the other tainted.
	if err := k8s.Delete(ctx, ds); err != nil {
		t.Fatal(err)
	}
	mcoPresent(corev1.ConditionFalse)
	to = waitPool(t, pool, func(p *mcfgv1.MachineConfigPool) bool { return len(p.Spec.Configuration.Source) == 4 }).Spec.Configuration.Name
	testkit.Eventually(t, "the rollout proceeds", func() (bool, string) {
		got := sent(to)
		return strings.Count(fmt.Sprint(got), "sent true, tainted false") == 1 && strings.Count(fmt.Sprint(got), "sent false, tainted true") == 1, fmt.Sprint(got)
	})
}
