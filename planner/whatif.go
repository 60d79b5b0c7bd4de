package planner

import (
	"slices"
	"strings"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/planner/policy"
)

// Outcome is what a node does for one move, as far as comparing plans goes:
// the ordered actions, the drain and the reboot; or that there is no plan,
// because the move cannot be applied in place or planning failed. Reasons,
// the policy revision and the plan hash are left out: a new revision that
// plans the same actions changes nothing a node does.
type Outcome struct {
	Actions []policy.Action
	Drain   bool
	Reboot  bool
	// Unreconcilable: the move cannot be applied in place; there is no plan.
	Unreconcilable bool
	// Err is why planning failed; there is no plan.
	Err string
}

// OutcomeOf is the outcome of a plan, or of the error planning returned.
func OutcomeOf(p *Plan, err error) Outcome {
	switch {
	case err != nil:
		return Outcome{Err: err.Error()}
	case p == nil:
		return Outcome{Err: "no plan"}
	case len(p.Unreconcilable) > 0:
		return Outcome{Unreconcilable: true}
	}
	return Outcome{Actions: p.Actions, Drain: p.Drain, Reboot: p.Reboot}
}

// StoredOutcome is the outcome of a plan stored in a MachineConfig's status.
func StoredOutcome(p *ndpmcv1.PostConfigActions) Outcome {
	return Outcome{Actions: ndpmcv1.NodeDisruptionPolicyActions(p.Actions), Drain: p.Drain, Reboot: p.Reboot}
}

// Equal tells whether two outcomes make a node do the same.
func (o Outcome) Equal(other Outcome) bool {
	if o.Err != other.Err || o.Unreconcilable != other.Unreconcilable || o.Drain != other.Drain || o.Reboot != other.Reboot {
		return false
	}
	return slices.EqualFunc(o.Actions, other.Actions, func(a, b policy.Action) bool { return actionKey(a) == actionKey(b) })
}

// String is the outcome on one line, as administrators read it:
// "Reboot", "Restart chronyd.service (no drain)", "Reload crio.service
// (drain)". A reboot drains unless said otherwise (a single node is never
// drained: "Reboot (no drain)"). A package update says what the host's
// answer may add: "PackageUpdate (no drain; drain and reboot if the host
// asks)".
func (o Outcome) String() string {
	packages := len(o.Actions) > 0 && o.Actions[0].Type == policy.ActionPackageUpdate
	switch {
	case o.Err != "":
		return "planning fails: " + o.Err
	case o.Unreconcilable:
		return "unreconcilable (cannot be applied in place)"
	case o.Reboot && o.Drain:
		return FormatActions(o.Actions)
	case o.Reboot:
		return FormatActions(o.Actions) + " (no drain)"
	}
	actions := FormatActions(o.Actions)
	if actions == "" {
		actions = string(policy.ActionNone)
	}
	drain := " (no drain"
	if o.Drain {
		drain = " (drain"
	}
	switch {
	case packages && o.Drain:
		return actions + drain + "; reboot if the host asks)"
	case packages:
		return actions + drain + "; drain and reboot if the host asks)"
	}
	return actions + drain + ")"
}

// PlanChange is how the plan of one move would change: before, with the
// policies in force, and after, with a policy added, replaced or removed.
type PlanChange struct {
	Before, After Outcome
}

// Changed tells whether a node would do anything differently.
func (c PlanChange) Changed() bool { return !c.Before.Equal(c.After) }

// String is the change on one line: "Reboot → Restart chronyd.service (no
// drain)", or "no change: Reboot" when there is none.
func (c PlanChange) String() string {
	if !c.Changed() {
		return "no change: " + c.Before.String()
	}
	return c.Before.String() + " → " + c.After.String()
}

// Decision is how the changes of one entry of a plan were decided: the
// change, and the winning claims (policy and actions) before and after.
type Decision struct {
	Change        string
	Before, After []Reason
}

// DecisionChanges lists the changes two plans of the same move decide
// differently (another policy, or other actions), in the order of the
// plans' reasons.
func DecisionChanges(before, after *Plan) []Decision {
	if before == nil || after == nil {
		return nil
	}
	group := func(rs []Reason) (map[string][]Reason, []string) {
		m := map[string][]Reason{}
		var order []string
		for _, r := range rs {
			if _, ok := m[r.Change]; !ok {
				order = append(order, r.Change)
			}
			m[r.Change] = append(m[r.Change], r)
		}
		return m, order
	}
	b, order := group(before.Reasons)
	a, afterOrder := group(after.Reasons)
	for _, ch := range afterOrder {
		if _, ok := b[ch]; !ok {
			order = append(order, ch)
		}
	}
	var out []Decision
	for _, ch := range order {
		if FormatDecision(b[ch]) != FormatDecision(a[ch]) {
			out = append(out, Decision{Change: ch, Before: b[ch], After: a[ch]})
		}
	}
	return out
}

// FormatDecision writes the winning claims of one change: "policy chrony:
// Restart chronyd.service", "no policy: Reboot"; tied claims are joined
// with "; ".
func FormatDecision(rs []Reason) string {
	if len(rs) == 0 {
		return "not a change"
	}
	parts := make([]string, 0, len(rs))
	for _, r := range rs {
		by := "policy " + r.Policy
		if r.Policy == NoPolicy {
			by = "no policy"
		}
		parts = append(parts, by+": "+FormatActions(r.Actions))
	}
	return strings.Join(parts, "; ")
}
