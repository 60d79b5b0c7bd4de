package rolloutcontrol

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
)

// drainActionRank orders the choices at a drain timeout from the least
// disruptive: waiting disrupts nothing more, skipping leaves the node
// behind, deleting pods overrides their budgets.
var drainActionRank = map[v1alpha1.DrainTimeoutAction]int{
	v1alpha1.DrainTimeoutWait: 0, v1alpha1.DrainTimeoutSkip: 1, v1alpha1.DrainTimeoutDeletePods: 2,
}

// DrainTimeoutFor is the drain timeout the pool's nodes are sent with, the
// strictest of the policies that set one: the least disruptive choice
// (Wait, then Skip, then DeletePods; onDrainTimeout unset is Wait), and
// of the policies that make it, the longest timeout. nil: no policy sets
// one, the drain waits as long as it must.
func DrainTimeoutFor(policies []*v1alpha1.RolloutPolicy) *v1alpha1.DrainTimeout {
	var out *v1alpha1.DrainTimeout
	for _, p := range policies {
		f := p.Spec.Failures
		if f == nil || f.DrainTimeout == nil || f.DrainTimeout.Duration <= 0 {
			continue
		}
		act := f.OnDrainTimeout
		if act == "" {
			act = v1alpha1.DrainTimeoutWait
		}
		rank, ok := drainActionRank[act]
		if !ok {
			continue // refused by the CRD
		}
		d := v1alpha1.DrainTimeout{Timeout: f.DrainTimeout.Duration, Action: act}
		switch cur := out; {
		case cur == nil, rank < drainActionRank[cur.Action]:
			out = &d
		case rank == drainActionRank[cur.Action] && d.Timeout > cur.Timeout:
			out.Timeout = d.Timeout
		}
	}
	return out
}

// DrainSkipped is the reason a node whose drain to target timed out under
// Skip is not sent there again (v1alpha1.DrainSkippedAnnotation names
// target); false for any other node, one skipped for another target
// included.
func DrainSkipped(n *corev1.Node, target string) (Reason, bool) {
	skipped, ok := n.Annotations[v1alpha1.DrainSkippedAnnotation]
	if !ok || skipped != target || target == "" {
		return Reason{}, false
	}
	d := "node " + n.Name + " gave up its drain to " + target
	if why := n.Annotations[v1alpha1.DrainSkippedReasonAnnotation]; why != "" {
		d += ": " + why
	}
	return Reason{Kind: ReasonDrainSkipped, Node: n.Name, Detail: d + " (kubectl ndp retry " + n.Name + ")"}, true
}
