package mcoentries

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"path"
	"slices"
	"sort"
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	"k8s.io/utils/ptr"

	igntypes "github.com/coreos/ignition/v2/config/v3_5/types"

	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/mco/mcorules"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/changeset"
	"github.com/ndp-dev/ndp/planner/policy"
	"github.com/ndp-dev/ndp/policies"
	"github.com/ndp-dev/ndp/registries"
)

// StaticInput is the policy set static entries are drawn from.
type StaticInput struct {
	// Planner is compiled from Policies.
	Planner *planner.Planner
	// Policies is the active set, the default policy included.
	Policies []policy.Policy
	// Base is spec.nodeDisruptionPolicy without ndp's entries: the
	// administrator's own, which the MCO merges with its defaults.
	Base Entries
}

// StaticResult is what Static found.
type StaticResult struct {
	Entries Entries
	// From names, for each entry ("file:/etc/chrony.conf", as Subjects
	// says them), the policies whose decision it carries.
	From map[string][]string
	// Unexpressed are the declarative entries that cannot be static MCO
	// entries, and why.
	Unexpressed []Unexpressed
}

// Static computes the static entries: every declarative file, unit and
// sshkey entry of a cluster-wide policy (its pool selector empty) whose
// decision the planner shows to be independent of the contents, the pool
// and the node, as the entry the MCO merges with its defaults — and, under
// such an entry's path, an entry for each MCO default whose decision ndp
// makes otherwise (the longest path wins in both; ndp's and the MCO's
// defaults differ on a few paths).
//
// An entry is withheld, and said why, when another policy may decide some
// of its changes otherwise: a policy for some pools only with an entry at
// or beneath its path (the MCO's list is cluster-wide), a Rego policy whose
// source names a path at, beneath or above it (Rego can claim a change by
// its contents, and a claim of the file's own path outranks the entry), or
// when the planner's decision differs between two contents of the same
// file (a claim by contents the sources do not name). registries.conf is
// never given an entry: the MCO's own rule for it (Special) decides by
// contents, as ndp's default does.
func Static(ctx context.Context, in StaticInput) (*StaticResult, error) {
	res := &StaticResult{From: map[string][]string{}}
	var user, pooled []policy.Policy
	for _, p := range in.Policies {
		switch {
		case p.Name == policies.DefaultPolicyName:
		case clusterWide(p):
			user = append(user, p)
		default:
			pooled = append(pooled, p)
		}
	}
	regoPaths := map[string][]string{} // policy → paths its Rego names
	regoUnits := map[string][]string{}
	for _, p := range append(slices.Clone(user), pooled...) {
		if len(p.Modules) > 0 {
			regoPaths[p.Name], regoUnits[p.Name] = in.Planner.Engine.Literals([]string{p.Name})
		}
	}
	pr := &prober{ctx: ctx, planner: in.Planner}
	withhold := func(pol, subject, why string) {
		res.Unexpressed = append(res.Unexpressed, Unexpressed{Policy: pol, Subject: subject, Reason: why})
	}
	// entry is the static entry of subject, declared by the policies pol:
	// its actions and the policies that decide them, from probe, unless
	// the first of whys, or probe, gives a reason to withhold it (ok
	// false, the reason said).
	entry := func(pol, subject string, whys []string, probe func() ([]operatorv1.NodeDisruptionPolicySpecAction, []string, string, error)) (
		acts []operatorv1.NodeDisruptionPolicySpecAction, deciders []string, ok bool, err error) {
		why := cmp.Or(whys...)
		if why == "" {
			if acts, deciders, why, err = probe(); err != nil {
				return nil, nil, false, err
			}
		}
		if why != "" {
			withhold(pol, subject, why)
			return nil, nil, false, nil
		}
		return acts, deciders, true, nil
	}

	// Files, shortest path first: an override beneath an entry is decided
	// with the entry in place.
	type cand struct {
		path string
		pols []string
	}
	byPath := map[string]*cand{}
	for _, p := range user {
		for _, f := range p.Files {
			k := path.Clean(f.Path)
			if byPath[k] == nil {
				byPath[k] = &cand{path: k}
			}
			byPath[k].pols = append(byPath[k].pols, p.Name)
		}
	}
	var paths []string
	for k := range byPath {
		paths = append(paths, k)
	}
	sortBySpecificity(paths)
	var static []string
	for _, k := range paths {
		c := byPath[k]
		var special string
		if k == registries.ConfPath {
			special = "the MCO decides registries.conf by its own rule (Special), by contents; per update only"
		}
		acts, deciders, ok, err := entry(strings.Join(c.pols, ", "), "file "+k, []string{special, pooledOver(k, pooled), regoOver(k, regoPaths)},
			func() ([]operatorv1.NodeDisruptionPolicySpecAction, []string, string, error) {
				return pr.file(k, c.pols)
			})
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		res.Entries.Files = append(res.Entries.Files, operatorv1.NodeDisruptionPolicySpecFile{Path: k, Actions: acts})
		res.From["file:"+k] = deciders
		static = append(static, k)
	}

	// Beneath each static entry, the paths whose decision ndp's policies
	// make by a more specific claim (its defaults, another entry): the MCO
	// must be told the same, or its own default (or the entry above) rules.
	defaults := mcorules.Defaults()
	var beneath []string
	for _, d := range defaults.Files {
		beneath = append(beneath, path.Clean(d.Path))
	}
	if lits, _ := in.Planner.Engine.Literals([]string{policies.DefaultPolicyName}); len(lits) > 0 {
		for _, l := range lits {
			beneath = append(beneath, path.Clean(l))
		}
	}
	sortBySpecificity(beneath)
	beneath = slices.Compact(beneath)
	for _, d := range beneath {
		if d == registries.ConfPath || byPath[d] != nil || !slices.ContainsFunc(static, func(s string) bool { return changeset.Covers(s, d) && s != d }) {
			continue
		}
		mco := mcorules.MergePolicies(Merge(in.Base, res.Entries))
		acts, deciders, why, err := pr.file(d, nil)
		if err != nil {
			return nil, err
		}
		if slices.ContainsFunc(acts, func(a operatorv1.NodeDisruptionPolicySpecAction) bool { return a.Type == policy.ActionPackageUpdate }) {
			continue // package sources (apt, Flatcar): the MCO's nodes have none
		}
		have := effect{reboot: true, drain: true}
		if e, ok := mcorules.FilePolicy(d, mco); ok {
			have = mcoEffect(mcorules.StatusActions(e.Actions), false)
		}
		if why == "" && !slices.ContainsFunc(deciders, isUserPolicy) {
			// ndp's defaults decide it: they never lower the MCO's own
			// decision (its defaults and the administrator's entries, without
			// ndp's), which the entry above would otherwise replace.
			if own := ownActions(d, in.Base); !atLeast(effectOf(acts), effectOf(own)) {
				acts = own
			}
		}
		if why == "" && effectOf(acts) == have {
			continue
		}
		if why != "" {
			withhold(strings.Join(deciders, ", "), "file "+d, why)
			continue
		}
		res.Entries.Files = append(res.Entries.Files, operatorv1.NodeDisruptionPolicySpecFile{Path: d, Actions: acts})
		res.From["file:"+d] = deciders
	}

	// Units: exact names in both.
	units := map[string][]string{}
	for _, p := range user {
		for _, u := range p.Units {
			units[string(u.Name)] = append(units[string(u.Name)], p.Name)
		}
	}
	var names []string
	for n := range units {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		acts, deciders, ok, err := entry(strings.Join(units[n], ", "), "unit "+n, []string{pooledUnit(n, pooled), regoNames(n, regoUnits)},
			func() ([]operatorv1.NodeDisruptionPolicySpecAction, []string, string, error) {
				return pr.unit(n, units[n])
			})
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		res.Entries.Units = append(res.Entries.Units, operatorv1.NodeDisruptionPolicySpecUnit{Name: operatorv1.NodeDisruptionPolicyServiceName(n), Actions: acts})
		res.From["unit:"+n] = deciders
	}

	// SSH keys: one policy in the MCO, for the whole passwd section.
	var sshPols []string
	for _, p := range user {
		if p.SSHKey != nil && len(p.SSHKey.Actions) > 0 {
			sshPols = append(sshPols, p.Name)
		}
	}
	if len(sshPols) > 0 {
		var poolsOnly string
		if i := slices.IndexFunc(pooled, func(p policy.Policy) bool { return p.SSHKey != nil }); i >= 0 {
			poolsOnly = fmt.Sprintf("policy %s decides SSH keys for some pools only, the MCO's policies are cluster-wide", pooled[i].Name)
		}
		acts, deciders, ok, err := entry(strings.Join(sshPols, ", "), "sshkey", []string{poolsOnly},
			func() ([]operatorv1.NodeDisruptionPolicySpecAction, []string, string, error) { return pr.ssh(sshPols) })
		if err != nil {
			return nil, err
		}
		if ok {
			res.Entries.SSHKey = operatorv1.NodeDisruptionPolicySpecSSHKey{Actions: acts}
			res.From["sshkey"] = deciders
		}
	}
	res.Entries = Sorted(res.Entries)
	return res, nil
}

// isUserPolicy: a policy of the cluster's, not ndp's built-in defaults
// nor the "no policy" of an unclaimed change.
func isUserPolicy(name string) bool {
	return name != policies.DefaultPolicyName && name != planner.NoPolicy
}

// ownActions are the MCO's own actions for a file (its defaults merged with
// the administrator's entries, without ndp's), as a spec list: Reboot when
// no entry matches. Special (registries.conf) never reaches here.
func ownActions(p string, base Entries) []operatorv1.NodeDisruptionPolicySpecAction {
	e, ok := mcorules.FilePolicy(p, mcorules.MergePolicies(base))
	if !ok {
		return []operatorv1.NodeDisruptionPolicySpecAction{{Type: operatorv1.RebootSpecAction}}
	}
	var out []operatorv1.NodeDisruptionPolicySpecAction
	for _, a := range e.Actions {
		sa := operatorv1.NodeDisruptionPolicySpecAction{Type: operatorv1.NodeDisruptionPolicySpecActionType(a.Type)}
		if a.Reload != nil {
			sa.Reload = a.Reload.DeepCopy()
		}
		if a.Restart != nil {
			sa.Restart = a.Restart.DeepCopy()
		}
		out = append(out, sa)
	}
	return toSpec(out)
}

func clusterWide(p policy.Policy) bool {
	return p.PoolSelector == nil || (len(p.PoolSelector.MatchLabels) == 0 && len(p.PoolSelector.MatchExpressions) == 0)
}

// sortBySpecificity orders paths shortest first, then by name.
func sortBySpecificity(ps []string) {
	sort.Slice(ps, func(i, j int) bool {
		if len(ps[i]) != len(ps[j]) {
			return len(ps[i]) < len(ps[j])
		}
		return ps[i] < ps[j]
	})
}

// related: one path covers the other (either way).
func related(a, b string) bool { return changeset.Covers(a, b) || changeset.Covers(b, a) }

// pooledOver names a pool-restricted policy with an entry at or beneath p
// (one above it loses to p's, more specific, in every pool).
func pooledOver(p string, pooled []policy.Policy) string {
	for _, q := range pooled {
		for _, f := range q.Files {
			if changeset.Covers(p, path.Clean(f.Path)) {
				return fmt.Sprintf("policy %s decides %s for some pools only, the MCO's policies are cluster-wide", q.Name, path.Clean(f.Path))
			}
		}
	}
	return ""
}

func pooledUnit(n string, pooled []policy.Policy) string {
	for _, q := range pooled {
		for _, u := range q.Units {
			if string(u.Name) == n {
				return fmt.Sprintf("policy %s decides %s for some pools only, the MCO's policies are cluster-wide", q.Name, n)
			}
		}
	}
	return ""
}

// regoOver names a Rego policy whose source names a path related to p.
func regoOver(p string, regoPaths map[string][]string) string {
	for _, name := range sortedKeys(regoPaths) {
		for _, l := range regoPaths[name] {
			if related(p, path.Clean(l)) {
				return fmt.Sprintf("policy %s's Rego names %s: it may decide changes of %s by their contents, which the MCO's API cannot say", name, l, p)
			}
		}
	}
	return ""
}

func regoNames(unit string, regoUnits map[string][]string) string {
	for _, name := range sortedKeys(regoUnits) {
		if slices.Contains(regoUnits[name], unit) {
			return fmt.Sprintf("policy %s's Rego names %s: it may decide its changes by their contents, which the MCO's API cannot say", name, unit)
		}
	}
	return ""
}

func sortedKeys(m map[string][]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// prober asks the planner what it decides for one synthetic change.
type prober struct {
	ctx     context.Context
	planner *planner.Planner
}

// probe contents: two different edits and a removal, so that a decision
// that depends on contents shows as two answers.
var probeEdits = [][2]string{{"a\n", "b\n"}, {"[x]\nk = 1\n", "{\"k\": [2]}\n"}, {"c\n", ""}}

// file is ndp's decision for a change of the file at p (its own path and,
// as a directory, a file beneath it): the actions as one MCO entry's list,
// the policies whose claims decided it, and, when it cannot be one static
// entry, why. want, when not nil, are the policies whose declarative
// entries must decide it.
func (pr *prober) file(p string, want []string) ([]operatorv1.NodeDisruptionPolicySpecAction, []string, string, error) {
	var first []operatorv1.NodeDisruptionPolicySpecAction
	var deciders []string
	for _, target := range []string{p, p + "/ndp-probe.conf"} {
		for i, e := range probeEdits {
			plan, acts, who, err := pr.claims(fileConfig(target, e[0], true), fileConfig(target, e[1], e[1] != ""), "file:"+target, "a change of "+target)
			if err != nil {
				return nil, nil, "", err
			}
			if i == 0 && target == p {
				first, deciders = acts, who
			}
			if len(plan.Unreconcilable) > 0 {
				return nil, who, fmt.Sprintf("ndp refuses a change of %s (%s)", target, plan.Unreconcilable[0]), nil
			}
			if want != nil && !declaredBy(plan, "file:"+target, p, want, pr.planner) {
				return nil, who, fmt.Sprintf("another claim decides %s (%s), not the entry", target, strings.Join(who, ", ")), nil
			}
			if effectOf(acts) != effectOf(first) {
				return nil, who, fmt.Sprintf("ndp's decision for %s depends on its contents (%s, or %s)", target, effectOf(first), effectOf(acts)), nil
			}
		}
		if want == nil {
			break // a default's own path: nothing beneath it is asked
		}
	}
	return first, deciders, "", nil
}

func (pr *prober) unit(n string, want []string) ([]operatorv1.NodeDisruptionPolicySpecAction, []string, string, error) {
	var first []operatorv1.NodeDisruptionPolicySpecAction
	var deciders []string
	for i, e := range probeEdits {
		plan, acts, who, err := pr.claims(unitConfig(n, e[0], true), unitConfig(n, e[1], e[1] != ""), "unit:"+n, "a change of "+n)
		if err != nil {
			return nil, nil, "", err
		}
		if i == 0 {
			first, deciders = acts, who
		}
		if !declaredBy(plan, "unit:"+n, n, want, pr.planner) {
			return nil, who, fmt.Sprintf("another claim decides %s (%s), not the entry", n, strings.Join(who, ", ")), nil
		}
		if effectOf(acts) != effectOf(first) {
			return nil, who, fmt.Sprintf("ndp's decision for %s depends on its contents", n), nil
		}
	}
	return first, deciders, "", nil
}

func (pr *prober) ssh(want []string) ([]operatorv1.NodeDisruptionPolicySpecAction, []string, string, error) {
	from, to := sshConfig("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOldOldOldOldOldOldOldOldOldOldOldOldOld1 old"), sshConfig("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINewNewNewNewNewNewNewNewNewNewNewNewNew2 new")
	plan, acts, who, err := pr.claims(from, to, "sshkey", "an SSH key change")
	if err != nil {
		return nil, nil, "", err
	}
	if !declaredBy(plan, "sshkey", "", want, pr.planner) {
		return nil, who, fmt.Sprintf("another claim decides SSH keys (%s), not the entry", strings.Join(who, ", ")), nil
	}
	return acts, who, "", nil
}

// claims plans from → to, the change what, and is the plan with the
// decision of its change id (claimsOf).
func (pr *prober) claims(from, to *machineconfig.Config, id, what string) (*planner.Plan, []operatorv1.NodeDisruptionPolicySpecAction, []string, error) {
	plan, err := pr.planner.Plan(pr.ctx, planner.Request{From: from, To: to})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("planning %s: %w", what, err)
	}
	acts, who := claimsOf(plan, id)
	return plan, acts, who, nil
}

// claimsOf is the decision of one change of a plan, as one entry's list,
// and the policies whose claims won it.
func claimsOf(p *planner.Plan, id string) ([]operatorv1.NodeDisruptionPolicySpecAction, []string) {
	var acts []policy.Action
	var who []string
	for _, r := range p.Reasons {
		if r.ChangeID != id {
			continue
		}
		acts = append(acts, r.Actions...)
		if !slices.Contains(who, r.Policy) {
			who = append(who, r.Policy)
		}
	}
	if len(who) == 0 {
		// ndp saw no change of it: nothing to do.
		return toSpec(nil), nil
	}
	return toSpec(acts), who
}

// declaredBy says whether every winning claim of change id is a
// declarative entry at key of one of the policies want (a Rego claim of
// the same policy, or another policy's, is not).
func declaredBy(p *planner.Plan, id, key string, want []string, pl *planner.Planner) bool {
	n := 0
	for _, r := range p.Reasons {
		if r.ChangeID != id {
			continue
		}
		n++
		if !slices.Contains(want, r.Policy) || r.Policy == planner.NoPolicy {
			return false
		}
		pol, ok := pl.Engine.Policy(r.Policy)
		if !ok || !declares(pol, id, key, r) {
			return false
		}
	}
	return n > 0
}

func declares(pol *policy.Policy, id, at string, r planner.Reason) bool {
	same := func(as []policy.Action) bool {
		return slices.EqualFunc(as, r.Actions, func(a, b policy.Action) bool { return key(a) == key(b) })
	}
	switch {
	case strings.HasPrefix(id, "file:"):
		for _, f := range pol.Files {
			if path.Clean(f.Path) == at && changeset.PathKey(r.Match) == at && same(f.Actions) {
				return true
			}
		}
	case strings.HasPrefix(id, "unit:"):
		for _, u := range pol.Units {
			if string(u.Name) == at && same(u.Actions) {
				return true
			}
		}
	case id == "sshkey":
		return pol.SSHKey != nil && same(pol.SSHKey.Actions)
	}
	return false
}

// Synthetic configs: one file, one unit or one SSH key, and nothing else.
func fileConfig(p, contents string, present bool) *machineconfig.Config {
	var ign igntypes.Config
	ign.Ignition.Version = igntypes.MaxVersion.String()
	if present {
		ign.Storage.Files = []igntypes.File{{
			Node:          igntypes.Node{Path: p, Overwrite: ptr.To(true)},
			FileEmbedded1: igntypes.FileEmbedded1{Mode: ptr.To(0o644), Contents: igntypes.Resource{Source: ptr.To("data:," + url.PathEscape(contents))}},
		}}
	}
	return synthetic("probe-"+contents, ign)
}

func unitConfig(n, contents string, present bool) *machineconfig.Config {
	var ign igntypes.Config
	ign.Ignition.Version = igntypes.MaxVersion.String()
	if present {
		ign.Systemd.Units = []igntypes.Unit{{Name: n, Contents: ptr.To("[Unit]\nDescription=" + contents + "\n")}}
	}
	return synthetic("probe-"+contents, ign)
}

func sshConfig(key string) *machineconfig.Config {
	var ign igntypes.Config
	ign.Ignition.Version = igntypes.MaxVersion.String()
	ign.Passwd.Users = []igntypes.PasswdUser{{Name: mcorules.CoreUser, SSHAuthorizedKeys: []igntypes.SSHAuthorizedKey{igntypes.SSHAuthorizedKey(key)}}}
	return synthetic("probe-ssh", ign)
}

func synthetic(name string, ign igntypes.Config) *machineconfig.Config {
	return &machineconfig.Config{Name: name, Spec: mcfgv1.MachineConfigSpec{}, Ignition: ign}
}
