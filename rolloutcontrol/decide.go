package rolloutcontrol

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
)

// PolicyInput is one policy on the pool and its gates as evaluated.
type PolicyInput struct {
	Policy *v1alpha1.RolloutPolicy
	// Compiled is Policy compiled (a Compiler's), or nil: Decide compiles
	// it.
	Compiled *Policy
	Gates    GateResults
}

// Compile is the compiled policy: Compiled, or Compile(Policy).
func (pi PolicyInput) Compile() (*Policy, error) {
	if pi.Compiled != nil {
		return pi.Compiled, nil
	}
	return Compile(pi.Policy)
}

// Input is one rollout step of a pool, as decideRollout sees it.
type Input struct {
	// Now is the time of the step.
	Now time.Time
	// Policies are the policies that select the pool (PoliciesFor).
	Policies []PolicyInput
	// Nodes are the pool's nodes (the zone budget's zone sizes, the held
	// nodes); Out those of them unavailable now (decideRollout's Out).
	Nodes, Out []*corev1.Node
	// Candidates are the nodes that may go to the target: done, available,
	// not sent there (decideRollout's candidates), in any order.
	Candidates []*corev1.Node
	// Plan is a candidate's plan to the target; ok is false when it is not
	// ready. A nil plan with ok (a node that adopts the target) is None.
	Plan func(*corev1.Node) (plan *ndpmcv1.PostConfigActions, ok bool)
	// Allowed is how many may start now without the policies: the pool's
	// maxUnavailable less Out. Never exceeded.
	Allowed int
	// Pacing is the pool's last finished node.
	Pacing PacingState
	// Target is the pool's target config: a candidate that gave up its
	// drain to it (DrainSkipped) is held.
	Target string
}

// Decision is what the policies let start now.
type Decision struct {
	// Order are the candidates in the policies' order.
	Order []*corev1.Node
	// Send are the candidates that may start now, in Order: at most
	// Allowed, none while Pool holds.
	Send []*corev1.Node
	// Held tells why a candidate does not start now, by node name. A
	// candidate in neither Send nor Held is beyond Allowed (decideRollout's
	// OverBudget) — or the pool is held (Pool).
	Held map[string][]Reason
	// Pool are reasons that hold every start of the pool (gates, pacing,
	// an invalid policy).
	Pool []Reason
	// Warnings: gates that could not be evaluated and did not hold
	// (failOpen), orders of other policies that were ignored.
	Warnings []Reason
	// HeldNodes are the pool's nodes that carry the hold annotation, by
	// name (candidates or not).
	HeldNodes []string
	// Overdue are the pool's nodes not back from a reboot within a
	// policy's rebootTimeout and not yet marked Degraded: the caller marks
	// them. Failed names every failed node of the pool (Degraded, or
	// overdue), sorted.
	Overdue []Overdue
	Failed  []string
	// Next is the earliest time the decision can change by time alone (a
	// window opens, a settle time ends, a reboot becomes overdue); zero:
	// none. Gates change without notice: the caller looks again on its own
	// interval.
	Next time.Time
}

// Holding says whether the policies hold a start that would happen
// without them: the pool's condition and the policy's Holding.
func (d Decision) Holding() bool { return len(d.Pool) > 0 || len(d.Held) > 0 }

// Decide applies the pool's rollout policies to one rollout step. It only
// removes starts: Send is a subset of the candidates, at most in.Allowed;
// nodes already out are not its business (they finish).
//
// The strictest of several policies wins: a plan waits until every policy
// that holds it has a window open at the same time; any gate that says no
// holds; the longest settle time and any wait for drained pods apply; the
// smallest zone budget applies. Order is not combined: the first policy by
// name that sets one decides, and the others' are reported as ignored. A
// candidate held by annotation, or that gave up its drain to the target
// (DrainSkipped), is held whatever the policies say.
func Decide(in Input) Decision {
	d := Decision{Held: map[string][]Reason{}}
	hold := func(n *corev1.Node, r Reason) {
		r.Node = n.Name
		d.Held[n.Name] = append(d.Held[n.Name], r)
	}
	until := func(t time.Time) {
		if !t.IsZero() && (d.Next.IsZero() || t.Before(d.Next)) {
			d.Next = t
		}
	}

	var policies []*Policy
	for _, pi := range in.Policies {
		p, err := pi.Compile()
		if err != nil {
			d.Pool = append(d.Pool, Reason{Kind: ReasonInvalid, Policy: pi.Policy.Name, Detail: fmt.Sprintf("invalid %v", err)})
			continue
		}
		policies = append(policies, p)
		gv := EvaluateGates(p, pi.Gates)
		d.Pool = append(d.Pool, gv.Hold...)
		d.Warnings = append(d.Warnings, gv.Warnings...)
		for _, n := range in.Candidates {
			for _, r := range gv.NodeHold[n.Name] {
				hold(n, r)
			}
		}
	}

	// Order: the first policy that sets one.
	var order *v1alpha1.RolloutOrder
	var orderBy string
	for _, p := range policies {
		if o := p.Spec.Order; o != nil {
			if order == nil {
				order, orderBy = o, p.Name
			} else if o.By != order.By || o.Label != order.Label || strings.Join(o.Priorities, "\x00") != strings.Join(order.Priorities, "\x00") {
				d.Warnings = append(d.Warnings, Reason{Kind: ReasonIgnored, Policy: p.Name,
					Detail: fmt.Sprintf("its order (%s) is ignored: rolloutpolicy %s's (%s) applies", o.By, orderBy, order.By)})
			}
		}
	}
	d.Order = append([]*corev1.Node(nil), in.Candidates...)
	SortNodes(d.Order, order)

	// Pacing.
	var pc pacing
	for _, p := range policies {
		pc.add(p)
	}
	for _, r := range pc.check(in.Pacing, in.Now) {
		d.Pool = append(d.Pool, r)
		until(r.Until)
	}

	// Failures: nodes not back from a reboot in time fail; haltAfter
	// failed nodes hold the pool.
	var fl failures
	for _, p := range policies {
		fl.add(p)
	}
	var failNext time.Time
	d.Overdue, d.Failed, failNext = fl.check(in.Nodes, in.Now)
	until(failNext)
	if r := fl.halt(d.Failed); r != nil {
		d.Pool = append(d.Pool, *r)
	}

	// Held by annotation: every node of the pool, for the report.
	for _, n := range in.Nodes {
		if _, ok := n.Annotations[v1alpha1.HoldAnnotation]; ok {
			d.HeldNodes = append(d.HeldNodes, n.Name)
		}
	}
	sort.Strings(d.HeldNodes)

	// Zone budget: the smallest of the policies', per zone.
	zoneSize, zoneOut := map[string]int{}, map[string]int{}
	for _, n := range in.Nodes {
		zoneSize[n.Labels[ZoneLabel]]++
	}
	for _, n := range in.Out {
		zoneOut[n.Labels[ZoneLabel]]++
	}
	zoneLimits := map[string]int{}
	zoneBudgetBy := ""
	for _, p := range policies {
		if p.Spec.ZoneBudget == nil {
			continue
		}
		for z, size := range zoneSize {
			l, _ := zoneLimit(p.Spec.ZoneBudget, size) // checked by Compile
			if cur, ok := zoneLimits[z]; !ok || l < cur {
				zoneLimits[z] = l
				zoneBudgetBy = p.Name
			}
		}
	}

	sets := make([]windowSet, 0, len(policies))
	for _, p := range policies {
		sets = append(sets, p.windows)
	}
	verdicts := map[Kinds]WindowVerdict{}
	for _, n := range d.Order {
		if v, ok := n.Annotations[v1alpha1.HoldAnnotation]; ok {
			hold(n, HoldReason(n.Name, v, n.Annotations[v1alpha1.HoldByAnnotation]))
		}
		if r, ok := DrainSkipped(n, in.Target); ok {
			hold(n, r)
		}
		plan, ok := in.Plan(n)
		if !ok {
			hold(n, Reason{Kind: ReasonNoPlan, Detail: fmt.Sprintf("node %s: its plan to the target is not ready", n.Name)})
			continue
		}
		k := KindsOf(plan)
		wv, seen := verdicts[k]
		if !seen {
			wv = checkWindows(sets, k, in.Now)
			verdicts[k] = wv
		}
		if !wv.Allowed {
			hold(n, windowReason(wv, in.Now, n.Name))
			until(wv.Opens)
		}
		if len(d.Held[n.Name]) > 0 || len(d.Pool) > 0 || len(d.Send) >= in.Allowed {
			continue
		}
		z := n.Labels[ZoneLabel]
		if l, ok := zoneLimits[z]; ok && zoneOut[z] >= l {
			zone := z
			if zone == "" {
				zone = "(none)"
			}
			hold(n, Reason{Kind: ReasonZoneBudget, Policy: zoneBudgetBy,
				Detail: fmt.Sprintf("zone %s has %d of its %d nodes out (zoneBudget %d)", zone, zoneOut[z], zoneSize[z], l)})
			continue
		}
		d.Send = append(d.Send, n)
		zoneOut[z]++
	}
	return d
}

// HoldReason is the reason of a node held by annotation: "held: node
// worker-3 by annotation: disk swap (by alice)".
func HoldReason(node, why, by string) Reason {
	d := "node " + node + " by annotation " + v1alpha1.HoldAnnotation
	if why != "" {
		d += ": " + why
	}
	if by != "" {
		d += " (by " + by + ")"
	}
	return Reason{Kind: ReasonHold, Node: node, Detail: d}
}

// Summary is the decision in lines for the pool's condition and
// `kubectl ndp status`: the pool's reasons, then each distinct node reason
// once with how many nodes it holds, at most max lines (0: all).
func Summary(d Decision, max int) []string {
	var lines []string
	seen := map[string]int{}
	add := func(s string) {
		if _, ok := seen[s]; !ok {
			seen[s] = len(lines)
			lines = append(lines, s)
		}
	}
	for _, r := range d.Pool {
		add(r.String())
	}
	counts := map[string]int{}
	var keys []string
	for _, n := range d.Order {
		for _, r := range d.Held[n.Name] {
			s := r.String()
			if r.Kind == ReasonWindow || r.Kind == ReasonNever {
				if counts[s] == 0 {
					keys = append(keys, s)
				}
				counts[s]++
				continue
			}
			add(s)
		}
	}
	for _, s := range keys {
		if c := counts[s]; c > 1 {
			s = fmt.Sprintf("%s (%d nodes)", s, c)
		} else {
			s = fmt.Sprintf("%s (1 node)", s)
		}
		add(s)
	}
	for _, r := range d.Warnings {
		add("warning: " + r.Detail + " [rolloutpolicy " + r.Policy + "]")
	}
	if max > 0 && len(lines) > max {
		rest := len(lines) - max + 1
		lines = append(lines[:max-1], fmt.Sprintf("and %d more", rest))
	}
	return lines
}
