package rolloutcontrol

import (
	"fmt"
	"strings"
	"time"
)

// PacingState is what pacing looks at: the pool's last finished node.
type PacingState struct {
	// LastDone is when the pool's last node finished its update (zero: no
	// node has yet, in this rollout).
	LastDone time.Time
	// LastNode names it.
	LastNode string
	// DrainedPodsNotReady are the pods drained from it ("namespace/name",
	// or the controllers that own them) that are not Ready again anywhere.
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
