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

// failures is the strictest failure handling of a pool's policies: the
// smallest haltAfter and the shortest rebootTimeout, each with the policy
// that sets it.
type failures struct {
	haltAfter       int
	haltBy          string
	rebootTimeout   time.Duration
	rebootTimeoutBy string
}

func (f *failures) add(pol *Policy) {
	fs := pol.Spec.Failures
	if fs == nil {
		return
	}
	if fs.HaltAfter != nil && *fs.HaltAfter > 0 && (f.haltAfter == 0 || int(*fs.HaltAfter) < f.haltAfter) {
		f.haltAfter, f.haltBy = int(*fs.HaltAfter), pol.Name
	}
	if fs.RebootTimeout != nil && fs.RebootTimeout.Duration > 0 && (f.rebootTimeout == 0 || fs.RebootTimeout.Duration < f.rebootTimeout) {
		f.rebootTimeout, f.rebootTimeoutBy = fs.RebootTimeout.Duration, pol.Name
	}
}

// Overdue is a node in the middle of its update that has not been Ready
// for a policy's rebootTimeout: the rollout controller marks it Degraded.
type Overdue struct {
	Node *corev1.Node
	// Since is when it stopped being Ready (its Ready condition's last
	// transition).
	Since time.Time
	// Timeout and Policy: the rebootTimeout that ran out, and whose.
	Timeout time.Duration
	Policy  string
}

// Message is the node's Degraded reason: "RebootTimeout: not Ready for
// 15m0s of its update, since 2026-01-01 10:04:00 UTC (rolloutpolicy p's
// failures.rebootTimeout)".
func (o Overdue) Message() string {
	return fmt.Sprintf("%s: not Ready for %s of its update, since %s (rolloutpolicy %s's failures.rebootTimeout)",
		v1alpha1.RebootTimeoutReason, o.Timeout, o.Since.UTC().Format("2006-01-02 15:04:05 MST"), o.Policy)
}

// check finds, among the pool's nodes at now, those down too long in the
// middle of an update (Working, not Ready since rebootTimeout or more;
// not yet marked), the failed ones (Degraded, and the overdue), and the
// next time a node down now becomes overdue (zero: none).
func (f failures) check(nodes []*corev1.Node, now time.Time) (overdue []Overdue, failed []string, next time.Time) {
	for _, n := range nodes {
		switch n.Annotations[ndpmcv1.StateAnnotation] {
		case ndpmcv1.StateDegraded:
			failed = append(failed, n.Name)
			continue
		case ndpmcv1.StateWorking:
		default:
			continue
		}
		since, down := notReadySince(n)
		if !down || f.rebootTimeout == 0 {
			continue
		}
		due := since.Add(f.rebootTimeout)
		if now.Before(due) {
			if next.IsZero() || due.Before(next) {
				next = due
			}
			continue
		}
		overdue = append(overdue, Overdue{Node: n, Since: since, Timeout: f.rebootTimeout, Policy: f.rebootTimeoutBy})
		failed = append(failed, n.Name)
	}
	sort.Strings(failed)
	return overdue, failed, next
}

// OverdueNodes is Decide's rebootTimeout check alone, for a pool whose
// rollout is stopped (paused): a node already in its update that does not
// come back from its reboot has failed whether or not others may start.
// It returns the nodes to mark Degraded and when the next node down now
// becomes overdue (zero: none). Invalid policies are left out: Decide
// reports them once the pool goes on.
func OverdueNodes(policies []*v1alpha1.RolloutPolicy, nodes []*corev1.Node, now time.Time) ([]Overdue, time.Time) {
	var fl failures
	for _, p := range policies {
		if c, err := Compile(p); err == nil {
			fl.add(c)
		}
	}
	overdue, _, next := fl.check(nodes, now)
	return overdue, next
}

// notReadySince: the node's Ready condition is not True, since its last
// transition. A node without one (never reported) is not down.
func notReadySince(n *corev1.Node) (time.Time, bool) {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.LastTransitionTime.Time, c.Status != corev1.ConditionTrue
		}
	}
	return time.Time{}, false
}

// halt is the reason that holds the pool while haltAfter or more of its
// nodes have failed; nil otherwise.
func (f failures) halt(failed []string) *Reason {
	if f.haltAfter == 0 || len(failed) < f.haltAfter {
		return nil
	}
	names := failed
	more := ""
	if len(names) > 5 {
		names, more = names[:5], fmt.Sprintf(" and %d more", len(failed)-5)
	}
	return &Reason{Kind: ReasonHalted, Policy: f.haltBy,
		Detail: fmt.Sprintf("%d of the pool's nodes failed (%s%s), haltAfter is %d", len(failed), strings.Join(names, ", "), more, f.haltAfter)}
}
