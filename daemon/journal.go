package daemon

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/osupdate"
)

// Host paths of the daemon's state (under StateDir).
const (
	// JournalPath records the update under way, step by step.
	JournalPath = StateDir + "/journal.json"
	// CurrentConfigPath holds the config the node runs: the truth, not
	// the node annotation.
	CurrentConfigPath = StateDir + "/currentconfig.json"
	// BackupPath holds what the files step overwrites, to restore it if a
	// step fails.
	BackupPath = StateDir + "/backup.json"
)

// Step names, in the order they run.
const (
	StepCordon        = "cordon"
	StepDrain         = "drain"
	StepBackup        = "backup"
	StepFiles         = "files"
	StepOS            = "os"
	StepCurrentConfig = "current-config"
	StepAction        = "action"
	StepReboot        = "reboot"
	// StepRestartServices restarts what a package update's host named
	// (needrestart), where it asked for no reboot.
	StepRestartServices = "restart-services"
	StepUncordon        = "uncordon"
)

// When a step of a package update's plan runs: the plan holds both of the
// host's possible answers, and the steps of the other one are skipped.
const (
	// WhenRebootAsked: the host asked for a reboot after its package
	// update.
	WhenRebootAsked = "reboot-asked"
	// WhenNoReboot: it asked for none.
	WhenNoReboot = "no-reboot"
)

// Journal is the daemon's record of one update, on the host (docs/design.md#the-journal).
// It is written atomically before and after every step, so that after a
// crash or a reboot the daemon resumes at the first step not done and never
// repeats a completed disruptive step. It holds the verified plan itself:
// resuming does not depend on the plan still being in the cluster.
type Journal struct {
	To   string                    `json:"to"`
	Plan ndpmcv1.PostConfigActions `json:"plan"`
	Pool string                    `json:"pool,omitempty"`
	// BootID is the boot the update started in.
	BootID string `json:"bootID"`
	// NodeWasUnschedulable: someone else had cordoned the node before the
	// update, so the daemon leaves it cordoned.
	NodeWasUnschedulable bool `json:"nodeWasUnschedulable"`
	// InheritedCordon: an update that failed after cordoning the node left
	// it cordoned, and this one uncordons it at the end.
	InheritedCordon bool      `json:"inheritedCordon,omitempty"`
	Steps           []Step    `json:"steps"`
	Started         time.Time `json:"started"`
	Completed       bool      `json:"completed,omitempty"`
	// CompletedAt is when the last step was done.
	CompletedAt *time.Time `json:"completedAt,omitempty"`
	Failed      *Failure   `json:"failed,omitempty"`
	// EndBootID is the boot the update completed or failed in.
	EndBootID string `json:"endBootID,omitempty"`
	// Sources maps the plan's changes ("file:/etc/chrony.conf") to the
	// MachineConfig each comes from (changeSources), for the NodeHistory:
	// resolved at the start, so that the history written after a restart
	// needs neither config.
	Sources map[string]string `json:"sources,omitempty"`
	// Resumes: each time the update was taken up again after a restart of
	// the daemon or a boot of the node (the last maxResumes).
	Resumes []Resume `json:"resumes,omitempty"`
	// Drained are the pods the drain step evicts, by owner, listed before
	// its first eviction; reported with the Done state
	// (v1alpha1.DrainedPodsAnnotation).
	Drained *v1alpha1.DrainedPods `json:"drained,omitempty"`
	// Requested, for a reboot the node asked for, is that request.
	Requested *RebootRequest `json:"requested,omitempty"`
	// Packages is what the plan's PackageUpdate did and what the host said
	// it needs, recorded once it ran: the steps that depend on it (When)
	// follow it, also after a restart.
	Packages *osupdate.Outcome `json:"packages,omitempty"`
	// DrainTimeout is the drain timeout the node was sent with
	// (v1alpha1.DrainTimeoutAnnotation), read when the update started: a
	// resumed drain keeps it, and counts it from its step's StartedAt.
	// "": the drain waits as long as it must.
	DrainTimeout string `json:"drainTimeout,omitempty"`
	// Skipped: the drain ran out of its timeout under Skip; the update
	// ends there, before any write.
	Skipped *DrainSkip `json:"skipped,omitempty"`
}

// DrainSkip is a drain given up at its timeout (onDrainTimeout Skip).
type DrainSkip struct {
	At time.Time `json:"at"`
	// Pods are those the drain could not evict.
	Pods    []string `json:"pods,omitempty"`
	Message string   `json:"message"`
	// Closed: the node was uncordoned and reported back on its config
	// (closeSkip), marked skipped for the update's target.
	Closed bool `json:"closed,omitempty"`
}

// drainDeadline is when the drain step s gives up waiting: its start plus
// the journal's drain timeout. Zero: never (no timeout, or an unreadable
// one, which start refused to journal).
func (j *Journal) drainDeadline(s *Step) (v1alpha1.DrainTimeout, time.Time) {
	if j.DrainTimeout == "" || s.StartedAt == nil {
		return v1alpha1.DrainTimeout{}, time.Time{}
	}
	dt, err := v1alpha1.ParseDrainTimeout(j.DrainTimeout)
	if err != nil {
		return v1alpha1.DrainTimeout{}, time.Time{}
	}
	return dt, s.StartedAt.Add(dt.Timeout)
}

// Step is one step of an update.
type Step struct {
	Name string `json:"name"`
	// Action is the plan action of an action step, Number its place in
	// the plan (from 1).
	Action *ndpmcv1.PlanAction `json:"action,omitempty"`
	Number int                 `json:"number,omitempty"`
	// When, in a package update's plan, is the host's answer the step
	// runs for (WhenRebootAsked, WhenNoReboot); "" always. Skipped: it was
	// not that answer.
	When    string `json:"when,omitempty"`
	Skipped bool   `json:"skipped,omitempty"`
	Started bool   `json:"started,omitempty"`
	Done    bool   `json:"done,omitempty"`
	// BootID is the boot the step started in: a reboot step started in
	// another boot than the current one is done.
	BootID string `json:"bootID,omitempty"`
	// Marker is the unit's run before a Reload or Restart was issued;
	// Markers, each unit's, for restart-services.
	Marker    *UnitMarker           `json:"marker,omitempty"`
	Markers   map[string]UnitMarker `json:"markers,omitempty"`
	StartedAt *time.Time            `json:"startedAt,omitempty"`
	DoneAt    *time.Time            `json:"doneAt,omitempty"`
}

// maxResumes bounds Journal.Resumes: a daemon in a crash loop must not
// grow the journal without end.
const maxResumes = 20

// Resume is one time the daemon took the update up again.
type Resume struct {
	At time.Time `json:"at"`
	// Step is the first step not done then (its Title), "" at the end.
	Step string `json:"step,omitempty"`
	Boot string `json:"boot"`
	// PrevBoot is the boot the update last ran in, when the node has
	// booted since; Planned: that boot is the plan's reboot step's.
	PrevBoot string `json:"prevBoot,omitempty"`
	Planned  bool   `json:"planned,omitempty"`
}

// lastBoot is the boot the update was last seen running in: the latest of
// its start's, its steps' and its resumes'.
func (j *Journal) lastBoot() string {
	boot, at := j.BootID, j.Started
	for _, s := range j.Steps {
		if s.BootID != "" && s.StartedAt != nil && !s.StartedAt.Before(at) {
			boot, at = s.BootID, *s.StartedAt
		}
	}
	for _, r := range j.Resumes {
		if !r.At.Before(at) {
			boot, at = r.Boot, r.At
		}
	}
	return boot
}

// resumed records that the update is taken up again in boot, at time now:
// after a reboot when boot is not the one it last ran in, planned when the
// reboot step was requested in that one.
func (j *Journal) resumed(boot string, now time.Time) Resume {
	r := Resume{At: now, Boot: boot}
	for i := range j.Steps {
		if !j.Steps[i].Done {
			r.Step = j.Steps[i].Title()
			break
		}
	}
	if prev := j.lastBoot(); prev != boot {
		r.PrevBoot = prev
		if s := j.step(StepReboot); s != nil && s.Started && s.BootID == prev {
			r.Planned = true
		}
	}
	j.Resumes = append(j.Resumes, r)
	if len(j.Resumes) > maxResumes {
		j.Resumes = j.Resumes[len(j.Resumes)-maxResumes:]
	}
	return r
}

// Failure is the step that failed and why.
type Failure struct {
	Step  string    `json:"step"`
	Error string    `json:"error"`
	At    time.Time `json:"at"`
	// Closed: the node went back to its config (desired = current) and
	// the daemon undid the failed update's cordon.
	Closed bool `json:"closed,omitempty"`
}

// Title names a step for people: "action 2 (Restart chronyd.service)".
func (s *Step) Title() string {
	if s.Action != nil {
		return fmt.Sprintf("%s %d (%s)", s.Name, s.Number, s.Action)
	}
	return s.Name
}

// InProgress: started, neither completed, failed nor skipped.
func (j *Journal) InProgress() bool {
	return j != nil && !j.Completed && j.Failed == nil && j.Skipped == nil
}

// step returns the named step, or nil.
func (j *Journal) step(name string) *Step {
	for i := range j.Steps {
		if j.Steps[i].Name == name {
			return &j.Steps[i]
		}
	}
	return nil
}

// CordonedByDaemon: the daemon cordoned a node that was schedulable, so
// it is the one to uncordon it.
func (j *Journal) CordonedByDaemon() bool {
	s := j.step(StepCordon)
	return j.InheritedCordon || (s != nil && s.Started && !j.NodeWasUnschedulable)
}

// newJournal lays out the steps of a verified plan. A package update
// without a reboot in its plan ends in both of the host's answers: cordon,
// drain (unless the plan drains anyway), reboot and uncordon where it asks
// for a reboot, restart-services where it does not.
func newJournal(to string, plan *ndpmcv1.PostConfigActions, pool, bootID string, osChange, inheritCordon bool) *Journal {
	j := &Journal{To: to, Plan: *plan.DeepCopy(), Pool: pool, BootID: bootID, Started: time.Now().UTC()}
	add := func(name string, a *ndpmcv1.PlanAction) { j.Steps = append(j.Steps, Step{Name: name, Action: a}) }
	addWhen := func(name, when string) { j.Steps = append(j.Steps, Step{Name: name, When: when}) }
	if plan.Drain {
		add(StepCordon, nil)
		add(StepDrain, nil)
	}
	// A reboot the node asked for (its plan from the config it runs to
	// that config) writes nothing.
	if plan.From != to {
		add(StepBackup, nil)
		add(StepFiles, nil)
		if osChange {
			add(StepOS, nil)
		}
		add(StepCurrentConfig, nil)
	}
	for i := range plan.Actions {
		switch a := plan.Actions[i]; a.Type {
		case "None":
		case "Reboot":
			add(StepReboot, nil)
		default:
			add(StepAction, a.DeepCopy())
			j.Steps[len(j.Steps)-1].Number = i + 1
		}
	}
	ifAsked := plan.RebootIfAsked()
	if ifAsked {
		if !plan.Drain {
			addWhen(StepCordon, WhenRebootAsked)
			addWhen(StepDrain, WhenRebootAsked)
		}
		addWhen(StepReboot, WhenRebootAsked)
		addWhen(StepRestartServices, WhenNoReboot)
	}
	switch {
	case plan.Drain || inheritCordon:
		add(StepUncordon, nil)
	case ifAsked:
		addWhen(StepUncordon, WhenRebootAsked)
	}
	j.InheritedCordon = inheritCordon
	return j
}

// checkSteps verifies that the journal's steps are the ones newJournal laid
// out for its plan, which Verify checked: the steps are not part of the
// planHash, and a corrupt journal must not make the daemon run an action,
// a drain or a reboot its plan does not have, nor skip one it has.
func (j *Journal) checkSteps() error {
	for _, osChange := range []bool{false, true} {
		want := newJournal(j.To, &j.Plan, j.Pool, j.BootID, osChange, j.InheritedCordon)
		if slices.EqualFunc(want.Steps, j.Steps, func(a, b Step) bool {
			return a.Name == b.Name && a.Number == b.Number && a.When == b.When && reflect.DeepEqual(a.Action, b.Action)
		}) {
			return nil
		}
	}
	return errors.New("its steps are not the steps of its plan")
}

// StoredConfig is the config the node runs, as the daemon records it.
type StoredConfig struct {
	Name string `json:"name"`
	// Pool is the pool the config was rendered for.
	Pool string                   `json:"pool,omitempty"`
	Spec mcfgv1.MachineConfigSpec `json:"spec"`
	// Sources is the config's ndp.dev/sources annotation: where a file or
	// unit the next update removes came from (NodeHistory).
	Sources map[string]string `json:"sources,omitempty"`
}

// skip says whether step s is of the host's other answer: a package
// update's step whose When is not what the host said (Journal.Packages).
// Without an answer recorded, the journal is not the one its steps ran in.
func (j *Journal) skip(s *Step) (bool, error) {
	if s.When == "" {
		return false, nil
	}
	if j.Packages == nil {
		return false, fmt.Errorf("step %s runs %s, but the journal holds no answer of the host's package update", s.Title(), s.When)
	}
	return (s.When == WhenRebootAsked) != j.Packages.Reboot, nil
}

// whenText says, for people, when a step runs.
func whenText(when string) string {
	if when == WhenRebootAsked {
		return "the host asks for a reboot after its package update"
	}
	return "the host asks for no reboot after its package update"
}
