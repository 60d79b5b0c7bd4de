package node

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/internal/testkit/builder"
)

// pluginDir holds kubectl-ndp, built once for the tests that run it.
var (
	pluginOnce sync.Once
	pluginDir  string
)

// kubectlNdp runs `kubectl ndp ARGS` (the real kubectl and this tree's
// plugin) against the test's API server.
func kubectlNdp(t *testing.T, args ...string) (string, error) {
	t.Helper()
	pluginOnce.Do(func() {
		d, err := os.MkdirTemp("", "ndp-plugin-")
		if err != nil {
			t.Fatal(err)
		}
		afterTests = append(afterTests, func() int { _ = os.RemoveAll(d); return 0 })
		if out, err := exec.Command("go", "build", "-o", d+"/kubectl-ndp", "github.com/ndp-dev/ndp/cmd/ndp").CombinedOutput(); err != nil {
			t.Fatalf("go build ./cmd/ndp: %v\n%s", err, out)
		}
		pluginDir = d
	})
	cmd := exec.Command(kubectlBin, append([]string{"ndp"}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "PATH="+pluginDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// labelPool gives the rollout's pool a label a RolloutPolicy selects.
func (r *rollout) labelPool() map[string]string {
	r.t.Helper()
	l := map[string]string{"test.ndp.dev/rollout": r.pool}
	patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"labels":{"test.ndp.dev/rollout":%q}}}`, r.pool)))
	if err := k8s.Patch(context.Background(), r.mcp(), patch); err != nil {
		r.t.Fatal(err)
	}
	return l
}

// namespace creates a namespace for the test's pods, deleted after it.
func namespace(t *testing.T, name string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), ns) })
	return name
}

// waitHeld waits for the pool's RolloutHeld condition to hold with a
// message that contains each of want.
func (r *rollout) waitHeld(want ...string) mcfgv1.MachineConfigPoolCondition {
	r.t.Helper()
	var c mcfgv1.MachineConfigPoolCondition
	testkit.Eventually(r.t, "the pool's RolloutHeld condition", func() (bool, string) {
		c = r.poolCondition(ndpmcv1.ConditionRolloutHeld)
		ok := c.Status == corev1.ConditionTrue
		for _, w := range want {
			ok = ok && strings.Contains(c.Message, w)
		}
		return ok, fmt.Sprintf("RolloutHeld %+v, want %q", c, want)
	}, testkit.Within(time.Minute))
	return c
}

// waitReleased waits for the pool's target to be target and nothing to
// hold its starts.
func (r *rollout) waitReleased(target string) {
	r.t.Helper()
	testkit.Eventually(r.t, "the hold released", func() (bool, string) {
		c := r.poolCondition(ndpmcv1.ConditionRolloutHeld)
		return r.mcp().Spec.Configuration.Name == target && c.Status == corev1.ConditionFalse, fmt.Sprintf("target %s, RolloutHeld %+v", r.mcp().Spec.Configuration.Name, c)
	}, testkit.Within(time.Minute))
}

// closedWindowPolicy creates a RolloutPolicy of the pool whose one window,
// for plans that reboot or drain, opens at 02:00 UTC two days from now:
// closed now, whatever the time. It returns the policy and that day.
func (r *rollout) closedWindowPolicy(name string) (*v1alpha1.RolloutPolicy, string) {
	r.t.Helper()
	day := time.Now().UTC().Add(48 * time.Hour).Format("Mon")
	pol := &v1alpha1.RolloutPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.RolloutPolicySpec{
		PoolSelector: metav1.LabelSelector{MatchLabels: r.labelPool()},
		Windows:      []v1alpha1.MaintenanceWindow{{Name: "night", Days: []v1alpha1.Weekday{v1alpha1.Weekday(day)}, Start: "02:00", End: "04:00", TimeZone: "UTC"}},
	}}
	if err := k8s.Create(context.Background(), pol); err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { _ = k8s.Delete(context.Background(), pol) })
	return pol, day
}

// A window that holds plans that reboot or drain: a chrony change,
// planned as a restart, goes at once; a change that reboots waits, and
// the pool, the policy's status and the metrics say why and until when.
func TestRolloutPolicyWindowHoldsTheRebootNotTheRestart(t *testing.T) {
	r := newRollout(t, "roll-window", 2, intstr.FromInt(1))
	a := r.target()
	pol, day := r.closedWindowPolicy("roll-window")

	// The restart goes at once, through the policy.
	r.changeChrony("pool 1.example.com\n")
	b := r.newTarget(a)
	r.waitDone(b, 3*time.Minute)

	// A file no NodeDisruptionPolicy claims: the plan reboots. It waits.
	motd := builder.MachineConfig("60-roll-window-motd").WithFileMap(map[string]string{"/etc/motd": "hello\n"}, 0o644).Build()
	motd.Labels = map[string]string{ndpmcv1.RoleLabel: r.pool}
	if err := k8s.Create(context.Background(), motd); err != nil {
		t.Fatal(err)
	}
	c := r.newTarget(b)
	cond := r.waitHeld("waiting: outside the maintenance window, opens "+day+" 02:00 UTC for plans that reboot", "(2 nodes)")
	r.waitDecided()
	if sent := r.sentTo(c); len(sent) != 0 {
		t.Fatalf("nodes sent outside the window to a plan that reboots: %v (RolloutHeld: %s)", sent, cond.Message)
	}
	testkit.Eventually(t, "the policy's status", func() (bool, string) {
		var p v1alpha1.RolloutPolicy
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(pol), &p); err != nil {
			return false, err.Error()
		}
		st := p.Status
		ok := st.ObservedGeneration == p.Generation && meta.IsStatusConditionTrue(st.Conditions, v1alpha1.RolloutPolicyAccepted) &&
			meta.IsStatusConditionTrue(st.Conditions, v1alpha1.RolloutPolicyHolding) && len(st.Pools) == 1 && st.Pools[0].Holding &&
			st.Pools[0].NextStart != nil && len(st.Pools[0].Reasons) == 1 && strings.HasPrefix(st.Pools[0].Reasons[0], "waiting: outside the maintenance window")
		return ok, fmt.Sprintf("status %+v", st)
	}, testkit.Within(time.Minute))
	if v := metricValue(scrape(t, controllerMetricsPort), fmt.Sprintf(`ndp_rollout_held{pool=%q,reason_kind="Window"}`, r.pool)); v != 2 {
		t.Errorf("ndp_rollout_held Window: %d, want 2", v)
	}

	// Taken back: the pool returns to b, which every node runs; nothing is
	// held any more.
	if err := k8s.Delete(context.Background(), motd); err != nil {
		t.Fatal(err)
	}
	r.waitReleased(b)
	for _, h := range r.hosts {
		if h.reboots() != 0 {
			t.Errorf("%s rebooted", h.name)
		}
	}
}

// A node held with `kubectl ndp hold` is skipped: the others go, one at a
// time (maxUnavailable 1), the pool and `kubectl ndp status` name the
// held node; released, it goes too.
func TestRolloutSkipsAHeldNode(t *testing.T) {
	r := newRollout(t, "roll-hold", 3, intstr.FromInt(1))
	a := r.target()
	held := r.hosts[0] // the oldest: it would go first
	out, err := kubectlNdp(t, "hold", held.name, "--reason", "disk swap", "--by", "alice")
	if err != nil || out != "node "+held.name+" held: disk swap (by alice)\n" {
		t.Fatalf("kubectl ndp hold: %v\n%s", err, out)
	}
	if out, err := kubectlNdp(t, "hold", "roll-hold-nope"); err == nil || !strings.Contains(out, `node "roll-hold-nope" not found`) {
		t.Errorf("kubectl ndp hold of an unknown node: %v\n%s", err, out)
	}
	u := watchUnavailable(t, r.pool)
	r.changeChrony("pool 1.example.com\n")
	b := r.newTarget(a)
	testkit.Eventually(t, "the other nodes done", func() (bool, string) {
		var on []string
		for _, h := range r.hosts[1:] {
			n := h.node()
			if n.Annotations[ndpmcv1.CurrentConfigAnnotation] == b && n.Annotations[ndpmcv1.StateAnnotation] == ndpmcv1.StateDone {
				on = append(on, h.name)
			}
		}
		return len(on) == 2, fmt.Sprintf("done on %s: %v", b, on)
	}, testkit.Within(3*time.Minute))
	want := "held: node " + held.name + " by annotation ndp.dev/hold: disk swap (by alice)"
	r.waitHeld(want)
	r.waitDecided()
	if sent := r.sentTo(b); len(sent) != 2 {
		t.Fatalf("sent to %s: %v; the held node must not be", b, sent)
	}
	out, err = kubectlNdp(t, "status", r.pool)
	if err != nil || !strings.Contains(out, "Rollout:\n  policies: none\n  "+want+"\n") || !strings.Contains(out, "  held: disk swap\n") {
		t.Errorf("kubectl ndp status: %v\n%s", err, out)
	}

	if out, err := kubectlNdp(t, "release", held.name); err != nil || out != "node "+held.name+" released\n" {
		t.Fatalf("kubectl ndp release: %v\n%s", err, out)
	}
	r.waitDone(b, 3*time.Minute)
	if p, who := u.peak(); p != 1 {
		t.Errorf("maxUnavailable 1: at most %d nodes were out at once (%s), want exactly 1", p, who)
	}
	r.waitReleased(b)
}

// A blocking-pods gate (node scope), through the controller's cache as
// ndp-controller reads it: the node a backup pod runs on is held, the
// other goes at once (maxUnavailable 2); the backup done, the held node
// goes too.
func TestRolloutHoldsTheNodeOfABlockingPod(t *testing.T) {
	ctx := context.Background()
	r := newRollout(t, "roll-blocking", 2, intstr.FromInt(2))
	a := r.target()
	ns := namespace(t, "roll-blocking")
	busy, free := r.hosts[0], r.hosts[1]
	backup := runningPod(t, ns, "backup", busy.name, map[string]string{"app": "roll-blocking-backup"}, nil)
	pol := &v1alpha1.RolloutPolicy{ObjectMeta: metav1.ObjectMeta{Name: "roll-blocking"}, Spec: v1alpha1.RolloutPolicySpec{
		PoolSelector: metav1.LabelSelector{MatchLabels: r.labelPool()},
		Gates: &v1alpha1.RolloutGates{BlockingPods: &v1alpha1.BlockingPodsGate{
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "roll-blocking-backup"}}, Scope: v1alpha1.BlockingPodsNode}},
	}}
	if err := k8s.Create(ctx, pol); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), pol) })

	r.changeChrony("pool 1.example.com\n")
	b := r.newTarget(a)
	testkit.Eventually(t, free.name+" done", func() (bool, string) {
		n := free.node()
		return n.Annotations[ndpmcv1.CurrentConfigAnnotation] == b && n.Annotations[ndpmcv1.StateAnnotation] == ndpmcv1.StateDone,
			fmt.Sprintf("%s runs %s (%s)", free.name, n.Annotations[ndpmcv1.CurrentConfigAnnotation], n.Annotations[ndpmcv1.StateAnnotation])
	}, testkit.Within(3*time.Minute))
	r.waitHeld("waiting: blocking pod roll-blocking/backup on node " + busy.name + " [rolloutpolicy roll-blocking]")
	r.waitDecided()
	if sent := r.sentTo(b); len(sent) != 1 || sent[0] != free.name {
		t.Fatalf("sent to %s: %v, want only %s while the backup runs on %s", b, sent, free.name, busy.name)
	}

	// The backup is done and gone (at once, as its kubelet would confirm):
	// the held node goes (the controller looks again on its own: it
	// watches no pods).
	if err := k8s.Delete(ctx, backup, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	r.waitDone(b, 3*time.Minute)
	r.waitReleased(b)
}

// Pacing that waits for drained pods: a change that drains; the first
// node's drain evicts a pod of a ReplicaSet (listed on its Node,
// ndp.dev/drained-pods); while the ReplicaSet has a pod on its way (its
// status says one of its pods is not Ready, and its pods say which) and
// none created since the drain is Ready, the next node waits and the pool
// says for which; a Ready replacement releases it, before the ReplicaSet's
// status says so.
func TestRolloutWaitsForDrainedPodsReady(t *testing.T) {
	ctx := context.Background()
	r := newRollout(t, "roll-drained", 2, intstr.FromInt(1))
	a := r.target()
	ns := namespace(t, "roll-drained")
	// On each node a pod of its own ReplicaSet, which also has a pod
	// pending (not Ready, on no node): it has pods on their way.
	owners := map[string]*metav1.OwnerReference{}
	for _, h := range r.hosts {
		kubelet(t, h.name)
		owner := replicaSet(t, ns, "web-"+h.name)
		owners[h.name] = owner
		runningPod(t, ns, "web-"+h.name+"-a", h.name, podLabels(owner.Name), owner)
		pending := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-" + h.name + "-pending", Labels: podLabels(owner.Name), OwnerReferences: []metav1.OwnerReference{*owner}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example/app:1"}}}}
		if err := k8s.Create(ctx, pending); err != nil {
			t.Fatal(err)
		}
	}
	pol := &v1alpha1.RolloutPolicy{ObjectMeta: metav1.ObjectMeta{Name: "roll-drained"}, Spec: v1alpha1.RolloutPolicySpec{
		PoolSelector: metav1.LabelSelector{MatchLabels: r.labelPool()},
		Pacing:       &v1alpha1.RolloutPacing{WaitForDrainedPodsReady: true},
	}}
	if err := k8s.Create(ctx, pol); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), pol) })
	u := watchUnavailable(t, r.pool)
	superviseHosts(t, r.hosts) // the reboots

	// A file no NodeDisruptionPolicy claims: drain and reboot.
	motd := builder.MachineConfig("60-roll-drained-motd").WithFileMap(map[string]string{"/etc/motd": "hello\n"}, 0o644).Build()
	motd.Labels = map[string]string{ndpmcv1.RoleLabel: r.pool}
	if err := k8s.Create(ctx, motd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), motd) })
	b := r.newTarget(a)

	var first *host
	testkit.Eventually(t, "one node done", func() (bool, string) {
		for _, h := range r.hosts {
			n := h.node()
			if n.Annotations[ndpmcv1.CurrentConfigAnnotation] == b && n.Annotations[ndpmcv1.StateAnnotation] == ndpmcv1.StateDone {
				first = h
				return true, ""
			}
		}
		var pods corev1.PodList
		_ = k8s.List(ctx, &pods, client.InNamespace(ns))
		var st []string
		for _, p := range pods.Items {
			st = append(st, fmt.Sprintf("%s on %q deleting %v", p.Name, p.Spec.NodeName, p.DeletionTimestamp))
		}
		return false, "no node done on " + b + "; pods: " + strings.Join(st, ", ")
	}, testkit.Within(3*time.Minute))
	owner := owners[first.name]
	var drained v1alpha1.DrainedPods
	if err := json.Unmarshal([]byte(first.node().Annotations[v1alpha1.DrainedPodsAnnotation]), &drained); err != nil {
		t.Fatalf("%s's %s: %v", first.name, v1alpha1.DrainedPodsAnnotation, err)
	}
	if len(drained.Owners) != 1 || drained.Owners[0].UID != owner.UID || drained.Owners[0].Pods != 1 {
		t.Fatalf("%s's drain evicted %+v, want the one pod of %s", first.name, drained, owner.Name)
	}
	if at, err := time.Parse(time.RFC3339, first.node().Annotations[v1alpha1.UpdateDoneAnnotation]); err != nil || at.Before(drained.At.Time) {
		t.Errorf("%s's %s: %v, %v; want the update's end, after its drain at %s", first.name, v1alpha1.UpdateDoneAnnotation, at, err, drained.At)
	}
	r.waitHeld("waiting: pods drained from node " + first.name + " are not Ready yet: ReplicaSet roll-drained/" + owner.Name + " (0 of 1 Ready) [rolloutpolicy roll-drained]")
	r.waitDecided()
	if sent := r.sentTo(b); len(sent) != 1 {
		t.Fatalf("sent to %s: %v, want only %s while its drained pod is not back", b, sent, first.name)
	}

	// The ReplicaSet's replacement, Ready on the node that is back.
	runningPod(t, ns, "web-"+first.name+"-b", first.name, podLabels(owner.Name), owner)
	r.waitDone(b, 3*time.Minute)
	if p, who := u.peak(); p != 1 {
		t.Errorf("maxUnavailable 1: at most %d nodes were out at once (%s), want exactly 1", p, who)
	}
}

// replicaSet creates a ReplicaSet of two pods, one Ready, with the status
// its controller would write (nothing runs it here: the test makes its
// pods, labelled podLabels(name)), and returns the owner reference its
// pods carry.
func replicaSet(t *testing.T, ns, name string) *metav1.OwnerReference {
	t.Helper()
	two := int32(2)
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: appsv1.ReplicaSetSpec{
		Replicas: &two,
		Selector: &metav1.LabelSelector{MatchLabels: podLabels(name)},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: podLabels(name)},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example/app:1"}}}},
	}}
	if err := k8s.Create(context.Background(), rs); err != nil {
		t.Fatal(err)
	}
	rs.Status = appsv1.ReplicaSetStatus{ObservedGeneration: rs.Generation, Replicas: 2, ReadyReplicas: 1}
	if err := k8s.Status().Update(context.Background(), rs); err != nil {
		t.Fatal(err)
	}
	yes := true
	return &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: &yes}
}

// podLabels are the labels of ReplicaSet name's pods.
func podLabels(name string) map[string]string { return map[string]string{"app": name} }
