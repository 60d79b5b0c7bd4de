package node

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/internal/testkit/builder"
	"github.com/ndp-dev/ndp/planner/policy"
)

const poolLabel = "ndp.dev/test-pool"

// rollout is a pool of simulated nodes, each with its daemon, moved by
// ndp's controllers.
type rollout struct {
	t     *testing.T
	pool  string
	hosts []*host
}

// chronyPolicy makes a chrony change a restart of chronyd (once per run).
var chronyPolicyOnce sync.Once

func ensureChronyPolicy(t *testing.T) {
	chronyPolicyOnce.Do(func() {
		p := &v1alpha1.NodeDisruptionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "rollout-chrony"}}
		p.Spec.Files = []operatorv1.NodeDisruptionPolicySpecFile{{Path: "/etc/chrony.conf", Actions: []operatorv1.NodeDisruptionPolicySpecAction{policy.RestartAction("chronyd.service")}}}
		if err := k8s.Create(context.Background(), p); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	})
}

func chronyMC(pool, contents string) *ndpmcv1.MachineConfig {
	mc := builder.MachineConfig("50-"+pool+"-chrony").WithFileMap(map[string]string{"/etc/chrony.conf": contents}, 0o644).Build()
	mc.Labels = map[string]string{ndpmcv1.RoleLabel: pool}
	return mc
}

// newRollout creates a pool of n nodes running a chrony config, each with
// a running chronyd, adopted by their daemons.
func newRollout(t *testing.T, pool string, n int, maxUnavailable intstr.IntOrString) *rollout {
	t.Helper()
	ctx := context.Background()
	ensureChronyPolicy(t)
	r := &rollout{t: t, pool: pool}
	mcp := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: pool}, Spec: mcfgv1.MachineConfigPoolSpec{
		MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{ndpmcv1.RoleLabel: pool}},
		NodeSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{poolLabel: pool}},
		MaxUnavailable:        &maxUnavailable,
	}}
	if err := k8s.Create(ctx, mcp); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), mcp) })
	mc := chronyMC(pool, "pool 0.example.com\n")
	if err := k8s.Create(ctx, mc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), mc) })
	// The registries controller adds its MachineConfig to every pool: wait
	// for the rendering that has both, the config nodes join with.
	testkit.Eventually(t, "the rendering with the registries MachineConfig", func() (bool, string) {
		p := r.mcp()
		var srcs []string
		for _, s := range p.Spec.Configuration.Source {
			srcs = append(srcs, s.Name)
		}
		return len(srcs) == 2, fmt.Sprintf("pool %s renders from %v", pool, srcs)
	})
	for i := 0; i < n; i++ {
		h := newHost(t, fmt.Sprintf("%s-%d", pool, i))
		h.writeFile("/etc/chrony.conf", "pool 0.example.com\n")
		h.traceUnit("chronyd.service", "")
		h.traceUnit("crio.service", "") // registries changes reload CRI-O
		h.setLabels(map[string]string{poolLabel: pool, corev1.LabelTopologyZone: "zone-a"})
		h.setReady(true)
		h.start()
		r.hosts = append(r.hosts, h)
	}
	r.waitDone(r.target(), 3*time.Minute)
	return r
}

// setPaused pauses or resumes the pool with a patch of that one field, as
// an administrator's `oc patch` would: the controllers write the pool's
// status meanwhile, so a whole-object update could conflict.
func (r *rollout) setPaused(paused bool) {
	r.t.Helper()
	p := r.mcp()
	patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"paused":%t}}`, paused)))
	if err := k8s.Patch(context.Background(), p, patch); err != nil {
		r.t.Fatal(err)
	}
}

// target waits for the pool's target and returns it.
func (r *rollout) target() string {
	r.t.Helper()
	var name string
	testkit.Eventually(r.t, "the pool's first target", func() (bool, string) {
		p := r.mcp()
		name = p.Spec.Configuration.Name
		return name != "", "pool " + r.pool + " has no target yet"
	})
	return name
}

// newTarget waits for the pool's target to change from old.
func (r *rollout) newTarget(old string) string {
	r.t.Helper()
	var name string
	testkit.Eventually(r.t, "the pool's new target", func() (bool, string) {
		name = r.mcp().Spec.Configuration.Name
		return name != "" && name != old, "pool " + r.pool + " still targets " + old
	})
	return name
}

func (r *rollout) mcp() *mcfgv1.MachineConfigPool {
	r.t.Helper()
	var p mcfgv1.MachineConfigPool
	if err := k8s.Get(context.Background(), client.ObjectKey{Name: r.pool}, &p); err != nil {
		r.t.Fatal(err)
	}
	return &p
}

func (r *rollout) poolCondition(typ mcfgv1.MachineConfigPoolConditionType) mcfgv1.MachineConfigPoolCondition {
	for _, c := range r.mcp().Status.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return mcfgv1.MachineConfigPoolCondition{}
}

func (r *rollout) waitDone(config string, timeout time.Duration) {
	r.t.Helper()
	testkit.Eventually(r.t, "every node of the pool done", func() (bool, string) {
		var not []string
		for _, h := range r.hosts {
			a := h.node().Annotations
			if a[ndpmcv1.CurrentConfigAnnotation] != config || a[ndpmcv1.StateAnnotation] != ndpmcv1.StateDone {
				not = append(not, fmt.Sprintf("%s (%s, %s %s)", h.name, a[ndpmcv1.CurrentConfigAnnotation], a[ndpmcv1.StateAnnotation], a[ndpmcv1.ReasonAnnotation]))
			}
		}
		return len(not) == 0, "not yet Done on " + config + ": " + strings.Join(not, ", ")
	}, testkit.Within(timeout))
}

// changeChrony edits the pool's chrony MachineConfig.
func (r *rollout) changeChrony(contents string) {
	r.t.Helper()
	// Retried on conflict: the plan controller writes MachineConfig status.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var mc ndpmcv1.MachineConfig
		if err := k8s.Get(context.Background(), client.ObjectKey{Name: "50-" + r.pool + "-chrony"}, &mc); err != nil {
			return err
		}
		mc.Spec = chronyMC(r.pool, contents).Spec
		return k8s.Update(context.Background(), &mc)
	})
	if err != nil {
		r.t.Fatal(err)
	}
}

func (r *rollout) sentTo(config string) []string {
	var out []string
	for _, h := range r.hosts {
		if h.node().Annotations[ndpmcv1.DesiredConfigAnnotation] == config {
			out = append(out, h.name)
		}
	}
	return out
}

// decisions is the rollout controller's count of decisions on the pool
// (ndp_rollout_decisions_total).
func (r *rollout) decisions() int {
	return metricValue(scrape(r.t, controllerMetricsPort), fmt.Sprintf(`ndp_rollout_decisions_total{pool=%q}`, r.pool))
}

// waitDecided returns once the rollout controller has looked at the pool
// afresh and decided: two more decisions, each asked for by a change of
// an annotation of the pool. The queue hands a pool to one worker at a
// time, so the second began after the first ended, after this call began:
// it saw everything the test had observed before calling.
func (r *rollout) waitDecided() {
	r.t.Helper()
	before := r.decisions()
	for i := 1; i <= 2; i++ {
		poke(r.t, r.mcp(), i)
		testkit.Eventually(r.t, "the rollout controller decides on pool "+r.pool, func() (bool, string) {
			n := r.decisions()
			return n >= before+i, fmt.Sprintf("%d decisions, %d before", n, before)
		}, testkit.Within(time.Minute))
	}
}

func (h *host) setLabels(labels map[string]string) {
	h.t.Helper()
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
	if err := k8s.Patch(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: h.name}}, client.RawPatch("application/merge-patch+json", b)); err != nil {
		h.t.Fatal(err)
	}
}

// setReady sets the Ready condition, as the kubelet would, again on a
// conflict: the rollout controller may taint the node meanwhile.
func (h *host) setReady(ready bool) {
	h.t.Helper()
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n := h.node()
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st, Reason: "Simulated", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
		return k8s.Status().Update(context.Background(), n)
	}); err != nil {
		h.t.Fatal(err)
	}
}

// unavailability watches a pool's nodes and records the most that were
// unavailable at once (updating, not Ready, cordoned or degraded), and
// which. The watch is re-established whenever it ends (as it does when the
// API server restarts), each time from a fresh list.
type unavailability struct {
	mu    sync.Mutex
	nodes map[string]bool
	max   int
	who   string
}

func watchUnavailable(t *testing.T, pool string) *unavailability {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	u := &unavailability{nodes: map[string]bool{}}
	w, err := u.listAndWatch(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			for ev := range w.ResultChan() {
				if n, ok := ev.Object.(*corev1.Node); ok && ev.Type != watch.Deleted {
					u.observe(n)
				}
			}
			for {
				if ctx.Err() != nil {
					return
				}
				if w, err = u.listAndWatch(ctx, pool); err == nil {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
		}
	}()
	return u
}

// listAndWatch observes every node of the pool as listed, then watches
// from there.
func (u *unavailability) listAndWatch(ctx context.Context, pool string) (watch.Interface, error) {
	var list corev1.NodeList
	if err := k8s.List(ctx, &list, client.MatchingLabels{poolLabel: pool}); err != nil {
		return nil, err
	}
	for i := range list.Items {
		u.observe(&list.Items[i])
	}
	return k8s.Watch(ctx, &corev1.NodeList{}, client.MatchingLabels{poolLabel: pool}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
}

func (u *unavailability) observe(n *corev1.Node) {
	a := n.Annotations
	ready := false
	for _, c := range n.Status.Conditions {
		ready = ready || (c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue)
	}
	out := a[ndpmcv1.DesiredConfigAnnotation] != a[ndpmcv1.CurrentConfigAnnotation] || a[ndpmcv1.StateAnnotation] != ndpmcv1.StateDone ||
		!ready || n.Spec.Unschedulable
	u.mu.Lock()
	defer u.mu.Unlock()
	u.nodes[n.Name] = out
	var outs []string
	for name, o := range u.nodes {
		if o {
			outs = append(outs, name)
		}
	}
	if len(outs) > u.max {
		sort.Strings(outs)
		u.max, u.who = len(outs), strings.Join(outs, ", ")
	}
}

// peak is the most nodes out at once since the last reset, and which.
func (u *unavailability) peak() (int, string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.max, u.who
}

func (u *unavailability) reset() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.max, u.who = 0, ""
}

// A 3-node pool and a chrony change under a restart policy: every node
// restarts chronyd exactly once, nothing is drained or rebooted, and the
// watch never sees more nodes out than maxUnavailable allows: one at a
// time with 1, two at a time (never three) with 2.
func TestRolloutRespectsMaxUnavailable(t *testing.T) {
	r := newRollout(t, "roll-budget", 3, intstr.FromInt(1))
	a := r.target()
	starts := map[string]int{}
	for _, h := range r.hosts {
		starts[h.name], _ = h.runs("chronyd.service")
	}
	u := watchUnavailable(t, r.pool)
	r.changeChrony("pool 1.example.com\n")
	b := r.newTarget(a)
	testkit.Eventually(t, "the ClusterOperator says the pool is progressing", func() (bool, string) {
		c := operatorCondition(t, configv1.OperatorProgressing)
		return c.Status == configv1.ConditionTrue && strings.Contains(c.Message, "pool "+r.pool) || len(r.sentTo(b)) == 3, fmt.Sprintf("ClusterOperator Progressing %+v", c)
	}, testkit.Within(time.Minute))
	r.waitDone(b, 3*time.Minute)
	if p, _ := u.peak(); p != 1 {
		t.Errorf("maxUnavailable 1: at most %d nodes were out at once (want exactly 1)", p)
	}
	for _, h := range r.hosts {
		if s, reloads := h.runs("chronyd.service"); s-starts[h.name] != 1 || reloads != 0 {
			t.Errorf("%s: chronyd started %d times, reloaded %d times", h.name, s-starts[h.name], reloads)
		}
		if h.reboots() != 0 || h.node().Spec.Unschedulable {
			t.Errorf("%s: rebooted or cordoned", h.name)
		}
		if got := h.readFile("/etc/chrony.conf"); got != "pool 1.example.com\n" {
			t.Errorf("%s: /etc/chrony.conf %q", h.name, got)
		}
	}
	testkit.Eventually(t, "the pool's status counts", func() (bool, string) {
		p := r.mcp()
		s := p.Status
		return s.MachineCount == 3 && s.UpdatedMachineCount == 3 && s.ReadyMachineCount == 3 && s.UnavailableMachineCount == 0 &&
				s.Configuration.Name == b && r.poolCondition(mcfgv1.MachineConfigPoolUpdated).Status == corev1.ConditionTrue,
			fmt.Sprintf("pool status: %+v", s)
	}, testkit.Within(time.Minute))

	// A patch of the one field: the controllers write the pool's status.
	if err := k8s.Patch(context.Background(), r.mcp(), client.RawPatch(types.MergePatchType, []byte(`{"spec":{"maxUnavailable":2}}`))); err != nil {
		t.Fatal(err)
	}
	u.reset()
	r.changeChrony("pool 2.example.com\n")
	c := r.newTarget(b)
	r.waitDone(c, 3*time.Minute)
	if p, _ := u.peak(); p != 2 {
		t.Errorf("maxUnavailable 2: at most %d nodes were out at once (want exactly 2)", p)
	}
}

// A node that is not Ready is never picked and counts against the budget;
// pausing mid-rollout stops new slots, and unpausing resumes.
func TestRolloutPausesAndCountsNotReadyNodes(t *testing.T) {
	r := newRollout(t, "roll-pause", 3, intstr.FromInt(1))
	a := r.target()
	first, sick := r.hosts[0], r.hosts[2] // the oldest goes first (then by name)
	sick.setReady(false)
	first.stop() // its update will stay under way until the test lets it finish
	r.changeChrony("pool 1.example.com\n")
	b := r.newTarget(a)
	// The NotReady node takes the only slot: nobody is sent.
	testkit.Eventually(t, "the NotReady node takes the only slot", func() (bool, string) {
		c := r.poolCondition(mcfgv1.MachineConfigPoolUpdating)
		return c.Status == corev1.ConditionTrue && r.mcp().Status.UnavailableMachineCount == 1, fmt.Sprintf("Updating: %+v, status %+v", c, r.mcp().Status)
	}, testkit.Within(time.Minute))
	r.waitDecided() // nothing may happen: the controller looked and sent nobody
	if sent := r.sentTo(b); len(sent) != 0 {
		t.Fatalf("nodes sent while a NotReady node used the budget: %v", sent)
	}

	// Ready again: the first node is sent; paused while it updates.
	sick.setReady(true)
	testkit.Eventually(t, "the first node is sent", func() (bool, string) {
		sent := r.sentTo(b)
		return len(sent) == 1 && sent[0] == first.name, fmt.Sprintf("sent to %s: %v", b, sent)
	}, testkit.Within(time.Minute))
	r.setPaused(true)
	first.start()
	first.waitState(ndpmcv1.StateDone, b, 2*time.Minute)
	testkit.Eventually(t, "the pool pauses", func() (bool, string) {
		c := r.poolCondition(mcfgv1.MachineConfigPoolUpdating)
		return c.Reason == "Paused" && r.mcp().Status.UpdatedMachineCount == 1, fmt.Sprintf("Updating: %+v", c)
	}, testkit.Within(time.Minute))
	r.waitDecided()
	if sent := r.sentTo(b); len(sent) != 1 {
		t.Fatalf("nodes sent while the pool is paused: %v", sent)
	}

	r.setPaused(false)
	r.waitDone(b, 3*time.Minute)
}

// A target whose plan is not ready sends no node: here the nodes run a
// config that no longer exists, so no plan from it can be made.
func TestRolloutWaitsForThePlan(t *testing.T) {
	r := newRollout(t, "roll-plan", 2, intstr.FromInt(2))
	a := r.target()
	for _, h := range r.hosts {
		h.stop() // their daemons would correct the annotation from the host
		h.annotate(map[string]string{ndpmcv1.CurrentConfigAnnotation: "rendered-roll-plan-gone", ndpmcv1.DesiredConfigAnnotation: "rendered-roll-plan-gone"})
	}
	r.changeChrony("pool 1.example.com\n")
	b := r.newTarget(a)
	testkit.Eventually(t, "the target's plan", func() (bool, string) {
		var mc ndpmcv1.MachineConfig
		if err := k8s.Get(context.Background(), client.ObjectKey{Name: b}, &mc); err != nil {
			return false, err.Error()
		}
		for _, c := range mc.Status.Conditions {
			if c.Type == ndpmcv1.ConditionPlanReady && c.Status == metav1.ConditionFalse {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%s conditions: %+v", b, mc.Status.Conditions)
	}, testkit.Within(time.Minute))
	r.waitDecided()
	if sent := r.sentTo(b); len(sent) != 0 {
		t.Fatalf("nodes sent to a target without a plan for them: %v", sent)
	}
}

// A daemon that goes Degraded stops the rollout (it consumes the budget);
// the pool says which node and why; fixing the MachineConfig recovers.
func TestDegradedNodeStopsTheRollout(t *testing.T) {
	r := newRollout(t, "roll-degraded", 3, intstr.FromInt(1))
	a := r.target()
	// chronyd cannot start on the oldest node, the first to be picked.
	bad := r.hosts[0]
	bad.stop()
	bad.metricsPort = testkit.FreePort(t)
	bad.start()
	bad.traceUnit("chronyd.service", "/bin/false")
	_ = bad.sd.Systemctl("reset-failed", "chronyd.service")
	r.changeChrony("pool 1.example.com\n")
	b := r.newTarget(a)
	bad.waitState(ndpmcv1.StateDegraded, a, 3*time.Minute)
	testkit.Eventually(t, "the pool is degraded", func() (bool, string) {
		c := r.poolCondition(mcfgv1.MachineConfigPoolNodeDegraded)
		d := r.poolCondition(mcfgv1.MachineConfigPoolDegraded)
		return c.Status == corev1.ConditionTrue && strings.Contains(c.Message, bad.name) && strings.Contains(c.Message, "chronyd.service") &&
			d.Status == corev1.ConditionTrue && r.mcp().Status.DegradedMachineCount == 1, fmt.Sprintf("NodeDegraded %+v, Degraded %+v", c, d)
	}, testkit.Within(time.Minute))
	// The ClusterOperator says it too.
	testkit.Eventually(t, "the ClusterOperator says the pool is degraded", func() (bool, string) {
		d, u := operatorCondition(t, configv1.OperatorDegraded), operatorCondition(t, configv1.OperatorUpgradeable)
		return d.Status == configv1.ConditionTrue && strings.Contains(d.Message, "pool "+r.pool) && strings.Contains(d.Message, bad.name) &&
			u.Status == configv1.ConditionFalse, fmt.Sprintf("ClusterOperator Degraded %+v, Upgradeable %+v", d, u)
	}, testkit.Within(time.Minute))
	if c := operatorCondition(t, configv1.OperatorAvailable); c.Status != configv1.ConditionTrue {
		t.Errorf("ClusterOperator Available: %+v", c)
	}
	// The metrics the shipped alerts read say it as well.
	metrics := scrape(t, bad.metricsPort) + scrape(t, controllerMetricsPort)
	for _, want := range []string{fmt.Sprintf(`ndp_daemon_degraded{node=%q} 1`, bad.name), fmt.Sprintf(`ndp_pool_nodes{pool=%q,state="degraded"} 1`, r.pool)} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	rule, err := os.ReadFile("../../manifests/monitoring/prometheusrule.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range regexp.MustCompile(`ndp_[a-z_]+`).FindAllString(string(rule), -1) {
		if !strings.Contains(metrics, "\n"+name+"{") {
			t.Errorf("the PrometheusRule reads %s, which ndp does not serve", name)
		}
	}
	r.waitDecided()
	if sent := r.sentTo(b); len(sent) != 1 || sent[0] != bad.name {
		t.Fatalf("after a node degraded, nodes sent to %s: %v", b, sent)
	}
	// The fix: the change is taken back. The degraded node is sent to the
	// fixed target at once and the pool recovers.
	r.changeChrony("pool 0.example.com\n")
	fixed := r.newTarget(b)
	if fixed != a {
		t.Fatalf("the fix renders %s, want %s again", fixed, a)
	}
	r.waitDone(a, 3*time.Minute)
	testkit.Eventually(t, "the pool recovers", func() (bool, string) {
		c := r.poolCondition(mcfgv1.MachineConfigPoolDegraded)
		return c.Status == corev1.ConditionFalse && r.poolCondition(mcfgv1.MachineConfigPoolUpdated).Status == corev1.ConditionTrue, fmt.Sprintf("Degraded %+v", c)
	}, testkit.Within(time.Minute))
	testkit.Eventually(t, "the ClusterOperator no longer names the pool", func() (bool, string) {
		d := operatorCondition(t, configv1.OperatorDegraded)
		return !strings.Contains(d.Message, "pool "+r.pool), fmt.Sprintf("ClusterOperator Degraded %+v", d)
	}, testkit.Within(time.Minute))
}

func operatorCondition(t *testing.T, typ configv1.ClusterStatusConditionType) configv1.ClusterOperatorStatusCondition {
	var co configv1.ClusterOperator
	if err := k8s.Get(context.Background(), client.ObjectKey{Name: "ndp"}, &co); err != nil {
		return configv1.ClusterOperatorStatusCondition{Message: err.Error()}
	}
	for _, c := range co.Status.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return configv1.ClusterOperatorStatusCondition{}
}

// emptyRun empties the host's /run, as a boot does (a tmpfs): the
// packages' reboot requests go with it.
func (h *host) emptyRun() {
	h.t.Helper()
	entries, _ := os.ReadDir(h.path("/run"))
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(h.path("/run"), e.Name())); err != nil {
			h.t.Error(err)
		}
	}
}

// superviseHosts restarts a pool's daemons when they exit, as their
// DaemonSet would, and reboots a node that asks for it (a rollout's plans
// should not: the trials count reboots).
func superviseHosts(t *testing.T, hosts []*host) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	for _, h := range hosts {
		go func() {
			boot, reboots := 1, h.reboots()
			for ctx.Err() == nil {
				h.mu.Lock()
				done := h.done
				h.mu.Unlock()
				select {
				case <-done:
				case <-time.After(200 * time.Millisecond):
					if h.reboots() == reboots {
						continue
					}
					reboots = h.reboots()
					h.stop()
					boot++
					h.setBootID(fmt.Sprintf("boot-%d", boot))
					h.emptyRun()
				case <-ctx.Done():
					return
				}
				time.Sleep(time.Second)
				if ctx.Err() != nil {
					return
				}
				h.start()
			}
		}()
	}
}
