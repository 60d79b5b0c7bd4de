package advisor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ndp-dev/ndp/mco/mcoentries"
	"github.com/ndp-dev/ndp/mco/mcorules"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/policy"
	"github.com/ndp-dev/ndp/policies"
	"github.com/ndp-dev/ndp/webhook/preview"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ndp-controller --mco-entries values (controllers/advisor.MCOEntries*):
// off, static or all (static and per-update entries).
const (
	mcoEntriesOff = "off"
	mcoEntriesAll = "all"
)

// MCOEntriesOn says whether ndp keeps entries in the MCO's node disruption
// policy with --mco-entries=mode.
func MCOEntriesOn(mode string) bool { return mode != "" && mode != mcoEntriesOff }

// MCOEntriesPreview is the policy validation's EditPreview with
// --mco-entries (nodedisruptionpolicy.PolicyValidation.Also): on every
// create, update or delete of a policy it warns what ndp would then write
// in MachineConfiguration cluster's spec.nodeDisruptionPolicy, what of the
// policy the MCO cannot be given and why, and what the MCO would then do
// with each pool's pending update (docs/openshift.md#ndps-policies-in-the-mco),
// after the what-if's warnings and within what the API server passes on
// whole. It only informs.
type MCOEntriesPreview struct {
	// Previewer reads the pools, and its active policy set is the one the
	// edit changes.
	Previewer *Previewer
	// Mode is ndp-controller's --mco-entries: static or all.
	Mode string
	// APIReader reads MachineConfiguration cluster with its managedFields
	// (the manager's cache strips them), to tell ndp's entries from the
	// administrator's.
	APIReader client.Reader
	// Deadline bounds the preview (preview.DefaultPreviewDeadline when
	// zero), within the validation's deadline.
	Deadline time.Duration
}

// Put previews ndp's entries with pol added or replaced; set is the
// policy set with it (PolicyChecker.CheckSet).
func (h *MCOEntriesPreview) Put(ctx context.Context, whatIf []string, pol policy.Policy, set *planner.Planner) []string {
	if pol.Name == policies.DefaultPolicyName {
		return whatIf // the controller restores it: the what-if says so
	}
	return withEntries(whatIf, h.mcoEntriesWarnings(ctx, mcoEntriesInput{edited: pol.Name, policy: &pol, candidate: func(context.Context) (policySet, error) {
		return policySet{planner: set, policies: append(h.Previewer.Active.Others(pol.Name), pol)}, nil
	}}))
}

// Delete previews ndp's entries without the named policy: what ndp
// removes.
func (h *MCOEntriesPreview) Delete(ctx context.Context, whatIf []string, name string) []string {
	if name == policies.DefaultPolicyName {
		return whatIf // the controller restores it: the what-if says so
	}
	active := h.Previewer.Active
	if _, ok := active.Get(name); !ok {
		return withEntries(whatIf, []string{fmt.Sprintf("%s: NodeDisruptionPolicy %s is not in the active set (never accepted)", MCOEntriesNoChange, name)})
	}
	return withEntries(whatIf, h.mcoEntriesWarnings(ctx, mcoEntriesInput{edited: name, candidate: func(ctx context.Context) (policySet, error) {
		set, err := active.Without(ctx, name)
		return policySet{planner: set, policies: active.Others(name)}, err
	}}))
}

// Unchanged is the warning of a dry-run that changes the labels or
// annotations only.
func (h *MCOEntriesPreview) Unchanged() string { return MCOEntriesNoChange + ": the spec is unchanged" }

// withEntries adds the entries preview's warnings after the what-if's,
// within what the API server passes on whole.
func withEntries(whatIf, entries []string) []string {
	return append(whatIf, fitWarningsWithin(entries, MaxWarningsBytes-warningBytes(whatIf), moreEntriesNote)...)
}

// mcoEntriesPrefix starts the warnings about ndp's entries in
// MachineConfiguration cluster.
const mcoEntriesPrefix = "MCO entries: "

// MCOEntriesNoChange is the warning of a policy edit that changes none of
// ndp's entries.
const MCOEntriesNoChange = mcoEntriesPrefix + "no change"

// moreEntriesNote ends the entries' warnings that did not fit.
const moreEntriesNote = "(+%d more, see ndp export machineconfiguration)"

// policySet is a policy set as the policy controller would put it in force:
// its planner and its policies (the default policy included). A nil
// planner is an empty set.
type policySet struct {
	planner  *planner.Planner
	policies []policy.Policy
}

// written is what ndp writes as static entries for one policy set, as the
// entries controller (advisor.MCOEntriesReconciler) does: Static's
// entries without those another manager holds otherwise (Conflicts), and
// within the MCO's API limits beside the administrator's.
type written struct {
	static    *mcoentries.StaticResult
	entries   mcoentries.Entries
	conflicts []mcoentries.Conflict
	dropped   []mcoentries.Unexpressed
}

func staticWritten(ctx context.Context, set policySet, live *mcoentries.Live) (*written, error) {
	w := &written{static: &mcoentries.StaticResult{From: map[string][]string{}}}
	if set.planner == nil {
		return w, nil
	}
	st, err := mcoentries.Static(ctx, mcoentries.StaticInput{Planner: set.planner, Policies: set.policies, Base: live.Admin})
	if err != nil {
		return nil, err
	}
	w.static = st
	e, conflicts := mcoentries.Conflicts(st.Entries, live.Spec, live.Own)
	w.entries, w.dropped = mcoentries.WithinLimits(live.Admin, e)
	w.conflicts = conflicts
	return w, nil
}

// mcoEntriesInput is one edit of the policy set, for the entries preview.
type mcoEntriesInput struct {
	// edited names the policy created, changed or deleted.
	edited string
	// policy is its new revision; nil when it is deleted.
	policy *policy.Policy
	// candidate is the set once the edit is in force.
	candidate func(context.Context) (policySet, error)
}

// mcoEntriesWarnings previews, with --mco-entries, what ndp would write in
// MachineConfiguration cluster once the edit is in force — its static
// entries added, changed and removed, and what of the policy the MCO cannot
// be given — and what the MCO's daemon would then do with each pool's
// pending update instead of what it does now. It never fails the request:
// whatever goes wrong is one warning.
func (h *MCOEntriesPreview) mcoEntriesWarnings(ctx context.Context, in mcoEntriesInput) (ws []string) {
	defer func() {
		if r := recover(); r != nil {
			ws = []string{noMCOEntries(fmt.Errorf("internal error: %v", r), 0)}
		}
	}()
	deadline := preview.Deadline(h.Deadline)
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	ws, err := h.previewMCOEntries(ctx, in)
	if err == nil {
		err = ctx.Err() // a plan cut short is no answer
	}
	if err != nil {
		return []string{noMCOEntries(err, deadline)}
	}
	return ws
}

func (h *MCOEntriesPreview) previewMCOEntries(ctx context.Context, in mcoEntriesInput) ([]string, error) {
	p := h.Previewer
	reader := h.APIReader
	if reader == nil {
		reader = p.Client // without managedFields: every entry counts as the administrator's
	}
	live, err := mcoentries.ReadLive(ctx, reader)
	if err != nil {
		return nil, err
	}
	if live == nil {
		return []string{mcoEntriesPrefix + "no MachineConfiguration cluster: ndp writes its entries once the MCO's operator has created it"}, nil
	}
	pl, err := p.Active.Ready(ctx, p.Client)
	if err != nil {
		return nil, err
	}
	now, err := staticWritten(ctx, policySet{planner: pl, policies: p.Active.Others("")}, live)
	if err != nil {
		return nil, err
	}
	set, err := in.candidate(ctx)
	if err != nil {
		return nil, err
	}
	next, err := staticWritten(ctx, set, live)
	if err != nil {
		return nil, err
	}
	ws := entriesDiffWarnings(now.entries, next.entries)
	ws = append(ws, entriesNotes(in, next, changedSubjects(now.entries, next.entries), h.Mode == mcoEntriesAll)...)

	// Each pool's pending update: the MCO's decision with the policies in
	// force, and with the spec as ndp would leave it.
	var standing mcoentries.Entries
	if h.Mode == mcoEntriesAll {
		standing = live.UpdateEntries()
	}
	after := mcorules.MergePolicies(mcoentries.Merge(live.Admin, mcoentries.Merge(next.entries, standing)))
	st, err := p.mcoDecisionState(ctx, live.MC)
	if err != nil {
		return nil, err
	}
	if s := staleText(st.source); s != "" {
		ws = append(ws, s)
	}
	pools, err := p.Pools(ctx)
	if err != nil {
		return nil, err
	}
	pending := 0
	for _, pool := range pools {
		w, err := p.pendingWarnings(ctx, pool, st, after, st.overrides)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			ws = append(ws, fmt.Sprintf("MCO: pool %s: no preview: %v", pool.Name, err))
			pending++
			continue
		}
		ws = append(ws, w...)
		pending += len(w)
	}
	if pending == 0 && ws[0] != MCOEntriesNoChange {
		ws = append(ws, "MCO: no pool has a pending update: ndp's entries apply to the next change")
	}
	return ws, nil
}

// noMCOEntries is the warning of an entries preview that could not be made.
func noMCOEntries(err error, deadline time.Duration) string {
	msg := err.Error()
	if errors.Is(err, context.DeadlineExceeded) && deadline > 0 {
		msg = fmt.Sprintf("not done within the preview's %s deadline", deadline)
	}
	return mcoEntriesPrefix + "no preview: " + msg
}

// entriesDiffWarnings says how ndp's entries change from now to next:
//
//	MCO entries: ndp would add spec.nodeDisruptionPolicy.files: [{path: /etc/chrony.conf, actions: [{type: Restart, restart: {serviceName: chronyd.service}}]}]
//
// then the entries it would change (with their actions now) and remove;
// or MCOEntriesNoChange. A line too long for a warning is one line per
// entry.
func entriesDiffWarnings(now, next mcoentries.Entries) []string {
	nowBy, nextBy := mcoentries.BySubject(now), mcoentries.BySubject(next)
	var added, changed, removed []string
	for _, s := range mcoentries.Subjects(next) {
		switch was, ok := nowBy[s]; {
		case !ok:
			added = append(added, s)
		case !actionsEqual(was, nextBy[s]):
			changed = append(changed, s)
		}
	}
	for _, s := range mcoentries.Subjects(now) {
		if _, ok := nextBy[s]; !ok {
			removed = append(removed, s)
		}
	}
	if len(added)+len(changed)+len(removed) == 0 {
		return []string{MCOEntriesNoChange}
	}
	var out []string
	out = append(out, entryLines("ndp would add ", only(next, added), nil)...)
	out = append(out, entryLines("ndp would change ", only(next, changed), nowBy)...)
	out = append(out, entryLines("ndp would remove ", only(now, removed), nil)...)
	return out
}

// changedSubjects are the subjects whose entry an edit adds, changes or
// removes.
func changedSubjects(now, next mcoentries.Entries) []string {
	nowBy, nextBy := mcoentries.BySubject(now), mcoentries.BySubject(next)
	var out []string
	for s, a := range nextBy {
		if b, ok := nowBy[s]; !ok || !actionsEqual(a, b) {
			out = append(out, s)
		}
	}
	for s := range nowBy {
		if _, ok := nextBy[s]; !ok {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// only is e's entries of subjects, in e's order.
func only(e mcoentries.Entries, subjects []string) mcoentries.Entries {
	var drop []string
	for _, s := range mcoentries.Subjects(e) {
		if !slices.Contains(subjects, s) {
			drop = append(drop, s)
		}
	}
	return mcoentries.Without(e, drop)
}

// entryLines is "MCO entries: <verb>spec.nodeDisruptionPolicy.files: [...]",
// with each entry's actions now when was is given; one line per entry when
// all of them do not fit in one warning.
func entryLines(verb string, e mcoentries.Entries, was map[string][]policy.Action) []string {
	if mcoentries.Empty(e) {
		return nil
	}
	subjects := mcoentries.Subjects(e)
	line := mcoEntriesPrefix + verb + entriesFlow(e) + nowText(subjects, was)
	if len(subjects) == 1 || len(line) <= MaxWarningBytes {
		return []string{line}
	}
	out := make([]string, 0, len(subjects))
	for _, s := range subjects {
		out = append(out, mcoEntriesPrefix+verb+entriesFlow(only(e, []string{s}))+nowText([]string{s}, was))
	}
	return out
}

// nowText is " (now Restart chronyd.service)" for one changed entry,
// " (now file /a: X; unit b.service: Y)" for more.
func nowText(subjects []string, was map[string][]policy.Action) string {
	if was == nil {
		return ""
	}
	if len(subjects) == 1 {
		return " (now " + planner.FormatActions(was[subjects[0]]) + ")"
	}
	parts := make([]string, 0, len(subjects))
	for _, s := range subjects {
		parts = append(parts, subjectWords(s)+": "+planner.FormatActions(was[s]))
	}
	return " (now " + strings.Join(parts, "; ") + ")"
}

// entriesFlow is e as spec.nodeDisruptionPolicy in YAML flow style:
// "spec.nodeDisruptionPolicy.files: [{path: /etc/chrony.conf, actions:
// [{type: Restart, restart: {serviceName: chronyd.service}}]}], units:
// [...], sshkey: {actions: [...]}"; "" when e is empty.
func entriesFlow(e mcoentries.Entries) string {
	var parts []string
	if len(e.Files) > 0 {
		fs := make([]string, 0, len(e.Files))
		for _, f := range e.Files {
			fs = append(fs, fmt.Sprintf("{path: %s, actions: %s}", f.Path, flowActions(f.Actions)))
		}
		parts = append(parts, "files: ["+strings.Join(fs, ", ")+"]")
	}
	if len(e.Units) > 0 {
		us := make([]string, 0, len(e.Units))
		for _, u := range e.Units {
			us = append(us, fmt.Sprintf("{name: %s, actions: %s}", u.Name, flowActions(u.Actions)))
		}
		parts = append(parts, "units: ["+strings.Join(us, ", ")+"]")
	}
	if len(e.SSHKey.Actions) > 0 {
		parts = append(parts, "sshkey: {actions: "+flowActions(e.SSHKey.Actions)+"}")
	}
	if len(parts) == 0 {
		return ""
	}
	return "spec.nodeDisruptionPolicy." + strings.Join(parts, ", ")
}

// subjectWords is "file /etc/x" for "file:/etc/x".
func subjectWords(s string) string {
	k, v, ok := strings.Cut(s, ":")
	if !ok {
		return s
	}
	return k + " " + v
}

// subjectKey is "file:/etc/x" for "file /etc/x".
func subjectKey(words string) string {
	k, v, ok := strings.Cut(words, " ")
	if !ok || (k != "file" && k != "unit") {
		return words
	}
	return k + ":" + v
}

// entriesNotes says what ndp cannot give the MCO: for the edited policy
// (its withheld entries, why a policy for some pools only or a Rego policy
// gives none, an entry another manager holds otherwise, one the MCO's API
// refuses beside the others), and for any entry the edit changes or
// removes, why. perUpdate: --mco-entries=all.
func entriesNotes(in mcoEntriesInput, next *written, changed []string, perUpdate bool) []string {
	var out []string
	add := func(s string) {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	mine := func(policies string) bool {
		return in.policy != nil && slices.Contains(strings.Split(policies, ", "), in.edited)
	}
	if in.policy != nil {
		for _, u := range policyNotes(*in.policy, perUpdate) {
			add(unexpressedWarning(u, in.edited))
		}
	}
	for _, u := range next.static.Unexpressed {
		if mine(u.Policy) || slices.Contains(changed, subjectKey(u.Subject)) {
			add(unexpressedWarning(u, in.edited))
		}
	}
	for _, c := range next.conflicts {
		if mine(strings.Join(next.static.From[c.Subject], ", ")) || slices.Contains(changed, c.Subject) {
			add(mcoEntriesPrefix + "not for " + c.String())
		}
	}
	for _, u := range next.dropped {
		if mine(strings.Join(next.static.From[subjectKey(u.Subject)], ", ")) || slices.Contains(changed, subjectKey(u.Subject)) {
			add(unexpressedWarning(u, in.edited))
		}
	}
	return out
}

// unexpressedWarning is "MCO entries: not for file /etc/x: <reason>",
// naming the policies when the edited one is not among them.
func unexpressedWarning(u mcoentries.Unexpressed, edited string) string {
	s := mcoEntriesPrefix + "not for " + u.Subject
	if u.Policy != "" && !slices.Contains(strings.Split(u.Policy, ", "), edited) {
		s += " (policy " + u.Policy + ")"
	}
	return s + ": " + u.Reason
}

// policyNotes says why a policy gives no static entry at all, where Static
// has nothing to say of it: a pool selector (the MCO's entries are
// cluster-wide) or Rego (a claim by contents), as mcoentries.Export says it.
func policyNotes(p policy.Policy, perUpdate bool) []mcoentries.Unexpressed {
	rest := ""
	if perUpdate {
		rest = "; per-update entries only"
	}
	switch {
	case p.Name == policies.DefaultPolicyName:
	case p.PoolSelector != nil && (len(p.PoolSelector.MatchLabels) > 0 || len(p.PoolSelector.MatchExpressions) > 0) &&
		(len(p.Files) > 0 || len(p.Units) > 0 || p.SSHKey != nil || len(p.Modules) > 0):
		if perUpdate {
			rest += ", for the pool an update is in"
		}
		return []mcoentries.Unexpressed{{Policy: p.Name, Subject: "spec.poolSelector",
			Reason: "it applies to some pools only and the MCO's entries are cluster-wide: no static entry" + rest}}
	case len(p.Modules) > 0:
		if perUpdate {
			rest += ", for the updates ndp plans"
		}
		return []mcoentries.Unexpressed{{Policy: p.Name, Subject: "its Rego",
			Reason: "a Rego policy decides changes by what changed in them, which the MCO's API cannot say: no static entry" + rest}}
	}
	return nil
}

// fitWarningsWithin shortens each warning to MaxWarningBytes and keeps, in
// order, as many as fit in budget bytes, replacing the rest with note
// (a format with their count).
func fitWarningsWithin(ws []string, budget int, note string) []string {
	out := make([]string, 0, len(ws))
	total := 0
	for i, w := range ws {
		w = shorten(preview.OneLine(w, len(w)+1), MaxWarningBytes) // OneLine cuts nothing here
		rest := len(ws) - i - 1
		need := len(w)
		if rest > 0 {
			// Room for the note, should a later warning not fit.
			need += len(fmt.Sprintf(note, rest))
		}
		if total+need > budget {
			if n := fmt.Sprintf(note, len(ws)-i); total+len(n) <= budget {
				out = append(out, n)
			}
			return out
		}
		out = append(out, w)
		total += len(w)
	}
	return out
}

// warningBytes is the size of ws, as the API server counts it.
func warningBytes(ws []string) int {
	n := 0
	for _, w := range ws {
		n += len(w)
	}
	return n
}
