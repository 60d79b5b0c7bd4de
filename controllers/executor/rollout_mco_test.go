package executor

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
)

// The Machine Config Operator's own test cases for readiness, availability,
// machine counts, order and the UpdateInProgress taint
// (openshift/machine-config-operator pkg/controller/node/status_test.go
// and node_controller_test.go), ported: each case names its MCO test.
// Where ndp deliberately differs, the case asserts ndp's behaviour and
// says so.

func nodeNames(ns []*corev1.Node) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.Name)
	}
	return out
}

// TestIsNodeReady is the MCO's TestIsNodeReady, node by node.
func TestIsNodeReady(t *testing.T) {
	cond := func(typ corev1.NodeConditionType, st corev1.ConditionStatus) corev1.NodeCondition {
		return corev1.NodeCondition{Type: typ, Status: st}
	}
	ready, notReady := cond(corev1.NodeReady, corev1.ConditionTrue), cond(corev1.NodeReady, corev1.ConditionFalse)
	disk, noDisk := cond(corev1.NodeDiskPressure, corev1.ConditionTrue), cond(corev1.NodeDiskPressure, corev1.ConditionFalse)
	for _, tc := range []struct {
		name   string
		conds  []corev1.NodeCondition
		unsch  bool
		want   bool
		differ string // why ndp's answer differs from the MCO's
	}{
		{name: "node1 considered", conds: []corev1.NodeCondition{ready}, want: true},
		{name: "node2 ignored - node not Ready", conds: []corev1.NodeCondition{notReady}},
		{name: "node3 ignored - node out of disk", conds: []corev1.NodeCondition{disk}},
		{name: "node4 considered", conds: []corev1.NodeCondition{noDisk}, want: false, differ: "no Ready condition"},
		{name: "node5 ignored - node out of disk", conds: []corev1.NodeCondition{ready, disk}},
		{name: "node6 considered", conds: []corev1.NodeCondition{ready, noDisk}, want: true},
		{name: "node7 ignored - node out of disk, node not Ready", conds: []corev1.NodeCondition{notReady, disk}},
		{name: "node8 ignored - node not Ready", conds: []corev1.NodeCondition{notReady, noDisk}},
		{name: "node9 ignored - node unschedulable", unsch: true},
		{name: "node10 considered", want: false, differ: "no Ready condition"},
		{name: "node11 considered", want: false, differ: "no Ready condition"},
		// ndp's own cases, from CheckNodeReady's rules.
		{name: "Ready Unknown", conds: []corev1.NodeCondition{cond(corev1.NodeReady, corev1.ConditionUnknown)}},
		{name: "DiskPressure Unknown", conds: []corev1.NodeCondition{ready, cond(corev1.NodeDiskPressure, corev1.ConditionUnknown)}},
		{name: "NetworkUnavailable", conds: []corev1.NodeCondition{ready, cond(corev1.NodeNetworkUnavailable, corev1.ConditionTrue)}},
		{name: "NetworkUnavailable False", conds: []corev1.NodeCondition{ready, cond(corev1.NodeNetworkUnavailable, corev1.ConditionFalse)}, want: true},
		{name: "MemoryPressure is not checked", conds: []corev1.NodeCondition{ready, cond(corev1.NodeMemoryPressure, corev1.ConditionTrue)}, want: true},
		{name: "Ready but unschedulable", conds: []corev1.NodeCondition{ready}, unsch: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := &corev1.Node{Spec: corev1.NodeSpec{Unschedulable: tc.unsch}, Status: corev1.NodeStatus{Conditions: tc.conds}}
			if got := nodeReady(n); got != tc.want {
				t.Errorf("nodeReady = %v, want %v %s", got, tc.want, tc.differ)
			}
		})
	}
}

// mcoNode is the MCO tests' helpers.NewNodeWithReady: both config
// annotations, the state Done when they are equal and Working otherwise
// (the MCO's NodeBuilder), and a Ready condition when ready is not "".
func mcoNode(name, cur, desired string, ready corev1.ConditionStatus) testNode {
	state := ndpmcv1.StateWorking
	if cur == desired {
		state = ndpmcv1.StateDone
	}
	return testNode{name: name, cur: cur, desired: desired, state: state, notReady: ready == corev1.ConditionFalse}
}

// TestGetUnavailableMachines is the MCO's TestGetUnavailableMachines (the
// cases without image layering, which ndp does not have), and its
// getUpdatedMachines, getReadyMachines and getDegradedMachines through
// calculatePoolStatus's counts.
func TestGetUnavailableMachines(t *testing.T) {
	const v0, v1, v2 = "v0", "v1", "v2"
	T, F := corev1.ConditionTrue, corev1.ConditionFalse
	for _, tc := range []struct {
		name    string
		target  string
		nodes   []testNode
		unavail []string
		counts  poolCounts
	}{
		{name: "no nodes", target: v1},
		{
			name:    "1 in progress",
			target:  v1,
			nodes:   []testNode{mcoNode("node-0", v0, v0, T), mcoNode("node-1", v1, v1, T), mcoNode("node-2", v0, v1, T)},
			unavail: []string{"node-2"},
			counts:  poolCounts{Total: 3, Updated: 1, Ready: 1, Updating: 1, Unavailable: 1},
		},
		{
			name:    "1 unavail, 1 in progress",
			target:  v1,
			nodes:   []testNode{mcoNode("node-0", v0, v0, T), mcoNode("node-1", v1, v1, F), mcoNode("node-2", v0, v1, T)},
			unavail: []string{"node-1", "node-2"},
			counts:  poolCounts{Total: 3, Updated: 1, Ready: 0, Updating: 1, Unavailable: 2},
		},
		{
			name:    "1 node updated, 1 updating, 1 updating but not v2 and is ready",
			target:  v2,
			nodes:   []testNode{mcoNode("node-0", v0, v1, T), mcoNode("node-1", v2, v2, T), mcoNode("node-2", v0, v2, T)},
			unavail: []string{"node-0", "node-2"},
			counts:  poolCounts{Total: 3, Updated: 1, Ready: 1, Updating: 2, Unavailable: 2},
		},
		{
			name:    "1 node updated, 1 updating, 1 updating but not v2 and is not ready",
			target:  v2,
			nodes:   []testNode{mcoNode("node-0", v0, v1, F), mcoNode("node-1", v2, v2, T), mcoNode("node-2", v0, v2, T)},
			unavail: []string{"node-0", "node-2"},
			counts:  poolCounts{Total: 3, Updated: 1, Ready: 1, Updating: 2, Unavailable: 2},
		},
		{
			name:    "2 node updated, 1 updating",
			target:  v1,
			nodes:   []testNode{mcoNode("node-0", v0, v1, T), mcoNode("node-1", v1, v1, T), mcoNode("node-2", v1, v1, F)},
			unavail: []string{"node-0", "node-2"},
			counts:  poolCounts{Total: 3, Updated: 2, Ready: 1, Updating: 1, Unavailable: 2},
		},
		// The MCO's status_test.go newNodeWithReadyAndDaemonState cases:
		// a failing node (its daemon Degraded on a config it does not
		// run) is available to the MCO (IsNodeMCDFailing); ndp counts it.
		{
			name:    "a Ready node failing on another config: available to the MCO, unavailable in ndp",
			target:  v1,
			nodes:   []testNode{{name: "node-0", cur: v0, desired: v1, state: ndpmcv1.StateDegraded}, mcoNode("node-1", v1, v1, T)},
			unavail: []string{"node-0"},
			counts:  poolCounts{Total: 2, Updated: 1, Ready: 1, Updating: 1, Unavailable: 1, Degraded: 1},
		},
		{
			name:    "a node degraded on the config it runs is unavailable (not done) to both",
			target:  v1,
			nodes:   []testNode{{name: "node-0", cur: v1, desired: v1, state: ndpmcv1.StateDegraded}},
			unavail: []string{"node-0"},
			counts:  poolCounts{Total: 1, Unavailable: 1, Degraded: 1},
		},
		// IsNodeDone: every annotation present.
		{
			name:    "nodes without the annotations are not done: unavailable",
			target:  v1,
			nodes:   []testNode{{name: "bare"}, {name: "no-state", cur: v1, desired: v1}, {name: "no-desired", cur: v1, state: ndpmcv1.StateDone}, mcoNode("ok", v1, v1, T)},
			unavail: []string{"bare", "no-state", "no-desired"},
			counts:  poolCounts{Total: 4, Updated: 1, Ready: 1, Unavailable: 3},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodes := testNodes(tc.nodes...)
			var got []*corev1.Node
			for _, n := range nodes {
				if unavailable(n) {
					got = append(got, n)
				}
			}
			if diff := cmp.Diff(tc.unavail, nodeNames(got), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("unavailable (-want +got):\n%s", diff)
			}
			st := calculatePoolStatus(testPool(tc.target, nil, false), nodes, nil, nil, metav1.Now())
			if diff := cmp.Diff(tc.counts, st.Counts); diff != "" {
				t.Errorf("counts (-want +got):\n%s", diff)
			}
		})
	}
}

// TestGetMachinesByState is the MCO's TestGetMachinesByState
// (pkg/controller/common), its cases without image layering: which nodes a
// pool counts as updated, ready, unavailable and degraded.
func TestGetMachinesByState(t *testing.T) {
	const v0, v1 = "v0", "v1"
	T, F := corev1.ConditionTrue, corev1.ConditionFalse
	state := func(name, cur, desired, st string) testNode {
		return testNode{name: name, cur: cur, desired: desired, state: st}
	}
	for _, tc := range []struct {
		name   string
		target string
		nodes  []testNode
		// nilAnnotations: the nodes have no annotations map at all.
		nilAnnotations bool
		counts         poolCounts
	}{
		{name: "no nodes", target: v1},
		{name: "node with nil annotations", target: v1, nodes: []testNode{{name: "node1"}}, nilAnnotations: true,
			counts: poolCounts{Total: 1, Unavailable: 1}},
		{name: "node with empty annotations", target: v1, nodes: []testNode{{name: "node1"}},
			counts: poolCounts{Total: 1, Unavailable: 1}},
		{name: "1 node updated, 1 node ready, 1 updating, 1 not acted upon, 0 degraded", target: v1,
			nodes:  []testNode{mcoNode("node-0", v0, v0, T), mcoNode("node-1", v1, v1, T), mcoNode("node-2", v0, v1, T)},
			counts: poolCounts{Total: 3, Updated: 1, Ready: 1, Updating: 1, Unavailable: 1}},
		{name: "2 node updated, 1 updating", target: v1,
			nodes:  []testNode{mcoNode("node-0", v0, v1, T), mcoNode("node-1", v1, v1, T), mcoNode("node-2", v1, v1, T)},
			counts: poolCounts{Total: 3, Updated: 2, Ready: 2, Updating: 1, Unavailable: 1}},
		{name: "2 node updated, 1 updating, but 1 updated node is NotReady", target: v1,
			nodes:  []testNode{mcoNode("node-0", v0, v1, T), mcoNode("node-1", v1, v1, T), mcoNode("node-2", v1, v1, F)},
			counts: poolCounts{Total: 3, Updated: 2, Ready: 1, Updating: 1, Unavailable: 2}},
		// The MCO's "Rebooting" is a state ndp's daemon does not write;
		// it counts as any other state but Done.
		{name: "Nodes with mixed states", target: v0,
			nodes: []testNode{state("node-0", v0, v0, ndpmcv1.StateDegraded), state("node-1", v0, v0, ndpmcv1.StateDone),
				state("node-2", v0, v0, ndpmcv1.StateUnreconcilable), state("node-3", v0, v1, ndpmcv1.StateWorking), state("node-4", v0, v1, "Rebooting")},
			counts: poolCounts{Total: 5, Updated: 1, Ready: 1, Updating: 2, Unavailable: 4, Degraded: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodes := testNodes(tc.nodes...)
			for _, n := range nodes {
				if tc.nilAnnotations {
					n.Annotations = nil
				}
			}
			st := calculatePoolStatus(testPool(tc.target, nil, false), nodes, nil, nil, metav1.Now())
			if diff := cmp.Diff(tc.counts, st.Counts); diff != "" {
				t.Errorf("counts (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSortNodeList is the MCO's TestSortNodeList: zones in order, oldest
// first within a zone, nodes without a zone label last, oldest first.
func TestSortNodeList(t *testing.T) {
	node := func(name, zone string, sec, nsec int64) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}, CreationTimestamp: metav1.NewTime(time.Unix(sec, nsec))}}
		if zone != "" {
			n.Labels["topology.kubernetes.io/zone"] = zone
		}
		return n
	}
	nodeZoneQQQ := node("node-1", "QQQ", 0, 42)
	olderZoneRRR := node("node-2", "RRR", 0, 42)
	newerZoneRRR := node("node-3", "RRR", 100, 30)
	olderZoneZZZ := node("node-4", "ZZZ", 0, 42)
	newerZoneZZZ := node("node-5", "ZZZ", 100, 30)
	newestZoneZZZ := node("node-6", "ZZZ", 1500, 30)
	oldNoZone := node("node-7", "", 0, 42)
	newerNoZone := node("node-8", "", 200, 30)
	newestNoZone := node("node-9", "", 900, 30)
	nodes := []*corev1.Node{newerZoneZZZ, newestZoneZZZ, olderZoneZZZ, newerZoneRRR, newerNoZone, olderZoneRRR, newestNoZone, oldNoZone, nodeZoneQQQ}
	want := []*corev1.Node{nodeZoneQQQ, olderZoneRRR, newerZoneRRR, olderZoneZZZ, newerZoneZZZ, newestZoneZZZ, oldNoZone, newerNoZone, newestNoZone}
	sortRolloutOrder(nodes)
	if diff := cmp.Diff(nodeNames(want), nodeNames(nodes)); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}

	// ndp's own: an empty zone label is a zone (the MCO tests presence),
	// and equal zone and age are ordered by name.
	empty, named := node("b", "", 0, 0), node("a", "", 0, 0)
	empty.Labels["topology.kubernetes.io/zone"] = ""
	ties := []*corev1.Node{node("z", "", 0, 0), named, empty}
	sortRolloutOrder(ties)
	if diff := cmp.Diff([]string{"b", "a", "z"}, nodeNames(ties)); diff != "" {
		t.Errorf("ties (-want +got):\n%s", diff)
	}
}

// TestShouldMakeProgress is the taint half of the MCO's
// TestShouldMakeProgress (non-layered cases; the pool's target is v1 and
// maxUnavailable 1, beside a node already done on v1), with ndp's one
// difference: the MCO taints a node it then picks in the same sync and
// untaints it at the next; ndp writes the desiredConfig and the taint
// together, so a node it sends is never tainted, and one it sends that
// carries the taint loses it in that write.
func TestShouldMakeProgress(t *testing.T) {
	other := corev1.Taint{Key: "dummy", Effect: corev1.TaintEffectPreferNoSchedule}
	tainted := func(n testNode, taints ...corev1.Taint) *corev1.Node {
		node := n.node()
		node.Spec.Taints = taints
		return node
	}
	existing := done("existingNodeAtDesiredConfig", "v1")
	for _, tc := range []struct {
		name                string
		node                *corev1.Node
		paused, full        bool
		drain, noPlan       bool // the plan from v0 drains; no plan from v0 yet
		send, taint, untain []string
	}{
		{name: "node at desired config no patch on annotation or taints", node: done("nodeAtDesiredConfig", "v1").node()},
		{
			// MCO: annotation patch and taint add patch (the taint is
			// removed at its next sync). ndp: the send only.
			name: "node not at desired config, patch on annotation and taints",
			node: done("nodeNeedingUpdates", "v0").node(),
			send: []string{"nodeNeedingUpdates"},
		},
		{
			name:   "node at desired config, no patch on annotation but taint should be removed",
			node:   tainted(done("nodeWithDesiredConfigTaints", "v1"), UpdateInProgressTaint, other),
			untain: []string{"nodeWithDesiredConfigTaints"},
		},
		{
			// MCO: annotation patch, no taint patch (removed at the next
			// sync). ndp: both in the one write.
			name:   "node not at desired config, patch on annotation but not on taint",
			node:   tainted(done("nodeWithNoDesiredConfigButTaints", "v0"), UpdateInProgressTaint),
			send:   []string{"nodeWithNoDesiredConfigButTaints"},
			untain: []string{"nodeWithNoDesiredConfigButTaints"},
		},
		// syncMachineConfigPool: every node whose desiredConfig is not the
		// target is tainted, sent or not (here over budget). ndp: when its
		// plan drains or reboots it.
		{
			name:  "a node over budget is tainted",
			node:  done("waiting", "v0").node(),
			full:  true,
			drain: true,
			taint: []string{"waiting"},
		},
		{
			// ndp: tainted once its plan says it drains or reboots.
			name:   "a node over budget without a plan yet is not tainted yet",
			node:   done("waiting", "v0").node(),
			full:   true,
			noPlan: true,
		},
		{
			// ndp's difference: the taint steers pods away from a node
			// about to be drained; a plan that moves none gains nothing.
			name: "a node over budget whose plan moves no pod is not tainted",
			node: done("waiting", "v0").node(),
			full: true,
		},
		{
			name: "a node over budget already tainted is left alone",
			node: tainted(done("waiting", "v0"), other, UpdateInProgressTaint),
			full: true,
		},
		// TestPaused: a paused pool only syncs its status: no taint change.
		{name: "paused: no taint added", node: done("node-1", "v0").node(), paused: true},
		{name: "paused: no taint removed", node: tainted(done("node-0", "v1"), UpdateInProgressTaint), paused: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodes := []*corev1.Node{existing.node(), tc.node}
			pool := testPool("v1", intOrPercent("1"), tc.paused)
			if tc.full {
				// Fill the budget so that the node is not sent.
				nodes = append(nodes, testNode{name: "busy", cur: "v0", desired: "v1", state: ndpmcv1.StateWorking}.node())
			}
			target := testTarget(true, "v0")
			target.Name = "v1"
			target.Status.PostConfigActions[0].Drain = tc.drain
			if tc.noPlan {
				target = testTarget(false)
				target.Name = "v1"
			}
			d := decideRollout(pool, nodes, target)
			if diff := cmp.Diff(tc.send, nodeNames(append(d.Redirect, d.Send...)), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("sent (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.taint, nodeNames(d.Taint), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("taint (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.untain, nodeNames(d.Untaint), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("untaint (-want +got):\n%s", diff)
			}
		})
	}
}
