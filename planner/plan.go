package planner

import (
	"context"
	"encoding/json"
	"sort"
	"strings"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/planner/changeset"
	"github.com/ndp-dev/ndp/planner/engine"
	"github.com/ndp-dev/ndp/planner/policy"
)

// Plan is what a node must do to move from one rendered config to another:
// ordered post-config actions, whether to drain first, whether the actions
// end in a reboot, and why.
type Plan struct {
	From    string          `json:"from"`
	To      string          `json:"to"`
	Actions []policy.Action `json:"actions"`
	Drain   bool            `json:"drain"`
	Reboot  bool            `json:"reboot"`
	Reasons []Reason        `json:"reasons"`
	// Unreconcilable, when not empty, means there is no plan: the node
	// cannot apply the change in place and Actions is empty.
	Unreconcilable []changeset.Unreconcilable `json:"unreconcilable"`
	PolicyRevision string                     `json:"policyRevision"`
	// PlanHash digests from, to, actions, drain, reboot and the revision;
	// the node daemon verifies it before executing.
	PlanHash string `json:"planHash"`
}

// Reason explains one change: the policy whose claim won it, and the
// actions that claim asked for.
type Reason struct {
	Change string `json:"change"`
	// ChangeID is the change's id in the change set ("file:/etc/chrony.conf",
	// "unit:foo.service", "sshkey"), for callers that map reasons back to
	// what changed (the MCO entries); not part of the stored plan.
	ChangeID string          `json:"-"`
	Policy   string          `json:"policy"`
	Match    string          `json:"match,omitempty"`
	Actions  []policy.Action `json:"actions"`
	Detail   string          `json:"detail,omitempty"`
}

// NoPolicy is the policy of a reason for an unclaimed change.
const NoPolicy = "(none)"

// Request is one question for the planner.
type Request struct {
	From, To *machineconfig.Config
	// Pool the configs belong to, if known; part of the Rego input.
	Pool string
	// PoolLabels select the policies in force (spec.poolSelector); nil
	// when the pool is unknown, and then only unrestricted policies apply.
	PoolLabels map[string]string
	// SingleNode: a single-node cluster is never drained.
	SingleNode bool
}

// Planner computes plans with one compiled policy set. It is safe for
// concurrent use.
type Planner struct {
	Engine *engine.Engine
}

// New compiles a policy set into a planner.
func New(ctx context.Context, pols []policy.Policy, opts engine.Options) (*Planner, error) {
	e, err := engine.New(ctx, pols, opts)
	if err != nil {
		return nil, err
	}
	return &Planner{Engine: e}, nil
}

// Plan is the one entry point that computes a plan: diff, evaluate the
// policies on the changes, resolve the claims, normalise. The CLI, the
// controllers and the webhook all call it.
func (p *Planner) Plan(ctx context.Context, req Request) (*Plan, error) {
	cs, err := changeset.Diff(req.From, req.To)
	if err != nil {
		return nil, err
	}
	cs.Pool, cs.SingleNode = req.Pool, req.SingleNode
	return p.PlanChanges(ctx, cs, req.PoolLabels)
}

// PlanChanges plans an already computed change set for a pool with the
// given labels.
func (p *Planner) PlanChanges(ctx context.Context, cs *changeset.ChangeSet, poolLabels map[string]string) (*Plan, error) {
	plan := &Plan{From: cs.From, To: cs.To, PolicyRevision: p.Engine.Revision(), Reasons: []Reason{}, Unreconcilable: []changeset.Unreconcilable{}}
	if len(cs.Unreconcilable) > 0 {
		plan.Unreconcilable = cs.Unreconcilable
		plan.Actions = []policy.Action{}
		plan.PlanHash = plan.hash()
		return plan, nil
	}
	var claims []engine.Claim
	if len(cs.Changes) > 0 {
		var err error
		if claims, err = p.Engine.Evaluate(ctx, cs); err != nil {
			return nil, err
		}
		// One compiled set serves every pool: claims of policies not in
		// force for this pool are dropped here.
		kept := claims[:0]
		for _, c := range claims {
			if pol, ok := p.Engine.Policy(c.Policy); ok && pol.AppliesTo(poolLabels) {
				kept = append(kept, c)
			}
		}
		claims = kept
	}
	priority := func(policy string) int32 {
		if pol, ok := p.Engine.Policy(policy); ok {
			return pol.Priority
		}
		return 0
	}
	var ordered []policy.Action
	for _, w := range Resolve(cs, claims, priority) {
		r := Reason{Change: w.Change.Describe(), ChangeID: w.Change.ID, Policy: NoPolicy, Actions: []policy.Action{{Type: policy.ActionReboot}}, Detail: "no policy claims this change"}
		if w.Claim != nil {
			r = Reason{Change: w.Change.Describe(), ChangeID: w.Change.ID, Policy: w.Claim.Policy, Match: w.Claim.Match, Actions: w.Claim.Actions, Detail: w.Claim.Reason}
		}
		plan.Reasons = append(plan.Reasons, r)
		ordered = append(ordered, r.Actions...)
	}
	plan.Actions, plan.Drain, plan.Reboot = Normalize(ordered, cs.SingleNode)
	plan.PlanHash = plan.hash()
	return plan, nil
}

// Winner is the claim that decides a change; Claim is nil when no policy
// claimed it (the change then needs a reboot).
type Winner struct {
	Change *changeset.Change
	Claim  *engine.Claim
}

// Resolve picks, for each change in change-set order, the winning claims:
// the most specific (an exact path or name, then the longest directory),
// ties going to the higher priority. Claims still tied (equally specific,
// equal priority) all win, in policy-name order, so that no policy's
// actions are lost.
func Resolve(cs *changeset.ChangeSet, claims []engine.Claim, priority func(policy string) int32) []Winner {
	byChange := make(map[string][]*engine.Claim, len(cs.Changes))
	for i := range claims {
		byChange[claims[i].Change] = append(byChange[claims[i].Change], &claims[i])
	}
	var out []Winner
	for i := range cs.Changes {
		c := &cs.Changes[i]
		cands := byChange[c.ID]
		if len(cands) == 0 {
			out = append(out, Winner{Change: c})
			continue
		}
		sort.SliceStable(cands, func(a, b int) bool {
			sa, sb := specificity(c, cands[a]), specificity(c, cands[b])
			if sa != sb {
				return sa > sb
			}
			pa, pb := priority(cands[a].Policy), priority(cands[b].Policy)
			if pa != pb {
				return pa > pb
			}
			if cands[a].Policy != cands[b].Policy {
				return cands[a].Policy < cands[b].Policy
			}
			return actionsKey(cands[a].Actions) < actionsKey(cands[b].Actions)
		})
		best := cands[0]
		for _, cl := range cands {
			if specificity(c, cl) != specificity(c, best) || priority(cl.Policy) != priority(best.Policy) {
				break
			}
			out = append(out, Winner{Change: c, Claim: cl})
		}
	}
	return out
}

// exactMatch outranks any directory, however long.
const exactMatch = 1 << 30

// specificity: a claim without match, or matching the change's own path or
// name, is exact; a directory claim counts its length without the final
// "/", so that /etc/app and /etc/app/ are equally specific.
func specificity(c *changeset.Change, cl *engine.Claim) int {
	m := changeset.PathKey(cl.Match)
	if cl.Match == "" || m == c.Path || cl.Match == c.Name {
		return exactMatch
	}
	return len(m)
}

func actionsKey(actions []policy.Action) string {
	b, _ := json.Marshal(actions)
	return string(b)
}

// Normalize merges the actions of the winning claims, in order, into a
// plan: Reboot absorbs everything but a PackageUpdate, which runs first
// (the packages are updated before any unit restarts, and before the
// reboot); Drain becomes the drain flag; None is dropped unless nothing
// else remains; duplicates keep their first occurrence; DaemonReload moves
// before the first Reload or Restart. A single-node cluster is never
// drained.
func Normalize(in []policy.Action, singleNode bool) (actions []policy.Action, drain, reboot bool) {
	seen := map[string]bool{}
	packages := false
	for _, a := range in {
		switch a.Type {
		case policy.ActionPackageUpdate:
			packages = true
			continue
		case policy.ActionReboot:
			reboot = true
			continue
		case policy.ActionDrain:
			drain = true
			continue
		case policy.ActionNone:
			continue
		}
		k := actionKey(a)
		if seen[k] {
			continue
		}
		seen[k] = true
		actions = append(actions, a)
	}
	switch {
	case reboot:
		actions, drain = []policy.Action{{Type: policy.ActionReboot}}, true
	case len(actions) == 0 && !packages:
		actions = []policy.Action{{Type: policy.ActionNone}}
	default:
		actions = daemonReloadFirst(actions)
	}
	if packages {
		actions = append([]policy.Action{{Type: policy.ActionPackageUpdate}}, actions...)
	}
	if singleNode {
		drain = false
	}
	return actions, drain, reboot
}

func actionKey(a policy.Action) string {
	k := string(a.Type)
	if a.Reload != nil {
		k += "/" + string(a.Reload.ServiceName)
	}
	if a.Restart != nil {
		k += "/" + string(a.Restart.ServiceName)
	}
	return k
}

// daemonReloadFirst moves a DaemonReload before the first Reload or
// Restart: systemd must see changed units before they are restarted.
func daemonReloadFirst(actions []policy.Action) []policy.Action {
	dr, firstService := -1, -1
	for i, a := range actions {
		switch a.Type {
		case policy.ActionDaemonReload:
			dr = i
		case policy.ActionReload, policy.ActionRestart:
			if firstService < 0 {
				firstService = i
			}
		}
	}
	if dr < 0 || firstService < 0 || dr < firstService {
		return actions
	}
	out := make([]policy.Action, 0, len(actions))
	out = append(out, actions[:firstService]...)
	out = append(out, actions[dr])
	out = append(out, actions[firstService:dr]...)
	return append(out, actions[dr+1:]...)
}

// hash is the plan's planHash, as the API defines it; an unreconcilable
// plan has no actions to hash.
func (p *Plan) hash() string {
	return ndpmcv1.PlanHash(p.From, p.To, ndpmcv1.PlanActionsFrom(p.Actions), p.Drain, p.Reboot, p.PolicyRevision)
}

// PostConfigActions is the plan in the shape stored in the target
// MachineConfig's status.
func (p *Plan) PostConfigActions() ndpmcv1.PostConfigActions {
	out := ndpmcv1.PostConfigActions{From: p.From, Actions: ndpmcv1.PlanActionsFrom(p.Actions), Drain: p.Drain, Reboot: p.Reboot, PolicyRevision: p.PolicyRevision, PlanHash: p.PlanHash}
	for _, r := range p.Reasons {
		out.Reasons = append(out.Reasons, ndpmcv1.PlanReason{Change: r.Change, Policy: r.Policy, Match: r.Match, Actions: ndpmcv1.PlanActionsFrom(r.Actions), Detail: r.Detail})
	}
	return out
}

// FormatActions writes actions as administrators read them:
// "Restart chronyd.service, Reload crio.service".
func FormatActions(actions []policy.Action) string {
	parts := make([]string, 0, len(actions))
	for _, a := range actions {
		s := string(a.Type)
		switch {
		case a.Reload != nil:
			s += " " + string(a.Reload.ServiceName)
		case a.Restart != nil:
			s += " " + string(a.Restart.ServiceName)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}
