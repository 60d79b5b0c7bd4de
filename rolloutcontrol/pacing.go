package rolloutcontrol

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
)

// PacingState is what pacing looks at: the pool's last finished node.
type PacingState struct {
	// LastDone is when the pool's last node finished its update (zero: no
	// node has yet, in this rollout).
	LastDone time.Time
	// LastNode names it.
	LastNode string
	// DrainedPodsNotReady are the controllers whose pods were drained from
	// it and are not Ready again anywhere (DrainedNotReady).
	DrainedPodsNotReady []string
}

// pacing is the strictest pacing of a pool's policies.
type pacing struct {
	settle    time.Duration
	settleBy  string // the policy with the longest settle
	drained   bool
	drainedBy string
}

func (p *pacing) add(pol *Policy) {
	pc := pol.Spec.Pacing
	if pc == nil {
		return
	}
	if pc.SettleAfter != nil && pc.SettleAfter.Duration > p.settle {
		p.settle, p.settleBy = pc.SettleAfter.Duration, pol.Name
	}
	if pc.WaitForDrainedPodsReady && !p.drained {
		p.drained, p.drainedBy = true, pol.Name
	}
}

// check says why the next node may not start yet; the settle reason tells
// until when.
func (p pacing) check(s PacingState, now time.Time) []Reason {
	var out []Reason
	if s.LastDone.IsZero() {
		return nil
	}
	last := "the last node"
	if s.LastNode != "" {
		last = "node " + s.LastNode
	}
	if until := s.LastDone.Add(p.settle); p.settle > 0 && now.Before(until) {
		out = append(out, Reason{Kind: ReasonSettle, Policy: p.settleBy, Until: until,
			Detail: fmt.Sprintf("%s settles for %s after its update, until %s", last, p.settle, until.UTC().Format("15:04:05 MST"))})
	}
	if p.drained && len(s.DrainedPodsNotReady) > 0 {
		pods := s.DrainedPodsNotReady
		d := fmt.Sprintf("pods drained from %s are not Ready yet: %s", last, strings.Join(pods[:min(3, len(pods))], ", "))
		if len(pods) > 3 {
			d += fmt.Sprintf(" and %d more", len(pods)-3)
		}
		out = append(out, Reason{Kind: ReasonDrainedPods, Policy: p.drainedBy, Detail: d})
	}
	return out
}

// CheckPacing is the pacing of the policies alone: whether the next node
// may start at now, and if not why (a settle reason carries its end).
func CheckPacing(policies []*Policy, s PacingState, now time.Time) []Reason {
	var p pacing
	for _, pol := range policies {
		p.add(pol)
	}
	return p.check(s, now)
}

// DrainedNotReady lists the owners of the drained pods d that are not back:
// fewer of their pods created since the drain are Ready than were evicted,
// while one of their pods is still on its way (not Ready). An owner with
// no pod on its way was scaled down or deleted: nothing will come back, and
// waiting for it would hold the rollout for good. pods are the cluster's
// pods in the owners' namespaces (others are ignored); the pods of an
// owner with none on its way (PodComing) may be left out.
func DrainedNotReady(d *v1alpha1.DrainedPods, pods []*corev1.Pod) []string {
	if d == nil || len(d.Owners) == 0 {
		return nil
	}
	type count struct{ ready, coming int }
	counts := make(map[string]*count, len(d.Owners))
	for _, o := range d.Owners {
		counts[string(o.UID)] = &count{}
	}
	for _, p := range pods {
		ref := metav1.GetControllerOf(p)
		if ref == nil {
			continue
		}
		c := counts[string(ref.UID)]
		if c == nil || !podLive(p) {
			continue
		}
		switch {
		case !podReady(p):
			c.coming++
		case !p.CreationTimestamp.Time.Before(d.At.Time):
			c.ready++
		}
	}
	var out []string
	for _, o := range d.Owners {
		c := counts[string(o.UID)]
		if c.ready < o.Pods && c.coming > 0 {
			out = append(out, fmt.Sprintf("%s %s/%s (%d of %d Ready)", o.Kind, o.Namespace, o.Name, c.ready, o.Pods))
		}
	}
	return out
}

// PodComing: the pod is on its way, neither Ready nor going (deleted,
// succeeded, failed). An owner with no such pod is not waited for
// (DrainedNotReady).
func PodComing(p *corev1.Pod) bool { return podLive(p) && !podReady(p) }

func podLive(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
