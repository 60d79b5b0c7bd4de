package advisor

import (
	"fmt"
	"slices"
	"strings"

	operatorv1 "github.com/openshift/api/operator/v1"

	"github.com/ndp-dev/ndp/mco/mcoentries"
	"github.com/ndp-dev/ndp/mco/mcorules"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/policy"
	"github.com/ndp-dev/ndp/registries"
	"github.com/ndp-dev/ndp/webhook/preview"
)

// The API server's limits on admission warnings
// (k8s.io/apiserver/pkg/endpoints/filters/warning.go): it cuts each warning
// at 256 characters and drops what exceeds 4 KiB in all. The advisor stays
// under both, counting bytes (never fewer than characters), so that what it
// cuts, it cuts where it says so.
const (
	MaxWarningBytes  = 256
	MaxWarningsBytes = 4096
)

// moreNote ends the warnings that did not fit.
const moreNote = "(+%d more, see kubectl get updateforecasts)"

// cutMark ends a warning shortened to fit.
const cutMark = " …(cut)"

// shorten returns s within max bytes: s itself, or its longest prefix
// ending at a word boundary with cutMark after it.
func shorten(s string, max int) string {
	if len(s) <= max {
		return s
	}
	room := max - len(cutMark)
	if room <= 0 {
		return cutMark[:max]
	}
	cut := strings.LastIndexAny(s[:room+1], " ;,")
	if cut <= 0 {
		// One word longer than the room: cut at a character boundary.
		cut = room
		for cut > 0 && !utf8Start(s[cut]) {
			cut--
		}
	}
	return strings.TrimRight(s[:cut], " ;,") + cutMark
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// fitMCOWarnings shortens each warning to MaxWarningBytes and keeps, in
// order, as many as fit in MaxWarningsBytes, replacing the rest with one
// note that counts them.
func fitMCOWarnings(ws []string) []string {
	return fitWarningsWithin(ws, MaxWarningsBytes, moreNote)
}

// disruption ranks what an update does to a node: 0 nothing, 1 actions
// without a drain, 2 a drain, 3 a reboot.
func disruption(reboot, drain bool, actions int) int {
	switch {
	case reboot:
		return 3
	case drain:
		return 2
	case actions > 0:
		return 1
	}
	return 0
}

func mcoDisruption(d *mcorules.Decision) int {
	if len(d.Refused) > 0 {
		return 4
	}
	return disruption(d.Reboot, d.Drain, len(serviceActions(d.Actions)))
}

func ndpDisruption(p *planner.Plan) int {
	if len(p.Unreconcilable) > 0 {
		return 4
	}
	n := 0
	for _, a := range p.Actions {
		if a.Type != policy.ActionNone && a.Type != policy.ActionDrain && a.Type != policy.ActionReboot {
			n++
		}
	}
	return disruption(p.Reboot, p.Drain, n)
}

// serviceActions are the actions other than None, Drain and Reboot, which
// the drain and reboot flags already say.
func serviceActions(as []mcorules.Action) []mcorules.Action {
	var out []mcorules.Action
	for _, a := range as {
		switch a.Type {
		case operatorv1.NoneStatusAction, operatorv1.DrainStatusAction, operatorv1.RebootStatusAction:
		default:
			out = append(out, a)
		}
	}
	return out
}

// verbs of an action: imperative, third person, gerund.
func actionVerbs(t operatorv1.NodeDisruptionPolicyStatusActionType, service string) [3]string {
	switch t {
	case operatorv1.RestartStatusAction:
		return [3]string{"restart " + service, "restarts " + service, "restarting " + service}
	case operatorv1.ReloadStatusAction:
		return [3]string{"reload " + service, "reloads " + service, "reloading " + service}
	case operatorv1.SpecialStatusAction:
		// The MCO's registries.conf rule: systemctl reload crio.
		return [3]string{"reload crio.service", "reloads crio.service", "reloading crio.service"}
	case operatorv1.DaemonReloadStatusAction:
		return [3]string{"daemon-reload", "reloads systemd", "reloading systemd"}
	}
	s := strings.ToLower(string(t))
	return [3]string{s, s + "s", s + "ing"}
}

// Forms of a decision's phrase.
const (
	imperative = iota // "restart chronyd.service, no drain"
	third             // "restarts chronyd.service"
	gerund            // "restarting chronyd.service"
)

// decisionPhrase says what the MCO does, e.g. "drain and reboot",
// "reload crio.service, no drain" (imperative), "drains and reboots"
// (third), "draining and rebooting" (gerund).
func decisionPhrase(d *mcorules.Decision, form int) string {
	if len(d.Refused) > 0 {
		// The first is what the MCO reports; the others come once it is fixed.
		r := d.Refused[0]
		if len(d.Refused) > 1 {
			r += fmt.Sprintf("; +%d more", len(d.Refused)-1)
		}
		return [3]string{"refused (" + r + "): the nodes go Unreconcilable", "is refused (" + r + ")", "being refused (" + r + ")"}[form]
	}
	var parts []string
	for _, a := range serviceActions(d.Actions) {
		parts = append(parts, actionVerbs(a.Type, a.Service)[form])
	}
	parts = slices.Compact(parts) // the MCO runs duplicates; saying them once is enough
	drain := [3]string{"drain", "drains", "draining"}[form]
	reboot := [3]string{"reboot", "reboots", "rebooting"}[form]
	switch {
	case d.Reboot && d.Drain:
		return drain + " and " + reboot
	case d.Reboot:
		return [3]string{"reboot, no drain", "reboots without draining", "rebooting without draining"}[form]
	case len(parts) == 0 && d.Drain:
		return drain
	case len(parts) == 0:
		return [3]string{"nothing to do (no drain, no reboot)", "does nothing", "doing nothing"}[form]
	case d.Drain:
		return strings.Join(parts, ", ") + " and " + drain
	case form == imperative:
		return strings.Join(parts, ", ") + ", no drain"
	}
	return strings.Join(parts, ", ")
}

// decidingRules says which rules gave the decision its worst part:
// "file /etc/chrony.conf: no node disruption policy", at most two, and how
// many more.
func decidingRules(d *mcorules.Decision) string {
	var picked []string
	for _, r := range d.Rules {
		top := false
		for _, a := range r.Actions {
			switch {
			case d.Reboot && a.Type == operatorv1.RebootStatusAction,
				!d.Reboot && d.Drain && (a.Type == operatorv1.DrainStatusAction || a.Type == operatorv1.SpecialStatusAction),
				!d.Reboot && !d.Drain && a.Type != operatorv1.NoneStatusAction:
				top = true
			}
		}
		if !top {
			continue
		}
		s := ruleText(r)
		if !slices.Contains(picked, s) {
			picked = append(picked, s)
		}
	}
	if len(picked) > 2 {
		picked = append(picked[:2], fmt.Sprintf("+%d more", len(picked)-2))
	}
	return strings.Join(picked, "; ")
}

// ruleText is "file /etc/chrony.conf: no node disruption policy", or the
// rule alone when it names the change already ("file policy
// /etc/containers/registries.conf", "osImageURL: always reboot").
func ruleText(r mcorules.Rule) string {
	kind, subject, _ := strings.Cut(r.Change, " ")
	s := r.Change + ": " + r.Rule
	if r.Change == "" || strings.HasPrefix(r.Rule, r.Change) || r.Rule == kind+" policy "+subject {
		s = r.Rule
	}
	switch {
	case r.Detail == "":
	case strings.HasPrefix(r.Detail, "safe"):
		s += ": safe" // the long form says what was not found
	default:
		s += ": " + r.Detail // which entry made it unsafe
	}
	return s
}

// groupText is one group's "drain and reboot (file /etc/chrony.conf: no
// node disruption policy)".
func groupText(d *mcorules.Decision) string {
	if d.Error != "" && len(d.Refused) == 0 {
		return "fail (" + d.Error + "): the nodes go Degraded and retry"
	}
	s := decisionPhrase(d, imperative)
	if len(d.Refused) == 0 {
		if why := decidingRules(d); why != "" {
			s += " (" + why + ")"
		}
	}
	return s
}

// Warning is the preview as one admission warning, e.g.
//
//	MCO: pool worker, 3 nodes: drain and reboot (file /etc/chrony.conf: no node disruption policy)
func (pp *MCOPreview) Warning() string {
	var b strings.Builder
	fmt.Fprintf(&b, "MCO: pool %s, %s: ", pp.Pool, preview.Count(pp.Nodes, "node"))
	var parts []string
	switch {
	case pp.Unchanged && pp.Pending > 0:
		parts = append(parts, fmt.Sprintf("no change to the rendered config (%s still moving to it)", preview.Count(pp.Pending, "node")))
	case pp.Unchanged:
		parts = append(parts, "no change to the rendered config, no node is updated")
	case len(pp.Groups) == 1 && pp.Groups[0].Nodes == pp.Nodes:
		parts = append(parts, groupText(pp.Groups[0].Decision))
	case len(pp.Groups) == 0:
		parts = append(parts, "new rendered config "+pp.Rendered+", no node to update")
	default:
		for _, g := range pp.Groups {
			if g.Nodes == 0 {
				// No node runs the pool's target yet: what a node joining it would do.
				parts = append(parts, fmt.Sprintf("from %s: %s", g.From, groupText(g.Decision)))
				continue
			}
			parts = append(parts, fmt.Sprintf("%s from %s: %s", preview.Count(g.Nodes, "node"), g.From, groupText(g.Decision)))
		}
	}
	if !pp.Unchanged && pp.UpToDate > 0 {
		parts = append(parts, fmt.Sprintf("%s already on it", preview.Count(pp.UpToDate, "node")))
	}
	if pp.Unconfigured > 0 {
		parts = append(parts, fmt.Sprintf("%s with no current config", preview.Count(pp.Unconfigured, "node")))
	}
	b.WriteString(strings.Join(parts, "; "))
	return b.String()
}

// ndpCanBeLess says whether ndp's plan could be less disruptive than the
// MCO's decision d, the only case where NDPWarning uses it: not when the
// MCO does nothing at all. The previews skip planning otherwise.
func ndpCanBeLess(d *mcorules.Decision) bool {
	return d != nil && mcoDisruption(d) > 0
}

// NDPWarning is the second line, when ndp's own policies would plan less
// disruption than the MCO for some group: ndp's plan, and the
// MachineConfiguration entries that get it from the MCO, or why the MCO's
// API cannot express it. "" when ndp plans no less.
func (pp *MCOPreview) NDPWarning(lookup func(name string) (policy.Policy, bool)) string {
	for _, g := range pp.Groups {
		if g.NDP == nil || g.Decision == nil || ndpDisruption(g.NDP) >= mcoDisruption(g.Decision) {
			continue
		}
		s := fmt.Sprintf("ndp: pool %s: %s", pp.Pool, ndpPhrase(g.NDP))
		sg := suggest(g.Decision, g.NDP, lookup)
		if entry := sg.entry(); entry != "" {
			s += "; for the MCO add " + entry
		}
		if len(sg.why) > 0 {
			s += "; the MCO cannot: " + strings.Join(sg.why, "; ")
		}
		return s
	}
	return ""
}

// ndpPhrase is ndp's plan as "restart chronyd.service, no drain".
func ndpPhrase(p *planner.Plan) string {
	var as []mcorules.Action
	for _, a := range p.Actions {
		as = append(as, statusAction(a))
	}
	return decisionPhrase(&mcorules.Decision{Actions: as, Drain: p.Drain, Reboot: p.Reboot}, imperative)
}

func statusAction(a policy.Action) mcorules.Action {
	out := mcorules.Action{Type: operatorv1.NodeDisruptionPolicyStatusActionType(a.Type)}
	switch {
	case a.Reload != nil:
		out.Service = string(a.Reload.ServiceName)
	case a.Restart != nil:
		out.Service = string(a.Restart.ServiceName)
	}
	return out
}

// suggestion is what ndp's plan asks of the MCO's API.
type suggestion struct {
	files []operatorv1.NodeDisruptionPolicySpecFile
	units []operatorv1.NodeDisruptionPolicySpecUnit
	why   []string
}

// suggest finds, for each change ndp decides with less disruption than the
// MCO, the MCO policy entry that gets the same: a cluster-wide declarative
// entry of an ndp policy translates as it is; a Rego claim (it reads the
// contents) or a pool-restricted policy (the MCO's are cluster-wide) does
// not, and why is said.
func suggest(d *mcorules.Decision, p *planner.Plan, lookup func(string) (policy.Policy, bool)) suggestion {
	mcoRule := map[string]int{}
	for _, r := range d.Rules {
		dis := actionsDisruption(r.Actions)
		if d.Drain && slices.ContainsFunc(r.Actions, func(a mcorules.Action) bool { return a.Type == operatorv1.SpecialStatusAction }) {
			dis = max(dis, 2) // the registries.conf rule drained: the change is unsafe
		}
		mcoRule[r.Change] = max(mcoRule[r.Change], dis)
	}
	var sg suggestion
	whySeen := map[string]bool{}
	addWhy := func(s string) {
		if !whySeen[s] {
			whySeen[s] = true
			sg.why = append(sg.why, s)
		}
	}
	for _, r := range p.Reasons {
		kind, subject := changeSubject(r.Change)
		if kind == "" || r.Policy == planner.NoPolicy {
			continue
		}
		var ndpActs []mcorules.Action
		for _, a := range r.Actions {
			ndpActs = append(ndpActs, statusAction(a))
		}
		mine := actionsDisruption(ndpActs)
		theirs, known := mcoRule[kind+" "+subject]
		if !known {
			theirs = mcoDisruption(d)
		}
		if mine >= theirs {
			continue
		}
		if kind == "file" && subject == registries.ConfPath {
			// The MCO decides registries.conf by content too (its Special
			// rule), but always drains an unsafe change; an entry for the
			// path would replace that rule for every change.
			addWhy("the MCO drains every unsafe registries.conf change (its Special rule)")
			continue
		}
		pol, ok := lookup(r.Policy)
		switch {
		case !ok:
			addWhy(fmt.Sprintf("policy %s is no longer active", r.Policy))
			continue
		case pol.PoolSelector != nil && (len(pol.PoolSelector.MatchLabels) > 0 || len(pol.PoolSelector.MatchExpressions) > 0):
			addWhy(fmt.Sprintf("policy %s is for some pools only, the MCO's policies are cluster-wide", r.Policy))
			continue
		}
		match := r.Match
		if match == "" {
			match = subject
		}
		found := false
		switch kind {
		case "file":
			for _, f := range pol.Files {
				if f.Path == match && actionsEqual(f.Actions, r.Actions) {
					if !slices.ContainsFunc(sg.files, func(x operatorv1.NodeDisruptionPolicySpecFile) bool { return x.Path == f.Path }) {
						sg.files = append(sg.files, f)
					}
					found = true
				}
			}
		case "unit":
			for _, u := range pol.Units {
				if string(u.Name) == match && actionsEqual(u.Actions, r.Actions) {
					if !slices.ContainsFunc(sg.units, func(x operatorv1.NodeDisruptionPolicySpecUnit) bool { return x.Name == u.Name }) {
						sg.units = append(sg.units, u)
					}
					found = true
				}
			}
		}
		if !found {
			addWhy(fmt.Sprintf("policy %s decides %s by its contents (Rego)", r.Policy, subject))
		}
	}
	return sg
}

func actionsEqual(a, b []policy.Action) bool {
	return slices.EqualFunc(a, b, func(x, y policy.Action) bool { return statusAction(x) == statusAction(y) })
}

func actionsDisruption(as []mcorules.Action) int {
	reboot, drain := false, false
	for _, a := range as {
		reboot = reboot || a.Type == operatorv1.RebootStatusAction
		drain = drain || a.Type == operatorv1.DrainStatusAction
	}
	return disruption(reboot, drain, len(serviceActions(as)))
}

// changeSubject splits a planner reason's change, "file /etc/chrony.conf:
// contents changed", into ("file", "/etc/chrony.conf"); ("", "") for
// changes the MCO's policies have no entry for.
func changeSubject(change string) (kind, subject string) {
	for _, k := range []string{"file", "unit"} {
		if rest, ok := strings.CutPrefix(change, k+" "); ok {
			if i := strings.LastIndex(rest, ": "); i >= 0 {
				rest = rest[:i]
			}
			return k, rest
		}
	}
	return "", ""
}

// entry is the MachineConfiguration spec.nodeDisruptionPolicy the
// suggestion asks for, in YAML flow style.
func (sg suggestion) entry() string {
	return entriesFlow(mcoentries.Entries{Files: sg.files, Units: sg.units})
}

func flowActions(as []policy.Action) string {
	var out []string
	for _, a := range as {
		switch {
		case a.Reload != nil:
			out = append(out, fmt.Sprintf("{type: Reload, reload: {serviceName: %s}}", a.Reload.ServiceName))
		case a.Restart != nil:
			out = append(out, fmt.Sprintf("{type: Restart, restart: {serviceName: %s}}", a.Restart.ServiceName))
		default:
			out = append(out, fmt.Sprintf("{type: %s}", a.Type))
		}
	}
	return "[" + strings.Join(out, ", ") + "]"
}

// pendingText says how a policy edit changes one pool's pending update:
// "MCO: after this, pool worker's pending update (2 nodes) restarts
// chronyd.service instead of draining and rebooting".
func pendingText(pool string, nodes int, before, after *mcorules.Decision) string {
	head := fmt.Sprintf("MCO: after this, pool %s's pending update (%s) ", pool, preview.Count(nodes, "node"))
	b, a := decisionPhrase(before, third), decisionPhrase(after, third)
	if a == b {
		return head + "is unchanged: it " + a
	}
	return head + a + " instead of " + decisionPhrase(before, gerund)
}

// staleText is the note for a MachineConfiguration cluster whose status
// the operator has not caught up with.
func staleText(src mcorules.PolicySource) string {
	if !src.Stale {
		return ""
	}
	return fmt.Sprintf("MCO: MachineConfiguration cluster's status is stale (generation %d, observed %d): predicted with its spec; the MCO's daemons wait up to 2 min for it, then mark the node Degraded and retry",
		src.Generation, src.ObservedGeneration)
}
