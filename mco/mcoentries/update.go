package mcoentries

import (
	"fmt"
	"slices"
	"strings"

	operatorv1 "github.com/openshift/api/operator/v1"

	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/mco/mcorules"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/changeset"
	"github.com/ndp-dev/ndp/planner/policy"
	"github.com/ndp-dev/ndp/policies"
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
	// NotLess: with the entries, the MCO does at least what ndp's plan
	// does (Equal, or more where it keeps its own decision for a change no
	// user policy decides).
	NotLess bool
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
		regDrain, err := registriesDrain(in, d0)
		if err != nil {
			return nil, err
		}
		// An entry for a changed path also decides the changed files
		// beneath it (the MCO takes the longest matching path): each file
		// is checked again with the entries added so far, until none needs
		// one more.
		for now, added := pols, true; added; now = mcorules.MergePolicies(Merge(base, res.Entries)) {
			added = false
			for _, f := range d0.ChangedFiles {
				if slices.ContainsFunc(res.Entries.Files, func(e operatorv1.NodeDisruptionPolicySpecFile) bool { return e.Path == f }) {
					continue
				}
				acts := byChange.actions("file:" + f)
				if have := mcoFileEffect(f, now, regDrain); effectOf(acts) == have || !byChange.userDecided("file:"+f) && !atLeast(effectOf(acts), have) {
					continue
				}
				res.Entries.Files = append(res.Entries.Files, operatorv1.NodeDisruptionPolicySpecFile{Path: f, Actions: acts})
				added = true
			}
		}
		for _, n := range d0.ChangedUnits {
			acts := byChange.actions("unit:" + n)
			have := effect{reboot: true, drain: true}
			if e, ok := mcorules.UnitPolicy(n, pols); ok {
				have = mcoEffect(mcorules.StatusActions(e.Actions), false)
			}
			if effectOf(acts) == have || !byChange.userDecided("unit:"+n) && !atLeast(effectOf(acts), have) {
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
			have := mcoEffect(mcorules.StatusActions(pols.SSHKey.Actions), false)
			user := byChange.userDecided("sshkey") || byChange.userDecided("password")
			if effectOf(acts) != have && (user || atLeast(effectOf(acts), have)) {
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
	res.NotLess = res.Equal || len(d1.Refused) == 0 && atLeast(decisionEffect(d1), planEffect(u.Plan))
	if !res.Equal && len(res.Unexpressed) == 0 {
		why := fmt.Sprintf("the MCO would %s where ndp plans %s", res.After, want)
		if res.NotLess {
			why += ": it keeps its own decision for changes no policy of the cluster's decides (ndp's defaults never lower the MCO's)"
		}
		res.Unexpressed = append(res.Unexpressed, Unexpressed{Subject: "the update", Reason: why})
	}
	return res, nil
}

// userDecided: a policy of the cluster's (not ndp's built-in defaults) won
// the change. Only such a decision may lower the MCO's own: where ndp's
// defaults and the MCO's differ, the MCO's stays (its registries.conf
// check, its missing entry for a path ndp's defaults know, a change ndp
// does not see).
func (rs reasons) userDecided(id string) bool {
	for _, r := range rs[id] {
		if r.Policy != planner.NoPolicy && r.Policy != policies.DefaultPolicyName {
			return true
		}
	}
	return false
}

// atLeast: a node doing have does at least what want does — it reboots, or
// it drains if want drains and runs every service action want runs.
func atLeast(have, want effect) bool {
	switch {
	case have.reboot:
		return true
	case want.reboot || want.drain && !have.drain:
		return false
	}
	got := map[string]bool{}
	for _, s := range strings.Split(have.services, ", ") {
		got[s] = true
	}
	for _, s := range strings.Split(want.services, ", ") {
		if s != "" && !got[s] {
			return false
		}
	}
	return true
}

// decisionEffect and planEffect are what a decision and a plan do to a node.
func decisionEffect(d *mcorules.Decision) effect {
	e := mcoEffect(d.Actions, d.Drain)
	e.drain = d.Drain || e.reboot && d.Drain
	return e
}

func planEffect(p *planner.Plan) effect { return planEffectOf(p.Actions, p.Drain, p.Reboot) }

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

// mcoFileEffect is what the MCO does for one changed file under pols;
// regDrain, whether its registries.conf rule (Special) drains.
func mcoFileEffect(path string, pols mcorules.Policies, regDrain bool) effect {
	e, ok := mcorules.FilePolicy(path, pols)
	if !ok {
		return effect{reboot: true, drain: true}
	}
	return mcoEffect(mcorules.StatusActions(e.Actions), regDrain)
}

// registriesDrain says whether the MCO's registries.conf rule (Special)
// drains for this update's registries.conf change. The MCO runs that check
// only when no other action reboots or drains, so a decision that does
// (as d0 often does, before the entries) does not tell: it is decided
// alone, every other change given None.
func registriesDrain(in mcorules.Input, d0 *mcorules.Decision) (bool, error) {
	if !slices.Contains(d0.ChangedFiles, mcorules.RegistriesConfPath) {
		return false, nil
	}
	none := []operatorv1.NodeDisruptionPolicyStatusAction{{Type: operatorv1.NoneStatusAction}}
	pols := mcorules.Policies{SSHKey: operatorv1.NodeDisruptionPolicyStatusSSHKey{Actions: none}}
	for _, f := range d0.ChangedFiles {
		acts := none
		if f == mcorules.RegistriesConfPath {
			acts = []operatorv1.NodeDisruptionPolicyStatusAction{{Type: operatorv1.SpecialStatusAction}}
		}
		pols.Files = append(pols.Files, operatorv1.NodeDisruptionPolicyStatusFile{Path: f, Actions: acts})
	}
	for _, n := range d0.ChangedUnits {
		pols.Units = append(pols.Units, operatorv1.NodeDisruptionPolicyStatusUnit{Name: operatorv1.NodeDisruptionPolicyServiceName(n), Actions: none})
	}
	in.Policies = pols
	d, err := mcorules.Decide(in)
	if err != nil {
		return false, err
	}
	return d.Drain, nil
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

// Move is one pending update of a pool's nodes, with what the guard needs
// to know of it.
type Move struct {
	Pool string
	Update
	// Sources names, for each change id of the target ("file:/etc/x",
	// "unit:y.service", "sshkey"), the MachineConfig that gives it: a
	// per-update entry is written only for a change whose source the
	// admission guard covers (GuardedSource). nil: not known, no entry.
	Sources map[string]string
}

// ForPending is the per-update entries of every pending move at once: the
// entries ForUpdate finds for each, kept only where they are safe
// together. A move's entries are kept only if, with them, the MCO does at
// least ndp's plan for it (NotLess: exactly it, or more where the MCO keeps
// its own decision for a change only ndp's defaults decide), every change they cover comes from a
// source the admission guard protects (guarded: a MachineConfig an
// administrator writes, or one the MCO generates from a KubeletConfig or
// ContainerRuntimeConfig; never a template or image-mirror rendering, which
// the guard cannot refuse), no other move needs other actions for the same
// path, and, with all of them standing, every move still gets exactly
// ndp's plan. What is dropped is said why.
func ForPending(moves []Move, base Entries, guarded func(source string) bool) (Entries, []Unexpressed, error) {
	type moveEntries struct {
		Move
		entries Entries
	}
	var ok []moveEntries
	var notes []Unexpressed
	note := func(m Move, why string) {
		notes = append(notes, Unexpressed{Subject: fmt.Sprintf("pool %s: %s -> %s", m.Pool, nameOf(m.From), nameOf(m.To)), Reason: why})
	}
	for _, m := range moves {
		r, err := ForUpdate(m.Update, base)
		if err != nil {
			return Entries{}, nil, err
		}
		if Empty(r.Entries) {
			continue
		}
		if !r.NotLess {
			for _, u := range r.Unexpressed {
				note(m, u.String())
			}
			continue
		}
		if s := unguarded(r.Entries, m.Sources, guarded); s != "" {
			note(m, s)
			continue
		}
		ok = append(ok, moveEntries{Move: m, entries: r.Entries})
	}
	// Moves that disagree on a subject, or whose changes an entry of
	// another move would decide otherwise, lose their entries; repeat
	// until none does.
	banned := map[string]bool{}
	for {
		var keep []moveEntries
		for _, m := range ok {
			if s := firstIn(Subjects(m.entries), banned); s != "" {
				note(m.Move, fmt.Sprintf("another pending update needs %s decided otherwise", SubjectText(s)))
				continue
			}
			keep = append(keep, m)
		}
		ok = keep
		union, seen, more := Entries{}, map[string]string{}, false
		for _, m := range ok {
			for _, s := range subjectActions(m.entries) {
				if a, dup := seen[s[0]]; dup && a != s[1] {
					banned[s[0]], more = true, true
				}
				seen[s[0]] = s[1]
			}
			union = Merge(union, m.entries)
		}
		if more {
			continue
		}
		// Every move, with every entry standing (those without entries of
		// their own too), must still get at least ndp's plan.
		for _, m := range moves {
			r, err := ForUpdate(m.Update, Merge(base, union))
			if err != nil {
				return Entries{}, nil, err
			}
			if Empty(r.Entries) && r.NotLess {
				continue
			}
			touched, err := changedSubjects(m.Update, base)
			if err != nil {
				return Entries{}, nil, err
			}
			for _, o := range ok {
				if sameMove(o.Move, m) {
					continue
				}
				for _, s := range Subjects(o.entries) {
					if touches(s, touched) {
						banned[s], more = true, true
					}
				}
			}
		}
		if !more {
			return Sorted(union), notes, nil
		}
	}
}

// touches: the entry for subject decides one of the changes (a file entry
// also decides the files beneath its path).
func touches(subject string, changed map[string]bool) bool {
	if changed[subject] {
		return true
	}
	p, ok := strings.CutPrefix(subject, "file:")
	if !ok {
		return false
	}
	for c := range changed {
		if f, ok := strings.CutPrefix(c, "file:"); ok && changeset.Covers(p, f) {
			return true
		}
	}
	return false
}

// changedSubjects are the files, units and passwd the MCO sees change in u.
func changedSubjects(u Update, base Entries) (map[string]bool, error) {
	d, err := mcorules.Decide(mcorules.Input{From: u.From, To: u.To, Policies: mcorules.MergePolicies(base), SingleNode: u.SingleNode, Overrides: u.Overrides})
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, f := range d.ChangedFiles {
		out["file:"+f] = true
	}
	for _, n := range d.ChangedUnits {
		out["unit:"+n] = true
	}
	if d.SSHChanged {
		out["sshkey"] = true
	}
	return out, nil
}

func nameOf(c *machineconfig.Config) string {
	if c == nil {
		return "(none)"
	}
	return c.Name
}

func sameMove(a, b Move) bool {
	return a.Pool == b.Pool && nameOf(a.From) == nameOf(b.From) && nameOf(a.To) == nameOf(b.To)
}

// subjectActions lists (subject, actions) pairs of e.
func subjectActions(e Entries) [][2]string {
	var out [][2]string
	for _, f := range e.Files {
		out = append(out, [2]string{"file:" + f.Path, planner.FormatActions(f.Actions)})
	}
	for _, u := range e.Units {
		out = append(out, [2]string{"unit:" + string(u.Name), planner.FormatActions(u.Actions)})
	}
	if len(e.SSHKey.Actions) > 0 {
		out = append(out, [2]string{"sshkey", planner.FormatActions(e.SSHKey.Actions)})
	}
	return out
}

func firstIn(subjects []string, set map[string]bool) string {
	for _, s := range subjects {
		if set[s] {
			return s
		}
	}
	return ""
}

// unguarded names the first entry whose change the admission guard does
// not cover: its source is unknown, or not one the guard protects.
func unguarded(e Entries, sources map[string]string, guarded func(string) bool) string {
	for _, s := range Subjects(e) {
		src, ok := sources[s]
		switch {
		case !ok:
			return fmt.Sprintf("%s: its source MachineConfig is not known (a removed file, or a rendering ndp did not predict), so no guard can protect a per-update entry for it", SubjectText(s))
		case !guarded(src):
			return fmt.Sprintf("%s comes from MachineConfig %s, which the MCO renders from the cluster's configuration: no admission guard can hold it, so no per-update entry is written for it", SubjectText(s), src)
		}
	}
	return ""
}
