package executor

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/rolloutcontrol"
)

// A Thursday noon in Berlin; the window opens Saturday 02:00.
var policyNow = time.Date(2026, 11, 26, 11, 0, 0, 0, time.UTC)

func saturdayWindow(holds ...v1alpha1.PlanKind) *v1alpha1.RolloutPolicy {
	return &v1alpha1.RolloutPolicy{ObjectMeta: metav1.ObjectMeta{Name: "workers"}, Spec: v1alpha1.RolloutPolicySpec{
		Windows: []v1alpha1.MaintenanceWindow{{Days: []v1alpha1.Weekday{"Sat"}, Start: "02:00", End: "04:00", TimeZone: "Europe/Berlin", Holds: holds}},
	}}
}

// planTarget is the target "new" with a reboot plan from "old-r", a
// restart plan from "old-s" and a files-only plan from "old".
func planTarget() *ndpmcv1.MachineConfig {
	mc := testTarget(true)
	mc.Status.PostConfigActions = []ndpmcv1.PostConfigActions{
		{From: "old-r", Reboot: true, Actions: []ndpmcv1.PlanAction{{Type: ndpmcv1.RebootAction}}},
		{From: "old-s", Actions: []ndpmcv1.PlanAction{{Type: ndpmcv1.RestartAction, Restart: &ndpmcv1.PlanService{ServiceName: "chronyd.service"}}}},
		{From: "old", Actions: []ndpmcv1.PlanAction{{Type: ndpmcv1.NoneAction}}},
	}
	return mc
}

// held marks a test node as held by annotation: its state names the
// reason, "held:<why>" (heldNodes applies it).
func held(n testNode, why string) testNode {
	n.reason = "held:" + why
	return n
}

// heldNodes builds the test nodes, moving held's mark to ndp.dev/hold.
func heldNodes(ts ...testNode) []*corev1.Node {
	nodes := testNodes(ts...)
	for _, n := range nodes {
		if why, ok := strings.CutPrefix(n.Annotations[ndpmcv1.ReasonAnnotation], "held:"); ok {
			delete(n.Annotations, ndpmcv1.ReasonAnnotation)
			n.Annotations[v1alpha1.HoldAnnotation] = why
		}
	}
	return nodes
}

func TestDecideRolloutWithPolicies(t *testing.T) {
	saturday := time.Date(2026, 11, 28, 1, 0, 0, 0, time.UTC) // 02:00 Berlin
	for _, tc := range []struct {
		name     string
		pool     *mcfgv1.MachineConfigPool
		nodes    []testNode
		policies []*v1alpha1.RolloutPolicy
		gates    rolloutcontrol.GateResults
		want     decision
		next     time.Time
		lines    []string
	}{
		{
			name:     "a window holds the reboot plan while the restart plan goes",
			pool:     testPool("new", intOrPercent("100%"), false),
			nodes:    []testNode{at(done("reboot", "old-r"), "", 1), at(done("restart", "old-s"), "", 2)},
			policies: []*v1alpha1.RolloutPolicy{saturdayWindow()},
			want:     decision{Budget: 2, Send: []string{"restart"}, Held: map[string]holdReason{"reboot": holdPolicy}},
			next:     saturday,
			lines:    []string{"waiting: outside the maintenance window, opens Sat 02:00 Europe/Berlin for plans that reboot (1 node)"},
		},
		{
			name:  "a held node is skipped, the next goes, without any policy",
			pool:  testPool("new", intOrPercent("1"), false),
			nodes: []testNode{held(at(done("a", "old"), "", 1), "disk swap"), at(done("b", "old"), "", 2), at(done("c", "old"), "", 3)},
			want:  decision{Budget: 1, Send: []string{"b"}, Held: map[string]holdReason{"a": holdPolicy, "c": holdOverBudget}},
			lines: []string{"held: node a by annotation ndp.dev/hold: disk swap"},
		},
		{
			name:     "gates never evaluated hold every start",
			pool:     testPool("new", intOrPercent("2"), false),
			nodes:    []testNode{at(done("a", "old"), "", 1), at(done("b", "old"), "", 2), at(done("c", "old"), "", 3)},
			policies: []*v1alpha1.RolloutPolicy{{ObjectMeta: metav1.ObjectMeta{Name: "gated"}, Spec: v1alpha1.RolloutPolicySpec{Gates: &v1alpha1.RolloutGates{BlockingPods: &v1alpha1.BlockingPodsGate{Selector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, Scope: v1alpha1.BlockingPodsCluster}}}}},
			want:     decision{Budget: 2, Held: map[string]holdReason{"a": holdPolicy, "b": holdPolicy, "c": holdPolicy}},
			lines:    []string{"waiting: blocking pods: not evaluated yet, holding (failOpen=false) [rolloutpolicy gated]"},
		},
		{
			name: "a redirect that would reboot keeps to the window; one that adopts goes",
			pool: testPool("new", intOrPercent("100%"), false),
			nodes: []testNode{{name: "failed", cur: "old-r", desired: "older", state: ndpmcv1.StateDegraded},
				{name: "fresh", notReady: true}},
			policies: []*v1alpha1.RolloutPolicy{saturdayWindow()},
			want:     decision{Budget: 2, Out: 2, Redirect: []string{"fresh"}, Held: map[string]holdReason{"failed": holdPolicy}},
			next:     saturday,
			lines:    []string{"waiting: outside the maintenance window, opens Sat 02:00 Europe/Berlin for plans that reboot (1 node)"},
		},
		{
			name:  "a node without a plan beyond the budget is over budget, as without policies",
			pool:  testPool("new", intOrPercent("1"), false),
			nodes: []testNode{at(done("a", "old"), "", 1), at(done("b", "nope"), "", 2)},
			want:  decision{Budget: 1, Send: []string{"a"}, Held: map[string]holdReason{"b": holdOverBudget}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var pol rolloutPolicies
			pol.Now = policyNow
			for _, p := range tc.policies {
				pol.Policies = append(pol.Policies, rolloutcontrol.PolicyInput{Policy: p})
			}
			d := decideRolloutWith(tc.pool, heldNodes(tc.nodes...), planTarget(), pol)
			if diff := cmp.Diff(tc.want, byName(d), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("decision (-want +got):\n%s", diff)
			}
			if !d.Next.Equal(tc.next) {
				t.Errorf("next = %v, want %v", d.Next, tc.next)
			}
			v := holdView(d)
			if diff := cmp.Diff(tc.lines, v.Lines, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
			st, _, msg := heldCondition(v)
			if want := len(tc.lines) > 0; (st == corev1.ConditionTrue) != want || msg != strings.Join(tc.lines, "; ") {
				t.Errorf("condition %s %q, want held=%v", st, msg, want)
			}
		})
	}
}

// Whatever the policies and holds, no step sends more than the budget
// allows, and every send is a candidate the policies let go.
func TestDecideRolloutWithPoliciesKeepsTheBudget(t *testing.T) {
	rng := rand.New(rand.NewSource(32))
	policies := []*v1alpha1.RolloutPolicy{saturdayWindow(), saturdayWindow(v1alpha1.PlanRestart)}
	zb := intOrPercent("1")
	policies[1].Name = "zoned"
	policies[1].Spec.ZoneBudget = zb
	froms := []string{"old", "old-r", "old-s", "nope", "new"}
	for i := 0; i < 500; i++ {
		var ts []testNode
		for j := 0; j < 1+rng.Intn(12); j++ {
			n := testNode{name: string(rune('a' + j)), cur: froms[rng.Intn(len(froms))], zone: []string{"", "z1", "z2"}[rng.Intn(3)], created: rng.Intn(5)}
			n.desired, n.state = n.cur, ndpmcv1.StateDone
			switch rng.Intn(6) {
			case 0:
				n.notReady = true
			case 1:
				n.desired = "new"
			case 2:
				n = held(n, "")
			}
			ts = append(ts, n)
		}
		pool := testPool("new", intOrPercent([]string{"1", "2", "50%"}[rng.Intn(3)]), false)
		var pol rolloutPolicies
		pol.Now = policyNow.Add(time.Duration(rng.Intn(7*24)) * time.Hour)
		for _, p := range policies[:rng.Intn(3)] {
			pol.Policies = append(pol.Policies, rolloutcontrol.PolicyInput{Policy: p})
		}
		d := decideRolloutWith(pool, heldNodes(ts...), planTarget(), pol)
		if d.Out+len(d.Send) > d.Budget && len(d.Send) > 0 {
			t.Fatalf("%+v: %d out + %d sent > budget %d", ts, d.Out, len(d.Send), d.Budget)
		}
		for _, n := range d.Send {
			if _, ok := n.Annotations[v1alpha1.HoldAnnotation]; ok {
				t.Fatalf("%+v: sent held node %s", ts, n.Name)
			}
		}
	}
}

func TestRequeueAfter(t *testing.T) {
	now := policyNow
	pd := &rolloutcontrol.Decision{Pool: []rolloutcontrol.Reason{{Kind: rolloutcontrol.ReasonAlert}}}
	for _, tc := range []struct {
		name  string
		d     rolloutDecision
		gates time.Time
		want  time.Duration
	}{
		{"nothing to wait for", rolloutDecision{}, time.Time{}, 0},
		{"a plan", rolloutDecision{Wait: true}, time.Time{}, 30 * time.Second},
		{"a window a minute away", rolloutDecision{Wait: true, Next: now.Add(time.Minute)}, time.Time{}, 30 * time.Second},
		{"a window sooner", rolloutDecision{Next: now.Add(10 * time.Second)}, time.Time{}, 11 * time.Second},
		{"gates while held", rolloutDecision{Policy: pd}, now.Add(5 * time.Second), 5 * time.Second},
		{"gates while not held", rolloutDecision{Policy: &rolloutcontrol.Decision{}}, now.Add(5 * time.Second), 0},
		{"gates without a time of their own", rolloutDecision{Policy: pd}, time.Time{}, 30 * time.Second},
		{"a hold annotation: only events", rolloutDecision{Policy: &rolloutcontrol.Decision{Held: map[string][]rolloutcontrol.Reason{"a": {{Kind: rolloutcontrol.ReasonHold}}}}}, time.Time{}, 0},
	} {
		if got := requeueAfter(tc.d, now, tc.gates, 30*time.Second); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestPoolPacing(t *testing.T) {
	var p poolPacing
	t0 := policyNow
	nodes := testNodes(done("a", "new"), done("b", "old"))
	if s, _ := p.observe("worker", "new", nodes, t0); !s.LastDone.IsZero() {
		t.Fatalf("first look: %+v, want none", s)
	}
	// b finishes, with what its drain evicted on it.
	drained := &v1alpha1.DrainedPods{At: metav1.NewTime(t0), Owners: []v1alpha1.DrainedOwner{{Kind: "ReplicaSet", Namespace: "web", Name: "cart", UID: "rs-1", Pods: 2}}}
	nodes = testNodes(done("a", "new"), done("b", "new"))
	nodes[1].Annotations[v1alpha1.DrainedPodsAnnotation] = drainedAnnotationOf(t, drained)
	s, d := p.observe("worker", "new", nodes, t0.Add(time.Minute))
	if s.LastNode != "b" || !s.LastDone.Equal(t0.Add(time.Minute)) {
		t.Fatalf("b done: %+v", s)
	}
	if diff := cmp.Diff(drained, d); diff != "" {
		t.Errorf("b's drain (-want +got):\n%s", diff)
	}
	if s, d := p.observe("worker", "new", nodes, t0.Add(2*time.Minute)); !s.LastDone.Equal(t0.Add(time.Minute)) || d == nil {
		t.Fatalf("nothing new: %+v, drained %v", s, d)
	}
	if s, d := p.observe("worker", "newer", nodes, t0.Add(3*time.Minute)); !s.LastDone.IsZero() || d != nil {
		t.Fatalf("a new target starts afresh: %+v, drained %v", s, d)
	}
	// A node done with a drain record that does not parse leaves nothing
	// to wait for (nor does one without a record).
	nodes = testNodes(done("a", "newer"), done("b", "new"))
	nodes[0].Annotations[v1alpha1.DrainedPodsAnnotation] = "{not json"
	if s, d := p.observe("worker", "newer", nodes, t0.Add(4*time.Minute)); s.LastNode != "a" || d != nil {
		t.Errorf("a done with a bad record: %+v, drained %v; want a, nil", s, d)
	}
}

// TestPoolPacingLooksAtChangedNodesOnly: a node is looked at again only
// when its resourceVersion changes; a node back after being out counts as
// done anew; nodes that left the pool are forgotten.
func TestPoolPacingLooksAtChangedNodesOnly(t *testing.T) {
	var p poolPacing
	t0 := policyNow
	a := done("a", "old").node()
	a.ResourceVersion = "1"
	nodes := []*corev1.Node{a, done("b", "new").node()}
	p.observe("worker", "new", nodes, t0) // b: done before this controller looked, with no word of when

	// The same resourceVersion is not looked at again (a cache never
	// changes an object without a new one).
	a.Annotations[ndpmcv1.CurrentConfigAnnotation], a.Annotations[ndpmcv1.DesiredConfigAnnotation] = "new", "new"
	if s, _ := p.observe("worker", "new", nodes, t0.Add(time.Minute)); s.LastNode != "" {
		t.Fatalf("a at an unchanged resourceVersion was looked at again: %+v", s)
	}
	a.ResourceVersion = "2"
	if s, _ := p.observe("worker", "new", nodes, t0.Add(2*time.Minute)); s.LastNode != "a" || !s.LastDone.Equal(t0.Add(2*time.Minute)) {
		t.Fatalf("a done at a new resourceVersion: %+v", s)
	}
	// a goes NotReady, then comes back: done anew.
	a.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse}}
	a.ResourceVersion = "3"
	if s, _ := p.observe("worker", "new", nodes, t0.Add(3*time.Minute)); !s.LastDone.Equal(t0.Add(2 * time.Minute)) {
		t.Fatalf("a out: %+v, want the last done unchanged", s)
	}
	a.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	a.ResourceVersion = "4"
	if s, _ := p.observe("worker", "new", nodes, t0.Add(4*time.Minute)); s.LastNode != "a" || !s.LastDone.Equal(t0.Add(4*time.Minute)) {
		t.Fatalf("a back: %+v, want done anew at %s", s, t0.Add(4*time.Minute))
	}
	p.observe("worker", "new", nodes[:1], t0.Add(5*time.Minute))
	if seen := p.byPool["worker"].seen; len(seen) != 1 {
		t.Errorf("after b left the pool: %d nodes remembered, want 1", len(seen))
	}
}

func drainedAnnotationOf(t *testing.T, d *v1alpha1.DrainedPods) string {
	t.Helper()
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRolloutPolicyStatus(t *testing.T) {
	now := metav1.NewTime(policyNow)
	worker := mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "worker", Labels: map[string]string{"role": "worker"}}}
	infra := mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "infra"}}
	p := saturdayWindow()
	p.Generation = 3
	p.Spec.PoolSelector = metav1.LabelSelector{MatchLabels: map[string]string{"role": "worker"}}
	entry := v1alpha1.PoolRolloutStatus{Pool: "worker", Holding: true, Reasons: []string{"held: node a by annotation ndp.dev/hold"}}
	decided := func(pool, policy string) (v1alpha1.PoolRolloutStatus, bool) {
		return entry, (pool == "worker" || pool == "infra") && policy == "workers"
	}
	st := rolloutPolicyStatus(p, []mcfgv1.MachineConfigPool{infra, worker}, decided, now)
	if st.ObservedGeneration != 3 || len(st.Pools) != 1 || st.Pools[0].Pool != "worker" {
		t.Fatalf("status %+v", st)
	}
	if !meta.IsStatusConditionTrue(st.Conditions, v1alpha1.RolloutPolicyAccepted) || !meta.IsStatusConditionTrue(st.Conditions, v1alpha1.RolloutPolicyHolding) {
		t.Fatalf("conditions %+v", st.Conditions)
	}
	// Written again later: nothing moves.
	p.Status = st
	if again := rolloutPolicyStatus(p, []mcfgv1.MachineConfigPool{worker, infra}, decided, metav1.NewTime(policyNow.Add(time.Hour))); !cmp.Equal(again, st) {
		t.Errorf("status changed without a change:\n%s", cmp.Diff(st, again))
	}
	bad := saturdayWindow()
	bad.Spec.Windows[0].TimeZone = "Mars/Olympus"
	st = rolloutPolicyStatus(bad, nil, decided, now)
	c := meta.FindStatusCondition(st.Conditions, v1alpha1.RolloutPolicyAccepted)
	if c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "spec.windows[0]") {
		t.Errorf("Accepted for a bad time zone: %+v", c)
	}
}

// reportHolds: the pool's condition, one Event per change of reason (not
// per change of node count), a release Event, the gauge; a pool with no
// policy and no hold is left alone.
func TestReportHolds(t *testing.T) {
	rec := events.NewFakeRecorder(10)
	r := &RolloutReconciler{Recorder: rec, Conditions: NewPoolConditions(), board: newRolloutBoard()}
	pool := testPool("new", intOrPercent("1"), false)
	pool.Name = "report-holds"
	target := planTarget()
	step := func(policies []*v1alpha1.RolloutPolicy, nodes ...testNode) {
		t.Helper()
		pol := rolloutPolicies{Now: policyNow}
		for _, p := range policies {
			pol.Policies = append(pol.Policies, rolloutcontrol.PolicyInput{Policy: p})
		}
		r.reportHolds(pool, decideRolloutWith(pool, heldNodes(nodes...), target, pol), policies, policyNow)
	}
	drain := func() []string {
		var out []string
		for {
			select {
			case e := <-rec.Events:
				out = append(out, e)
			default:
				return out
			}
		}
	}
	gauge := func() float64 {
		return metricValue("ndp_rollout_held", map[string]string{"pool": pool.Name, "reason_kind": string(rolloutcontrol.ReasonWindow)})
	}

	step(nil, at(done("a", "old"), "", 1))
	if _, ok := r.Conditions.get(pool.Name)[ndpmcv1.ConditionRolloutHeld]; ok || len(drain()) > 0 {
		t.Fatalf("a pool without policies or holds got a condition or an event")
	}

	window := []*v1alpha1.RolloutPolicy{saturdayWindow()}
	step(window, at(done("a", "old-r"), "", 1), at(done("b", "old-r"), "", 2))
	c := r.Conditions.get(pool.Name)[ndpmcv1.ConditionRolloutHeld]
	if c.Status != corev1.ConditionTrue || c.Reason != "Window" || !strings.Contains(c.Message, "opens Sat 02:00 Europe/Berlin for plans that reboot (2 nodes)") {
		t.Errorf("condition %+v", c)
	}
	if ev := drain(); len(ev) != 1 || !strings.HasPrefix(ev[0], "Normal RolloutHeld waiting: outside the maintenance window") {
		t.Errorf("events %q", ev)
	}
	if g := gauge(); g != 2 {
		t.Errorf("ndp_rollout_held Window %v, want 2", g)
	}
	if e, ok := r.board.get(pool.Name, "workers"); !ok || !e.Holding || e.NextStart == nil || len(e.Reasons) != 1 {
		t.Errorf("board %+v", e)
	}

	// One node fewer: the same reason, no new Event.
	step(window, at(done("a", "old-r"), "", 1), done("b", "new"))
	if ev := drain(); len(ev) != 0 {
		t.Errorf("events on a count change: %q", ev)
	}
	// Done: released.
	step(window, done("a", "new"), done("b", "new"))
	if ev := drain(); len(ev) != 1 || !strings.HasPrefix(ev[0], "Normal RolloutReleased") {
		t.Errorf("events on release %q", ev)
	}
	if c := r.Conditions.get(pool.Name)[ndpmcv1.ConditionRolloutHeld]; c.Status != corev1.ConditionFalse {
		t.Errorf("condition after release %+v", c)
	}
	if g := gauge(); g != 0 {
		t.Errorf("ndp_rollout_held Window after release %v", g)
	}
	if n := metricValue("ndp_rollout_holds_total", map[string]string{"pool": pool.Name, "reason_kind": string(rolloutcontrol.ReasonWindow)}); n != 1 {
		t.Errorf("ndp_rollout_holds_total Window %v, want 1", n)
	}
}

// metricValue reads one series from the controllers' registry, as
// ndp-controller serves it; 0 when absent.
func metricValue(name string, labels map[string]string) float64 {
	mfs, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		return -1
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue next
				}
			}
			if g := m.GetGauge(); g != nil {
				return g.GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// Each policy's status names what it holds: the window policy the window,
// the gated policy its gate; a node held by annotation is in heldNodes.
func TestHoldViewForPolicy(t *testing.T) {
	window := saturdayWindow()
	gated := &v1alpha1.RolloutPolicy{ObjectMeta: metav1.ObjectMeta{Name: "gated"}, Spec: v1alpha1.RolloutPolicySpec{Gates: &v1alpha1.RolloutGates{
		BlockingPods: &v1alpha1.BlockingPodsGate{Selector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}}}}
	pol := rolloutPolicies{Now: policyNow, Policies: []rolloutcontrol.PolicyInput{{Policy: gated}, {Policy: window}}}
	d := decideRolloutWith(testPool("new", intOrPercent("2"), false), heldNodes(at(done("a", "old-r"), "", 1), held(at(done("b", "old-s"), "", 2), "")), planTarget(), pol)
	v := holdView(d)
	b := newRolloutBoard()
	b.set("worker", v, pol.policies(), policyNow)
	w, _ := b.get("worker", "workers")
	g, _ := b.get("worker", "gated")
	if len(w.Reasons) != 1 || !strings.HasPrefix(w.Reasons[0], "waiting: outside the maintenance window") || !w.Holding {
		t.Errorf("workers: %+v", w)
	}
	if len(g.Reasons) != 1 || !strings.HasPrefix(g.Reasons[0], "waiting: blocking pods: not evaluated yet") || !g.Holding || g.NextStart != nil {
		t.Errorf("gated: %+v", g)
	}
	if !cmp.Equal(w.HeldNodes, []string{"b"}) || !cmp.Equal(g.HeldNodes, []string{"b"}) {
		t.Errorf("held nodes: %v %v", w.HeldNodes, g.HeldNodes)
	}
}

// forgetting is a GateSource that records what it was told to forget.
type forgetting struct{ forgot []string }

func (f *forgetting) Remote(context.Context, *v1alpha1.RolloutPolicy) (rolloutcontrol.GateResults, time.Time) {
	return rolloutcontrol.GateResults{}, time.Time{}
}
func (f *forgetting) BlockingPods(context.Context, *v1alpha1.RolloutPolicy) *rolloutcontrol.PodsResult {
	return &rolloutcontrol.PodsResult{}
}
func (f *forgetting) DrainedNotReady(context.Context, *v1alpha1.DrainedPods) ([]string, error) {
	return nil, nil
}
func (f *forgetting) Forget(name string) { f.forgot = append(f.forgot, name) }

// A deleted policy's gate results are dropped (the evaluator's cache and
// metrics), not kept for ever.
func TestDeletedPolicyGatesForgotten(t *testing.T) {
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	g := &forgetting{}
	r := &RolloutPolicyStatusReconciler{Client: fake.NewClientBuilder().WithScheme(s).Build(), Gates: g, board: newRolloutBoard()}
	if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: "gone"}}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"gone"}, g.forgot); diff != "" {
		t.Errorf("forgotten (-want +got):\n%s", diff)
	}
}

// A controller that starts (or takes over) mid-rollout takes the latest of
// the nodes done on the target, by their own word, as the last one: the
// settle time and the drained pods hold across the restart. Without that
// word a node seen done at once counts from nothing.
func TestPoolPacingAfterRestart(t *testing.T) {
	t0 := policyNow
	drained := &v1alpha1.DrainedPods{At: metav1.NewTime(t0), Owners: []v1alpha1.DrainedOwner{{Kind: "ReplicaSet", Namespace: "web", Name: "cart", UID: "rs-1", Pods: 1}}}
	nodes := testNodes(done("a", "new"), done("b", "new"), done("c", "old"))
	nodes[0].Annotations[v1alpha1.UpdateDoneAnnotation] = t0.Add(-10 * time.Minute).Format(time.RFC3339)
	nodes[1].Annotations[v1alpha1.UpdateDoneAnnotation] = t0.Add(-2 * time.Minute).Format(time.RFC3339)
	nodes[1].Annotations[v1alpha1.DrainedPodsAnnotation] = drainedAnnotationOf(t, drained)
	// c finished an older update more recently: not this rollout's.
	nodes[2].Annotations[v1alpha1.UpdateDoneAnnotation] = t0.Add(-time.Minute).Format(time.RFC3339)

	var p poolPacing // a fresh controller
	s, d := p.observe("worker", "new", nodes, t0)
	if s.LastNode != "b" || !s.LastDone.Equal(t0.Add(-2*time.Minute)) {
		t.Errorf("after a restart: %+v, want b done at %s", s, t0.Add(-2*time.Minute))
	}
	if diff := cmp.Diff(drained, d); diff != "" {
		t.Errorf("b's drain (-want +got):\n%s", diff)
	}

	// c finishes while watched: its own time, not the look's.
	nodes = testNodes(done("a", "new"), done("b", "new"), done("c", "new"))
	nodes[2].Annotations[v1alpha1.UpdateDoneAnnotation] = t0.Add(30 * time.Second).Format(time.RFC3339)
	if s, d := p.observe("worker", "new", nodes, t0.Add(time.Minute)); s.LastNode != "c" || !s.LastDone.Equal(t0.Add(30*time.Second)) || d != nil {
		t.Errorf("c done: %+v, drained %v; want c at %s, no drain", s, d, t0.Add(30*time.Second))
	}

	// Without the annotation (a daemon before it), a fresh controller
	// knows of no last node.
	var q poolPacing
	if s, _ := q.observe("worker", "new", testNodes(done("a", "new")), t0); !s.LastDone.IsZero() {
		t.Errorf("no annotation: %+v, want none", s)
	}
}

// The pods drained from the last node and the blocking pods are read only
// when a node would start (a pool is decided at every step of every node),
// and then hold the start: drained pods while they are not Ready again, a
// blocking pod while it runs on the node.
func TestDecideRolloutPacedReadsPodsOnlyToStart(t *testing.T) {
	t0 := policyNow
	drained := &v1alpha1.DrainedPods{At: metav1.NewTime(t0.Add(-time.Minute)), Owners: []v1alpha1.DrainedOwner{{Kind: "ReplicaSet", Namespace: "web", Name: "cart", UID: "rs-1", Pods: 1}}}
	replacement := func(ready bool) []*corev1.Pod { return []*corev1.Pod{cartPod(t0, ready)} }
	backupOn := func(node string) *rolloutcontrol.PodsResult {
		return &rolloutcontrol.PodsResult{Pods: []*corev1.Pod{{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "backup", Labels: map[string]string{"app": "backup"}},
			Spec:       corev1.PodSpec{NodeName: node},
			Status:     corev1.PodStatus{Phase: corev1.PodRunning},
		}}}
	}
	paced := &v1alpha1.RolloutPolicy{ObjectMeta: metav1.ObjectMeta{Name: "paced"}, Spec: v1alpha1.RolloutPolicySpec{Pacing: &v1alpha1.RolloutPacing{WaitForDrainedPodsReady: true}}}
	guarded := &v1alpha1.RolloutPolicy{ObjectMeta: metav1.ObjectMeta{Name: "guarded"}, Spec: v1alpha1.RolloutPolicySpec{Gates: &v1alpha1.RolloutGates{
		BlockingPods: &v1alpha1.BlockingPodsGate{Selector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "backup"}}, Scope: v1alpha1.BlockingPodsNode}}}}
	pool := testPool("new", intOrPercent("1"), false)
	target := planTarget()
	updating := testNode{name: "b", cur: "old", desired: "new", state: ndpmcv1.StateWorking}
	none := &rolloutcontrol.PodsResult{}
	for _, tc := range []struct {
		name      string
		nodes     []testNode
		drained   *v1alpha1.DrainedPods
		pods      []*corev1.Pod
		podsErr   error
		blocking  *rolloutcontrol.PodsResult
		wantReads []string
		wantSend  []string
		wantHeld  rolloutcontrol.ReasonKind
		wantErr   bool
	}{
		{"nothing drained, nothing blocks", []testNode{done("a", "old")}, nil, nil, nil, none, []string{"blocking"}, []string{"a"}, "", false},
		{"the budget is full", []testNode{done("a", "old"), updating}, drained, replacement(false), nil, backupOn("a"), nil, nil, "", false},
		{"drained pods not Ready", []testNode{done("a", "old")}, drained, replacement(false), nil, none, []string{"blocking", "drained"}, nil, rolloutcontrol.ReasonDrainedPods, false},
		{"drained pods Ready", []testNode{done("a", "old")}, drained, replacement(true), nil, none, []string{"blocking", "drained"}, []string{"a"}, "", false},
		{"a blocking pod on the node", []testNode{done("a", "old")}, drained, replacement(true), nil, backupOn("a"), []string{"blocking", "drained"}, nil, rolloutcontrol.ReasonBlockingPod, false},
		{"a blocking pod elsewhere", []testNode{done("a", "old")}, nil, nil, nil, backupOn("z"), []string{"blocking"}, []string{"a"}, "", false},
		{"blocking pods cannot be read", []testNode{done("a", "old")}, nil, nil, nil, &rolloutcontrol.PodsResult{Err: errors.New("cache not synced")}, []string{"blocking"}, nil, rolloutcontrol.ReasonGateError, false},
		{"drained pods cannot be read", []testNode{done("a", "old")}, drained, nil, errors.New("cache not synced"), none, []string{"blocking", "drained"}, nil, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pol := rolloutPolicies{Now: t0, Pacing: rolloutcontrol.PacingState{LastDone: t0.Add(-time.Minute), LastNode: "c"}, Policies: []rolloutcontrol.PolicyInput{
				{Policy: guarded, Gates: rolloutcontrol.GateResults{BlockingPods: none}}, {Policy: paced},
			}}
			var reads []string
			pr := podReads{blocking: func(*v1alpha1.RolloutPolicy) *rolloutcontrol.PodsResult {
				reads = append(reads, "blocking")
				return tc.blocking
			}}
			if tc.drained != nil {
				pr.drainedNotReady = func() ([]string, error) {
					reads = append(reads, "drained")
					return rolloutcontrol.DrainedNotReady(tc.drained, tc.pods), tc.podsErr
				}
			}
			d, err := decideRolloutPaced(pool, testNodes(tc.nodes...), target, pol, pr)
			if (err != nil) != tc.wantErr || !slices.Equal(reads, tc.wantReads) {
				t.Fatalf("err %v, read %v; want error %t, read %v", err, reads, tc.wantErr, tc.wantReads)
			}
			var sent []string
			for _, n := range d.Send {
				sent = append(sent, n.Name)
			}
			if !slices.Equal(sent, tc.wantSend) {
				t.Errorf("sent %v, want %v", sent, tc.wantSend)
			}
			var kinds []rolloutcontrol.ReasonKind
			if d.Policy != nil {
				for _, r := range append(slices.Clone(d.Policy.Pool), d.Policy.Held["a"]...) {
					kinds = append(kinds, r.Kind)
				}
			}
			if held := slices.Contains(kinds, tc.wantHeld); tc.wantHeld != "" && !held {
				t.Errorf("held by %v, want %s", kinds, tc.wantHeld)
			}
		})
	}
}

// A pool waiting for drained pods reads them at most every
// drainedRecheck; once they are back, not again for that drain; a new
// last node's drain is read afresh.
func TestDrainedNotReadyRereads(t *testing.T) {
	t0 := policyNow
	var p poolPacing
	record := func(node string) *v1alpha1.DrainedPods {
		nodes := testNodes(done("a", "new"), done("b", "old"))
		p.observe("worker", "new", nodes, t0) // a is seen done: not this rollout's last
		nodes = testNodes(done("a", "new"), done(node, "new"))
		d := &v1alpha1.DrainedPods{At: metav1.NewTime(t0), Owners: []v1alpha1.DrainedOwner{{Kind: "ReplicaSet", Namespace: "web", Name: "cart", UID: "rs-1", Pods: 1}}}
		nodes[1].Annotations[v1alpha1.DrainedPodsAnnotation] = drainedAnnotationOf(t, d)
		_, got := p.observe("worker", "new", nodes, t0)
		if got == nil {
			t.Fatalf("%s's drain not observed", node)
		}
		return got
	}
	d := record("b")
	reads := 0
	ready := false
	read := func() ([]string, error) {
		reads++
		return rolloutcontrol.DrainedNotReady(d, []*corev1.Pod{cartPod(t0.Add(time.Second), ready)}), nil
	}
	for _, step := range []struct {
		after     time.Duration
		ready     bool
		wantReads int
		wantWait  bool
	}{
		{0, false, 1, true},
		{drainedRecheck - time.Second, true, 1, true}, // kept: not read again yet
		{drainedRecheck, true, 2, false},              // read again: back
		{time.Hour, false, 2, false},                  // back for good for this drain
	} {
		ready = step.ready
		notReady, err := p.drainedNotReady("worker", d, t0.Add(step.after), read)
		if err != nil || reads != step.wantReads || (len(notReady) > 0) != step.wantWait {
			t.Fatalf("after %s: not ready %v, %v, %d reads; want waiting %t, %d reads", step.after, notReady, err, reads, step.wantWait, step.wantReads)
		}
	}
	// Another node done since: its drain is read afresh.
	ready = false
	if notReady, _ := p.drainedNotReady("worker", record("c"), t0.Add(time.Hour), read); reads != 3 || len(notReady) != 1 {
		t.Errorf("a new drain: not ready %v after %d reads, want 1 after 3", notReady, reads)
	}
}

// cartPod is a pod of ReplicaSet web/cart (UID rs-1), created at created,
// Ready or not.
func cartPod(created time.Time, ready bool) *corev1.Pod {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "cart-x", CreationTimestamp: metav1.NewTime(created),
			OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "cart", UID: "rs-1", Controller: ptr.To(true)}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}},
	}
}
