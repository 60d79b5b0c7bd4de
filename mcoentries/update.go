package mcoentries

import (
	"fmt"
	"strings"

	operatorv1 "github.com/openshift/api/operator/v1"

	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/mcorules"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/policy"
)

// Update is one pending update and ndp's plan for it.
type Update struct {
	From, To *machineconfig.Config
	// Plan is ndp's plan for From → To (for the pool the update is in).
	Plan *planner.Plan
	// SingleNode: the MCO never drains a single-node cluster, nor does ndp.
	SingleNode bool
	// Overrides is MachineConfiguration cluster's
	// spec.irreconcilableValidationOverrides.
	Overrides operatorv1.IrreconcilableValidationOverrides
}

// UpdateResult is what ForUpdate found.
type UpdateResult struct {
	// Entries are the per-update entries: exact paths and unit names of
	// this update's changes (and the sshkey policy), each with ndp's
	// decision for that change. Empty when the MCO already does ndp's plan.
	Entries Entries
	// Before is what the MCO does with base alone, After with the entries
	// added; both as DecisionEffect says them.
	Before, After string
	// Equal: with the entries, the MCO does exactly ndp's plan (the set of
	// actions, drain and reboot).
	Equal bool
	// Unexpressed says why it does not, when it does not.
	Unexpressed []Unexpressed
}

// ForUpdate computes the entries that make the MCO's daemon, deciding with
// base (the spec it would use otherwise: the administrator's entries and
// ndp's static ones) plus these, do ndp's plan for u. An entry is added only
// for a change the MCO would decide otherwise than ndp. The result is
// checked by deciding again with the entries (mcorules.Decide): Equal says
// whether the MCO then does ndp's plan.
func ForUpdate(u Update, base Entries) (*UpdateResult, error) {
	in := mcorules.Input{From: u.From, To: u.To, Policies: mcorules.MergePolicies(base), SingleNode: u.SingleNode, Overrides: u.Overrides}
	d0, err := mcorules.Decide(in)
	if err != nil {
		return nil, err
	}
	res := &UpdateResult{Before: DecisionEffect(d0)}
	want := PlanEffect(u.Plan.Actions, u.Plan.Drain, u.Plan.Reboot)
	switch {
	case len(d0.Refused) > 0 || len(u.Plan.Unreconcilable) > 0:
		res.After = res.Before
		res.Equal = len(d0.Refused) > 0 && len(u.Plan.Unreconcilable) > 0
		if !res.Equal {
			res.Unexpressed = append(res.Unexpressed, Unexpressed{Subject: "the update", Reason: refusalMismatch(d0, u.Plan)})
		}
		return res, nil
	case d0.Error != "":
		res.After = res.Before
		res.Unexpressed = append(res.Unexpressed, Unexpressed{Subject: "the update", Reason: "the MCO's daemon fails it: " + d0.Error})
		return res, nil
	}

	byChange := reasonsByChange(u.Plan)
	fixed := fixedRule(d0)
	if fixed == "" {
		pols := in.Policies
		for _, f := range d0.ChangedFiles {
			acts := byChange.actions("file:" + f)
			have := mcoFileEffect(f, pols, d0)
			if effectOf(acts) == have {
				continue
			}
			res.Entries.Files = append(res.Entries.Files, operatorv1.NodeDisruptionPolicySpecFile{Path: f, Actions: acts})
		}
		for _, n := range d0.ChangedUnits {
			acts := byChange.actions("unit:" + n)
			have := effect{reboot: true, drain: true}
			if e, ok := mcorules.UnitPolicy(n, pols); ok {
				have = mcoEffect(mcorules.StatusActions(e.Actions), false)
			}
			if effectOf(acts) == have {
				continue
			}
			if !policy.ServiceNamePattern.MatchString(n) {
				res.Unexpressed = append(res.Unexpressed, Unexpressed{Subject: "unit " + n, Reason: "the MCO's API takes unit names of a systemd type only"})
				continue
			}
			res.Entries.Units = append(res.Entries.Units, operatorv1.NodeDisruptionPolicySpecUnit{Name: operatorv1.NodeDisruptionPolicyServiceName(n), Actions: acts})
		}
		if d0.SSHChanged {
			// The MCO's sshkey policy covers the whole passwd section: the
			// SSH keys and the password hash.
			keys := byChange.actions("sshkey")
			hash := byChange.actions("password")
			acts := toSpec(append(keys, hash...))
			if effectOf(acts) != mcoEffect(mcorules.StatusActions(pols.SSHKey.Actions), false) {
				res.Entries.SSHKey = operatorv1.NodeDisruptionPolicySpecSSHKey{Actions: acts}
			}
		}
	} else if !u.Plan.Reboot {
		res.Unexpressed = append(res.Unexpressed, Unexpressed{Subject: strings.SplitN(fixed, ":", 2)[0], Reason: "the MCO always reboots for it (" + fixed + "); no entry changes that"})
	}

	in.Policies = mcorules.MergePolicies(Merge(base, res.Entries))
	d1, err := mcorules.Decide(in)
	if err != nil {
		return nil, err
	}
	res.After = DecisionEffect(d1)
	res.Equal = res.After == want
	if !res.Equal && len(res.Unexpressed) == 0 {
		res.Unexpressed = append(res.Unexpressed, Unexpressed{Subject: "the update", Reason: fmt.Sprintf("the MCO would %s where ndp plans %s", res.After, want)})
	}
	return res, nil
}

// reasons groups ndp's plan reasons by change id.
type reasons map[string][]planner.Reason

func reasonsByChange(p *planner.Plan) reasons {
	out := reasons{}
	for _, r := range p.Reasons {
		out[r.ChangeID] = append(out[r.ChangeID], r)
	}
	return out
}

// actions of the winning claims of one change, as one MCO entry's list;
// None when ndp saw no change there (a registries.conf that only changed
// its comments).
func (rs reasons) actions(id string) []operatorv1.NodeDisruptionPolicySpecAction {
	var acts []policy.Action
	for _, r := range rs[id] {
		acts = append(acts, r.Actions...)
	}
	return toSpec(acts)
}

// mcoFileEffect is what the MCO does for one changed file under pols.
func mcoFileEffect(path string, pols mcorules.Policies, d *mcorules.Decision) effect {
	e, ok := mcorules.FilePolicy(path, pols)
	if !ok {
		return effect{reboot: true, drain: true}
	}
	return mcoEffect(mcorules.StatusActions(e.Actions), specialDrains(d))
}

// specialDrains says whether the decision's registries.conf rule found
// the change unsafe.
func specialDrains(d *mcorules.Decision) bool {
	for _, r := range d.Rules {
		for _, a := range r.Actions {
			if a.Type == operatorv1.SpecialStatusAction {
				return !strings.HasPrefix(r.Detail, "safe")
			}
		}
	}
	return false
}

// fixedRule is the fixed rule (osImageURL, kernel arguments, ...) that
// decided d, "" when the policies did.
func fixedRule(d *mcorules.Decision) string {
	for _, r := range d.Rules {
		switch r.Rule {
		case mcorules.RuleOSImageURL, mcorules.RuleKernelArguments, mcorules.RuleFIPS, mcorules.RuleKernelType, mcorules.RuleExtensions:
			return r.Rule
		}
	}
	return ""
}

func refusalMismatch(d *mcorules.Decision, p *planner.Plan) string {
	if len(d.Refused) > 0 {
		return "the MCO refuses it (" + d.Refused[0] + ") where ndp plans it"
	}
	return "ndp refuses it (" + p.Unreconcilable[0].String() + ") where the MCO applies it"
}
