package controllers

import (
	"fmt"
	"sort"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
)

// ZoneLabel orders a rollout: one zone after another.
const ZoneLabel = corev1.LabelTopologyZone

// MaxUnavailable is the pool's budget of nodes out at once: an integer or
// a percentage of its nodes, rounded down, at least 1 (the Machine Config
// Operator's rule).
func MaxUnavailable(pool *mcfgv1.MachineConfigPool, nodes int) (int, error) {
	mu := intstr.FromInt(1)
	if pool.Spec.MaxUnavailable != nil {
		mu = *pool.Spec.MaxUnavailable
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(&mu, nodes, false)
	if err != nil {
		return 1, fmt.Errorf("MachineConfigPool %q: spec.maxUnavailable: %w", pool.Name, err)
	}
	return max(n, 1), nil
}

// rolloutStop is why a pool sends no node at all.
type rolloutStop string

const (
	stopNoTarget              rolloutStop = "NoTarget"              // spec.configuration.name is empty
	stopPaused                rolloutStop = "Paused"                // spec.paused
	stopInvalidMaxUnavailable rolloutStop = "InvalidMaxUnavailable" // the render controller reports it
	stopTargetNotFound        rolloutStop = "TargetNotFound"        // the target MachineConfig does not exist (yet)
	stopUnreconcilable        rolloutStop = "Unreconcilable"        // the pool is Degraded, naming it
)

// holdReason is why one node is not sent this time.
type holdReason string

const (
	// holdAtTarget: an available node that runs the target, or was sent to it.
	holdAtTarget holdReason = "AtTarget"
	// holdUnavailable: a node that counts against the budget and is not
	// redirected (at work, already sent to the target, not Ready, cordoned
	// or degraded where it is, or without a plan to the target).
	holdUnavailable holdReason = "Unavailable"
	// holdNoPlan: a candidate whose plan from its current config is not
	// ready; the pool is looked at again after Recheck.
	holdNoPlan holdReason = "NoPlan"
	// holdOverBudget: a candidate beyond the budget.
	holdOverBudget holdReason = "OverBudget"
)

// rolloutDecision is a pool's next step: which nodes go to its target.
type rolloutDecision struct {
	// Stop, when set, is why no node goes; nothing else is filled.
	Stop rolloutStop
	// Budget is the pool's maxUnavailable; Out its nodes unavailable
	// before this step.
	Budget, Out int
	// Redirect are unavailable nodes sent to an older target that they
	// have not started on, or failed on: they go to the target at once
	// (they count against the budget already). In the order of nodes.
	Redirect []*corev1.Node
	// Send are the nodes that go next, in rollout order (zone, then age,
	// then name), within the budget.
	Send []*corev1.Node
	// Held tells, by node name, why each other node does not go.
	Held map[string]holdReason
	// Wait: a candidate within the budget waits for its plan; look at the
	// pool again later.
	Wait bool
}

// rolloutBlocked is the part of decideRollout that needs only the pool:
// the reconciler asks it before reading nodes and the target.
func rolloutBlocked(pool *mcfgv1.MachineConfigPool) rolloutStop {
	switch {
	case pool.Spec.Configuration.Name == "":
		return stopNoTarget
	case pool.Spec.Paused:
		return stopPaused
	}
	return ""
}

// decideRollout chooses which of a pool's nodes go to its target now.
// target is the pool's target MachineConfig, nil if it does not exist.
//
// It never exceeds the pool's maxUnavailable, counting nodes that are
// updating, not Ready, cordoned or degraded; honours paused; picks Ready
// and schedulable nodes by zone then age (then name); and sends a node
// only to a target whose plan from that node's config is ready. A node
// that runs no config yet adopts the target (it was provisioned with it).
func decideRollout(pool *mcfgv1.MachineConfigPool, nodes []*corev1.Node, target *ndpmcv1.MachineConfig) rolloutDecision {
	if stop := rolloutBlocked(pool); stop != "" {
		return rolloutDecision{Stop: stop}
	}
	budget, err := MaxUnavailable(pool, len(nodes))
	if err != nil {
		return rolloutDecision{Stop: stopInvalidMaxUnavailable}
	}
	if target == nil {
		return rolloutDecision{Stop: stopTargetNotFound}
	}
	if c := meta.FindStatusCondition(target.Status.Conditions, ndpmcv1.ConditionUnreconcilable); c != nil && c.Status == metav1.ConditionTrue {
		return rolloutDecision{Stop: stopUnreconcilable}
	}
	name := pool.Spec.Configuration.Name
	planReady := meta.IsStatusConditionTrue(target.Status.Conditions, ndpmcv1.ConditionPlanReady)

	// ready: the node may go to the target now. A node that runs no config
	// yet adopts it, one that runs it already needs nothing; any other
	// needs the plan from its config.
	ready := func(n *corev1.Node) bool {
		cur := n.Annotations[ndpmcv1.CurrentConfigAnnotation]
		return cur == "" || cur == name || (planReady && target.Status.PlanFrom(cur) != nil)
	}
	d := rolloutDecision{Budget: budget, Held: map[string]holdReason{}}
	var candidates []*corev1.Node
	for _, n := range nodes {
		if unavailable(n) {
			d.Out++
			// A node sent to an older target that it has not started on,
			// or failed on, already counts against the budget: it goes to
			// the new target (a fix, a newer change) at once. A node at
			// work finishes first.
			cur, desired, state := n.Annotations[ndpmcv1.CurrentConfigAnnotation], n.Annotations[ndpmcv1.DesiredConfigAnnotation], n.Annotations[ndpmcv1.StateAnnotation]
			if (desired != cur || state == ndpmcv1.StateDegraded) && desired != name && state != ndpmcv1.StateWorking && ready(n) {
				d.Redirect = append(d.Redirect, n)
			} else {
				d.Held[n.Name] = holdUnavailable
			}
			continue
		}
		if n.Annotations[ndpmcv1.DesiredConfigAnnotation] != name && n.Annotations[ndpmcv1.CurrentConfigAnnotation] != name {
			candidates = append(candidates, n)
		} else {
			d.Held[n.Name] = holdAtTarget
		}
	}
	sort.Slice(candidates, func(i, j int) bool {
		a, b := candidates[i], candidates[j]
		if za, zb := a.Labels[ZoneLabel], b.Labels[ZoneLabel]; za != zb {
			return za < zb
		}
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
	for _, n := range candidates {
		switch {
		case d.Out+len(d.Send) >= budget:
			d.Held[n.Name] = holdOverBudget
		case !ready(n):
			d.Held[n.Name] = holdNoPlan
			d.Wait = true
		default:
			d.Send = append(d.Send, n)
		}
	}
	return d
}
