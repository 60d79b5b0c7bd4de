package preview

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/render"
)

// WaitingChange is how the plan that one group of a pool's nodes waits for
// would change: the nodes that run From while the pool's target is To.
type WaitingChange struct {
	Pool     string
	From, To string
	Nodes    int
	// Updating nodes have started executing the stored plan: the plan
	// controller keeps it for them (and for the group while they do).
	Updating int
	planner.PlanChange
}

// WhatIf is the what-if preview of a policy edit: the waiting plans that
// would change.
type WhatIf struct {
	Changes []WaitingChange
	// WaitingNodes run another config than their pool's target, in
	// WaitingPools pools: their plans were compared.
	WaitingNodes, WaitingPools int
}

// WhatIf compares, for every pool, the plans its nodes wait for (each node
// whose current config is not the pool's target, grouped by that config)
// with the plans the edited policy set would make, as the plan controller
// would write them.
//
// The plan a group waits for is the one stored in the target's
// status.postConfigActions for its config. When there is none yet, or it
// was made with another revision than the active one (the plan controller
// is about to replace it), the active set's plan is computed instead, so
// that only the edit's own effect is shown. A group with a node already
// updating keeps its stored plan, as the plan controller does.
func (p *Previewer) WhatIf(ctx context.Context, edited *planner.Planner) (*WhatIf, error) {
	current, err := p.Active.Ready(ctx, p.Client)
	if err != nil {
		return nil, err
	}
	pools, err := p.Pools(ctx)
	if err != nil {
		return nil, err
	}
	out := &WhatIf{}
	for _, pool := range pools {
		changes, waiting, err := p.whatIfPool(ctx, pool, current, edited)
		if err != nil {
			return nil, err
		}
		if waiting > 0 {
			out.WaitingNodes += waiting
			out.WaitingPools++
		}
		out.Changes = append(out.Changes, changes...)
	}
	return out, nil
}

func (p *Previewer) whatIfPool(ctx context.Context, pool *mcfgv1.MachineConfigPool, current, edited *planner.Planner) ([]WaitingChange, int, error) {
	target := pool.Spec.Configuration.Name
	if target == "" {
		return nil, 0, nil // not rendered yet: nothing is planned
	}
	view := p.View(pool)
	groups, err := view.Waiting(ctx)
	var selErr *render.SelectorError
	if errors.As(err, &selErr) {
		return nil, 0, nil // the render controller reports bad selectors
	}
	if err != nil {
		return nil, 0, err
	}
	waiting := 0
	for _, g := range groups {
		waiting += len(g.Nodes)
	}
	if len(groups) == 0 {
		return nil, 0, nil
	}
	var to ndpmcv1.MachineConfig
	if err := p.Client.Get(ctx, client.ObjectKey{Name: target}, &to); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, waiting, nil // no target, no plan, before and after
		}
		return nil, 0, fmt.Errorf("MachineConfig %q, the target of pool %q: %w", target, pool.Name, err)
	}
	toCfg, err := p.configs.Get(&to)
	if err != nil {
		return nil, 0, fmt.Errorf("MachineConfig %q, the target of pool %q: %w", target, pool.Name, err)
	}
	single, err := view.SingleNode(ctx)
	if err != nil {
		return nil, 0, err
	}
	var out []WaitingChange
	for _, g := range groups {
		var before planner.Outcome
		if standing := to.Status.StandingPlan(g.From, current.Engine.Revision(), g.Updating > 0); standing != nil {
			before = planner.StoredOutcome(standing)
		} else {
			before = planner.OutcomeOf(p.Plan(ctx, current, pool, g.From, targetKey(&to), toCfg, single))
		}
		after := planner.OutcomeOf(p.Plan(ctx, edited, pool, g.From, targetKey(&to), toCfg, single))
		if err := ctx.Err(); err != nil {
			return nil, 0, err // a plan cut short is no answer
		}
		c := WaitingChange{Pool: pool.Name, From: g.From, To: target, Nodes: len(g.Nodes), PlanChange: planner.PlanChange{Before: before, After: after}}
		if to.Status.PlanFrom(g.From) != nil {
			c.Updating = g.Updating
		}
		if c.Changed() {
			out = append(out, c)
		}
	}
	return out, waiting, nil
}

// targetKey names a MachineConfig in the cluster in the previewer's plan
// cache: by name, uid and generation (a rendering is keyed by its name,
// the digest of its content).
func targetKey(mc *ndpmcv1.MachineConfig) string {
	return fmt.Sprintf("%s\x00%s\x00%d", mc.Name, mc.UID, mc.Generation)
}

// Limits of the what-if warnings. The API server keeps at most 4096
// characters (runes) of warnings per response; past that it cuts every
// warning to 256 and drops the rest
// (k8s.io/apiserver/pkg/endpoints/filters/warning.go). Each line stays
// within 256, and all of them within a budget that leaves room for other
// warnings of the same request.
const (
	maxWhatIfLine   = 256
	maxWhatIfBudget = 3072
)

// NoPendingPlanChanges starts the warning of an edit that changes no plan.
const NoPendingPlanChanges = "no pending plan changes"

// Warnings writes the what-if as admission warnings: one per changed
// plan, e.g.
//
//	pool worker, 3 nodes rendered-worker-1a2b → rendered-worker-7a8b: Reboot → Restart chronyd.service (no drain)
//
// or one saying that no plan changes.
func (w *WhatIf) Warnings() []string {
	if len(w.Changes) == 0 {
		if w.WaitingNodes == 0 {
			return []string{NoPendingPlanChanges + ": no node is waiting for an update"}
		}
		return []string{fmt.Sprintf("%s: the plans of %s in %s stay as they are", NoPendingPlanChanges, Count(w.WaitingNodes, "waiting node"), Count(w.WaitingPools, "pool"))}
	}
	lines := make([]string, 0, len(w.Changes))
	for _, c := range w.Changes {
		change := c.PlanChange.String()
		if c.Updating > 0 {
			verb := "keep"
			if c.Updating == 1 {
				verb = "keeps"
			}
			change += fmt.Sprintf(" (%s already updating %s %s)", Count(c.Updating, "node"), verb, c.Before)
		}
		s := fmt.Sprintf("pool %s, %s %s → %s: %s", c.Pool, Count(c.Nodes, "node"), c.From, c.To, change)
		if utf8.RuneCountInString(s) > maxWhatIfLine {
			// Long names: the change matters more than the configs'
			// names, which the pool's status and ndp status show.
			s = fmt.Sprintf("pool %s, %s: %s", c.Pool, Count(c.Nodes, "node"), change)
		}
		lines = append(lines, OneLine(s, maxWhatIfLine))
	}
	return fitWarnings(lines, maxWhatIfBudget, func(shown int) string {
		pools := map[string]bool{}
		nodes := 0
		for _, c := range w.Changes[shown:] {
			pools[c.Pool] = true
			nodes += c.Nodes
		}
		more := "more plan change"
		if len(w.Changes)-shown > 1 {
			more += "s"
		}
		return fmt.Sprintf("and %d %s (%s in %s)", len(w.Changes)-shown, more, Count(nodes, "node"), Count(len(pools), "pool"))
	})
}

// fitWarnings keeps the first lines that fit the budget (in runes) and,
// when some are left out, a summary of them (given how many are shown).
func fitWarnings(lines []string, budget int, summary func(shown int) string) []string {
	total := 0
	for _, l := range lines {
		total += utf8.RuneCountInString(l)
	}
	if total <= budget {
		return lines
	}
	budget -= maxWhatIfLine // room for the summary, one line at most
	used, n := 0, 0
	for n < len(lines) && used+utf8.RuneCountInString(lines[n]) <= budget {
		used += utf8.RuneCountInString(lines[n])
		n++
	}
	return append(lines[:n:n], OneLine(summary(n), maxWhatIfLine))
}

// OneLine makes s a valid warning: the API server drops a warning with
// control characters (an error message's newlines), so they become spaces;
// it is cut at max runes.
func OneLine(s string, max int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	if utf8.RuneCountInString(s) > max {
		s = string([]rune(s)[:max-1]) + "…"
	}
	return s
}

// NoWhatIf is the warning of a what-if that could not be made within a
// webhook's deadline: the request is allowed all the same.
func NoWhatIf(err error, deadline time.Duration) string {
	msg := err.Error()
	if errors.Is(err, context.DeadlineExceeded) {
		msg = fmt.Sprintf("not done within the webhook's %s deadline", deadline)
	}
	return OneLine("ndp: no what-if preview: "+msg, maxWhatIfLine)
}
