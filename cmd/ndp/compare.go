package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/engine"
	"github.com/ndp-dev/ndp/planner/loader"
	"github.com/ndp-dev/ndp/planner/policy"
)

// comparison is what `ndp plan --compare-policy` prints: the plan with the
// policies given, the plan with the compared ones added (or in place of
// those of the same name), and how it changes.
type comparison struct {
	From     string       `json:"from"`
	To       string       `json:"to"`
	Policies []policyEdit `json:"policies"`
	// Changed: a node would do something else (actions, drain, reboot).
	Changed bool `json:"changed"`
	// Change is the one-line change, "Reboot → Restart chronyd.service (no
	// drain)", or "no change: ..." (the admission webhook's what-if text).
	Change string `json:"change"`
	// Decisions lists the changes decided differently (another policy or
	// other actions), even when the plan stays the same.
	Decisions []decision    `json:"decisions"`
	Before    *planner.Plan `json:"before"`
	After     *planner.Plan `json:"after"`
}

type policyEdit struct {
	Name     string `json:"name"`
	Origin   string `json:"origin"`
	Replaces bool   `json:"replaces"`
}

type decision struct {
	Change string           `json:"change"`
	Before []planner.Reason `json:"before"`
	After  []planner.Reason `json:"after"`
}

// withPolicies is the set with the compared policies added, each in place
// of a policy of the same name.
func withPolicies(set, compared []policy.Policy) ([]policy.Policy, []policyEdit) {
	out := append([]policy.Policy(nil), set...)
	edits := make([]policyEdit, 0, len(compared))
	for _, p := range compared {
		e := policyEdit{Name: p.Name, Origin: p.Origin}
		for i := range out {
			if out[i].Name == p.Name {
				out[i], e.Replaces = p, true
				break
			}
		}
		if !e.Replaces {
			out = append(out, p)
		}
		edits = append(edits, e)
	}
	return out, edits
}

// compare plans req with pols, then with the policies of o.compare added,
// and prints the comparison.
func (o *planOptions) compare(cmd *cobra.Command, pols []policy.Policy, req planner.Request) error {
	compared, _, err := loader.Load(o.comparePolicies...)
	if err != nil {
		return err
	}
	if len(compared) == 0 {
		return fmt.Errorf("--compare-policy %s: no policy found", strings.Join(o.comparePolicies, ", "))
	}
	edited, edits := withPolicies(pols, compared)
	ctx := cmd.Context()
	now, err := planner.New(ctx, pols, engine.Options{})
	if err != nil {
		return err
	}
	with, err := planner.New(ctx, edited, engine.Options{})
	if err != nil {
		return err
	}
	before, err := now.Plan(ctx, req)
	if err != nil {
		return err
	}
	after, err := with.Plan(ctx, req)
	if err != nil {
		return err
	}
	change := planner.PlanChange{Before: planner.OutcomeOf(before, nil), After: planner.OutcomeOf(after, nil)}
	c := comparison{From: before.From, To: before.To, Policies: edits, Changed: change.Changed(), Change: change.String(), Decisions: []decision{}, Before: before, After: after}
	for _, d := range planner.DecisionChanges(before, after) {
		c.Decisions = append(c.Decisions, decision{Change: d.Change, Before: d.Before, After: d.After})
	}
	if err := writeComparison(cmd.OutOrStdout(), &c, o.output); err != nil {
		return err
	}
	if len(after.Unreconcilable) > 0 {
		return exitError{exitUnreconcilable}
	}
	return nil
}

func writeComparison(w io.Writer, c *comparison, format string) error {
	if ok, err := writeDocument(w, c, format); ok {
		return err
	}
	// Text: the verdict, then the changes decided differently.
	var b strings.Builder
	var with []string
	for _, e := range c.Policies {
		verb := "added"
		if e.Replaces {
			verb = "replaced"
		}
		with = append(with, fmt.Sprintf("policy %s %s (%s)", e.Name, verb, e.Origin))
	}
	fmt.Fprintf(&b, "Plan %s -> %s, with %s:\n", c.From, c.To, strings.Join(with, ", "))
	fmt.Fprintf(&b, "  %s\n", c.Change)
	if len(c.Decisions) > 0 {
		fmt.Fprintf(&b, "Changes decided differently (%d):\n", len(c.Decisions))
		width := 0
		for _, d := range c.Decisions {
			width = max(width, len(d.Change))
		}
		for _, d := range c.Decisions {
			fmt.Fprintf(&b, "  %-*s  %s → %s\n", width, d.Change, planner.FormatDecision(d.Before), planner.FormatDecision(d.After))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
