package advisor

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ndp-dev/ndp/apis/conditions"
	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
)

// What the MCO records per node while its daemon updates it
// (docs/design.md#observing-the-mco): the annotations its daemon and drain
// controller write, the MachineConfigNode's message prefix, the namespace
// and component of its daemon's Events.
const (
	DesiredDrainAnnotation     = "machineconfiguration.openshift.io/desiredDrain"
	LastAppliedDrainAnnotation = "machineconfiguration.openshift.io/lastAppliedDrain"
	PostConfigActionAnnotation = "machineconfiguration.openshift.io/post-config-action"
	// MCDEventNamespace holds the MCO daemon's Events about Nodes.
	MCDEventNamespace = "openshift-machine-config-operator"
	// MCDEventComponent is their source component.
	MCDEventComponent = "machineconfigdaemon"
	// KubeletEventNamespace holds the kubelet's Rebooted Events.
	KubeletEventNamespace = "default"
	// mcnPrefix starts a MachineConfigNode condition's message once the
	// update it ran in is over: "Action during update to <rendered>: ".
	mcnPrefix = "Action during update to "
)

// Observation timing.
const (
	// observeSlack is how far before the update was first seen a
	// MachineConfigNode transition or an Event still counts as this
	// update's (the observer may see desiredConfig after the daemon has
	// started), unless the node's previous update finished later.
	observeSlack = 30 * time.Second
	// observeSettle is how long after a node reports Done the observer
	// keeps folding evidence before it gives the verdict: the daemon's
	// last Events may reach the watch after the annotation does.
	observeSettle = 5 * time.Second
	// observedFromStart starts the first evidence line of an update that
	// was watched from before the daemon began (node state Done).
	observedFromStart = "watched from the start: "
	// observedMidway starts it when the daemon had begun already.
	observedMidway = "watched from midway: "
)

// Observed step names and result.
const (
	stepCordon   = "cordon"
	stepDrain    = "drain"
	stepAction   = "action"
	stepReboot   = "reboot"
	stepUncordon = "uncordon"
	stepObserved = "Observed"
)

// observedNode is what the observer reads of one Node.
type observedNode struct {
	Name                                 string
	Current, Desired, State, Reason      string
	DesiredDrain, LastAppliedDrain, Post string
	Unschedulable                        bool
	BootID                               string
}

// observedNodeOf reads a Node.
func observedNodeOf(n *corev1.Node) observedNode {
	a := n.Annotations
	return observedNode{
		Name: n.Name, Current: a[ndpmcv1.CurrentConfigAnnotation], Desired: a[ndpmcv1.DesiredConfigAnnotation],
		State: a[ndpmcv1.StateAnnotation], Reason: a[ndpmcv1.ReasonAnnotation],
		DesiredDrain: a[DesiredDrainAnnotation], LastAppliedDrain: a[LastAppliedDrainAnnotation], Post: a[PostConfigActionAnnotation],
		Unschedulable: n.Spec.Unschedulable, BootID: n.Status.NodeInfo.BootID,
	}
}

// evidence is one fact seen about a node: its line, and the step it
// proves (none when it only informs).
type evidence struct {
	Line   string
	Step   string
	Action *v1alpha1.ForecastAction
	At     metav1.Time
}

// fold adds e to u: its line to the evidence (once), its step to the steps
// (once per step and action; a second proof is added to the step's
// detail). It reports whether u changed, so that the same evidence twice
// writes nothing.
func fold(u *v1alpha1.NodeUpdate, e evidence) bool {
	changed := false
	line := conditions.Truncate(e.Line, 1024)
	if !slices.Contains(u.Evidence, line) && len(u.Evidence) < v1alpha1.MaxUpdateEvidence {
		u.Evidence = append(u.Evidence, line)
		changed = true
	}
	if e.Step == "" {
		return changed
	}
	for i := range u.Steps {
		s := &u.Steps[i]
		if s.Name != e.Step || !sameAction(s.Action, e.Action) {
			continue
		}
		if !strings.Contains(s.Detail, line) {
			if d := s.Detail + "; " + line; len(d) <= 1024 {
				s.Detail = d
				changed = true
			}
		}
		// A step dates from its earliest proof: an Event re-listed after
		// a restart can predate what the Node showed then.
		if !e.At.IsZero() && (s.Started == nil || s.Started.IsZero() || e.At.Before(s.Started)) {
			moved := *s
			at := e.At
			moved.Started = &at
			u.Steps = insertStep(slices.Delete(u.Steps, i, i+1), moved)
			changed = true
		}
		return changed
	}
	if len(u.Steps) >= 120 {
		return changed
	}
	at := e.At
	step := v1alpha1.UpdateStep{Name: e.Step, Started: &at, Result: stepObserved, Detail: line}
	if e.Action != nil {
		a := *e.Action
		step.Action = &a
	}
	u.Steps = insertStep(u.Steps, step)
	return true
}

// insertStep puts an observed step where it happened among the others, not
// where it was seen (after a restart, the uncordon on the Node is seen
// before the reload its Event recorded earlier): before the first step
// that started later; a step of unknown time goes last.
func insertStep(steps []v1alpha1.UpdateStep, s v1alpha1.UpdateStep) []v1alpha1.UpdateStep {
	at := len(steps)
	if s.Started != nil && !s.Started.IsZero() {
		for i := range steps {
			if o := steps[i].Started; o != nil && !o.IsZero() && s.Started.Before(o) {
				at = i
				break
			}
		}
	}
	return slices.Insert(steps, at, s)
}

func sameAction(a, b *v1alpha1.ForecastAction) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

// nodeEvidence is what a Node says about the update u, now.
func nodeEvidence(u *v1alpha1.NodeUpdate, n observedNode, now metav1.Time) []evidence {
	var out []evidence
	add := func(step, line string) { out = append(out, evidence{Line: line, Step: step, At: now}) }
	if n.Unschedulable {
		add(stepCordon, "Node spec.unschedulable=true")
	}
	if n.DesiredDrain == "drain-"+u.To {
		add(stepDrain, "Node annotation desiredDrain=drain-"+u.To)
	}
	if n.LastAppliedDrain == "drain-"+u.To {
		add(stepDrain, "Node annotation lastAppliedDrain=drain-"+u.To)
	}
	if n.DesiredDrain == "uncordon-"+u.To {
		add(stepUncordon, "Node annotation desiredDrain=uncordon-"+u.To)
	}
	if n.Post == "Rebooting" {
		add(stepReboot, "Node annotation post-config-action=Rebooting")
	}
	if u.BootIDs.Before != "" && n.BootID != "" && n.BootID != u.BootIDs.Before {
		add(stepReboot, fmt.Sprintf("Node status.nodeInfo.bootID %s → %s", u.BootIDs.Before, n.BootID))
	}
	if n.State == ndpmcv1.StateDegraded || n.State == ndpmcv1.StateUnreconcilable {
		add("", fmt.Sprintf("Node annotation state=%s: %s", n.State, n.Reason))
	}
	return out
}

// reloaded and restarted read the service out of the daemon's messages:
// "Node has reloaded service crio.service", "… Service X was reloaded.".
var (
	mcnReloadedRE = regexp.MustCompile(`reloaded service (\S+?)\.?$`)
	reloadedRE    = regexp.MustCompile(`Service (\S+?) was reloaded`)
	restartedRE   = regexp.MustCompile(`Service (\S+?) was restarted`)
	rebootIntoR   = regexp.MustCompile(`reboot into config (\S+?)\.?$`)
)

// reloadAction is the action a reload of svc is: daemon-reload is how the
// daemon names systemd's.
func reloadAction(svc string) *v1alpha1.ForecastAction {
	if svc == "daemon-reload" {
		return &v1alpha1.ForecastAction{Type: "DaemonReload"}
	}
	return &v1alpha1.ForecastAction{Type: "Reload", Service: svc}
}

// mcnEvidence is what a MachineConfigNode's conditions say about u. Only a
// message that names u's rendered config ("Action during update to <to>: ")
// or an unprefixed one that is under way (not False) and changed since u
// began counts: a condition that did not run in this update keeps the
// message of an older one.
func mcnEvidence(u *v1alpha1.NodeUpdate, conds []metav1.Condition, prevFinished *metav1.Time) []evidence {
	var out []evidence
	for _, c := range conds {
		msg := c.Message
		if rest, ok := strings.CutPrefix(msg, mcnPrefix); ok {
			cfg, m, ok := strings.Cut(rest, ": ")
			if !ok || cfg != u.To {
				continue
			}
			msg = m
		} else if c.Status == metav1.ConditionFalse || !inWindow(u, c.LastTransitionTime, prevFinished) {
			if !(c.Type == string(mcfgv1.MachineConfigNodeUpdateDrained) && inWindow(u, c.LastTransitionTime, prevFinished)) {
				continue
			}
		}
		line := fmt.Sprintf("MachineConfigNode %s=%s: %s", c.Type, c.Status, c.Message)
		e := evidence{Line: line, At: c.LastTransitionTime}
		switch mcfgv1.StateProgress(c.Type) {
		case mcfgv1.MachineConfigNodeUpdateCordoned:
			if strings.HasPrefix(msg, "Cordoned") {
				e.Step = stepCordon
			}
		case mcfgv1.MachineConfigNodeUpdateDrained:
			if strings.HasPrefix(msg, "Drain") && !strings.Contains(msg, "Not required") {
				e.Step = stepDrain
			}
		case mcfgv1.MachineConfigNodeUpdateRebooted:
			if strings.Contains(msg, "reboot") {
				e.Step = stepReboot
			}
		case mcfgv1.MachineConfigNodeUpdateUncordoned:
			if strings.HasPrefix(msg, "UnCordoned") || strings.HasPrefix(msg, "Uncordoned") {
				e.Step = stepUncordon
			}
		case mcfgv1.MachineConfigNodeUpdatePostActionComplete:
			switch {
			case c.Reason == "None" || strings.Contains(msg, "do not require a reboot"):
				e.Step, e.Action = stepAction, &v1alpha1.ForecastAction{Type: "None"}
			case strings.Contains(msg, "reloaded service"):
				if m := mcnReloadedRE.FindStringSubmatch(msg); m != nil {
					e.Step, e.Action = stepAction, reloadAction(m[1])
				}
			}
		case mcfgv1.MachineConfigNodeUpdatePrepared, mcfgv1.MachineConfigNodeNodeDegraded:
			// The daemon's own drain decision, or why it failed: informs.
		default:
			continue
		}
		out = append(out, e)
	}
	return out
}

// eventTime is when an Event last happened.
func eventTime(ev *corev1.Event) metav1.Time {
	switch {
	case !ev.EventTime.IsZero():
		return metav1.NewTime(ev.EventTime.Time)
	case !ev.LastTimestamp.IsZero():
		return ev.LastTimestamp
	case !ev.FirstTimestamp.IsZero():
		return ev.FirstTimestamp
	}
	return ev.CreationTimestamp
}

// inWindow tells whether something that happened at t can belong to u:
// not before u began (less observeSlack), not at or before the node's
// previous update finished, not after u finished (the second it finished
// included: Event times have seconds).
func inWindow(u *v1alpha1.NodeUpdate, t metav1.Time, prevFinished *metav1.Time) bool {
	if t.IsZero() {
		return false
	}
	if t.Time.Before(u.Started.Add(-observeSlack)) {
		return false
	}
	if prevFinished != nil && !t.Time.After(prevFinished.Time) {
		return false
	}
	if u.Finished != nil && t.Time.After(u.Finished.Add(time.Second)) {
		return false
	}
	return true
}

// eventEvidence is what one Event says about u: the MCO daemon's Events
// about the node (namespace openshift-machine-config-operator) and the
// kubelet's Rebooted (namespace default), within u's window.
func eventEvidence(u *v1alpha1.NodeUpdate, node string, ev *corev1.Event, prevFinished *metav1.Time) []evidence {
	if ev.InvolvedObject.Kind != "Node" || ev.InvolvedObject.Name != node {
		return nil
	}
	at := eventTime(ev)
	if !inWindow(u, at, prevFinished) {
		return nil
	}
	component := ev.Source.Component
	if component == "" {
		component = ev.ReportingController
	}
	line := fmt.Sprintf("Event %s/%s %s (%s): %s", ev.Namespace, ev.Type, ev.Reason, component, ev.Message)
	e := evidence{Line: line, At: at}
	switch ev.Namespace {
	case KubeletEventNamespace:
		if ev.Reason != "Rebooted" {
			return nil
		}
		e.Step = stepReboot
		return []evidence{e}
	case MCDEventNamespace:
	default:
		return nil
	}
	if component != MCDEventComponent {
		return nil
	}
	switch ev.Reason {
	case "Cordon":
		e.Step = stepCordon
	case "Drain":
		if !strings.Contains(ev.Message, "not required") {
			e.Step = stepDrain
		}
	case "Reboot":
		if m := rebootIntoR.FindStringSubmatch(ev.Message); m != nil && m[1] != u.To {
			return nil // a reboot into another config: not this update's
		}
		e.Step = stepReboot
	case "SkipReboot":
		e.Step, e.Action = stepAction, &v1alpha1.ForecastAction{Type: "None"}
	case "ServiceReload":
		if m := reloadedRE.FindStringSubmatch(ev.Message); m != nil {
			e.Step, e.Action = stepAction, reloadAction(m[1])
		}
	case "ServiceRestart":
		if m := restartedRE.FindStringSubmatch(ev.Message); m != nil {
			e.Step, e.Action = stepAction, &v1alpha1.ForecastAction{Type: "Restart", Service: m[1]}
		}
	case "Uncordon":
		e.Step = stepUncordon
	case "NodeDone", "FailedServiceReload", "FailedServiceRestart", "FailedToDrain", "FailedToUncordon", "FailedToReconcile", "OSUpdateStarted", "OSUpgradeApplied":
	default:
		return nil
	}
	return []evidence{e}
}

// observedAction is how an action shows when it runs: the MCO's Special
// (its registries.conf action) is a reload of CRI-O.
func observedAction(a v1alpha1.ForecastAction) v1alpha1.ForecastAction {
	if a.Type == "Special" {
		return v1alpha1.ForecastAction{Type: "Reload", Service: "crio.service"}
	}
	if a.Type != "Reload" && a.Type != "Restart" {
		a.Service = ""
	}
	return a
}

// actionWhat names an action in a check: "reload crio.service", "restart
// chronyd.service", "daemon-reload", "none".
func actionWhat(a v1alpha1.ForecastAction) string {
	switch a.Type {
	case "Reload", "Restart":
		return strings.ToLower(a.Type) + " " + a.Service
	case "DaemonReload":
		return "daemon-reload"
	}
	return strings.ToLower(a.Type)
}

// stepsNamed are u's steps of that name (and action, for action steps).
func stepsNamed(u *v1alpha1.NodeUpdate, name string, action *v1alpha1.ForecastAction) []v1alpha1.UpdateStep {
	var out []v1alpha1.UpdateStep
	for _, s := range u.Steps {
		if s.Name == name && (action == nil || sameAction(s.Action, action)) {
			out = append(out, s)
		}
	}
	return out
}

func stepEvidence(steps ...v1alpha1.UpdateStep) []string {
	var out []string
	for _, s := range steps {
		for _, l := range strings.Split(s.Detail, "; ") {
			if l != "" && !slices.Contains(out, l) && len(out) < 10 {
				out = append(out, conditions.Truncate(l, 1024))
			}
		}
	}
	return out
}

// watchedFromStart: the update was seen before the daemon began, so an
// absence of drain evidence means there was no drain.
func watchedFromStart(u *v1alpha1.NodeUpdate) bool {
	return len(u.Evidence) > 0 && strings.HasPrefix(u.Evidence[0], observedFromStart)
}

func check(what string, foretold bool, observed v1alpha1.Observation, ev []string) v1alpha1.UpdateCheck {
	c := v1alpha1.UpdateCheck{What: what, Foretold: foretold, Observed: observed, Evidence: ev}
	switch {
	case observed == v1alpha1.ObservedUnknown:
		c.Result = v1alpha1.CheckNotObservable
	case (observed == v1alpha1.ObservedYes) == foretold:
		c.Result = v1alpha1.CheckAgreed
	default:
		c.Result = v1alpha1.CheckMismatch
	}
	return c
}

// judge compares what was foretold (u.Plan, from the forecast's MCO
// decision) with what was observed of the finished update u, check by
// check, and gives the verdict (docs/design.md#observing-the-mco):
//   - drain: yes on any cordon or drain evidence; no when none and the
//     update was watched from its start; else unknown;
//   - reboot: yes when the boot ID changed or the daemon or kubelet said
//     so; no when the boot ID is known and unchanged; else unknown;
//   - each foretold action: yes on its evidence (MachineConfigNode or
//     Event); else unknown — a restart leaves only an Event, a reload's
//     MachineConfigNode message keeps the last one — never "no";
//   - each action observed but not foretold: a mismatch;
//   - refused: foretold refusal against the node going Unreconcilable.
//
// Any mismatch: Mismatch; else any unknown: PartlyObserved; else Agreed.
func judge(u *v1alpha1.NodeUpdate) ([]v1alpha1.UpdateCheck, v1alpha1.Verdict) {
	p := u.Plan
	if p == nil {
		return []v1alpha1.UpdateCheck{{What: "forecast", Observed: v1alpha1.ObservedUnknown, Result: v1alpha1.CheckNotObservable,
			Evidence: []string{"no UpdateForecast " + u.Forecast + " was found while the update ran: nothing to compare with"}}}, v1alpha1.VerdictPartlyObserved
	}
	var checks []v1alpha1.UpdateCheck
	refused := p.Summary == "Refused"
	if refused || u.Result == v1alpha1.UpdateUnreconcilable {
		obs := v1alpha1.ObservedNo
		if u.Result == v1alpha1.UpdateUnreconcilable {
			obs = v1alpha1.ObservedYes
		}
		checks = append(checks, check("refused", refused, obs, stepEvidence(v1alpha1.UpdateStep{Detail: strings.Join(filter(u.Evidence, "state=Unreconcilable"), "; ")})))
	}
	if u.Result == v1alpha1.UpdateDone {
		// Drain.
		drained := append(stepsNamed(u, stepCordon, nil), stepsNamed(u, stepDrain, nil)...)
		obs := v1alpha1.ObservedUnknown
		var ev []string
		switch {
		case len(drained) > 0:
			obs, ev = v1alpha1.ObservedYes, stepEvidence(drained...)
		case watchedFromStart(u) || len(noDrain(u)) > 0:
			obs, ev = v1alpha1.ObservedNo, []string{"no cordon or drain seen while the update ran"}
			if watchedFromStart(u) {
				ev[0] += " (watched from its start)"
			}
			ev = append(ev, noDrain(u)...)
		default:
			ev = []string{"the update was first seen midway and no cordon or drain evidence remained"}
		}
		checks = append(checks, check("drain", p.Drain, obs, ev))

		// Reboot.
		rebooted := stepsNamed(u, stepReboot, nil)
		obs, ev = v1alpha1.ObservedUnknown, nil
		switch {
		case len(rebooted) > 0:
			obs, ev = v1alpha1.ObservedYes, stepEvidence(rebooted...)
		case u.BootIDs.Before != "" && u.BootIDs.Before == u.BootIDs.After:
			obs, ev = v1alpha1.ObservedNo, []string{"boot id unchanged: " + u.BootIDs.Before}
		default:
			ev = []string{"the node's boot id was not known before and after"}
		}
		checks = append(checks, check("reboot", p.Reboot, obs, ev))

		// Actions.
		foretold := map[v1alpha1.ForecastAction]bool{}
		if !p.Reboot {
			for _, a := range p.Actions {
				if a.Type == "Reboot" || a.Type == "Drain" {
					continue
				}
				o := observedAction(a)
				if foretold[o] {
					continue
				}
				foretold[o] = true
				seen := stepsNamed(u, stepAction, &o)
				obs, ev := v1alpha1.ObservedUnknown, []string(nil)
				if len(seen) > 0 {
					obs, ev = v1alpha1.ObservedYes, stepEvidence(seen...)
				} else if o.Type == "Restart" {
					ev = []string{"the MCO records a restart only in a ServiceRestart Event, and none was seen"}
				} else {
					ev = []string{"no MachineConfigNode condition or Event of this update names it"}
				}
				checks = append(checks, check(actionWhat(o), true, obs, ev))
			}
		}
		var extra []v1alpha1.ForecastAction
		for _, s := range stepsNamed(u, stepAction, nil) {
			if s.Action != nil && !foretold[*s.Action] && !slices.Contains(extra, *s.Action) {
				extra = append(extra, *s.Action)
			}
		}
		sort.Slice(extra, func(i, j int) bool { return actionWhat(extra[i]) < actionWhat(extra[j]) })
		for _, a := range extra {
			checks = append(checks, check(actionWhat(a), false, v1alpha1.ObservedYes, stepEvidence(stepsNamed(u, stepAction, &a)...)))
		}
	}
	if len(checks) > 110 {
		checks = checks[:110]
	}
	verdict := v1alpha1.VerdictAgreed
	for _, c := range checks {
		switch c.Result {
		case v1alpha1.CheckMismatch:
			return checks, v1alpha1.VerdictMismatch
		case v1alpha1.CheckNotObservable:
			verdict = v1alpha1.VerdictPartlyObserved
		}
	}
	return checks, verdict
}

// noDrain are the daemon's own words that it did not drain: its
// MachineConfigNode's "Drain Required: false" and "Node Drain Not
// required", its Drain Event "Drain not required".
func noDrain(u *v1alpha1.NodeUpdate) []string {
	var out []string
	for _, l := range u.Evidence {
		if strings.Contains(l, "Drain Required: false") || strings.Contains(l, "Drain Not required") || strings.Contains(l, "Drain not required") {
			out = append(out, l)
		}
	}
	return out[:min(len(out), 9)]
}

func filter(lines []string, sub string) []string {
	var out []string
	for _, l := range lines {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return out
}

// mismatchText says what a mismatched check of u is: "reboot: foretold no,
// observed yes (Node status.nodeInfo.bootID a1 → b2)", and, when what was
// foretold came from ndp's entries in the MCO's policy list, which:
// "…: foretold by ndp's entry file /etc/chrony.conf in MachineConfiguration
// cluster" (the evidence is cut first, never the entry).
func mismatchText(u *v1alpha1.NodeUpdate, c v1alpha1.UpdateCheck) string {
	yn := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	s := fmt.Sprintf("%s: foretold %s, observed %s", c.What, yn(c.Foretold), strings.ToLower(string(c.Observed)))
	if len(c.Evidence) > 0 {
		s += " (" + strings.Join(c.Evidence, "; ") + ")"
	}
	suffix := ""
	if es := entriesBehind(u, c); len(es) == 1 {
		suffix = ": foretold by ndp's entry " + es[0] + " in MachineConfiguration cluster"
	} else if len(es) > 1 {
		suffix = ": foretold by ndp's entries " + strings.Join(es, ", ") + " in MachineConfiguration cluster"
	}
	if len(suffix) > 512 {
		suffix = conditions.Truncate(suffix, 512)
	}
	return conditions.Truncate(s, 1024-len(suffix)) + suffix
}

// mcoRuleSubject is the entry of the MCO's policy list a forecast's rule
// names: "file policy /etc/chrony.conf" → "file:/etc/chrony.conf", "unit
// policy x.service" → "unit:x.service", "ssh key policy" → "sshkey"; ""
// for its other rules (no policy, a fixed rule).
func mcoRuleSubject(rule string) string {
	switch {
	case rule == "ssh key policy":
		return "sshkey"
	case strings.HasPrefix(rule, "file policy "):
		return "file:" + strings.TrimPrefix(rule, "file policy ")
	case strings.HasPrefix(rule, "unit policy "):
		return "unit:" + strings.TrimPrefix(rule, "unit policy ")
	}
	return ""
}

// entryWords is "file /etc/chrony.conf" for "file:/etc/chrony.conf".
func entryWords(subject string) string {
	k, v, ok := strings.Cut(subject, ":")
	if !ok {
		return subject
	}
	return k + " " + v
}

// entriesUsed lists, in the rules' order, the entries of the MCO's policy
// list the rules were decided by that are ndp's (mine: the subjects ndp's
// field manager owns), as "file /etc/chrony.conf"; at most MaxItems.
func entriesUsed(rules []v1alpha1.MCORule, mine map[string]bool) []string {
	var out []string
	for _, r := range rules {
		s := mcoRuleSubject(r.Rule)
		if s == "" || !mine[s] {
			continue
		}
		if w := entryWords(s); !slices.Contains(out, w) && len(out) < 50 {
			out = append(out, w)
		}
	}
	return out
}

// entriesBehind names ndp's entries a mismatched check rests on: for a
// step foretold and not seen, the entries whose actions foretold it; for
// one seen and not foretold, every entry of ndp's the MCO was foretold to
// use (each said the step was not needed).
func entriesBehind(u *v1alpha1.NodeUpdate, c v1alpha1.UpdateCheck) []string {
	if len(u.MCOEntries) == 0 || c.What == "refused" {
		return nil
	}
	if !c.Foretold {
		return u.MCOEntries
	}
	var out []string
	for _, ch := range u.Changes {
		w := entryWords(mcoRuleSubject(ch.DecidedBy))
		if !slices.Contains(u.MCOEntries, w) || slices.Contains(out, w) {
			continue
		}
		if slices.ContainsFunc(ch.Actions, func(a v1alpha1.ForecastAction) bool { return foretells(a, c.What) }) {
			out = append(out, w)
		}
	}
	return out
}

// foretells says whether action a foretells the step a check names.
func foretells(a v1alpha1.ForecastAction, what string) bool {
	switch what {
	case "drain":
		return a.Type == "Drain" || a.Type == "Reboot"
	case "reboot":
		return a.Type == "Reboot"
	}
	return actionWhat(observedAction(a)) == what
}

// observeInput is what one node's observation is computed from.
type observeInput struct {
	Node observedNode
	// Pool is the node's pool (nodepool.Primary), "" when none.
	Pool string
	// History is the node's NodeHistory updates, newest first.
	History []v1alpha1.NodeUpdate
	// MCN is its MachineConfigNode's conditions (nil without one).
	MCN []metav1.Condition
	// Events are the Events about the node, in the MCO daemon's and the
	// kubelet's namespaces.
	Events []corev1.Event
	// Forecast is the forecast named name, nil when there is none.
	Forecast func(name string) *v1alpha1.UpdateForecast
	// Sources is the source MachineConfig of each change id
	// ("file:/etc/x") of a rendered config ndp predicted, nil when it is
	// not known.
	Sources func(rendered string) map[string]string
	// Entries reads which entries of MachineConfiguration cluster's
	// spec.nodeDisruptionPolicy are ndp's now: the subjects its field
	// manager owns ("file:/etc/chrony.conf", "unit:x.service", "sshkey",
	// mcoentries.OwnershipOf), none without a MachineConfiguration. It is
	// called when an update's forecast is read (once per update), nil: not
	// known.
	Entries func() (map[string]bool, error)
	Now     metav1.Time
}

// observeResult is what the observer writes.
type observeResult struct {
	// Updates are the node's updates after this observation.
	Updates []v1alpha1.NodeUpdate
	// Changed: Updates differ from the input's History.
	Changed bool
	// Closed is the update given its verdict now, if any.
	Closed *v1alpha1.NodeUpdate
	// Requeue: observe again after this long (an update settling).
	Requeue time.Duration
}

// isOpen tells whether u is an advisor's update without its verdict.
func isOpen(u *v1alpha1.NodeUpdate) bool {
	return u.Executor == v1alpha1.ExecutorMCO && (u.Result == v1alpha1.UpdateInProgress ||
		(u.Result == v1alpha1.UpdateDone && (u.Verdict == "" || u.Verdict == v1alpha1.VerdictPending)))
}

// observe folds what is seen of one node now into its history
// (docs/design.md#observing-the-mco): when the MCO sends the node
// (desiredConfig ≠ currentConfig) an update opens with the forecast's
// plan; every observation is folded into it as it is made; when the node
// runs the target in state Done, the update finishes, and after
// observeSettle it is judged. An update whose node is sent elsewhere first
// is Abandoned; one the daemon refuses (state Unreconcilable) is judged at
// once. Pure: the same input twice changes nothing the second time.
func observe(in observeInput) observeResult {
	ups := make([]v1alpha1.NodeUpdate, len(in.History))
	for i := range in.History {
		in.History[i].DeepCopyInto(&ups[i])
	}
	res := observeResult{Updates: ups}
	n := in.Node
	if n.Current == "" {
		return res // not booted into a config yet
	}
	sent := n.Desired != "" && n.Desired != n.Current
	now := in.Now

	var u *v1alpha1.NodeUpdate
	if len(ups) > 0 && isOpen(&ups[0]) {
		u = &ups[0]
		elsewhere := (sent && u.To != n.Desired) || (!sent && u.To != n.Current)
		if elsewhere {
			if u.Result == v1alpha1.UpdateDone {
				// Sent on before it settled: judge it now.
				u.Checks, u.Verdict = judge(u)
				res.Closed = u
			} else {
				u.Result, u.Finished, u.Verdict = v1alpha1.UpdateAbandoned, &now, ""
				u.Message = fmt.Sprintf("the node was sent to %s before it reached %s", n.Desired, u.To)
				if !sent {
					u.Message = fmt.Sprintf("the node runs %s and is no longer sent to %s", n.Current, u.To)
				}
			}
			res.Changed = true
			u = nil
		}
	}
	if u == nil && sent {
		if len(ups) > 0 && ups[0].Executor == v1alpha1.ExecutorMCO && ups[0].From == n.Current && ups[0].To == n.Desired && ups[0].Result == v1alpha1.UpdateUnreconcilable {
			return res // refused, and judged
		}
		ups = append([]v1alpha1.NodeUpdate{openUpdate(in)}, ups...)
		if len(ups) > v1alpha1.NodeHistoryUpdates {
			ups = ups[:v1alpha1.NodeHistoryUpdates]
		}
		res.Updates, res.Changed = ups, true
		u = &ups[0]
	}
	if u == nil {
		return res
	}
	if u.Plan == nil && in.Forecast != nil {
		if f := in.Forecast(u.Forecast); f != nil && f.Status.MCO != nil {
			fillFromForecast(u, f, in.Sources)
			if in.Entries != nil {
				mine, err := in.Entries()
				if err != nil {
					fold(u, evidence{Line: "which of ndp's entries in MachineConfiguration cluster the MCO was foretold to use is not known: " + err.Error()})
				}
				u.MCOEntries = entriesUsed(f.Status.MCO.Rules, mine)
			}
			res.Changed = true
		}
	}
	var prevFinished *metav1.Time
	if len(ups) > 1 {
		prevFinished = ups[1].Finished
	}
	var evs []evidence
	if u.Finished == nil {
		evs = nodeEvidence(u, n, now)
	}
	evs = append(evs, mcnEvidence(u, in.MCN, prevFinished)...)
	for i := range in.Events {
		evs = append(evs, eventEvidence(u, n.Name, &in.Events[i], prevFinished)...)
	}
	for _, e := range evs {
		if fold(u, e) {
			res.Changed = true
		}
	}

	switch {
	case sent && n.State == ndpmcv1.StateUnreconcilable && u.Result == v1alpha1.UpdateInProgress:
		u.Result, u.Finished, u.Message = v1alpha1.UpdateUnreconcilable, &now, conditions.Truncate(n.Reason, 4096)
		u.BootIDs.After = n.BootID
		u.Checks, u.Verdict = judge(u)
		res.Changed, res.Closed = true, u
	case !sent && n.Current == u.To && (n.State == ndpmcv1.StateDone || n.State == ""):
		if u.Finished == nil {
			u.Result, u.Finished = v1alpha1.UpdateDone, &now
			u.BootIDs.After = n.BootID
			res.Changed, res.Requeue = true, observeSettle
			break
		}
		if wait := u.Finished.Add(observeSettle).Sub(now.Time); wait > 0 {
			res.Requeue = wait
			break
		}
		u.Checks, u.Verdict = judge(u)
		res.Changed, res.Closed = true, u
	}
	return res
}

// openUpdate is the update the MCO just sent the node on.
func openUpdate(in observeInput) v1alpha1.NodeUpdate {
	n := in.Node
	u := v1alpha1.NodeUpdate{
		From: n.Current, To: n.Desired, Pool: in.Pool, Executor: v1alpha1.ExecutorMCO,
		Started: in.Now, Result: v1alpha1.UpdateInProgress, Verdict: v1alpha1.VerdictPending,
		BootIDs: v1alpha1.BootIDs{Before: n.BootID}, Forecast: ForecastName(in.Pool, n.Current, n.Desired),
	}
	state := n.State
	if state == "" {
		state = "(none)"
	}
	if (n.State == ndpmcv1.StateDone || n.State == "") && !n.Unschedulable && !strings.HasPrefix(n.DesiredDrain, "drain-") {
		u.Evidence = []string{fmt.Sprintf("%sdesiredConfig %s seen with the node in state %s, schedulable", observedFromStart, n.Desired, state)}
	} else {
		u.Evidence = []string{fmt.Sprintf("%sdesiredConfig %s first seen with the node in state %s, desiredDrain %q, unschedulable %t", observedMidway, n.Desired, state, n.DesiredDrain, n.Unschedulable)}
	}
	return u
}

// fillFromForecast copies what was foretold into u: the MCO's decision as
// the plan, its rules as the changes, each with the MachineConfig it came
// from when ndp's prediction of the target knows it.
func fillFromForecast(u *v1alpha1.NodeUpdate, f *v1alpha1.UpdateForecast, sources func(string) map[string]string) {
	m := f.Status.MCO
	u.Plan = &v1alpha1.UpdatePlan{Source: "UpdateForecast " + f.Name, Summary: m.Summary,
		Actions: m.Actions[:min(len(m.Actions), 100)], Drain: m.Drain, Reboot: m.Reboot}
	var src map[string]string
	if sources != nil {
		src = sources(u.To)
	}
	u.Changes, u.ChangesOmitted = nil, 0
	for i, r := range m.Rules {
		if i >= v1alpha1.MaxUpdateChanges {
			u.ChangesOmitted = int32(len(m.Rules) - i)
			break
		}
		c := v1alpha1.UpdateChange{Change: r.Change, DecidedBy: r.Rule, Actions: r.Actions[:min(len(r.Actions), 10)], Detail: r.Detail}
		if kind, name, ok := strings.Cut(r.Change, " "); ok && (kind == "file" || kind == "unit") {
			if mc := src[kind+":"+name]; mc != "" {
				c.MachineConfigs = []string{mc}
			}
		}
		u.Changes = append(u.Changes, c)
	}
}

// forecastObservations tallies, per forecast, the verdicts of the nodes'
// updates checked against it, from their NodeHistories: each node's newest
// update against the forecast (an abandoned one is not counted).
func forecastObservations(hs []v1alpha1.NodeHistory) map[string]*v1alpha1.ForecastObserved {
	out := map[string]*v1alpha1.ForecastObserved{}
	for _, h := range hs {
		seen := map[string]bool{}
		for i := range h.Status.Updates {
			u := &h.Status.Updates[i]
			if u.Executor != v1alpha1.ExecutorMCO || u.Forecast == "" || u.Result == v1alpha1.UpdateAbandoned || seen[u.Forecast] {
				continue
			}
			seen[u.Forecast] = true
			o := out[u.Forecast]
			if o == nil {
				o = &v1alpha1.ForecastObserved{}
				out[u.Forecast] = o
			}
			nv := v1alpha1.NodeVerdict{Node: h.Name, Verdict: u.Verdict}
			switch u.Verdict {
			case v1alpha1.VerdictAgreed:
				o.Agreed++
			case v1alpha1.VerdictMismatch:
				o.Mismatched++
				for _, c := range u.Checks {
					if c.Result == v1alpha1.CheckMismatch && len(nv.Mismatches) < 10 {
						nv.Mismatches = append(nv.Mismatches, mismatchText(u, c))
					}
				}
			case v1alpha1.VerdictPartlyObserved:
				o.PartlyObserved++
			default:
				o.InProgress++
				nv.Verdict = v1alpha1.VerdictPending
			}
			o.Nodes = append(o.Nodes, nv)
		}
	}
	for _, o := range out {
		sort.Slice(o.Nodes, func(i, j int) bool { return o.Nodes[i].Node < o.Nodes[j].Node })
		o.Nodes = o.Nodes[:min(len(o.Nodes), maxForecastNodes)]
	}
	return out
}

// setObserved writes what was observed against a forecast into its status,
// with the Agreed condition: False (Mismatch) when a node did other than
// foretold, True once nodes finished and none did, Unknown while the only
// ones are under way; absent before any node was observed.
func setObserved(st *v1alpha1.UpdateForecastStatus, o *v1alpha1.ForecastObserved) {
	st.Observed = o
	if o == nil {
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.ForecastConditionAgreed)
		return
	}
	switch {
	case o.Mismatched > 0:
		var parts []string
		for _, n := range o.Nodes {
			if n.Verdict == v1alpha1.VerdictMismatch && len(parts) < 5 {
				parts = append(parts, n.Node+": "+strings.Join(n.Mismatches, "; "))
			}
		}
		setForecastCondition(st, v1alpha1.ForecastConditionAgreed, false, "Mismatch",
			fmt.Sprintf("%d node(s) did other than foretold: %s", o.Mismatched, strings.Join(parts, "; ")))
	case o.Agreed+o.PartlyObserved > 0:
		msg := fmt.Sprintf("%d node(s) did what was foretold", o.Agreed)
		if o.PartlyObserved > 0 {
			msg += fmt.Sprintf("; %d partly observed (a foretold step left no record), none contradicting it", o.PartlyObserved)
		}
		setForecastCondition(st, v1alpha1.ForecastConditionAgreed, true, "Agreed", msg)
	default:
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.ForecastConditionAgreed, Status: metav1.ConditionUnknown,
			Reason: "InProgress", Message: fmt.Sprintf("%d node(s) updating, none finished", o.InProgress)})
	}
}
