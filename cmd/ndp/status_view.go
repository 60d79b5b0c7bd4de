package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
)

// StatusReport is what `ndp status -o json|yaml` prints: the pools, each
// with its nodes. Its field names are a stable interface.
type StatusReport struct {
	Pools []PoolReport `json:"pools"`
	// MCOEntries is what ndp keeps in the MCO's own node disruption
	// policy, when it keeps anything (ndp-controller --mco-entries).
	MCOEntries *MCOEntriesReport `json:"mcoEntries,omitempty"`
}

// NoPool is the pseudo-pool of nodes that no MachineConfigPool manages:
// none selects them, they run Windows, or two custom pools select them
// (nodepool.Primary).
const NoPool = "(none)"

// PoolReport is one MachineConfigPool: its spec and status as written by
// ndp's controllers, and its nodes.
type PoolReport struct {
	Name string `json:"name"`
	// Target is spec.configuration.name, the rendered config the pool's
	// nodes are sent to.
	Target string `json:"target"`
	Paused bool   `json:"paused"`
	// MaxUnavailable is spec.maxUnavailable as written ("1", "20%"); 1
	// when unset.
	MaxUnavailable          string `json:"maxUnavailable"`
	MachineCount            int32  `json:"machineCount"`
	UpdatedMachineCount     int32  `json:"updatedMachineCount"`
	ReadyMachineCount       int32  `json:"readyMachineCount"`
	UnavailableMachineCount int32  `json:"unavailableMachineCount"`
	DegradedMachineCount    int32  `json:"degradedMachineCount"`
	// Conditions are status.conditions of the pool.
	Conditions []ConditionReport `json:"conditions"`
	Nodes      []NodeReport      `json:"nodes"`
	// Forecasts are the pool's UpdateForecasts (ndp's advisor beside the
	// MCO): the pending ones first, then the past ones, newest first.
	Forecasts []ForecastReport `json:"forecasts"`
	// Rollout is what holds the pool's starts: its RolloutPolicies, the
	// reasons of its RolloutHeld condition, its nodes held by annotation;
	// absent when there is none of these.
	Rollout *RolloutReport `json:"rollout,omitempty"`
}

// RolloutReport says why a pool's nodes do not start and when they can.
type RolloutReport struct {
	// Policies are the RolloutPolicies that select the pool, by name.
	Policies []string `json:"policies"`
	// Held: a start the budget allows does not happen now (RolloutHeld).
	Held bool `json:"held"`
	// Reasons: "waiting: outside the maintenance window, opens Sat 02:00
	// Europe/Berlin for plans that reboot (2 nodes)", "held: node worker-3
	// by annotation ndp.dev/hold: disk swap (by alice)".
	Reasons []string `json:"reasons"`
	// HeldNodes carry the ndp.dev/hold annotation.
	HeldNodes []string `json:"heldNodes"`
}

// ForecastReport is one UpdateForecast: nodes of the pool moving From →
// To, what the MCO will do and ndp's plan beside it.
type ForecastReport struct {
	Name string `json:"name"`
	From string `json:"from"`
	To   string `json:"to"`
	// State is Pending, Superseded or Completed.
	State     string   `json:"state"`
	NodeCount int32    `json:"nodeCount"`
	Nodes     []string `json:"nodes"`
	// MCO is the MCO's decision, NDP ndp's plan; absent when not known
	// (Ready says why).
	MCO *ForecastPlanReport `json:"mco,omitempty"`
	NDP *ForecastPlanReport `json:"ndp,omitempty"`
	// Ready is the forecast's Ready condition.
	Ready ConditionReport `json:"ready"`
	// Observed tallies the nodes whose update was checked against the
	// forecast; absent before any was.
	Observed *v1alpha1.ForecastObserved `json:"observed,omitempty"`
}

// ForecastPlanReport is one side of a forecast.
type ForecastPlanReport struct {
	// Actions as administrators read them: "Reboot", "Restart chronyd.service".
	Actions []string `json:"actions"`
	Drain   bool     `json:"drain"`
	Reboot  bool     `json:"reboot"`
	// Refused: why the MCO refuses the update, or why ndp finds it
	// unreconcilable.
	Refused []string `json:"refused,omitempty"`
	// Error: why the MCO's daemon fails the update after deciding it.
	Error string `json:"error,omitempty"`
	// Rules: each change and what decided it (the MCO's rule, or ndp's
	// NodeDisruptionPolicy).
	Rules []ForecastRuleReport `json:"rules"`
	// Policies: where the MCO's policies came from ("status", "spec
	// (stale: generation 3, observed 2)", "defaults"); ndp's policy
	// revision.
	Policies string `json:"policies,omitempty"`
}

// ForecastRuleReport is one change and what decided it.
type ForecastRuleReport struct {
	Change  string   `json:"change"`
	By      string   `json:"by"`
	Actions []string `json:"actions"`
}

// ConditionReport is one condition, without its timestamps.
type ConditionReport struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// NodeReport is one node: its config annotations, what its daemon is doing
// and the plan it runs.
type NodeReport struct {
	Name    string `json:"name"`
	Current string `json:"current"`
	Desired string `json:"desired"`
	// State and Reason are the daemon's annotations.
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
	// Phase is the step as a stable word (see the Phase constants); Step
	// says it for a person, e.g. "running action 2 (Restart crio.service)".
	Phase string `json:"phase"`
	Step  string `json:"step"`
	// Plan is the plan of the update under way (from current to desired)
	// or, for a node still waiting to be sent to the pool's target, the
	// plan it will run; absent for a node that is up to date.
	Plan *PlanReport `json:"plan,omitempty"`
}

// PlanReport is a stored plan (status.postConfigActions of the target).
type PlanReport struct {
	From string `json:"from"`
	To   string `json:"to"`
	// Actions as administrators read them: "Restart chronyd.service",
	// "Reboot", "None".
	Actions []string `json:"actions"`
	Drain   bool     `json:"drain"`
	Reboot  bool     `json:"reboot"`
}

// Phases of a node (NodeReport.Phase).
const (
	PhaseDone           = "Done"        // runs the pool's target, nothing under way
	PhaseQueued         = "Queued"      // runs its desired config; the pool's target is another one
	PhasePending        = "Pending"     // sent to a new config; its daemon has not reported on it yet
	PhasePlanPending    = "PlanPending" // the daemon waits for the plan (or the target config)
	PhasePreparing      = "Preparing"   // the daemon verifies the plan
	PhaseCordoning      = "Cordoning"
	PhaseDraining       = "Draining"       // including waiting for pods a PodDisruptionBudget protects
	PhaseWritingFiles   = "WritingFiles"   // files, units, SSH keys, password
	PhaseUpdatingOS     = "UpdatingOS"     // OS image, kernel arguments, extensions
	PhaseRecording      = "Recording"      // recording the new current config on the host
	PhaseRunningActions = "RunningActions" // the plan's post-config actions
	PhaseRebooting      = "Rebooting"
	PhaseUncordoning    = "Uncordoning"
	PhaseCompleting     = "Completing"     // every step done; the daemon is reporting it
	PhaseDegraded       = "Degraded"       // a step failed or the plan was refused
	PhaseUnreconcilable = "Unreconcilable" // the target cannot be applied in place
)

// nodeFacts is what the step of a node is derived from.
type nodeFacts struct {
	current, desired, state, reason string
	// target of the node's pool, and whether the pool is paused.
	target string
	paused bool
	// held: the node carries ndp.dev/hold (ndp hold), with that reason.
	held       bool
	heldReason string
	// The node's MachineConfigNode: found, its status.configVersion.desired
	// and its conditions.
	hasMCN     bool
	mcnDesired string
	conditions []metav1.Condition
}

// The daemon's phases in the order it runs them, with what a node whose
// phase is still pending is doing.
var phaseOrder = []struct {
	typ         mcfgv1.StateProgress
	phase, step string
}{
	{mcfgv1.MachineConfigNodeUpdateCordoned, PhaseCordoning, "cordoning"},
	{mcfgv1.MachineConfigNodeUpdateDrained, PhaseDraining, "draining"},
	{mcfgv1.MachineConfigNodeUpdateFiles, PhaseWritingFiles, "writing files"},
	{mcfgv1.MachineConfigNodeUpdateOS, PhaseUpdatingOS, "updating the OS"},
	{mcfgv1.MachineConfigNodeUpdateFilesAndOS, PhaseRecording, "recording the new config"},
	{mcfgv1.MachineConfigNodeUpdatePostActionComplete, PhaseRunningActions, "running actions"},
	{mcfgv1.MachineConfigNodeUpdateRebooted, PhaseRebooting, "rebooting"},
	{mcfgv1.MachineConfigNodeUpdateUncordoned, PhaseUncordoning, "uncordoning"},
	{mcfgv1.MachineConfigNodeUpdateComplete, PhaseCompleting, "completing"},
}

// deriveStep tells where a node is, from its annotations and its
// MachineConfigNode's conditions as ndp-daemon writes them.
func deriveStep(f nodeFacts) (phase, step string) {
	cond := func(t mcfgv1.StateProgress) *metav1.Condition {
		if !f.hasMCN {
			return nil
		}
		return meta.FindStatusCondition(f.conditions, string(t))
	}
	// The conditions speak of the update to the node's desired config only
	// when the MachineConfigNode names that config.
	fresh := f.hasMCN && (f.mcnDesired == "" || f.mcnDesired == f.desired)
	degraded := cond(mcfgv1.MachineConfigNodeNodeDegraded)
	switch {
	case f.state == ndpmcv1.StateUnreconcilable:
		return PhaseUnreconcilable, withDetail("unreconcilable", firstNonEmpty(f.reason, message(degraded)))
	case f.state == ndpmcv1.StateDegraded || (fresh && degraded != nil && degraded.Status == metav1.ConditionTrue):
		return PhaseDegraded, withDetail("degraded", firstNonEmpty(f.reason, message(degraded)))
	}
	if f.desired == "" || f.desired == f.current {
		switch {
		case f.current == "":
			return PhasePending, "no config yet"
		case f.target == "" || f.current == f.target:
			return PhaseDone, "done"
		case f.paused:
			return PhaseQueued, "waiting: the pool is paused"
		case f.held && f.heldReason != "":
			return PhaseQueued, "held: " + f.heldReason
		case f.held:
			return PhaseQueued, "held (ndp release NODE lets it go)"
		}
		return PhaseQueued, "waiting for its turn"
	}
	if !fresh {
		return PhasePending, "waiting for the node daemon"
	}
	resumed := ""
	if c := cond(mcfgv1.MachineConfigNodeResumed); c != nil && c.Status == metav1.ConditionTrue {
		resumed = " (resumed)"
	}
	if c := cond(mcfgv1.MachineConfigNodeUpdatePrepared); c == nil || c.Status != metav1.ConditionTrue {
		switch {
		case c == nil:
			return PhasePending, "waiting for the node daemon"
		case c.Status == metav1.ConditionUnknown && c.Reason == ndpmcv1.PlanPendingReason:
			return PhasePlanPending, "waiting for a plan"
		case c.Status == metav1.ConditionUnknown && c.Reason == "TargetNotFound":
			return PhasePlanPending, "waiting for the target config"
		case c.Status == metav1.ConditionFalse && c.Reason != "" && c.Reason != "Pending" && c.Reason != "NotRequired":
			return PhaseDegraded, "refused: " + firstNonEmpty(c.Message, c.Reason)
		}
		return PhasePreparing, "preparing"
	}
	// A phase in progress (Unknown), the latest first.
	if c := cond(mcfgv1.MachineConfigNodeUpdateRebooted); c != nil && c.Status == metav1.ConditionUnknown {
		return PhaseRebooting, "rebooting" + resumed
	}
	if c := cond(mcfgv1.MachineConfigNodeUpdatePostActionComplete); c != nil && c.Status == metav1.ConditionUnknown {
		if c.Message != "" {
			return PhaseRunningActions, "running " + c.Message + resumed
		}
		return PhaseRunningActions, "running actions" + resumed
	}
	if c := cond(mcfgv1.MachineConfigNodeUpdateDrained); c != nil && c.Status == metav1.ConditionUnknown {
		if c.Reason == "WaitingForPods" {
			return PhaseDraining, "draining (waiting for pods: " + waitingPods(c.Message) + ")" + resumed
		}
		return PhaseDraining, "draining" + resumed
	}
	// Otherwise the first phase still pending is the one under way.
	for _, p := range phaseOrder {
		if c := cond(p.typ); c != nil && c.Status == metav1.ConditionFalse && c.Reason == "Pending" {
			return p.phase, p.step + resumed
		}
	}
	return PhaseCompleting, "completing"
}

// waitingPods picks the pods out of the daemon's drain message
// ("attempt 3: 2 pods still to evict (ns/a, ns/b): <error>").
func waitingPods(msg string) string {
	const marker = "still to evict ("
	if i := strings.Index(msg, marker); i >= 0 {
		rest := msg[i+len(marker):]
		if j := strings.Index(rest, ")"); j >= 0 {
			return rest[:j]
		}
	}
	if msg == "" {
		return "?"
	}
	return msg
}

func message(c *metav1.Condition) string {
	if c == nil {
		return ""
	}
	return firstNonEmpty(c.Message, c.Reason)
}

func withDetail(what, detail string) string {
	if detail == "" {
		return what
	}
	return what + ": " + detail
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// planReport summarizes a stored plan.
func planReport(p *ndpmcv1.PostConfigActions, to string) *PlanReport {
	acts := make([]string, 0, len(p.Actions))
	for _, a := range p.Actions {
		acts = append(acts, a.String())
	}
	return &PlanReport{From: p.From, To: to, Actions: acts, Drain: p.Drain, Reboot: p.Reboot}
}

// maxStepWidth bounds the STEP cell of the text output; a longer step is
// printed whole under the table (and -o json has it whole).
const maxStepWidth = 60

// writeStatusText prints the pools table, then for each pool its nodes
// table, the plans its nodes run (each move current -> desired once, with
// how many nodes make it) and the whole text of steps too long for the
// table. Rendered configs of a pool ("rendered-<pool>-<hash>") are shown
// by the first 8 characters of their hash; each pool's heading names its
// target in full.
func writeStatusText(w io.Writer, r *StatusReport) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	pools := 0
	for _, p := range r.Pools {
		if p.Name == NoPool {
			continue
		}
		if pools == 0 {
			fmt.Fprintln(tw, "POOL\tTARGET\tNODES\tUPDATED\tREADY\tUNAVAILABLE\tDEGRADED\tMAXUNAVAILABLE\tPAUSED\tCONDITIONS")
		}
		pools++
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t%t\t%s\n", p.Name, dash(shortConfig(p.Name, p.Target)), p.MachineCount, p.UpdatedMachineCount,
			p.ReadyMachineCount, p.UnavailableMachineCount, p.DegradedMachineCount, p.MaxUnavailable, p.Paused, briefConditions(p.Conditions))
	}
	if pools == 0 {
		fmt.Fprintln(tw, "No MachineConfigPools.")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, p := range r.Pools {
		heading := fmt.Sprintf("\nPool %s, target %s:\n", p.Name, dash(p.Target))
		if p.Name == NoPool {
			heading = "\nNodes no pool manages:\n"
		}
		if _, err := io.WriteString(w, heading); err != nil {
			return err
		}
		if len(p.Nodes) == 0 {
			if _, err := io.WriteString(w, "  no nodes\n"); err != nil {
				return err
			}
			continue
		}
		tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "NODE\tCURRENT\tDESIRED\tSTATE\tSTEP")
		var details []string
		type move struct{ from, to string }
		var moves []move
		plans := map[move]*PlanReport{}
		count := map[move]int{}
		for _, n := range p.Nodes {
			step := n.Step
			if len(step) > maxStepWidth {
				step = step[:maxStepWidth-3] + "..."
				details = append(details, fmt.Sprintf("  %s: %s", n.Name, n.Step))
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", n.Name, dash(shortConfig(p.Name, n.Current)), dash(shortConfig(p.Name, n.Desired)), dash(n.State), step)
			m := move{n.Current, n.Desired}
			if n.Plan != nil {
				m = move{n.Plan.From, n.Plan.To}
			} else if n.Current == "" || n.Desired == "" || n.Current == n.Desired {
				continue
			}
			if count[m] == 0 {
				moves = append(moves, m)
			}
			count[m]++
			if n.Plan != nil {
				plans[m] = n.Plan
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		var b strings.Builder
		if len(moves) > 0 {
			b.WriteString("Plans:\n")
			for _, m := range moves {
				nodes := "1 node"
				if count[m] > 1 {
					nodes = fmt.Sprintf("%d nodes", count[m])
				}
				fmt.Fprintf(&b, "  %s -> %s: %s (%s)\n", shortConfig(p.Name, m.from), shortConfig(p.Name, m.to), briefPlan(plans[m]), nodes)
			}
		}
		writeRolloutText(&b, p.Rollout)
		if len(details) > 0 {
			b.WriteString("Details:\n" + strings.Join(details, "\n") + "\n")
		}
		writeForecastsText(&b, p)
		if _, err := io.WriteString(w, b.String()); err != nil {
			return err
		}
	}
	var b strings.Builder
	writeMCOEntriesText(&b, r.MCOEntries)
	_, err := io.WriteString(w, b.String())
	return err
}

// shortConfig shows "rendered-<pool>-<hash>" as the hash's first 8
// characters; any other name as it is.
func shortConfig(pool, name string) string {
	prefix := "rendered-" + pool + "-"
	if h, ok := strings.CutPrefix(name, prefix); ok && len(h) > 8 {
		return h[:8]
	}
	return name
}

// briefPlan is a plan on one line: "drain, Restart crio.service".
func briefPlan(p *PlanReport) string {
	if p == nil {
		return "no plan yet"
	}
	parts := append([]string(nil), p.Actions...)
	if p.Drain {
		parts = append([]string{"drain"}, parts...)
	}
	return strings.Join(parts, ", ")
}

// briefConditions names the pool's rollout conditions that are True, e.g.
// "Updating, Degraded"; "-" when none is.
func briefConditions(conds []ConditionReport) string {
	var out []string
	for _, typ := range []mcfgv1.MachineConfigPoolConditionType{mcfgv1.MachineConfigPoolUpdated, mcfgv1.MachineConfigPoolUpdating, mcfgv1.MachineConfigPoolDegraded} {
		for _, c := range conds {
			if c.Type == string(typ) && c.Status == "True" {
				out = append(out, c.Type)
			}
		}
	}
	if len(out) == 0 {
		return "-"
	}
	return strings.Join(out, ", ")
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// maxUnavailableString is spec.maxUnavailable as written; unset is 1,
// as for the rollout controller.
func maxUnavailableString(p *mcfgv1.MachineConfigPool) string {
	if p.Spec.MaxUnavailable == nil {
		return "1"
	}
	return p.Spec.MaxUnavailable.String()
}

// maxForecastRules bounds the rules the text shows per side of a
// forecast; -o json|yaml has them all.
const maxForecastRules = 5

// writeForecastsText prints the pool's forecasts: each move with its
// nodes, the MCO's decision and ndp's plan, and the rules behind them.
func writeForecastsText(b *strings.Builder, p PoolReport) {
	if len(p.Forecasts) == 0 {
		return
	}
	b.WriteString("Forecasts (the MCO's update, and ndp's plan beside it):\n")
	for _, f := range p.Forecasts {
		nodes := "1 node"
		if f.NodeCount != 1 {
			nodes = fmt.Sprintf("%d nodes", f.NodeCount)
		}
		state := ""
		if f.State != "Pending" {
			state = ", " + strings.ToLower(f.State)
		}
		fmt.Fprintf(b, "  %s -> %s (%s%s)\n", shortConfig(p.Name, f.From), shortConfig(p.Name, f.To), nodes, state)
		writeForecastSide(b, "MCO", f.MCO)
		writeForecastSide(b, "ndp", f.NDP)
		if line := observedLine(f.Observed); line != "" {
			b.WriteString("    " + line + "\n")
		}
		if f.Ready.Status != "True" && f.Ready.Reason != "" {
			msg := f.Ready.Message
			if len(msg) > maxStepWidth*2 {
				msg = msg[:maxStepWidth*2-3] + "..."
			}
			fmt.Fprintf(b, "    not ready: %s: %s\n", f.Ready.Reason, msg)
		}
	}
}

// observedLine says how the nodes' updates went against the forecast:
// "observed: 2 agreed, 1 mismatch (worker-0: reboot: foretold no, observed
// yes)"; kubectl ndp why NODE tells the rest.
func observedLine(o *v1alpha1.ForecastObserved) string {
	if o == nil || o.Agreed+o.Mismatched+o.PartlyObserved+o.InProgress == 0 {
		return ""
	}
	var parts []string
	for _, c := range []struct {
		n    int32
		what string
	}{{o.Agreed, "agreed"}, {o.Mismatched, "mismatch"}, {o.PartlyObserved, "partly observed"}, {o.InProgress, "in progress"}} {
		if c.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	line := "observed: " + strings.Join(parts, ", ")
	var first []string
	for _, n := range o.Nodes {
		if n.Verdict == v1alpha1.VerdictMismatch && len(n.Mismatches) > 0 {
			m := n.Mismatches[0]
			if i := strings.Index(m, " ("); i > 0 {
				m = m[:i] // the evidence is in kubectl ndp why
			}
			first = append(first, n.Node+": "+m)
		}
		if len(first) == 3 {
			break
		}
	}
	if len(first) > 0 {
		line += " (" + strings.Join(first, "; ") + "; kubectl ndp why NODE)"
	}
	return line
}

func writeForecastSide(b *strings.Builder, who string, s *ForecastPlanReport) {
	if s == nil {
		fmt.Fprintf(b, "    %s: unknown\n", who)
		return
	}
	what := briefPlan(&PlanReport{Actions: s.Actions, Drain: s.Drain})
	if len(s.Refused) > 0 {
		what = "refused: " + strings.Join(s.Refused, "; ")
	}
	if s.Error != "" {
		what = "fails: " + s.Error
	}
	if s.Policies != "" {
		what += " [policies: " + s.Policies + "]"
	}
	fmt.Fprintf(b, "    %s: %s\n", who, what)
	for i, r := range s.Rules {
		if i == maxForecastRules {
			fmt.Fprintf(b, "      ... %d more (-o yaml)\n", len(s.Rules)-i)
			break
		}
		fmt.Fprintf(b, "      %s: %s (%s)\n", r.Change, r.By, strings.Join(r.Actions, ", "))
	}
}

// writeRolloutText writes the pool's rollout policies and holds:
//
//	Rollout:
//	  policies: workers
//	  waiting: outside the maintenance window, opens Sat 02:00 Europe/Berlin for plans that reboot (2 nodes)
//	  held: node worker-3 by annotation ndp.dev/hold: disk swap (by alice)
func writeRolloutText(b *strings.Builder, r *RolloutReport) {
	if r == nil {
		return
	}
	b.WriteString("Rollout:\n")
	if len(r.Policies) > 0 {
		b.WriteString("  policies: " + strings.Join(r.Policies, ", ") + "\n")
	} else {
		b.WriteString("  policies: none\n")
	}
	shown := map[string]bool{}
	for _, l := range r.Reasons {
		b.WriteString("  " + l + "\n")
	}
	for _, l := range r.Reasons {
		for _, n := range r.HeldNodes {
			if strings.HasPrefix(l, "held: node "+n+" ") {
				shown[n] = true
			}
		}
	}
	for _, n := range r.HeldNodes {
		if !shown[n] {
			b.WriteString("  held: node " + n + " by annotation (not yet seen by the rollout controller)\n")
		}
	}
	if !r.Held && len(r.Reasons) == 0 && len(r.HeldNodes) == 0 {
		b.WriteString("  nothing holds a start\n")
	}
}
