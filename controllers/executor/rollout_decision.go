package executor

import (
	"slices"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/nodepool"
	"github.com/ndp-dev/ndp/rolloutcontrol"
)

// ZoneLabel orders a rollout: one zone after another.
const ZoneLabel = corev1.LabelTopologyZone

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
	// holdPolicy: a candidate (or a redirect) that the pool's rollout
	// policies or the node's hold annotation keep back now
	// (rolloutcontrol.Decide); Policy says why.
	holdPolicy holdReason = "Policy"
)

// rolloutPolicies is what decideRolloutWith needs of the pool's
// RolloutPolicies: the time of the step, the policies that select the
// pool with their gates as evaluated, and the pool's pacing.
type rolloutPolicies struct {
	Now      time.Time
	Policies []rolloutcontrol.PolicyInput
	Pacing   rolloutcontrol.PacingState
}

func (p rolloutPolicies) policies() []*v1alpha1.RolloutPolicy {
	out := make([]*v1alpha1.RolloutPolicy, len(p.Policies))
	for i, pi := range p.Policies {
		out[i] = pi.Policy
	}
	return out
}

// rolloutDecision is a pool's next step: which nodes go to its target.
type rolloutDecision struct {
	// Stop, when set, is why no node goes; nothing else is filled.
	Stop rolloutStop
	// Budget is the pool's maxUnavailable; Out its nodes unavailable
	// before this step.
	Budget, Out int
	// Redirect are unavailable nodes that go to the target at once: they
	// count against the budget already. Nodes sent to an older target that
	// they have not started on, or failed on, or failed in place; nodes
	// that run no config yet (they adopt the target: nothing changes on
	// the host); nodes that run the target but were never sent to it. In
	// the order of nodes.
	Redirect []*corev1.Node
	// Record are unavailable nodes that run a config other than the
	// target and were never sent anywhere (no desiredConfig): their
	// desiredConfig becomes their currentConfig, which changes nothing on
	// the host (the MCO's daemon writes both annotations at first boot,
	// ndp's adopts a host's config without one). They are then done, and
	// candidates like any other. In the order of nodes.
	Record []*corev1.Node
	// Send are the nodes that go next, in rollout order (zone, then age,
	// then name), within the budget.
	Send []*corev1.Node
	// Grant are the nodes at the target whose host asked for a reboot
	// (v1alpha1.RebootRequiredAnnotation) that may reboot now: they went
	// through the same choice as Send, as plans that drain and reboot.
	Grant []*corev1.Node
	// Held tells, by node name, why each other node does not go.
	Held map[string]holdReason
	// Wait: a candidate within the budget waits for its plan; look at the
	// pool again later.
	Wait bool
	// Taint are the nodes that, after this step, are still not sent to
	// the target and lack the UpdateInProgress:PreferNoSchedule taint;
	// Untaint the nodes sent to it (now or before) that carry it: the
	// MCO's syncMachineConfigPool taints every node of a pool whose
	// desiredConfig is not the pool's target, so that the scheduler
	// prefers updated nodes, and untaints it once it is. In the order of
	// nodes.
	Taint, Untaint []*corev1.Node
	// Policy is what the rollout policies and hold annotations decided
	// (nil when Stop is set); Next is when the decision may change by
	// time alone (a window opens, a settle time ends); zero: never.
	Policy *rolloutcontrol.Decision
	Next   time.Time
}

// UpdateInProgressTaint is the MCO's NodeUpdateInProgressTaint: on the
// nodes of a rolling pool that are not sent to its target yet.
var UpdateInProgressTaint = corev1.Taint{Key: "UpdateInProgress", Effect: corev1.TaintEffectPreferNoSchedule}

// hasUpdateInProgressTaint: the node carries UpdateInProgressTaint (its
// key and effect, as the MCO's Taint.MatchTaint compares them).
func hasUpdateInProgressTaint(n *corev1.Node) bool {
	for i := range n.Spec.Taints {
		if n.Spec.Taints[i].MatchTaint(&UpdateInProgressTaint) {
			return true
		}
	}
	return false
}

// sortRolloutOrder sorts nodes in rollout order, the MCO's sortNodeList:
// nodes with a zone label first, by zone, then by age, oldest first; nodes
// without one last, by age. ndp breaks the remaining ties by name, so that
// the order never depends on how the nodes were listed.
func sortRolloutOrder(nodes []*corev1.Node) {
	rolloutcontrol.SortNodes(nodes, nil) // Zone: the order without a policy
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

// decideRollout is decideRolloutWith without rollout policies: a node's
// hold annotation still holds it.
func decideRollout(pool *mcfgv1.MachineConfigPool, nodes []*corev1.Node, target *ndpmcv1.MachineConfig) rolloutDecision {
	return decideRolloutWith(pool, nodes, target, rolloutPolicies{})
}

// podReads are the pool's reads of pods for its policies, both through
// the GateSource (nil without one): which owners of the pods drained from
// its last node are not back (drainedNotReady, nil when there is no such
// drain or no policy waits for it) and each policy's blocking pods
// (blocking).
type podReads struct {
	drainedNotReady func() ([]string, error)
	blocking        func(*v1alpha1.RolloutPolicy) *rolloutcontrol.PodsResult
}

// decideRolloutPaced is decideRolloutWith with the pods read only when a
// node would start: they can only hold a start, and a pool is decided at
// every step of every node, while a cluster's pods can be thousands. pol's
// blocking-pods gates are taken as blocking nothing until read.
func decideRolloutPaced(pool *mcfgv1.MachineConfigPool, nodes []*corev1.Node, target *ndpmcv1.MachineConfig, pol rolloutPolicies, reads podReads) (rolloutDecision, error) {
	d := decideRolloutWith(pool, nodes, target, pol)
	if len(d.Send) == 0 {
		return d, nil
	}
	again := false
	if reads.blocking != nil {
		pol.Policies = slices.Clone(pol.Policies)
		for i, pi := range pol.Policies {
			if g := pi.Policy.Spec.Gates; g != nil && g.BlockingPods != nil {
				res := reads.blocking(pi.Policy)
				pol.Policies[i].Gates.BlockingPods = res
				again = again || res == nil || res.Err != nil || len(res.Pods) > 0
			}
		}
	}
	if reads.drainedNotReady != nil {
		notReady, err := reads.drainedNotReady()
		if err != nil {
			return rolloutDecision{}, err
		}
		pol.Pacing.DrainedPodsNotReady = notReady
		again = again || len(pol.Pacing.DrainedPodsNotReady) > 0
	}
	if !again {
		return d, nil
	}
	return decideRolloutWith(pool, nodes, target, pol), nil
}

// decideRolloutWith chooses which of a pool's nodes go to its target now.
// target is the pool's target MachineConfig, nil if it does not exist;
// pol are the pool's RolloutPolicies (rolloutcontrol.Decide), which only
// ever remove starts. Without any, the choice is exactly the one before
// rollout policies existed, but for nodes held by annotation.
//
// It never exceeds the pool's maxUnavailable, counting the nodes that are
// not ready or not done (unavailable, the MCO's rule but for failed
// nodes); honours paused; picks done and ready nodes in the MCO's order
// (sortRolloutOrder); and sends a node only to a target whose plan from
// that node's config is ready. A node that runs no config yet adopts the
// target (it was provisioned with it). It also says which nodes gain or
// lose the UpdateInProgress taint; a stopped rollout leaves taints as they
// are (the MCO's paused pool does too).
func decideRolloutWith(pool *mcfgv1.MachineConfigPool, nodes []*corev1.Node, target *ndpmcv1.MachineConfig, pol rolloutPolicies) rolloutDecision {
	if stop := rolloutBlocked(pool); stop != "" {
		return rolloutDecision{Stop: stop}
	}
	budget, err := nodepool.MaxUnavailable(pool, len(nodes))
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
	// plan is a node's plan to the target for the policies' windows: nil
	// and ok for a node that adopts the target or runs it already.
	plan := func(n *corev1.Node) (*ndpmcv1.PostConfigActions, bool) {
		cur := n.Annotations[ndpmcv1.CurrentConfigAnnotation]
		if rebootAsked(n, name) {
			p := ndpmcv1.RequestedRebootPlan(name, true, n.Annotations[v1alpha1.RebootRequiredByAnnotation])
			return &p, true
		}
		if cur == "" || cur == name {
			return nil, true
		}
		if !planReady {
			return nil, false
		}
		p := target.Status.PlanFrom(cur)
		return p, p != nil
	}
	d := rolloutDecision{Budget: budget, Held: map[string]holdReason{}}
	var candidates, redirect, out []*corev1.Node
	for _, n := range nodes {
		cur, desired, state := n.Annotations[ndpmcv1.CurrentConfigAnnotation], n.Annotations[ndpmcv1.DesiredConfigAnnotation], n.Annotations[ndpmcv1.StateAnnotation]
		if !unavailable(n) {
			// Done: desiredConfig is currentConfig. A node at the target
			// whose host asks for a reboot is a candidate too.
			if desired != name || rebootAsked(n, name) {
				candidates = append(candidates, n)
			} else {
				d.Held[n.Name] = holdAtTarget
			}
			continue
		}
		d.Out++
		out = append(out, n)
		// An unavailable node already counts against the budget: one that
		// is not at work and that only waits for a desiredConfig that its
		// daemon can act on goes to the new target (a fix, a newer change)
		// at once. A node at work finishes first.
		switch {
		case state == ndpmcv1.StateWorking || desired == name || !ready(n):
			d.Held[n.Name] = holdUnavailable
		case cur == "", // runs no config yet: adopts the target
			desired != "" && desired != cur, // sent elsewhere, not started or failed there
			state == ndpmcv1.StateDegraded,  // failed in place
			desired == "" && cur == name:    // runs the target, never sent to it
			redirect = append(redirect, n)
		case desired == "":
			d.Record = append(d.Record, n)
		default:
			d.Held[n.Name] = holdUnavailable
		}
	}
	pd := rolloutcontrol.Decide(rolloutcontrol.Input{
		Now: pol.Now, Policies: pol.Policies, Nodes: nodes, Out: out, Candidates: candidates,
		Plan: plan, Allowed: budget - d.Out, Pacing: pol.Pacing, Target: name,
	})
	d.Policy, d.Next = &pd, pd.Next
	// A redirect is no new start (the node is out already), so gates,
	// pacing and the budget do not apply; but a node not at work that would
	// reboot or drain on its way to the new target keeps to the windows,
	// and a node held by annotation stays where it is: it goes on with
	// what it was sent to before, or stays degraded. A node that adopts
	// the target or runs it already changes nothing on the host: it goes.
	redirectHolds := redirectHolds(pol, redirect, plan)
	for _, n := range redirect {
		if rs := redirectHolds[n.Name]; len(rs) > 0 {
			d.Held[n.Name] = holdPolicy
			pd.Held[n.Name] = append(pd.Held[n.Name], rs...)
			for _, r := range rs {
				if !r.Until.IsZero() && (d.Next.IsZero() || r.Until.Before(d.Next)) {
					d.Next = r.Until
				}
			}
			continue
		}
		d.Redirect = append(d.Redirect, n)
	}
	send := map[*corev1.Node]bool{}
	for _, n := range pd.Send {
		send[n] = true
	}
	// Decide's order is the MCO's (sortRolloutOrder) unless a policy sets
	// one. A candidate beyond the budget when its turn comes is OverBudget,
	// whatever else holds it, as before policies; one within it waits for
	// its plan (NoPlan) or for the policies.
	nSent := 0
	for _, n := range pd.Order {
		reasons := pd.Held[n.Name]
		switch {
		case send[n] && rebootAsked(n, name):
			d.Grant = append(d.Grant, n)
			nSent++
		case send[n]:
			d.Send = append(d.Send, n)
			nSent++
		case d.Out+nSent >= budget:
			d.Held[n.Name] = holdOverBudget
		case hasReason(reasons, rolloutcontrol.ReasonNoPlan):
			d.Held[n.Name] = holdNoPlan
			d.Wait = true
		case len(reasons) > 0 || len(pd.Pool) > 0:
			d.Held[n.Name] = holdPolicy
		default:
			d.Held[n.Name] = holdOverBudget
		}
	}

	// The UpdateInProgress taint follows each node's desiredConfig after
	// this step (syncMachineConfigPool's loop, with this step's sends
	// already counted: the MCO taints a node it picks and untaints it at
	// its next sync; ndp writes both in the one patch, so never taints it).
	sent := map[*corev1.Node]string{}
	for _, n := range d.Redirect {
		sent[n] = name
	}
	for _, n := range d.Send {
		sent[n] = name
	}
	for _, n := range d.Record {
		sent[n] = n.Annotations[ndpmcv1.CurrentConfigAnnotation]
	}
	for _, n := range nodes {
		desired, ok := sent[n]
		if !ok {
			desired = n.Annotations[ndpmcv1.DesiredConfigAnnotation]
		}
		switch has := hasUpdateInProgressTaint(n); {
		case desired == name && has:
			d.Untaint = append(d.Untaint, n)
		case desired != name && !has && mayDisrupt(plan(n)):
			d.Taint = append(d.Taint, n)
		}
	}
	return d
}

// mayDisrupt tells whether a node waiting for the target, with the plan
// plan gives it, will be drained or rebooted: only then does the taint
// steer new pods away from it (the MCO taints every waiting node; a plan
// that moves no pod gains nothing from it, and costs a write per node). A
// plan not known yet is waited for: the plan controller writes it within
// moments of the target, and the pool is looked at again then (tainting
// every node meanwhile cost each update a write).
func mayDisrupt(p *ndpmcv1.PostConfigActions, known bool) bool {
	return known && p != nil && p.Disrupts()
}

// rebootAsked: the node runs the target, was sent to it, and its host
// asks for a reboot not granted yet.
func rebootAsked(n *corev1.Node, target string) bool {
	_, granted := n.Annotations[v1alpha1.RebootGrantAnnotation]
	return !granted && n.Annotations[v1alpha1.RebootRequiredAnnotation] != "" &&
		n.Annotations[ndpmcv1.CurrentConfigAnnotation] == target && n.Annotations[ndpmcv1.DesiredConfigAnnotation] == target
}

func hasReason(rs []rolloutcontrol.Reason, k rolloutcontrol.ReasonKind) bool {
	for _, r := range rs {
		if r.Kind == k {
			return true
		}
	}
	return false
}

// redirectHolds are, by node name, why a redirect does not go now: its
// hold annotation, or windows that hold the plan from its config (a node
// that adopts the target or runs it, whose plan is nil, is never held by
// a window: None plans are held only by a window that holds every plan,
// and then it keeps to it too).
func redirectHolds(pol rolloutPolicies, nodes []*corev1.Node, plan func(*corev1.Node) (*ndpmcv1.PostConfigActions, bool)) map[string][]rolloutcontrol.Reason {
	out := map[string][]rolloutcontrol.Reason{}
	var compiled []*rolloutcontrol.Policy
	for _, pi := range pol.Policies {
		if c, err := pi.Compile(); err == nil {
			compiled = append(compiled, c)
		}
	}
	for _, n := range nodes {
		if v, ok := n.Annotations[v1alpha1.HoldAnnotation]; ok {
			out[n.Name] = append(out[n.Name], rolloutcontrol.HoldReason(n.Name, v, n.Annotations[v1alpha1.HoldByAnnotation]))
		}
		if len(compiled) == 0 {
			continue
		}
		p, ok := plan(n)
		if !ok {
			continue // not redirected anyway: decideRollout keeps it Unavailable
		}
		v := rolloutcontrol.CheckWindows(compiled, rolloutcontrol.KindsOf(p), pol.Now)
		if !v.Allowed {
			r := rolloutcontrol.Reason{Kind: rolloutcontrol.ReasonWindow, Node: n.Name, Until: v.Opens,
				Detail: trimWaiting(rolloutcontrol.WindowMessage(v, pol.Now))}
			if v.Never {
				r.Kind = rolloutcontrol.ReasonNever
			}
			out[n.Name] = append(out[n.Name], r)
		}
	}
	return out
}

func trimWaiting(s string) string {
	const p = "waiting: "
	if len(s) >= len(p) && s[:len(p)] == p {
		return s[len(p):]
	}
	return s
}
