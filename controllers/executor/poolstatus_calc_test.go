package executor

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
)

type conditionMap = map[mcfgv1.MachineConfigPoolConditionType]mcfgv1.MachineConfigPoolCondition

// condStrings are conditions as "Status Reason: message", by type.
type condStrings map[mcfgv1.MachineConfigPoolConditionType]string

func asStrings(cs []mcfgv1.MachineConfigPoolCondition) condStrings {
	out := condStrings{}
	for _, c := range cs {
		out[c.Type] = fmt.Sprintf("%s %s: %s", c.Status, c.Reason, c.Message)
	}
	return out
}

func poolCond(typ mcfgv1.MachineConfigPoolConditionType, status corev1.ConditionStatus, reason, msg string) mcfgv1.MachineConfigPoolCondition {
	return mcfgv1.MachineConfigPoolCondition{Type: typ, Status: status, Reason: reason, Message: msg}
}

func TestCalculatePoolStatus(t *testing.T) {
	// The conditions of a pool whose nodes all run its target "new".
	idle := condStrings{
		ConditionPoolUpdated:      "True AllNodesUpdated: all 2 nodes run new",
		ConditionPoolUpdating:     "False Idle: ",
		ConditionPoolNodeDegraded: "False AsExpected: ",
		ConditionPoolDegraded:     "False AsExpected: ",
	}
	// with is base with other conditions.
	with := func(base, other condStrings) condStrings {
		out := condStrings{}
		for k, v := range base {
			out[k] = v
		}
		for k, v := range other {
			out[k] = v
		}
		return out
	}
	unreconcilable := &ndpmcv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: "new"}}
	unreconcilable.Status.Conditions = []metav1.Condition{{Type: ndpmcv1.ConditionUnreconcilable, Status: metav1.ConditionTrue, Message: "node a: a kernel argument changes"}}
	reconcilable := &ndpmcv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: "new"}}
	reconcilable.Status.Conditions = []metav1.Condition{{Type: ndpmcv1.ConditionUnreconcilable, Status: metav1.ConditionFalse, Message: "was"}}

	type pool struct {
		target        string
		paused        bool
		conditions    []mcfgv1.MachineConfigPoolCondition
		configuration string
	}
	for _, tc := range []struct {
		name     string
		pool     pool
		nodes    []testNode
		target   *ndpmcv1.MachineConfig
		reported conditionMap

		counts        poolCounts
		conds         condStrings
		configuration string
	}{
		{
			name: "empty pool without a target",
			conds: condStrings{
				ConditionPoolUpdated:      "False NodesNotUpdated: 0 of 0 nodes run ",
				ConditionPoolUpdating:     "False Idle: ",
				ConditionPoolNodeDegraded: "False AsExpected: ",
				ConditionPoolDegraded:     "False AsExpected: ",
			},
		},
		{
			name:          "empty pool with a target is updated",
			pool:          pool{target: "new"},
			conds:         with(idle, condStrings{ConditionPoolUpdated: "True AllNodesUpdated: all 0 nodes run new"}),
			configuration: "new",
		},
		{
			name:          "every node runs the target",
			pool:          pool{target: "new", configuration: "old"},
			nodes:         []testNode{done("a", "new"), done("b", "new")},
			counts:        poolCounts{Total: 2, Updated: 2, Ready: 2},
			conds:         idle,
			configuration: "new",
		},
		{
			// The MCO's IsNodeDone: a node without a desiredConfig or a
			// state is not done, so not updated, and unavailable (the
			// rollout controller sends it to the target at once).
			name:   "a node that runs the target without desiredConfig or state is not updated, and unavailable",
			pool:   pool{target: "new", configuration: "new"},
			nodes:  []testNode{{name: "a", cur: "new"}, done("b", "new")},
			counts: poolCounts{Total: 2, Updated: 1, Ready: 1, Unavailable: 1},
			conds: with(idle, condStrings{ConditionPoolUpdated: "False NodesNotUpdated: 1 of 2 nodes run new",
				ConditionPoolUpdating: "True Updating: 1 of 2 nodes on new; updating: "}),
			configuration: "new",
		},
		{
			name: "updated nodes not Ready or cordoned are updated, not ready, and unavailable",
			pool: pool{target: "new"},
			nodes: []testNode{
				// TestGetReadyMachines "2 node updated, 1 updating, but one
				// updated node is NotReady": done nodes are updated whatever
				// their readiness.
				{name: "down", cur: "new", desired: "new", state: ndpmcv1.StateDone, notReady: true},
				{name: "cordoned", cur: "new", desired: "new", state: ndpmcv1.StateDone, unschedulable: true},
				done("ok", "new"),
			},
			counts:        poolCounts{Total: 3, Updated: 3, Ready: 1, Unavailable: 2},
			conds:         with(idle, condStrings{ConditionPoolUpdated: "True AllNodesUpdated: all 3 nodes run new"}),
			configuration: "new",
		},
		{
			// The MCO's IsNodeDone wants the state Done: a node at work
			// on the config it runs is not updated.
			name:   "a node at work on the config it runs is updating and unavailable, not updated",
			pool:   pool{target: "new", configuration: "new"},
			nodes:  []testNode{{name: "a", cur: "new", desired: "new", state: ndpmcv1.StateWorking}, done("b", "new")},
			counts: poolCounts{Total: 2, Updated: 1, Ready: 1, Updating: 1, Unavailable: 1},
			conds: with(idle, condStrings{ConditionPoolUpdated: "False NodesNotUpdated: 1 of 2 nodes run new",
				ConditionPoolUpdating: "True Updating: 1 of 2 nodes on new; updating: a"}),
			configuration: "new",
		},
		{
			name:          "a node sent to the target is updating",
			pool:          pool{target: "new", configuration: "old"},
			nodes:         []testNode{{name: "a", cur: "old", desired: "new", state: ndpmcv1.StateWorking}, done("b", "new"), done("c", "old")},
			counts:        poolCounts{Total: 3, Updated: 1, Ready: 1, Updating: 1, Unavailable: 1},
			conds:         with(idle, condStrings{ConditionPoolUpdated: "False NodesNotUpdated: 1 of 3 nodes run new", ConditionPoolUpdating: "True Updating: 1 of 3 nodes on new; updating: a"}),
			configuration: "old",
		},
		{
			name:   "a node that runs the target but is sent elsewhere is not updated",
			pool:   pool{target: "new"},
			nodes:  []testNode{{name: "a", cur: "new", desired: "old", state: ndpmcv1.StateDone}, done("b", "new")},
			counts: poolCounts{Total: 2, Updated: 1, Ready: 1, Updating: 1, Unavailable: 1},
			conds:  with(idle, condStrings{ConditionPoolUpdated: "False NodesNotUpdated: 1 of 2 nodes run new", ConditionPoolUpdating: "True Updating: 1 of 2 nodes on new; updating: a"}),
		},
		{
			name: "degraded and unreconcilable nodes",
			pool: pool{target: "new", configuration: "old"},
			nodes: []testNode{
				{name: "b", cur: "new", desired: "new", state: ndpmcv1.StateDegraded, reason: "restarting chronyd failed"},
				{name: "a", cur: "old", desired: "old", state: ndpmcv1.StateUnreconcilable, reason: "a kernel argument changes"},
			},
			counts: poolCounts{Total: 2, Unavailable: 2, Degraded: 2},
			conds: condStrings{
				ConditionPoolUpdated:      "False NodesNotUpdated: 0 of 2 nodes run new",
				ConditionPoolUpdating:     "True Updating: 0 of 2 nodes on new; updating: ",
				ConditionPoolNodeDegraded: "True NodeDegraded: node a: a kernel argument changes; node b: restarting chronyd failed",
				ConditionPoolDegraded:     "True Degraded: NodeDegraded: node a: a kernel argument changes; node b: restarting chronyd failed",
			},
			configuration: "old",
		},
		{
			name: "a node that runs the target but is Unreconcilable (for a newer one) is not updated",
			pool: pool{target: "new"},
			nodes: []testNode{
				{name: "a", cur: "new", desired: "new", state: ndpmcv1.StateUnreconcilable, reason: "a kernel argument changes"},
				done("b", "new"),
			},
			counts: poolCounts{Total: 2, Updated: 1, Ready: 1, Unavailable: 1, Degraded: 1},
			conds: with(idle, condStrings{
				ConditionPoolUpdated:      "False NodesNotUpdated: 1 of 2 nodes run new",
				ConditionPoolUpdating:     "True Updating: 1 of 2 nodes on new; updating: ",
				ConditionPoolNodeDegraded: "True NodeDegraded: node a: a kernel argument changes",
				ConditionPoolDegraded:     "True Degraded: NodeDegraded: node a: a kernel argument changes",
			}),
		},
		{
			name:   "paused with nodes behind",
			pool:   pool{target: "new", paused: true},
			nodes:  []testNode{done("a", "old"), done("b", "new")},
			counts: poolCounts{Total: 2, Updated: 1, Ready: 1},
			conds:  with(idle, condStrings{ConditionPoolUpdated: "False NodesNotUpdated: 1 of 2 nodes run new", ConditionPoolUpdating: "False Paused: paused with 1 of 2 nodes on new"}),
		},
		{
			name:          "paused with every node updated is idle",
			pool:          pool{target: "new", paused: true},
			nodes:         []testNode{done("a", "new"), done("b", "new")},
			counts:        poolCounts{Total: 2, Updated: 2, Ready: 2},
			conds:         idle,
			configuration: "new",
		},
		{
			name:          "nodes but no target",
			pool:          pool{configuration: "old"},
			nodes:         []testNode{done("a", "old"), done("b", "old")},
			counts:        poolCounts{Total: 2},
			conds:         with(idle, condStrings{ConditionPoolUpdated: "False NodesNotUpdated: 0 of 2 nodes run ", ConditionPoolUpdating: "True Updating: 0 of 2 nodes on ; updating: "}),
			configuration: "old",
		},
		{
			name:          "an unreconcilable target degrades the pool",
			pool:          pool{target: "new"},
			nodes:         []testNode{done("a", "new"), done("b", "new")},
			target:        unreconcilable,
			counts:        poolCounts{Total: 2, Updated: 2, Ready: 2},
			conds:         with(idle, condStrings{ConditionPoolDegraded: "True Degraded: the plans to new are unreconcilable: node a: a kernel argument changes"}),
			configuration: "new",
		},
		{
			name:          "a target no longer unreconcilable does not",
			pool:          pool{target: "new"},
			nodes:         []testNode{done("a", "new"), done("b", "new")},
			target:        reconcilable,
			counts:        poolCounts{Total: 2, Updated: 2, Ready: 2},
			conds:         idle,
			configuration: "new",
		},
		{
			name:          "a reported RenderDegraded degrades the pool",
			pool:          pool{target: "new"},
			nodes:         []testNode{done("a", "new"), done("b", "new")},
			reported:      conditionMap{mcfgv1.MachineConfigPoolRenderDegraded: poolCond(mcfgv1.MachineConfigPoolRenderDegraded, corev1.ConditionTrue, "RenderFailed", "bad ignition")},
			counts:        poolCounts{Total: 2, Updated: 2, Ready: 2},
			conds:         with(idle, condStrings{mcfgv1.MachineConfigPoolRenderDegraded: "True RenderFailed: bad ignition", ConditionPoolDegraded: "True Degraded: RenderDegraded: bad ignition"}),
			configuration: "new",
		},
		{
			name:          "nodes no pool manages degrade the pool (the MCO only logs them)",
			pool:          pool{target: "new"},
			nodes:         []testNode{done("a", "new"), done("b", "new")},
			reported:      conditionMap{ndpmcv1.ConditionUnmanagedNodes: poolCond(ndpmcv1.ConditionUnmanagedNodes, corev1.ConditionTrue, "NoPrimaryPool", "node x belongs to 2 custom pools")},
			counts:        poolCounts{Total: 2, Updated: 2, Ready: 2},
			conds:         with(idle, condStrings{ndpmcv1.ConditionUnmanagedNodes: "True NoPrimaryPool: node x belongs to 2 custom pools", ConditionPoolDegraded: "True Degraded: UnmanagedNodes: node x belongs to 2 custom pools"}),
			configuration: "new",
		},
		{
			name:     "the Machine Config Operator's presence degrades the pool",
			pool:     pool{target: "new"},
			nodes:    []testNode{done("a", "new"), done("b", "new")},
			reported: conditionMap{ndpmcv1.ConditionMCOPresent: poolCond(ndpmcv1.ConditionMCOPresent, corev1.ConditionTrue, "MachineConfigOperatorPresent", "the MCO manages this cluster")},
			counts:   poolCounts{Total: 2, Updated: 2, Ready: 2},
			conds: with(idle, condStrings{ndpmcv1.ConditionMCOPresent: "True MachineConfigOperatorPresent: the MCO manages this cluster",
				ConditionPoolDegraded: "True Degraded: MCOPresent: the MCO manages this cluster"}),
			configuration: "new",
		},
		{
			name: "the Machine Config Operator gone, Degraded recovers",
			pool: pool{target: "new", conditions: []mcfgv1.MachineConfigPoolCondition{
				poolCond(ndpmcv1.ConditionMCOPresent, corev1.ConditionTrue, "MachineConfigOperatorPresent", "the MCO manages this cluster"),
				poolCond(ConditionPoolDegraded, corev1.ConditionTrue, "Degraded", "MCOPresent: the MCO manages this cluster"),
			}},
			nodes:         []testNode{done("a", "new"), done("b", "new")},
			reported:      conditionMap{ndpmcv1.ConditionMCOPresent: poolCond(ndpmcv1.ConditionMCOPresent, corev1.ConditionFalse, "AsExpected", "")},
			counts:        poolCounts{Total: 2, Updated: 2, Ready: 2},
			conds:         with(idle, condStrings{ndpmcv1.ConditionMCOPresent: "False AsExpected: "}),
			configuration: "new",
		},
		{
			name: "RegistriesDegraded in the status, reported by no one since the start, still degrades the pool",
			pool: pool{target: "new", conditions: []mcfgv1.MachineConfigPoolCondition{
				poolCond(ndpmcv1.ConditionRegistriesDegraded, corev1.ConditionTrue, "Invalid", "mirror x"),
			}},
			nodes:         []testNode{done("a", "new"), done("b", "new")},
			counts:        poolCounts{Total: 2, Updated: 2, Ready: 2},
			conds:         with(idle, condStrings{ndpmcv1.ConditionRegistriesDegraded: "True Invalid: mirror x", ConditionPoolDegraded: "True Degraded: RegistriesDegraded: mirror x"}),
			configuration: "new",
		},
		{
			name: "a reported condition overrides the status, and Degraded recovers",
			pool: pool{target: "new", conditions: []mcfgv1.MachineConfigPoolCondition{
				poolCond(mcfgv1.MachineConfigPoolRenderDegraded, corev1.ConditionTrue, "RenderFailed", "bad ignition"),
				poolCond(ConditionPoolDegraded, corev1.ConditionTrue, "Degraded", "RenderDegraded: bad ignition"),
			}},
			nodes:         []testNode{done("a", "new"), done("b", "new")},
			reported:      conditionMap{mcfgv1.MachineConfigPoolRenderDegraded: poolCond(mcfgv1.MachineConfigPoolRenderDegraded, corev1.ConditionFalse, "Rendered", "")},
			counts:        poolCounts{Total: 2, Updated: 2, Ready: 2},
			conds:         with(idle, condStrings{mcfgv1.MachineConfigPoolRenderDegraded: "False Rendered: "}),
			configuration: "new",
		},
		{
			name: "Degraded names every cause, in order",
			pool: pool{target: "new", conditions: []mcfgv1.MachineConfigPoolCondition{
				poolCond(ndpmcv1.ConditionRegistriesDegraded, corev1.ConditionTrue, "Invalid", "mirror x"),
			}},
			nodes:    []testNode{{name: "a", cur: "new", desired: "new", state: ndpmcv1.StateDegraded, reason: "drain failed"}, done("b", "new")},
			target:   unreconcilable,
			reported: conditionMap{mcfgv1.MachineConfigPoolRenderDegraded: poolCond(mcfgv1.MachineConfigPoolRenderDegraded, corev1.ConditionTrue, "RenderFailed", "bad ignition")},
			counts:   poolCounts{Total: 2, Updated: 1, Ready: 1, Unavailable: 1, Degraded: 1},
			conds: condStrings{
				ConditionPoolUpdated:                   "False NodesNotUpdated: 1 of 2 nodes run new",
				ConditionPoolUpdating:                  "True Updating: 1 of 2 nodes on new; updating: ",
				ConditionPoolNodeDegraded:              "True NodeDegraded: node a: drain failed",
				mcfgv1.MachineConfigPoolRenderDegraded: "True RenderFailed: bad ignition",
				ndpmcv1.ConditionRegistriesDegraded:    "True Invalid: mirror x",
				ConditionPoolDegraded: "True Degraded: NodeDegraded: node a: drain failed; RenderDegraded: bad ignition; " +
					"RegistriesDegraded: mirror x; the plans to new are unreconcilable: node a: a kernel argument changes",
			},
		},
		{
			name: "the status's own Updated, Updating and NodeDegraded are replaced, other conditions kept",
			pool: pool{target: "new", conditions: []mcfgv1.MachineConfigPoolCondition{
				poolCond(ConditionPoolUpdated, corev1.ConditionFalse, "NodesNotUpdated", "1 of 2 nodes run new"),
				poolCond(ConditionPoolUpdating, corev1.ConditionTrue, "Updating", "1 of 2 nodes on new; updating: a"),
				poolCond(ConditionPoolNodeDegraded, corev1.ConditionTrue, "NodeDegraded", "node a: drain failed"),
				poolCond("Custom", corev1.ConditionUnknown, "Someone", "else's"),
			}},
			nodes:         []testNode{done("a", "new"), done("b", "new")},
			counts:        poolCounts{Total: 2, Updated: 2, Ready: 2},
			conds:         with(idle, condStrings{"Custom": "Unknown Someone: else's"}),
			configuration: "new",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testPool(tc.pool.target, nil, tc.pool.paused)
			p.Status.Conditions = tc.pool.conditions
			p.Status.Configuration.Name = tc.pool.configuration
			got := calculatePoolStatus(p, testNodes(tc.nodes...), tc.target, tc.reported, metav1.Now())
			if diff := cmp.Diff(tc.counts, got.Counts); diff != "" {
				t.Errorf("counts (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.conds, asStrings(got.Conditions)); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if got.Configuration != tc.configuration {
				t.Errorf("configuration %q, want %q", got.Configuration, tc.configuration)
			}
		})
	}
}

// Conditions come sorted by type; a condition's lastTransitionTime moves
// only when its status does.
func TestCalculatePoolStatusTransitions(t *testing.T) {
	then := metav1.NewTime(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	now := metav1.NewTime(then.Add(time.Hour))
	at := func(c mcfgv1.MachineConfigPoolCondition, t metav1.Time) mcfgv1.MachineConfigPoolCondition {
		c.LastTransitionTime = t
		return c
	}
	p := testPool("new", nil, false)
	p.Status.Conditions = []mcfgv1.MachineConfigPoolCondition{
		at(poolCond(ConditionPoolUpdated, corev1.ConditionTrue, "AllNodesUpdated", "all 2 nodes run old"), then),
		at(poolCond(ConditionPoolUpdating, corev1.ConditionFalse, "Idle", ""), then),
		at(poolCond(ConditionPoolDegraded, corev1.ConditionFalse, "AsExpected", ""), metav1.Time{}), // no time yet
	}

	// Still updated (to a new target): Updated keeps its time though its
	// message changes; a condition without a time, or new, gets now.
	got := calculatePoolStatus(p, testNodes(done("a", "new"), done("b", "new")), nil, nil, now)
	want := []mcfgv1.MachineConfigPoolCondition{
		at(poolCond(ConditionPoolDegraded, corev1.ConditionFalse, "AsExpected", ""), now),
		at(poolCond(ConditionPoolNodeDegraded, corev1.ConditionFalse, "AsExpected", ""), now),
		at(poolCond(ConditionPoolUpdated, corev1.ConditionTrue, "AllNodesUpdated", "all 2 nodes run new"), then),
		at(poolCond(ConditionPoolUpdating, corev1.ConditionFalse, "Idle", ""), then),
	}
	if diff := cmp.Diff(want, got.Conditions); diff != "" {
		t.Errorf("no transition (-want +got):\n%s", diff)
	}

	// A node goes: Updated and Updating change, and move; the others stay.
	got = calculatePoolStatus(p, testNodes(done("a", "new"), testNode{name: "b", cur: "old", desired: "new"}), nil, nil, now)
	want = []mcfgv1.MachineConfigPoolCondition{
		at(poolCond(ConditionPoolDegraded, corev1.ConditionFalse, "AsExpected", ""), now),
		at(poolCond(ConditionPoolNodeDegraded, corev1.ConditionFalse, "AsExpected", ""), now),
		at(poolCond(ConditionPoolUpdated, corev1.ConditionFalse, "NodesNotUpdated", "1 of 2 nodes run new"), now),
		at(poolCond(ConditionPoolUpdating, corev1.ConditionTrue, "Updating", "1 of 2 nodes on new; updating: b"), now),
	}
	if diff := cmp.Diff(want, got.Conditions); diff != "" {
		t.Errorf("a transition (-want +got):\n%s", diff)
	}
}
