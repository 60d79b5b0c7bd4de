package executor

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
)

// testNode describes a node of a test pool; the zero value is a Ready,
// schedulable node that runs no config yet.
type testNode struct {
	name, zone              string
	cur, desired, state     string
	created                 int // minutes after a fixed instant
	notReady, unschedulable bool
	reason                  string // the daemon's reason annotation
	// pressure, if set, is a node condition reported True (DiskPressure,
	// NetworkUnavailable).
	pressure corev1.NodeConditionType
	// rebootAsked: its host asks for a reboot; granted: the rollout
	// controller granted it.
	rebootAsked, granted bool
	// skipped: the config whose drain it gave up (onDrainTimeout Skip).
	skipped string
}

var testEpoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func (t testNode) node() *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:              t.name,
		CreationTimestamp: metav1.NewTime(testEpoch.Add(time.Duration(t.created) * time.Minute)),
		Annotations:       map[string]string{},
		Labels:            map[string]string{},
	}}
	if t.zone != "" {
		n.Labels[ZoneLabel] = t.zone
	}
	for k, v := range map[string]string{ndpmcv1.CurrentConfigAnnotation: t.cur, ndpmcv1.DesiredConfigAnnotation: t.desired, ndpmcv1.StateAnnotation: t.state, ndpmcv1.ReasonAnnotation: t.reason} {
		if v != "" {
			n.Annotations[k] = v
		}
	}
	if t.rebootAsked || t.granted {
		n.Annotations[v1alpha1.RebootRequiredAnnotation] = "2025-01-01T00:00:00Z"
		n.Annotations[v1alpha1.RebootRequiredByAnnotation] = "/var/run/reboot-required (linux-image-amd64)"
	}
	if t.granted {
		n.Annotations[v1alpha1.RebootGrantAnnotation] = "2025-01-01T00:00:00Z;drain"
	}
	if t.skipped != "" {
		n.Annotations[v1alpha1.DrainSkippedAnnotation] = t.skipped
	}
	ready := corev1.ConditionTrue
	if t.notReady {
		ready = corev1.ConditionFalse
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}
	if t.pressure != "" {
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: t.pressure, Status: corev1.ConditionTrue})
	}
	n.Spec.Unschedulable = t.unschedulable
	return n
}

func testNodes(ts ...testNode) []*corev1.Node {
	out := make([]*corev1.Node, len(ts))
	for i, t := range ts {
		out[i] = t.node()
	}
	return out
}

// done is a node that runs cur and has nothing under way.
func done(name, cur string) testNode {
	return testNode{name: name, cur: cur, desired: cur, state: ndpmcv1.StateDone}
}

// at places a test node in a zone ("" for none) and sets its age.
func at(n testNode, zone string, created int) testNode {
	n.zone, n.created = zone, created
	return n
}

func testPool(target string, maxUnavailable *intstr.IntOrString, paused bool) *mcfgv1.MachineConfigPool {
	p := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "worker"}}
	p.Spec.Configuration.Name = target
	p.Spec.MaxUnavailable = maxUnavailable
	p.Spec.Paused = paused
	return p
}

// testTarget is the target MachineConfig "new" with plans from the named
// configs; planReady sets its PlanReady condition.
func testTarget(planReady bool, from ...string) *ndpmcv1.MachineConfig {
	mc := &ndpmcv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: "new"}}
	for _, f := range from {
		mc.Status.PostConfigActions = append(mc.Status.PostConfigActions, ndpmcv1.PostConfigActions{From: f})
	}
	st := metav1.ConditionFalse
	if planReady {
		st = metav1.ConditionTrue
	}
	mc.Status.Conditions = []metav1.Condition{{Type: ndpmcv1.ConditionPlanReady, Status: st}}
	return mc
}

func intOrPercent(s string) *intstr.IntOrString {
	v := intstr.Parse(s)
	return &v
}

// decision is a rolloutDecision by node names, to compare.
type decision struct {
	Stop        rolloutStop
	Budget, Out int
	Redirect    []string
	Record      []string
	Send        []string
	Grant       []string
	Held        map[string]holdReason
	Wait        bool
}

func byName(d rolloutDecision) decision {
	names := func(ns []*corev1.Node) []string {
		var out []string
		for _, n := range ns {
			out = append(out, n.Name)
		}
		return out
	}
	return decision{Stop: d.Stop, Budget: d.Budget, Out: d.Out, Redirect: names(d.Redirect), Record: names(d.Record), Send: names(d.Send), Grant: names(d.Grant), Held: d.Held, Wait: d.Wait}
}

func TestDecideRollout(t *testing.T) {
	unreconcilable := testTarget(true, "old")
	unreconcilable.Status.Conditions = append(unreconcilable.Status.Conditions, metav1.Condition{Type: ndpmcv1.ConditionUnreconcilable, Status: metav1.ConditionTrue})
	reconcilableAgain := testTarget(true, "old")
	reconcilableAgain.Status.Conditions = append(reconcilableAgain.Status.Conditions, metav1.Condition{Type: ndpmcv1.ConditionUnreconcilable, Status: metav1.ConditionFalse})

	// Ten nodes on "old", n0 the oldest.
	var ten []testNode
	for i := range 10 {
		n := done(fmt.Sprintf("n%d", i), "old")
		n.created = i
		ten = append(ten, n)
	}
	overBudget := func(names ...string) map[string]holdReason {
		m := map[string]holdReason{}
		for _, n := range names {
			m[n] = holdOverBudget
		}
		return m
	}

	for _, tc := range []struct {
		name   string
		pool   *mcfgv1.MachineConfigPool
		nodes  []testNode
		target *ndpmcv1.MachineConfig
		want   decision
	}{
		{
			name:   "no target yet",
			pool:   testPool("", nil, false),
			nodes:  []testNode{done("a", "old")},
			target: testTarget(true, "old"),
			want:   decision{Stop: stopNoTarget},
		},
		{
			name:   "a node whose host asks for a reboot is granted it, within the budget",
			pool:   testPool("new", nil, false),
			nodes:  []testNode{at(done("a", "new"), "", 0), func() testNode { n := at(done("b", "new"), "", 1); n.rebootAsked = true; return n }()},
			target: testTarget(true, "old"),
			want:   decision{Budget: 1, Grant: []string{"b"}, Held: map[string]holdReason{"a": holdAtTarget}},
		},
		{
			name:   "a granted reboot counts against the budget",
			pool:   testPool("new", nil, false),
			nodes:  []testNode{func() testNode { n := done("a", "new"); n.granted = true; return n }(), func() testNode { n := done("b", "new"); n.rebootAsked = true; return n }()},
			target: testTarget(true, "old"),
			want:   decision{Budget: 1, Out: 1, Held: map[string]holdReason{"a": holdUnavailable, "b": holdOverBudget}},
		},
		{
			name:   "updates and asked reboots share the budget, in rollout order",
			pool:   testPool("new", nil, false),
			nodes:  []testNode{at(done("a", "old"), "", 0), func() testNode { n := at(done("b", "new"), "", 1); n.rebootAsked = true; return n }()},
			target: testTarget(true, "old"),
			want:   decision{Budget: 1, Send: []string{"a"}, Held: map[string]holdReason{"b": holdOverBudget}},
		},
		{
			name:   "a node that gave up its drain to the target is held and not counted: the next goes",
			pool:   testPool("new", nil, false),
			nodes:  []testNode{func() testNode { n := at(done("a", "old"), "", 0); n.skipped = "new"; return n }(), at(done("b", "old"), "", 1)},
			target: testTarget(true, "old"),
			want:   decision{Budget: 1, Send: []string{"b"}, Held: map[string]holdReason{"a": holdPolicy}},
		},
		{
			name:   "a node that gave up its drain to an older target goes again",
			pool:   testPool("new", nil, false),
			nodes:  []testNode{func() testNode { n := at(done("a", "old"), "", 0); n.skipped = "older"; return n }(), at(done("b", "old"), "", 1)},
			target: testTarget(true, "old"),
			want:   decision{Budget: 1, Send: []string{"a"}, Held: map[string]holdReason{"b": holdOverBudget}},
		},
		{
			name:   "paused pool sends nothing",
			pool:   testPool("new", intOrPercent("100%"), true),
			nodes:  []testNode{done("a", "old"), done("b", "old")},
			target: testTarget(true, "old"),
			want:   decision{Stop: stopPaused},
		},
		{
			name:   "paused pool does not redirect either",
			pool:   testPool("new", nil, true),
			nodes:  []testNode{{name: "a", cur: "old", desired: "older", state: ndpmcv1.StateDone}},
			target: testTarget(true, "old"),
			want:   decision{Stop: stopPaused},
		},
		{
			name:   "invalid maxUnavailable",
			pool:   testPool("new", intOrPercent("half"), false),
			nodes:  []testNode{done("a", "old")},
			target: testTarget(true, "old"),
			want:   decision{Stop: stopInvalidMaxUnavailable},
		},
		{
			name:  "target MachineConfig not found",
			pool:  testPool("new", nil, false),
			nodes: []testNode{done("a", "old")},
			want:  decision{Stop: stopTargetNotFound},
		},
		{
			name:   "unreconcilable target: no node goes",
			pool:   testPool("new", intOrPercent("100%"), false),
			nodes:  []testNode{done("a", "old"), {name: "b", cur: "old", desired: "older", state: ndpmcv1.StateDone}},
			target: unreconcilable,
			want:   decision{Stop: stopUnreconcilable},
		},
		{
			name:   "Unreconcilable False does not stop",
			pool:   testPool("new", nil, false),
			nodes:  []testNode{done("a", "old")},
			target: reconcilableAgain,
			want:   decision{Budget: 1, Send: []string{"a"}, Held: map[string]holdReason{}},
		},
		{
			name:   "empty pool",
			pool:   testPool("new", nil, false),
			target: testTarget(true),
			want:   decision{Budget: 1, Held: map[string]holdReason{}},
		},
		{
			name:   "maxUnavailable defaults to 1",
			pool:   testPool("new", nil, false),
			nodes:  ten[:3],
			target: testTarget(true, "old"),
			want:   decision{Budget: 1, Send: []string{"n0"}, Held: overBudget("n1", "n2")},
		},
		{
			name:   "maxUnavailable as an int",
			pool:   testPool("new", intOrPercent("2"), false),
			nodes:  ten[:3],
			target: testTarget(true, "old"),
			want:   decision{Budget: 2, Send: []string{"n0", "n1"}, Held: overBudget("n2")},
		},
		{
			name:   "maxUnavailable 0 is at least 1",
			pool:   testPool("new", intOrPercent("0"), false),
			nodes:  ten[:3],
			target: testTarget(true, "old"),
			want:   decision{Budget: 1, Send: []string{"n0"}, Held: overBudget("n1", "n2")},
		},
		{
			name:   "maxUnavailable as a percent: 25% of 10 rounds down to 2",
			pool:   testPool("new", intOrPercent("25%"), false),
			nodes:  ten,
			target: testTarget(true, "old"),
			want:   decision{Budget: 2, Send: []string{"n0", "n1"}, Held: overBudget("n2", "n3", "n4", "n5", "n6", "n7", "n8", "n9")},
		},
		{
			name:   "maxUnavailable as a percent: 50% of 5 rounds down to 2",
			pool:   testPool("new", intOrPercent("50%"), false),
			nodes:  ten[:5],
			target: testTarget(true, "old"),
			want:   decision{Budget: 2, Send: []string{"n0", "n1"}, Held: overBudget("n2", "n3", "n4")},
		},
		{
			name:   "maxUnavailable as a percent: 10% of 3 is at least 1",
			pool:   testPool("new", intOrPercent("10%"), false),
			nodes:  ten[:3],
			target: testTarget(true, "old"),
			want:   decision{Budget: 1, Send: []string{"n0"}, Held: overBudget("n1", "n2")},
		},
		{
			name:   "maxUnavailable above the pool sends every node",
			pool:   testPool("new", intOrPercent("5"), false),
			nodes:  ten[:3],
			target: testTarget(true, "old"),
			want:   decision{Budget: 5, Send: []string{"n0", "n1", "n2"}, Held: map[string]holdReason{}},
		},
		{
			name: "an unready node counts against the budget",
			pool: testPool("new", intOrPercent("2"), false),
			nodes: []testNode{{name: "down", cur: "old", desired: "old", state: ndpmcv1.StateDone, notReady: true},
				ten[0], ten[1]},
			target: testTarget(true, "old"),
			want:   decision{Budget: 2, Out: 1, Send: []string{"n0"}, Held: map[string]holdReason{"down": holdUnavailable, "n1": holdOverBudget}},
		},
		{
			name: "a cordoned node counts against the budget",
			pool: testPool("new", intOrPercent("2"), false),
			nodes: []testNode{{name: "cordoned", cur: "old", desired: "old", state: ndpmcv1.StateDone, unschedulable: true},
				ten[0], ten[1]},
			target: testTarget(true, "old"),
			want:   decision{Budget: 2, Out: 1, Send: []string{"n0"}, Held: map[string]holdReason{"cordoned": holdUnavailable, "n1": holdOverBudget}},
		},
		{
			name: "a working node counts against the budget and finishes first",
			pool: testPool("new", intOrPercent("2"), false),
			nodes: []testNode{{name: "busy", cur: "old", desired: "older", state: ndpmcv1.StateWorking},
				ten[0], ten[1]},
			target: testTarget(true, "old"),
			want:   decision{Budget: 2, Out: 1, Send: []string{"n0"}, Held: map[string]holdReason{"busy": holdUnavailable, "n1": holdOverBudget}},
		},
		{
			name: "a node degraded on the target counts against the budget",
			pool: testPool("new", intOrPercent("2"), false),
			nodes: []testNode{{name: "failed", cur: "old", desired: "new", state: ndpmcv1.StateDegraded},
				ten[0], ten[1]},
			target: testTarget(true, "old"),
			want:   decision{Budget: 2, Out: 1, Send: []string{"n0"}, Held: map[string]holdReason{"failed": holdUnavailable, "n1": holdOverBudget}},
		},
		{
			name: "an unreconcilable node counts against the budget",
			pool: testPool("new", intOrPercent("2"), false),
			nodes: []testNode{{name: "stuck", cur: "old", desired: "old", state: ndpmcv1.StateUnreconcilable},
				ten[0], ten[1]},
			target: testTarget(true, "old"),
			want:   decision{Budget: 2, Out: 1, Send: []string{"n0"}, Held: map[string]holdReason{"stuck": holdUnavailable, "n1": holdOverBudget}},
		},
		{
			name: "a node already sent to the target counts against the budget",
			pool: testPool("new", intOrPercent("2"), false),
			nodes: []testNode{{name: "going", cur: "old", desired: "new", state: ndpmcv1.StateDone},
				ten[0], ten[1]},
			target: testTarget(true, "old"),
			want:   decision{Budget: 2, Out: 1, Send: []string{"n0"}, Held: map[string]holdReason{"going": holdUnavailable, "n1": holdOverBudget}},
		},
		{
			name: "budget used up: nothing goes, and a candidate without a plan does not wait",
			pool: testPool("new", nil, false),
			nodes: []testNode{{name: "down", cur: "old", desired: "old", notReady: true},
				done("noplan", "other"), ten[0]},
			target: testTarget(true, "old"),
			want:   decision{Budget: 1, Out: 1, Held: map[string]holdReason{"down": holdUnavailable, "noplan": holdOverBudget, "n0": holdOverBudget}},
		},
		{
			// A node that runs the target without a desiredConfig is not
			// done (the MCO's IsNodeDone): it counts against the budget and
			// gets its desiredConfig at once, which changes nothing on it.
			name: "nodes at the target are not candidates",
			pool: testPool("new", intOrPercent("100%"), false),
			nodes: []testNode{done("updated", "new"), {name: "adopted", cur: "new", state: ndpmcv1.StateDone},
				ten[0]},
			target: testTarget(true, "old"),
			want:   decision{Budget: 3, Out: 1, Redirect: []string{"adopted"}, Send: []string{"n0"}, Held: map[string]holdReason{"updated": holdAtTarget}},
		},
		{
			name:   "every node at the target: nothing to do",
			pool:   testPool("new", nil, false),
			nodes:  []testNode{done("a", "new"), done("b", "new")},
			target: testTarget(true, "old"),
			want:   decision{Budget: 1, Held: map[string]holdReason{"a": holdAtTarget, "b": holdAtTarget}},
		},
		{
			// The MCO's sortNodeList: nodes without a zone label go last.
			name: "order: zone, then age, then name; no zone last",
			pool: testPool("new", intOrPercent("100%"), false),
			nodes: []testNode{
				at(done("b-young", "old"), "b", 9),
				at(done("a-2", "old"), "a", 5),
				at(done("a-1", "old"), "a", 5),
				at(done("a-old", "old"), "a", 1),
				at(done("b-old", "old"), "b", 0),
				at(done("nozone", "old"), "", 7),
				at(done("nozone-old", "old"), "", -1),
			},
			target: testTarget(true, "old"),
			want:   decision{Budget: 7, Send: []string{"a-old", "a-1", "a-2", "b-old", "b-young", "nozone-old", "nozone"}, Held: map[string]holdReason{}},
		},
		{
			name: "order decides who goes within the budget",
			pool: testPool("new", intOrPercent("2"), false),
			nodes: []testNode{
				at(done("c", "old"), "z2", 0),
				at(done("b", "old"), "z1", 3),
				at(done("a", "old"), "z1", 4),
			},
			target: testTarget(true, "old"),
			want:   decision{Budget: 2, Send: []string{"b", "a"}, Held: map[string]holdReason{"c": holdOverBudget}},
		},
		{
			name:   "no plan yet from a source config: its node waits",
			pool:   testPool("new", intOrPercent("100%"), false),
			nodes:  []testNode{done("other", "other"), ten[0]},
			target: testTarget(true, "old"),
			want:   decision{Budget: 2, Send: []string{"n0"}, Held: map[string]holdReason{"other": holdNoPlan}, Wait: true},
		},
		{
			name:   "a node waiting for its plan leaves its slot to the next",
			pool:   testPool("new", nil, false),
			nodes:  []testNode{at(done("first", "other"), "", -1), ten[0], ten[1]},
			target: testTarget(true, "old"),
			want:   decision{Budget: 1, Send: []string{"n0"}, Held: map[string]holdReason{"first": holdNoPlan, "n1": holdOverBudget}, Wait: true},
		},
		{
			name:   "plans not ready: stored plans are not used",
			pool:   testPool("new", intOrPercent("100%"), false),
			nodes:  []testNode{ten[0], ten[1]},
			target: testTarget(false, "old"),
			want:   decision{Budget: 2, Held: map[string]holdReason{"n0": holdNoPlan, "n1": holdNoPlan}, Wait: true},
		},
		{
			// Without annotations a node is not done (the MCO's
			// IsNodeDone): it counts against the budget, and adopts the
			// target at once, which changes nothing on it.
			name:   "a node that runs no config adopts the target without a plan",
			pool:   testPool("new", intOrPercent("100%"), false),
			nodes:  []testNode{{name: "fresh"}, {name: "fresh-down", notReady: true}, ten[0]},
			target: testTarget(false),
			want:   decision{Budget: 3, Out: 2, Redirect: []string{"fresh", "fresh-down"}, Held: map[string]holdReason{"n0": holdNoPlan}, Wait: true},
		},
		{
			name: "a node sent to an older target that it has not started on is redirected",
			pool: testPool("new", nil, false),
			nodes: []testNode{{name: "pending", cur: "old", desired: "older", state: ndpmcv1.StateDone},
				ten[0]},
			target: testTarget(true, "old"),
			want:   decision{Budget: 1, Out: 1, Redirect: []string{"pending"}, Held: map[string]holdReason{"n0": holdOverBudget}},
		},
		{
			name: "a node degraded on an older target is redirected",
			pool: testPool("new", intOrPercent("100%"), false),
			nodes: []testNode{
				{name: "failed", cur: "old", desired: "older", state: ndpmcv1.StateDegraded},
				{name: "failed-in-place", cur: "old", desired: "old", state: ndpmcv1.StateDegraded},
			},
			target: testTarget(true, "old"),
			want:   decision{Budget: 2, Out: 2, Redirect: []string{"failed", "failed-in-place"}, Held: map[string]holdReason{}},
		},
		{
			name:   "a node on the target sent back to an older one is redirected to the target",
			pool:   testPool("new", nil, false),
			nodes:  []testNode{{name: "back", cur: "new", desired: "old", state: ndpmcv1.StateDone}},
			target: testTarget(false),
			want:   decision{Budget: 1, Out: 1, Redirect: []string{"back"}, Held: map[string]holdReason{}},
		},
		{
			name:   "an unavailable node without a plan to the target is not redirected",
			pool:   testPool("new", nil, false),
			nodes:  []testNode{{name: "pending", cur: "other", desired: "older", state: ndpmcv1.StateDone}},
			target: testTarget(true, "old"),
			want:   decision{Budget: 1, Out: 1, Held: map[string]holdReason{"pending": holdUnavailable}},
		},
		{
			// Not done (the MCO's IsNodeDone wants a desiredConfig): it
			// counts against the budget, and its desiredConfig becomes the
			// config it runs, a write that changes nothing on it; then it
			// is a candidate like any other.
			name:   "a node that runs an old config and was never sent anywhere gets its desiredConfig recorded",
			pool:   testPool("new", nil, false),
			nodes:  []testNode{{name: "never-sent", cur: "old", state: ndpmcv1.StateDone}, ten[0]},
			target: testTarget(true, "old"),
			want:   decision{Budget: 1, Out: 1, Record: []string{"never-sent"}, Held: map[string]holdReason{"n0": holdOverBudget}},
		},
		{
			name:   "a node whose daemon has not reported is held, counted",
			pool:   testPool("new", intOrPercent("2"), false),
			nodes:  []testNode{{name: "silent", cur: "old", desired: "old"}, ten[0], ten[1]},
			target: testTarget(true, "old"),
			want:   decision{Budget: 2, Out: 1, Send: []string{"n0"}, Held: map[string]holdReason{"silent": holdUnavailable, "n1": holdOverBudget}},
		},
		{
			name: "disk pressure or an unavailable network counts against the budget",
			pool: testPool("new", intOrPercent("3"), false),
			nodes: []testNode{{name: "disk", cur: "old", desired: "old", state: ndpmcv1.StateDone, pressure: corev1.NodeDiskPressure},
				{name: "net", cur: "old", desired: "old", state: ndpmcv1.StateDone, pressure: corev1.NodeNetworkUnavailable},
				ten[0], ten[1]},
			target: testTarget(true, "old"),
			want:   decision{Budget: 3, Out: 2, Send: []string{"n0"}, Held: map[string]holdReason{"disk": holdUnavailable, "net": holdUnavailable, "n1": holdOverBudget}},
		},
		{
			name: "an unready node is redirected only if sent elsewhere",
			pool: testPool("new", intOrPercent("100%"), false),
			nodes: []testNode{
				{name: "down-sent", cur: "old", desired: "older", notReady: true},
				{name: "down", cur: "old", desired: "old", notReady: true},
			},
			target: testTarget(true, "old"),
			want:   decision{Budget: 2, Out: 2, Redirect: []string{"down-sent"}, Held: map[string]holdReason{"down": holdUnavailable}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := byName(decideRollout(tc.pool, testNodes(tc.nodes...), tc.target))
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("decideRollout (-want +got):\n%s", diff)
			}
		})
	}
}

// The order of the nodes as listed does not change the choice.
func TestDecideRolloutIgnoresListOrder(t *testing.T) {
	ts := []testNode{
		at(done("a", "old"), "z1", 2),
		at(done("b", "old"), "z1", 2),
		at(done("c", "old"), "z0", 3),
		at(done("d", "old"), "z1", 1),
	}
	pool, target := testPool("new", intOrPercent("3"), false), testTarget(true, "old")
	want := byName(decideRollout(pool, testNodes(ts...), target))
	if diff := cmp.Diff([]string{"c", "d", "a"}, want.Send); diff != "" {
		t.Fatalf("send (-want +got):\n%s", diff)
	}
	for i := range ts {
		rotated := append(append([]testNode{}, ts[i:]...), ts[:i]...)
		for l, r := 0, len(rotated)-1; l < r; l, r = l+1, r-1 {
			rotated[l], rotated[r] = rotated[r], rotated[l]
		}
		if diff := cmp.Diff(want, byName(decideRollout(pool, testNodes(rotated...), target))); diff != "" {
			t.Errorf("listed as %v (-want +got):\n%s", rotated, diff)
		}
	}
}
