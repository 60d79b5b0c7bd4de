package mcoentries

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	operatorv1 "github.com/openshift/api/operator/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ndp-dev/ndp/mco/mcorules"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/policy"
	"github.com/ndp-dev/ndp/policies"
)

// ExportInput is what Export builds MachineConfiguration cluster from.
type ExportInput struct {
	// Planner is compiled from Policies, the active set with the default
	// policy (policy.WithDefaultPolicy).
	Planner  *planner.Planner
	Policies []policy.Policy
	// Admin is the cluster's MachineConfiguration (nil: none). Its entries
	// that no apply of ndp's owns (all of them, without managedFields) are
	// the administrator's: kept, and ndp's are computed over them.
	Admin *operatorv1.MachineConfiguration
	// Update, when not nil, adds the per-update entries of From → To; its
	// Plan is ndp's plan for it (required). Its Overrides are taken from
	// Admin.
	Update *Update
}

// ExportResult is MachineConfiguration cluster as ndp would leave it.
type ExportResult struct {
	// Spec is the whole spec.nodeDisruptionPolicy: the administrator's
	// entries and ndp's, sorted; what the MCO merges with its defaults.
	// It passes mcorules.Validate.
	Spec Entries
	// Entries are ndp's part of Spec (static and per-update);
	// StaticEntries its static ones: Static's, less those the
	// administrator holds otherwise.
	Entries, StaticEntries Entries
	Static                 *StaticResult
	// Update is ForUpdate's result for the update (nil without one), its
	// After and Equal those of Spec; Today is what the MCO does for it
	// without ndp's entries (the administrator's alone), as DecisionEffect
	// says it.
	Update *UpdateResult
	Today  string
	// Unexpressed are ndp's decisions the MCO is not given, and why:
	// Static's, the policies that give no static entry at all (Rego, a
	// pool selector), ndp's entries the administrator's hold otherwise,
	// and the update's. Each names its policy where one decided.
	Unexpressed []Unexpressed
}

// Object is the MachineConfiguration to print: apiVersion, kind, name and
// spec.nodeDisruptionPolicy, nothing else (no field ndp does not set).
func (r *ExportResult) Object() (*unstructured.Unstructured, error) {
	return ApplyObject(r.Spec, nil)
}

// Export computes the MachineConfiguration ndp's entries make: the static
// entries of in.Policies and, with an update, its per-update entries, over
// the administrator's. It is what `ndp export machineconfiguration` prints
// and what `make compare` gives the MCO's own code. An entry of ndp's that
// the administrator holds with other actions is left out and said, as the
// controller leaves it (Conflicts). A spec the MCO's API would refuse (its
// limits) is an error, a *mcorules.FieldError naming the field.
func Export(ctx context.Context, in ExportInput) (*ExportResult, error) {
	if in.Planner == nil {
		return nil, errors.New("mcoentries.Export: no planner")
	}
	var admin Entries
	var overrides operatorv1.IrreconcilableValidationOverrides
	if in.Admin != nil {
		own, err := OwnershipOf(in.Admin)
		if err != nil {
			return nil, err
		}
		admin = Others(in.Admin.Spec.NodeDisruptionPolicy, own)
		overrides = mcorules.OverridesOf(in.Admin)
	}
	st, err := Static(ctx, StaticInput{Planner: in.Planner, Policies: in.Policies, Base: admin})
	if err != nil {
		return nil, err
	}
	res := &ExportResult{Static: st}
	res.Unexpressed = append(res.Unexpressed, st.Unexpressed...)
	res.Unexpressed = append(res.Unexpressed, policyNotes(in.Planner, in.Policies)...)
	static, held := heldOtherwise(st.Entries, admin)
	res.Unexpressed = append(res.Unexpressed, held.notes(st.From)...)

	var perUpdate Entries
	if in.Update != nil {
		u := *in.Update
		if u.Plan == nil {
			return nil, errors.New("mcoentries.Export: the update has no plan")
		}
		u.Overrides = overrides
		base := Merge(admin, static)
		ur, err := ForUpdate(u, base)
		if err != nil {
			return nil, err
		}
		var h heldEntries
		perUpdate, h = heldOtherwise(ur.Entries, admin)
		byChange := planPolicies(u.Plan)
		res.Unexpressed = append(res.Unexpressed, h.notes(byChange)...)
		mco := mcorules.Input{From: u.From, To: u.To, SingleNode: u.SingleNode, Overrides: overrides}
		if len(h) > 0 {
			// The MCO decides with the administrator's entries there.
			mco.Policies = mcorules.MergePolicies(Merge(base, perUpdate))
			d, err := mcorules.Decide(mco)
			if err != nil {
				return nil, err
			}
			ur.After = DecisionEffect(d)
			ur.Equal = ur.After == PlanEffect(u.Plan.Actions, u.Plan.Drain, u.Plan.Reboot) && len(u.Plan.Unreconcilable) == 0
		}
		ur.Entries = perUpdate
		for _, x := range ur.Unexpressed {
			if x.Policy == "" {
				x.Policy = strings.Join(policiesOf(x.Subject, byChange), ", ")
			}
			res.Unexpressed = append(res.Unexpressed, x)
		}
		mco.Policies = mcorules.MergePolicies(admin)
		d, err := mcorules.Decide(mco)
		if err != nil {
			return nil, err
		}
		res.Update, res.Today = ur, DecisionEffect(d)
	}

	res.StaticEntries = static
	res.Entries = Sorted(Merge(static, perUpdate))
	res.Spec = Sorted(Merge(admin, res.Entries))
	if err := mcorules.Validate(res.Spec); err != nil {
		return nil, err
	}
	return res, nil
}

// heldEntries are ndp's entries the administrator holds otherwise, by
// subject: the administrator's actions.
type heldEntries map[string][]operatorv1.NodeDisruptionPolicySpecAction

// heldOtherwise is want without the entries admin has, for the same path
// or unit, with other actions; an equal one stays (the same list item).
// Conflicts needs managedFields, which a saved file seldom has: here every
// entry that is not ndp's is the administrator's.
func heldOtherwise(want, admin Entries) (Entries, heldEntries) {
	held := heldEntries{}
	have := BySubject(admin)
	for _, s := range subjectActions(want) {
		if a, ok := have[s[0]]; ok && planner.FormatActions(a) != s[1] {
			held[s[0]] = a
		}
	}
	if len(held) == 0 {
		return want, held
	}
	return Without(want, slices.Collect(maps.Keys(held))), held
}

// notes says each held entry, naming the policies of its subject.
func (h heldEntries) notes(by map[string][]string) []Unexpressed {
	var out []Unexpressed
	for _, s := range slices.Sorted(maps.Keys(h)) {
		out = append(out, Unexpressed{
			Policy:  strings.Join(by[s], ", "),
			Subject: SubjectText(s),
			Reason:  fmt.Sprintf("the administrator's entry for it in MachineConfiguration cluster has other actions (%s); ndp does not overwrite it", planner.FormatActions(h[s])),
		})
	}
	return out
}

// policyNotes says why a policy gives no static entry where Static has
// nothing to say of it: its Rego (a claim by contents), or a pool
// selector (the MCO's entries are cluster-wide). The default policy is
// ndp's and the MCO's defaults: where they differ Static says so.
func policyNotes(pl *planner.Planner, pols []policy.Policy) []Unexpressed {
	var out []Unexpressed
	for _, p := range pols {
		switch {
		case p.Name == policies.DefaultPolicyName:
		case !clusterWide(p) && (len(p.Files) > 0 || len(p.Units) > 0 || p.SSHKey != nil || len(p.Modules) > 0):
			out = append(out, Unexpressed{Policy: p.Name, Subject: "spec.poolSelector",
				Reason: "it applies to some pools only and the MCO's entries are cluster-wide: no static entry; per-update entries only, for the pool an update is in"})
		case len(p.Modules) > 0:
			paths, units := pl.Engine.Literals([]string{p.Name})
			for i, l := range paths {
				if d, ok := strings.CutSuffix(l, "/ndp-probe"); ok {
					paths[i] = d + "/" // a directory, as the Rego says it
				}
			}
			names := ""
			if lits := append(paths, units...); len(lits) > 0 {
				names = " (it names " + strings.Join(lits, ", ") + ")"
			}
			out = append(out, Unexpressed{Policy: p.Name, Subject: "its Rego",
				Reason: "a Rego policy decides changes by what changed in them" + names + ", which the MCO's API cannot say: no static entry; per-update entries only, for the updates ndp plans"})
		}
	}
	return out
}

// planPolicies lists, by change id, the policies whose claims decided it
// in p (the default policy and unclaimed changes left out).
func planPolicies(p *planner.Plan) map[string][]string {
	out := map[string][]string{}
	for _, r := range p.Reasons {
		if r.Policy == planner.NoPolicy || r.Policy == policies.DefaultPolicyName || slices.Contains(out[r.ChangeID], r.Policy) {
			continue
		}
		out[r.ChangeID] = append(out[r.ChangeID], r.Policy)
	}
	return out
}

// policiesOf are the policies of a per-update note's subject ("file /x",
// "unit y.service", "sshkey"); for the update as a whole, every policy of
// the plan.
func policiesOf(subject string, by map[string][]string) []string {
	id := strings.Replace(subject, " ", ":", 1)
	if ps, ok := by[id]; ok {
		return ps
	}
	if subject != "the update" {
		return nil
	}
	var all []string
	for _, ps := range by {
		for _, p := range ps {
			if !slices.Contains(all, p) {
				all = append(all, p)
			}
		}
	}
	sort.Strings(all)
	return all
}
