package node

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/internal/testkit"
)

// A drain without a timeout keeps waiting for the budget, and says so:
// TestDrainWaitsForTheDisruptionBudget.

// drainTimeoutRollout is a pool of two nodes (maxUnavailable 1) under a
// policy with a 3 s drain timeout and the given choice, whose first node
// holds a pod that a PodDisruptionBudget protects (no disruption allowed),
// sent to a change that drains and reboots. It returns the rollout, the
// first node, the budget and the new target.
func drainTimeoutRollout(t *testing.T, pool string, act v1alpha1.DrainTimeoutAction) (*rollout, *host, *policyv1.PodDisruptionBudget, string) {
	ctx := context.Background()
	r := newRollout(t, pool, 2, intstr.FromInt(1))
	a := r.target()
	ns := namespace(t, pool)
	for _, h := range r.hosts {
		kubelet(t, h.name)
	}
	first := r.hosts[0] // the oldest goes first
	runningPod(t, ns, "db-0", first.name, podLabels("db"), nil)
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: ptrIntOrString(1), Selector: &metav1.LabelSelector{MatchLabels: podLabels("db")}},
	}
	if err := k8s.Create(ctx, pdb); err != nil {
		t.Fatal(err)
	}
	setPDB(t, pdb, 0)
	pol := &v1alpha1.RolloutPolicy{ObjectMeta: metav1.ObjectMeta{Name: pool}, Spec: v1alpha1.RolloutPolicySpec{
		PoolSelector: metav1.LabelSelector{MatchLabels: r.labelPool()},
		Failures:     &v1alpha1.RolloutFailures{DrainTimeout: &metav1.Duration{Duration: 3 * time.Second}, OnDrainTimeout: act},
	}}
	if err := k8s.Create(ctx, pol); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), pol) })
	superviseHosts(t, r.hosts) // the reboots

	rebootingChange(t, r)
	return r, first, pdb, r.newTarget(a)
}

// events lists the Events on the object name of kind in namespace ns, as
// "Reason: message".
func events(t *testing.T, ns, kind, name string) []string {
	t.Helper()
	var list corev1.EventList
	if err := k8s.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == kind && e.InvolvedObject.Name == name {
			out = append(out, e.Reason+": "+e.Message)
		}
	}
	return out
}

func waitEvent(t *testing.T, ns, kind, name string, want ...string) {
	t.Helper()
	testkit.Eventually(t, fmt.Sprintf("an Event on %s %s with %q", kind, name, want), func() (bool, string) {
		evs := events(t, ns, kind, name)
		for _, e := range evs {
			all := true
			for _, w := range want {
				all = all && strings.Contains(e, w)
			}
			if all {
				return true, ""
			}
		}
		return false, strings.Join(evs, "\n")
	})
}

// onDrainTimeout Skip: the first node's drain, blocked by the budget, gives
// up after 3 s; the node is uncordoned, stays on its config untouched
// (nothing written, no reboot), is marked skipped for the target and says
// so; the second node goes, and the first is not sent again: the pool
// names it. Retried (`kubectl ndp retry`) with the budget relaxed, it goes
// too.
func TestRolloutDrainTimeoutSkips(t *testing.T) {
	r, first, pdb, b := drainTimeoutRollout(t, "roll-skip", v1alpha1.DrainTimeoutSkip)
	a := first.node().Annotations[ndpmcv1.CurrentConfigAnnotation]
	second := r.hosts[1]
	testkit.Eventually(t, "the first node skipped, back on its config", func() (bool, string) {
		n := first.node()
		an := n.Annotations
		return an[v1alpha1.DrainSkippedAnnotation] == b && an[ndpmcv1.DesiredConfigAnnotation] == a && an[ndpmcv1.CurrentConfigAnnotation] == a &&
				an[ndpmcv1.StateAnnotation] == ndpmcv1.StateDone && !n.Spec.Unschedulable,
			fmt.Sprintf("unschedulable %t, %v", n.Spec.Unschedulable, an)
	}, testkit.Within(2*time.Minute))
	if why := first.node().Annotations[v1alpha1.DrainSkippedReasonAnnotation]; why != "the drain timed out with 1 pods still to evict (roll-skip/db-0)" {
		t.Errorf("%s: %q", v1alpha1.DrainSkippedReasonAnnotation, why)
	}
	waitEvent(t, "default", "Node", first.name, v1alpha1.DrainSkippedReason+": the drain ran out of its timeout of 3s", "roll-skip/db-0", "skipped: the node stays on "+a)
	if c := first.mcnConditions()["Drained"]; c.Reason != v1alpha1.DrainSkippedReason {
		t.Errorf("Drained condition %+v", c)
	}
	testkit.Eventually(t, "the second node done on "+b, func() (bool, string) {
		an := second.node().Annotations
		return an[ndpmcv1.CurrentConfigAnnotation] == b && an[ndpmcv1.StateAnnotation] == ndpmcv1.StateDone, fmt.Sprintf("%v", an)
	}, testkit.Within(2*time.Minute))
	r.waitHeld("skipped: node " + first.name + " gave up its drain to " + b)
	r.waitDecided()
	if sent := r.sentTo(b); strings.Join(sent, " ") != second.name {
		t.Fatalf("sent to %s: %v, want only %s", b, sent, second.name)
	}
	if got := first.readFile("/etc/motd"); !strings.HasPrefix(got, "<") {
		t.Errorf("the skipped node has /etc/motd: %q", got)
	}
	if first.reboots() != 0 {
		t.Errorf("the skipped node rebooted %d times", first.reboots())
	}
	var pod corev1.Pod
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: "roll-skip", Name: "db-0"}, &pod); err != nil || pod.DeletionTimestamp != nil {
		t.Errorf("the protected pod: %v, deleting %v", err, pod.DeletionTimestamp)
	}

	// Retried: the budget allows it now.
	setPDB(t, pdb, 1)
	if out, err := kubectlNdp(t, "retry", first.name); err != nil || out != "node "+first.name+" may go to "+b+" again\n" {
		t.Fatalf("kubectl ndp retry: %v\n%s", err, out)
	}
	r.waitDone(b, 3*time.Minute)
	if _, ok := first.node().Annotations[v1alpha1.DrainSkippedAnnotation]; ok {
		t.Errorf("%s still on the node after its update", v1alpha1.DrainSkippedAnnotation)
	}
}

// onDrainTimeout DeletePods: after 3 s the pod the budget protects is
// deleted (not evicted), named in an Event on the Node and on the pod with
// its budget, and the update goes on: both nodes finish.
func TestRolloutDrainTimeoutDeletesPods(t *testing.T) {
	r, first, _, b := drainTimeoutRollout(t, "roll-delete", v1alpha1.DrainTimeoutDeletePods)
	r.waitDone(b, 3*time.Minute)
	want := []string{"DrainDeletedPod: deleting pod roll-delete/db-0, not evicted within the drain timeout of 3s (PodDisruptionBudget roll-delete/db)"}
	waitEvent(t, "default", "Node", first.name, want...)
	waitEvent(t, "roll-delete", "Pod", "db-0", append(want, "for the update of node "+first.name)...)
	var pod corev1.Pod
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: "roll-delete", Name: "db-0"}, &pod); err == nil {
		t.Errorf("the protected pod is still there (deleting %v)", pod.DeletionTimestamp)
	}
	if first.reboots() != 1 || first.readFile("/etc/motd") != "hello\n" {
		t.Errorf("%s: %d reboots, /etc/motd %q", first.name, first.reboots(), first.readFile("/etc/motd"))
	}
}

// onDrainTimeout Wait: after 3 s the drain warns (a DrainTimeout Event
// naming the pod) and waits on: the node stays cordoned on its way, the
// pod is neither evicted nor deleted, the node is not skipped and the
// second node is not sent (the budget, maxUnavailable 1, is taken). Once
// the PodDisruptionBudget allows it, the drain finishes and both nodes
// go.
func TestRolloutDrainTimeoutWaits(t *testing.T) {
	r, first, pdb, b := drainTimeoutRollout(t, "roll-wait", v1alpha1.DrainTimeoutWait)
	waitEvent(t, "default", "Node", first.name, "DrainTimeout: ", "roll-wait/db-0", "waiting on (onDrainTimeout Wait)")
	n := first.node()
	if !n.Spec.Unschedulable || n.Annotations[ndpmcv1.DesiredConfigAnnotation] != b || n.Annotations[v1alpha1.DrainSkippedAnnotation] != "" {
		t.Fatalf("%s after its drain timed out: unschedulable %t, %v; want cordoned, on its way to %s, not skipped", first.name, n.Spec.Unschedulable, n.Annotations, b)
	}
	var pod corev1.Pod
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: "roll-wait", Name: "db-0"}, &pod); err != nil || pod.DeletionTimestamp != nil {
		t.Fatalf("the protected pod after the timeout: %v, deleting %v", err, pod.DeletionTimestamp)
	}
	if sent := r.sentTo(b); strings.Join(sent, " ") != first.name {
		t.Fatalf("sent to %s: %v, want only %s", b, sent, first.name)
	}
	if first.reboots() != 0 {
		t.Fatalf("%s rebooted %d times before its drain finished", first.name, first.reboots())
	}

	setPDB(t, pdb, 1)
	r.waitDone(b, 3*time.Minute)
	if first.reboots() != 1 || first.readFile("/etc/motd") != "hello\n" {
		t.Errorf("%s: %d reboots, /etc/motd %q", first.name, first.reboots(), first.readFile("/etc/motd"))
	}
}
