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

// Overdue is a node not back from its reboot within a policy's
// rebootTimeout: the rollout controller marks it Degraded.
type Overdue struct {
	Node *corev1.Node
	// Since is when its daemon asked for the reboot.
	Since time.Time
	// Timeout and Policy: the rebootTimeout that ran out, and whose.
	Timeout time.Duration
	Policy  string
}

// Message is the node's Degraded reason: "not back 15m0s after its reboot
// was asked for at 10:04:05 UTC (rolloutpolicy p's failures.rebootTimeout)".
func (o Overdue) Message() string {
	return fmt.Sprintf("%s: not back %s after its reboot was asked for at %s (rolloutpolicy %s's failures.rebootTimeout)",
		v1alpha1.RebootTimeoutReason, o.Timeout, o.Since.UTC().Format("2006-01-02 15:04:05 MST"), o.Policy)
}

// check finds, among the pool's nodes at now, those whose reboot is
// overdue (not yet marked), the failed ones (Degraded, and the overdue),
// and the next time a reboot under way becomes overdue (zero: none).
func (f failures) check(nodes []*corev1.Node, now time.Time) (overdue []Overdue, failed []string, next time.Time) {
	for _, n := range nodes {
		if n.Annotations[ndpmcv1.StateAnnotation] == ndpmcv1.StateDegraded {
			failed = append(failed, n.Name)
			continue
		}
		at, ok := n.Annotations[v1alpha1.RebootRequestedAtAnnotation]
		if !ok || f.rebootTimeout == 0 {
			continue
		}
		since, err := time.Parse(time.RFC3339, at)
		if err != nil {
			continue // not the daemon's: nothing to count from
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
