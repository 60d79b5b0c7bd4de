package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
)

// WhyReport is what `ndp why -o json|yaml` prints: the node and its
// updates as its NodeHistory stores them, newest first (only the one asked
// for with --update). Its field names are a stable interface.
type WhyReport struct {
	Node string `json:"node"`
	// NodeState is the Node's config annotations, read from a cluster;
	// absent when read from a file or when the Node is gone.
	NodeState *WhyNodeState         `json:"nodeState,omitempty"`
	Updates   []v1alpha1.NodeUpdate `json:"updates"`
}

// WhyNodeState is the node as its annotations say it is now.
type WhyNodeState struct {
	Current string `json:"current"`
	Desired string `json:"desired"`
	State   string `json:"state"`
	Reason  string `json:"reason,omitempty"`
	// Updating: the node is sent to a config it does not run yet.
	Updating bool `json:"updating"`
}

// Modes the node's updates are recorded in, as far as ndp why can tell.
const (
	whyModeUnknown  = ""
	whyModeExecutor = "executor"
	whyModeAdvisor  = "advisor"
)

// whyView is what the text is rendered from.
type whyView struct {
	Node string
	// State of the Node (from a cluster); nil from a file or when the
	// Node was not found (NodeGone).
	State    *WhyNodeState
	NodeGone bool
	// History is the node's NodeHistory; nil when it has none.
	History *v1alpha1.NodeHistory
	// Mode says who would have recorded updates, for the text when there
	// is no history.
	Mode string
	// Update is the one update asked for (1 = newest); 0 for all.
	Update int
	// Evidence: list every evidence line (--evidence); else each check
	// shows its first proofs and the evidence is counted.
	Evidence bool
}

// checkProofs is how many proofs a check shows without --evidence.
const checkProofs = 2

// whyKept says what is kept and for how long.
var whyKept = fmt.Sprintf("ndp keeps the last %d updates of each node; the history is deleted with the node", v1alpha1.NodeHistoryUpdates)

// selectUpdates picks the updates to show: all, or the nth (1 = newest).
func selectUpdates(node string, h *v1alpha1.NodeHistory, n int) ([]v1alpha1.NodeUpdate, error) {
	var all []v1alpha1.NodeUpdate
	if h != nil {
		all = h.Status.Updates
	}
	if n == 0 {
		return all, nil
	}
	if n < 0 || n > len(all) {
		switch len(all) {
		case 0:
			return nil, fmt.Errorf("--update %d: node %s has no update recorded", n, node)
		case 1:
			return nil, fmt.Errorf("--update %d: node %s has 1 update recorded; --update must be 1", n, node)
		}
		return nil, fmt.Errorf("--update %d: node %s has %d updates recorded; --update must be 1 (the newest) to %d", n, node, len(all), len(all))
	}
	return all[n-1 : n], nil
}

// noHistoryText says why a node has no recorded update.
func noHistoryText(node, mode string) string {
	switch mode {
	case whyModeAdvisor:
		return fmt.Sprintf("No update of node %s is recorded: ndp has not seen an update of this node yet. Beside the Machine Config Operator, ndp records only the updates its advisor observed (none before ndp was installed).\n", node)
	case whyModeExecutor:
		return fmt.Sprintf("No update of node %s is recorded: ndp has not seen an update of this node yet (ndp-daemon records each update it runs).\n", node)
	}
	return fmt.Sprintf("No update of node %s is recorded: ndp has not seen an update of this node yet (ndp-daemon records each update it runs; beside the Machine Config Operator, ndp records only the updates its advisor observed).\n", node)
}

// writeWhyText prints the node's state and its updates for a person.
func writeWhyText(w io.Writer, v whyView) error {
	var b strings.Builder
	switch {
	case v.State != nil:
		b.WriteString(nodeStateLine(v.Node, v.State))
	case v.NodeGone:
		fmt.Fprintf(&b, "Node %s: not found (deleted); its history follows until it is deleted too.\n", v.Node)
	}
	updates, err := selectUpdates(v.Node, v.History, v.Update)
	if err != nil {
		return err
	}
	total := 0
	if v.History != nil {
		total = len(v.History.Status.Updates)
	}
	if total == 0 {
		b.WriteString(noHistoryText(v.Node, v.Mode))
		b.WriteString(whyKept + ".\n")
		_, err := io.WriteString(w, b.String())
		return err
	}
	switch {
	case v.Update > 0:
		fmt.Fprintf(&b, "Node %s: update %d of the %d recorded (%s).\n", v.Node, v.Update, total, whyKept)
	case total == 1:
		fmt.Fprintf(&b, "Node %s: 1 update recorded (%s).\n", v.Node, whyKept)
	default:
		fmt.Fprintf(&b, "Node %s: %d updates recorded, newest first (%s).\n", v.Node, total, whyKept)
	}
	first := 1
	if v.Update > 0 {
		first = v.Update
	}
	for i := range updates {
		b.WriteString("\n")
		writeUpdateText(&b, first+i, total, &updates[i], v.Evidence)
	}
	_, err = io.WriteString(w, b.String())
	return err
}

func nodeStateLine(node string, s *WhyNodeState) string {
	state := dash(s.State)
	if s.Reason != "" {
		state += " (" + s.Reason + ")"
	}
	if s.Updating {
		return fmt.Sprintf("Node %s now: runs %s, sent to %s, state %s: an update is in progress.\n", node, dash(s.Current), s.Desired, state)
	}
	return fmt.Sprintf("Node %s now: runs %s, state %s; no update in progress.\n", node, dash(s.Current), state)
}

// writeUpdateText prints one update: a short header, then what changed,
// what was planned or foretold, what ran or was observed, the boot IDs and,
// beside the MCO, the verdict.
func writeUpdateText(b *strings.Builder, n, total int, u *v1alpha1.NodeUpdate, all bool) {
	newest := ""
	if n == 1 {
		newest = " (newest)"
	}
	fmt.Fprintf(b, "Update %d of %d%s: %s -> %s\n", n, total, newest, dash(u.From), dash(u.To))
	mco := u.Executor == v1alpha1.ExecutorMCO
	runBy := "ndp-daemon"
	switch {
	case mco:
		runBy = "the MCO's machine-config-daemon, observed by ndp's advisor"
	case u.Executor != "" && u.Executor != v1alpha1.ExecutorNDP:
		runBy = u.Executor
	}
	fmt.Fprintf(b, "  Pool:     %s\n", dash(u.Pool))
	fmt.Fprintf(b, "  Run by:   %s\n", runBy)
	fmt.Fprintf(b, "  Started:  %s\n", whenText(u.Started))
	switch {
	case u.Finished != nil:
		fmt.Fprintf(b, "  Finished: %s (took %s)\n", whenText(*u.Finished), took(u.Started, *u.Finished))
	default:
		b.WriteString("  Finished: not yet\n")
	}
	result := string(u.Result)
	if result == "" {
		result = "unknown"
	}
	if u.Message != "" {
		result += ": " + u.Message
	}
	fmt.Fprintf(b, "  Result:   %s\n", result)
	if len(u.MCOEntries) > 0 {
		fmt.Fprintf(b, "  ndp's entries the MCO was foretold to use (MachineConfiguration cluster): %s\n", strings.Join(u.MCOEntries, ", "))
	}

	writeChanges(b, u)

	planned, ran := "Planned", "Ran"
	if mco {
		planned, ran = "Foretold", "Observed"
	}
	writeUpdatePlan(b, planned, u.Plan)
	writeSteps(b, ran, u)
	b.WriteString("Boot: " + bootText(u) + "\n")
	if mco || u.Verdict != "" || len(u.Checks) > 0 {
		writeVerdict(b, u, all)
	}
	switch {
	case len(u.Evidence) > 0 && all:
		b.WriteString("Evidence:\n")
		for _, e := range u.Evidence {
			b.WriteString("  " + e + "\n")
		}
	case len(u.Evidence) > 0:
		fmt.Fprintf(b, "Evidence: %d lines seen while it ran (--evidence lists them)\n", len(u.Evidence))
	}
}

func writeChanges(b *strings.Builder, u *v1alpha1.NodeUpdate) {
	if len(u.Changes) == 0 && u.ChangesOmitted == 0 {
		b.WriteString("Changed: nothing recorded\n")
		return
	}
	fmt.Fprintf(b, "Changed (%d):\n", len(u.Changes)+int(u.ChangesOmitted))
	for _, c := range u.Changes {
		line := "  " + c.Change
		if len(c.MachineConfigs) > 0 {
			line += " (MachineConfig " + strings.Join(c.MachineConfigs, ", ") + ")"
		}
		b.WriteString(line + "\n")
		by := decidedByText(c.DecidedBy)
		if len(c.Actions) > 0 {
			by += " -> " + strings.Join(forecastActions(c.Actions), ", ")
		}
		if c.Detail != "" {
			by += " (" + c.Detail + ")"
		}
		b.WriteString("    decided by: " + by + "\n")
	}
	if u.ChangesOmitted > 0 {
		fmt.Fprintf(b, "  ... and %d more not recorded (a record lists at most %d)\n", u.ChangesOmitted, v1alpha1.MaxUpdateChanges)
	}
}

// decidedByText says who decided a change: ndp's plan names no policy as
// "(none)".
func decidedByText(s string) string {
	switch s {
	case "", "(none)", "policy (none)":
		return "no policy"
	}
	return s
}

func writeUpdatePlan(b *strings.Builder, title string, p *v1alpha1.UpdatePlan) {
	if p == nil {
		b.WriteString(title + ": not recorded\n")
		return
	}
	b.WriteString(title + ": " + planText(p) + "\n")
	var from []string
	if p.Source != "" {
		from = append(from, "from "+p.Source)
	}
	if p.PolicyRevision != "" {
		from = append(from, "policy revision "+p.PolicyRevision)
	}
	if len(from) > 0 {
		b.WriteString("  " + strings.Join(from, "; ") + "\n")
	}
}

// planText is a plan on one line: "drain, Reboot"; "Restart crio.service
// (no drain, no reboot)".
func planText(p *v1alpha1.UpdatePlan) string {
	var parts []string
	if p.Drain {
		parts = append(parts, "drain")
	}
	rebootListed := false
	for _, a := range forecastActions(p.Actions) {
		rebootListed = rebootListed || a == "Reboot"
		parts = append(parts, a)
	}
	if p.Reboot && !rebootListed {
		parts = append(parts, "Reboot")
	}
	if len(parts) == 0 {
		if p.Summary != "" {
			return p.Summary
		}
		return "nothing"
	}
	text := strings.Join(parts, ", ")
	switch {
	case !p.Drain && !p.Reboot:
		text += " (no drain, no reboot)"
	case !p.Reboot:
		text += " (no reboot)"
	case !p.Drain:
		text += " (no drain)"
	}
	return text
}

func writeSteps(b *strings.Builder, title string, u *v1alpha1.NodeUpdate) {
	if len(u.Steps) == 0 {
		b.WriteString(title + ": nothing recorded\n")
		return
	}
	b.WriteString(title + ":\n")
	var rows strings.Builder
	tw := tabwriter.NewWriter(&rows, 0, 8, 2, ' ', 0)
	for _, s := range u.Steps {
		name := s.Name
		if s.Action != nil {
			name += " " + strings.Join(forecastActions([]v1alpha1.ForecastAction{*s.Action}), "")
		}
		at, dur := "--:--:--", ""
		if s.Started != nil {
			at = clockSince(u.Started, *s.Started)
			if s.Finished != nil {
				dur = "took " + took(*s.Started, *s.Finished)
			}
		} else if s.Finished != nil {
			at = clockSince(u.Started, *s.Finished)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", at, name, dash(s.Result), dur, stepDetail(s))
	}
	_ = tw.Flush() // writes to a strings.Builder
	// tabwriter pads the empty last cells; lines end where their text does.
	for _, l := range strings.SplitAfter(rows.String(), "\n") {
		if l != "" {
			b.WriteString(strings.TrimRight(l, " \n") + "\n")
		}
	}
}

// stepDetail is a step's detail on its line. An observed step's detail
// holds every proof of it, joined by "; ": the first is shown, the rest are
// counted (--evidence lists them all).
func stepDetail(s v1alpha1.UpdateStep) string {
	if s.Result != "Observed" {
		return s.Detail
	}
	proofs := strings.Split(s.Detail, "; ")
	if len(proofs) == 1 {
		return s.Detail
	}
	return fmt.Sprintf("%s (and %d more)", proofs[0], len(proofs)-1)
}

func bootText(u *v1alpha1.NodeUpdate) string {
	before, after := u.BootIDs.Before, u.BootIDs.After
	switch {
	case before == "" && after == "":
		return "not recorded"
	case after == "":
		return "before " + before + ", after not known yet"
	case before == "":
		return "before not known, after " + after
	case before == after:
		return before + " before and after (no reboot)"
	}
	return before + " -> " + after + " (rebooted)"
}

func writeVerdict(b *strings.Builder, u *v1alpha1.NodeUpdate, all bool) {
	verdict := string(u.Verdict)
	if verdict == "" {
		verdict = "not given"
	}
	if u.Forecast != "" {
		verdict += " (checked against UpdateForecast " + u.Forecast + ")"
	}
	b.WriteString("Verdict: " + verdict + "\n")
	for _, c := range u.Checks {
		foretold := "no"
		if c.Foretold {
			foretold = "yes"
		}
		observed := "unknown"
		switch c.Observed {
		case v1alpha1.ObservedYes:
			observed = "yes"
		case v1alpha1.ObservedNo:
			observed = "no"
		}
		fmt.Fprintf(b, "  %s: foretold %s, observed %s -> %s\n", c.What, foretold, observed, dash(string(c.Result)))
		for i, e := range c.Evidence {
			if i == checkProofs && !all {
				fmt.Fprintf(b, "    (and %d more)\n", len(c.Evidence)-checkProofs)
				break
			}
			b.WriteString("    " + e + "\n")
		}
	}
}

// Times are shown in UTC, so that output does not depend on where it is
// read; a step's time only as a clock time on the update's day.
const (
	whenLayout  = "2006-01-02 15:04:05 UTC"
	clockLayout = "15:04:05"
)

func whenText(t metav1.Time) string {
	if t.IsZero() {
		return "unknown"
	}
	return t.UTC().Format(whenLayout)
}

// clockSince is t as a clock time when it falls on start's day (UTC), in
// full otherwise.
func clockSince(start, t metav1.Time) string {
	if t.IsZero() {
		return "unknown"
	}
	s, u := start.UTC(), t.UTC()
	if !start.IsZero() && s.Year() == u.Year() && s.YearDay() == u.YearDay() {
		return u.Format(clockLayout)
	}
	return u.Format(whenLayout)
}

func took(from, to metav1.Time) string {
	if from.IsZero() || to.IsZero() {
		return "?"
	}
	d := to.Sub(from.Time)
	if d < 0 {
		return "?"
	}
	if d < time.Second {
		return "<1s"
	}
	return d.Round(time.Second).String()
}
