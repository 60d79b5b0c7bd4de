package daemon

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ndp-dev/ndp/apis/conditions"
	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
)

// The decisions behind the node's NodeHistory (docs/design.md#the-history):
// what one update's entry says, computed from the journal alone, and how an
// entry joins the history. history_write.go writes them.

// noPolicy is the planner's name for "no policy claimed the change"
// (planner.NoPolicy; the daemon links no planner).
const noPolicy = "(none)"

// Step results in the history.
const (
	stepResultRunning = "Running"
	stepResultDone    = "Done"
	stepResultFailed  = "Failed"
	// stepResultSkipped: a drain given up at its timeout, or a step of the
	// host's other answer to a package update (Step.When).
	stepResultSkipped = "Skipped"
)

// Bounds of the history's strings (the CRD's MaxLength).
const (
	maxHistoryText   = 4096
	maxHistoryDetail = 1024
)

// changeID maps a plan reason's change ("file /etc/chrony.conf: contents
// changed", "unit crio.service: added") to the change id the rendered
// config's ndp.dev/sources annotation uses ("file:/etc/chrony.conf",
// "os:osImageURL"), or "" for a change no MachineConfig contributes alone
// (ssh keys, password). A path may itself hold ": ": the split that names an id known
// to sources wins, else the first.
func changeID(change string, sources ...map[string]string) string {
	var kind, rest string
	switch {
	case strings.HasPrefix(change, "file "):
		kind, rest = "file", change[len("file "):]
	case strings.HasPrefix(change, "unit "):
		kind, rest = "unit", change[len("unit "):]
	default:
		// An OS field: "osImageURL: changed", "kernelArguments: added".
		field, _, _ := strings.Cut(change, ": ")
		switch field {
		case "osImageURL", "baseOSExtensionsContainerImage", "kernelArguments", "extensions", "kernelType":
			return "os:" + field
		}
		return ""
	}
	first := ""
	for i := 0; i+1 < len(rest); i++ {
		if rest[i] != ':' || rest[i+1] != ' ' {
			continue
		}
		id := kind + ":" + rest[:i]
		if first == "" {
			first = id
		}
		for _, s := range sources {
			if _, ok := s[id]; ok {
				return id
			}
		}
	}
	return first
}

// changeSources resolves, for each reason of a plan, the MachineConfig its
// change comes from: in the target's sources, or for a removed file or
// unit in the old config's (as the planner's change set does). The result
// holds only the plan's changes, so that the journal carries what the
// history needs after a restart without either config.
func changeSources(reasons []ndpmcv1.PlanReason, to, from map[string]string) map[string]string {
	out := map[string]string{}
	for _, r := range reasons {
		id := changeID(r.Change, to, from)
		if id == "" {
			continue
		}
		if src := to[id]; src != "" {
			out[id] = src
		} else if src := from[id]; src != "" && strings.HasSuffix(r.Change, ": removed") {
			out[id] = src
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// forecastAction is a plan action in the history's vocabulary.
func forecastAction(a ndpmcv1.PlanAction) v1alpha1.ForecastAction {
	return v1alpha1.ForecastAction{Type: string(a.Type), Service: unitOf(&a)}
}

func forecastActions(as []ndpmcv1.PlanAction) []v1alpha1.ForecastAction {
	if len(as) == 0 {
		return nil
	}
	out := make([]v1alpha1.ForecastAction, 0, len(as))
	for _, a := range as {
		out = append(out, forecastAction(a))
	}
	return out
}

// PlanSummary is a plan on one line, as a node's NodeHistory has it:
// "drain, Restart chronyd.service", "drain, Reboot", "None".
func PlanSummary(p *ndpmcv1.PostConfigActions) string {
	var parts []string
	if p.Drain {
		parts = append(parts, "drain")
	}
	for _, a := range p.Actions {
		if a.Type != "None" {
			parts = append(parts, a.String())
		}
	}
	if len(parts) == 0 {
		return "None"
	}
	return strings.Join(parts, ", ")
}

// historyChanges lists the plan's reasons as the history's changes, at most
// v1alpha1.MaxUpdateChanges, and how many were left out.
func historyChanges(reasons []ndpmcv1.PlanReason, sources map[string]string) ([]v1alpha1.UpdateChange, int32) {
	var out []v1alpha1.UpdateChange
	for i, r := range reasons {
		if i == v1alpha1.MaxUpdateChanges {
			return out, int32(len(reasons) - i)
		}
		c := v1alpha1.UpdateChange{Change: conditions.Truncate(r.Change, maxHistoryText), DecidedBy: noPolicy, Actions: forecastActions(r.Actions)}
		if r.Policy != "" && r.Policy != noPolicy {
			c.DecidedBy = conditions.Truncate("policy "+r.Policy, maxHistoryText)
		}
		if src := sources[changeID(r.Change, sources)]; src != "" {
			c.MachineConfigs = []string{src}
		}
		detail := r.Detail
		if r.Match != "" {
			detail = strings.TrimSuffix("matched "+r.Match+"; "+detail, "; ")
		}
		c.Detail = conditions.Truncate(detail, maxHistoryText)
		out = append(out, c)
	}
	return out, 0
}

// timeOf is t as the API server keeps it (to the second, UTC), so that an
// entry read back equals the one written.
func timeOf(t *time.Time) *metav1.Time {
	if t == nil {
		return nil
	}
	m := metav1.NewTime(t.UTC().Truncate(time.Second))
	return &m
}

// historySteps lists the journal's steps that started, in order.
func historySteps(j *Journal) []v1alpha1.UpdateStep {
	var out []v1alpha1.UpdateStep
	for i := range j.Steps {
		s := &j.Steps[i]
		if !s.Started && !s.Done {
			continue // not reached (yet)
		}
		st := v1alpha1.UpdateStep{Name: s.Name, Started: timeOf(s.StartedAt), Result: stepResultRunning}
		if s.Action != nil {
			a := forecastAction(*s.Action)
			st.Action = &a
		}
		switch {
		case s.Skipped:
			st.Result, st.Finished = stepResultSkipped, timeOf(s.DoneAt)
			st.Detail = "not run: it runs where " + whenText(s.When)
		case s.Done:
			st.Result, st.Finished = stepResultDone, timeOf(s.DoneAt)
			switch {
			case s.Action != nil && s.Action.Type == ndpmcv1.PackageUpdateAction && j.Packages != nil:
				st.Detail = conditions.Truncate(j.Packages.Summary(), maxHistoryDetail)
			case s.Name == StepRestartServices && j.Packages != nil:
				st.Detail = "nothing to restart (needrestart)"
				if len(j.Packages.Restart) > 0 {
					st.Detail = conditions.Truncate("restarted "+strings.Join(j.Packages.Restart, ", ")+" (needrestart)", maxHistoryDetail)
				}
			case s.Name == StepCordon && j.NodeWasUnschedulable && !j.InheritedCordon:
				st.Detail = "already cordoned before the update"
			case s.Name == StepUncordon && !j.CordonedByDaemon():
				st.Detail = "cordoned before the update: left cordoned"
			case s.Name == StepReboot && s.BootID != "":
				st.Detail = "requested in boot " + s.BootID
			}
		case j.Failed != nil && j.Failed.Step == s.Title():
			at := j.Failed.At
			st.Result, st.Finished, st.Detail = stepResultFailed, timeOf(&at), conditions.Truncate(j.Failed.Error, maxHistoryDetail)
		case j.Failed != nil:
			st.Result = stepResultFailed // stopped by the failure of another step
		case j.Skipped != nil && s.Name == StepDrain:
			at := j.Skipped.At
			st.Result, st.Finished, st.Detail = stepResultSkipped, timeOf(&at), conditions.Truncate(j.Skipped.Message, maxHistoryDetail)
		case s.Name == StepReboot && s.BootID != "":
			st.Detail = "requested in boot " + s.BootID
		}
		if note := resumeNote(j, s.Title()); note != "" {
			st.Detail = conditions.Truncate(strings.TrimPrefix(st.Detail+"; "+note, "; "), maxHistoryDetail)
		}
		out = append(out, st)
	}
	return out
}

// resumeNote says how a step was interrupted and taken up again: after a
// restart of the daemon, or after a boot the plan did not ask for (a power
// cut, a crash, someone's reboot). The plan's own reboot is the reboot
// step's, and needs no note.
func resumeNote(j *Journal, title string) string {
	var notes []string
	for _, r := range j.Resumes {
		switch {
		case r.Step != title || r.Planned:
		case r.PrevBoot != "":
			notes = append(notes, fmt.Sprintf("resumed after an unplanned reboot (boot %s -> %s)", r.PrevBoot, r.Boot))
		default:
			notes = append(notes, "resumed after a restart of the daemon")
		}
	}
	return strings.Join(notes, "; ")
}

// historyEntry is the NodeHistory entry of the update the journal records.
// It is a function of the journal alone, so that the entry written after a
// restart or a reboot is the one written before, completed.
func historyEntry(j *Journal) v1alpha1.NodeUpdate {
	changes, omitted := historyChanges(j.Plan.Reasons, j.Sources)
	u := v1alpha1.NodeUpdate{
		From:     j.Plan.From,
		To:       j.To,
		Pool:     j.Pool,
		Executor: v1alpha1.ExecutorNDP,
		Started:  *timeOf(&j.Started),
		Result:   v1alpha1.UpdateInProgress,
		Changes:  changes, ChangesOmitted: omitted,
		Plan: &v1alpha1.UpdatePlan{
			Source:         conditions.Truncate("MachineConfig "+j.To+" status", 512),
			Summary:        conditions.Truncate(PlanSummary(&j.Plan), 1024),
			Actions:        forecastActions(j.Plan.Actions),
			Drain:          j.Plan.Drain,
			Reboot:         j.Plan.Reboot,
			PolicyRevision: conditions.Truncate(j.Plan.PolicyRevision, 128),
		},
		Steps:   historySteps(j),
		BootIDs: v1alpha1.BootIDs{Before: j.BootID},
	}
	switch {
	case j.Failed != nil:
		at := j.Failed.At
		u.Result, u.Finished, u.Message = v1alpha1.UpdateFailed, timeOf(&at), conditions.Truncate(j.Failed.Error, maxHistoryText)
		u.BootIDs.After = j.EndBootID
	case j.Skipped != nil:
		at := j.Skipped.At
		u.Result, u.Finished, u.Message = v1alpha1.UpdateSkipped, timeOf(&at), conditions.Truncate(j.Skipped.Message, maxHistoryText)
		u.BootIDs.After = j.EndBootID
	case j.Completed:
		u.Result = v1alpha1.UpdateDone
		u.BootIDs.After = j.EndBootID
		if j.CompletedAt != nil {
			u.Finished = timeOf(j.CompletedAt)
		}
	}
	return u
}

// refusalEntry is the entry of an update refused before anything ran. A
// refusal repeats at every poll: while the newest entry is the refusal of
// the same move, the entry keeps its start, so that it is updated in place
// (and not written at all when nothing changed).
func refusalEntry(updates []v1alpha1.NodeUpdate, from, to, pool, msg string, now time.Time) v1alpha1.NodeUpdate {
	u := v1alpha1.NodeUpdate{From: from, To: to, Pool: pool, Executor: v1alpha1.ExecutorNDP,
		Started: *timeOf(&now), Finished: timeOf(&now), Result: v1alpha1.UpdateUnreconcilable, Message: conditions.Truncate(msg, maxHistoryText)}
	if len(updates) > 0 {
		if n := updates[0]; n.Executor == u.Executor && n.To == to && n.From == from && n.Result == v1alpha1.UpdateUnreconcilable {
			u.Started = n.Started
			if n.Message == u.Message {
				u.Finished = n.Finished
			}
		}
	}
	return u
}

// sameUpdate: two entries of the same update, identified by executor,
// target and start (to the second, as the API server keeps times).
func sameUpdate(a, b *v1alpha1.NodeUpdate) bool {
	return a.Executor == b.Executor && a.To == b.To && a.Started.Unix() == b.Started.Unix()
}

// mergeHistory puts entries into a history (newest first): an entry of an
// update already there replaces it in place; a new one goes first. At most
// v1alpha1.NodeHistoryUpdates are kept, the newest.
func mergeHistory(updates []v1alpha1.NodeUpdate, entries ...v1alpha1.NodeUpdate) []v1alpha1.NodeUpdate {
	out := append([]v1alpha1.NodeUpdate(nil), updates...)
	for _, e := range entries {
		found := false
		for i := range out {
			if sameUpdate(&out[i], &e) {
				out[i], found = e, true
				break
			}
		}
		if !found {
			out = append([]v1alpha1.NodeUpdate{e}, out...)
		}
	}
	if len(out) > v1alpha1.NodeHistoryUpdates {
		out = out[:v1alpha1.NodeHistoryUpdates]
	}
	return out
}
