// Package daemon is the node executor (docs/design.md#the-node-daemon): it makes its node match
// the desiredConfig annotation by running exactly the plan the plan
// controller stored in the target MachineConfig's status, step by step,
// journaled on the host. It never evaluates a policy: it links no policy
// engine, and a plan it cannot verify is refused, never recomputed.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/ndp-dev/ndp/apis/conditions"
	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/mco/mcoguard"
)

// DefaultBootIDPath is where Linux tells the current boot's ID.
const DefaultBootIDPath = "/proc/sys/kernel/random/boot_id"

// Daemon executes its node's plans. Sync is level-triggered: whatever
// happened before (a crash, a reboot, a change of the target), it looks at
// the host's journal and current config, the node and the target's plan,
// and takes the next step.
type Daemon struct {
	NodeName string
	// Client writes the node's annotations and its MachineConfigNode;
	// Reader reads MachineConfigs (and the node, without Nodes) from the
	// API server, uncached.
	Client client.Client
	Reader client.Reader
	// Nodes reads the daemon's own Node at each Sync: the cache of the
	// watch that wakes it (ndp-daemon's manager caches that one Node), so
	// that a Sync costs no GET (readNode: a cache behind the daemon's own
	// last write is waited for). Nil: Reader.
	Nodes client.Reader
	// MCO tells whether the Machine Config Operator manages the node:
	// an *mcoguard.Guard (watches; no request per Sync, and a change of
	// presence wakes the daemon, SetupWithManager) in ndp-daemon.
	MCO mcoguard.Source

	Host    *Host
	Systemd Systemd
	OS      OSUpdater
	// Packages runs a plan's PackageUpdate; nil refuses such plans.
	Packages PackageUpdater
	Rebooter Rebooter
	Drainer  *Drainer
	Status   *Status

	// BootIDPath is read for the current boot's ID (DefaultBootIDPath).
	BootIDPath string
	// PollInterval is how often the daemon looks again for a plan that is
	// not written yet, or for a new one after a refusal.
	PollInterval time.Duration
	// Sentinel, when set, is asked whether the host wants a reboot while
	// the node is settled, every SentinelPeriod; the request is reported on
	// the Node and run once the rollout controller grants it.
	Sentinel       *RebootSentinel
	SentinelPeriod time.Duration
	Log            logr.Logger
	// CrashAt, for fault-injection tests only, names a point
	// ("<step index>:started|ran|done") where the process kills itself
	// with SIGKILL, as a crash or a power cut would stop it.
	CrashAt string

	// synced: this process has run Sync before (a journal in progress at
	// the first Sync means the daemon was restarted mid-update).
	synced bool
	// rebooting: this process requested the reboot and waits for it.
	rebooting bool
	// lastApplied is the MachineConfigNode last written, to skip
	// identical writes.
	lastApplied string
	// history is the node's NodeHistory as written (history_write.go).
	history history
	// staleReads counts the reads in a row of a cache that did not show
	// the daemon's own last write.
	staleReads int
}

// transientError is a failure of the cluster, not of the node: retried,
// never a reason to degrade the node.
type transientError struct{ err error }

func (e *transientError) Error() string { return e.err.Error() }
func (e *transientError) Unwrap() error { return e.err }

func transient(err error) error {
	if err == nil {
		return nil
	}
	return &transientError{err}
}

// errRebooting stops a sync once the reboot is under way.
var errRebooting = errors.New("rebooting")

func (d *Daemon) bootID() (string, error) {
	b, err := os.ReadFile(d.BootIDPath)
	if err != nil {
		return "", fmt.Errorf("reading the boot ID: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// Sync takes the node one step (or all the steps it can) towards its
// desired config. It returns when to look again, if the daemon is waiting
// for something that no watched change announces (a plan being written).
func (d *Daemon) Sync(ctx context.Context) (time.Duration, error) {
	if d.rebooting {
		return 0, nil // the system is going down
	}
	node, err := d.readNode(ctx)
	if err != nil {
		return 0, err
	}
	if node == nil {
		return staleRetry, nil
	}
	// Before anything else, a journaled update included: no step runs
	// while the MCO manages the node.
	down, err := d.standDown(ctx, node)
	if err != nil {
		return 0, err
	}
	if down {
		if _, ok := d.MCO.(mcoNotifies); ok {
			return 0, nil
		}
		return mcoRecheck, nil
	}
	// A failed read is tried again before the conditions are written.
	_ = d.Status.load(ctx)
	boot, err := d.bootID()
	if err != nil {
		return 0, err
	}
	first := !d.synced
	d.synced = true
	if first {
		// Once per process, not in an update's way: the NodeHistory
		// read (or created), as the MachineConfigNode's conditions are
		// above. A failure is logged; the first record tries again.
		hctx, cancel := context.WithTimeout(ctx, historyTimeout)
		if err := d.loadHistory(hctx, node); err != nil {
			d.Log.Error(err, "reading the node's history (read again at its first record)")
		}
		cancel()
	}

	var j Journal
	hasJournal, err := d.Host.ReadJSON(JournalPath, &j)
	if err != nil {
		return d.PollInterval, d.refuse(ctx, node, "", node.Annotations[ndpmcv1.DesiredConfigAnnotation], "", "JournalCorrupt", err)
	}
	// The NodeHistory: entries whose write failed are written now; a new
	// process records the journal's update once, in case the write of its
	// last state was lost with the previous one: an update that ended at
	// once, one in progress with its next write (before its next step
	// that takes time, or its end: a reboot's own process is one write
	// from its end).
	d.flushHistory(ctx, node)
	if hasJournal && !d.history.recorded && !j.InProgress() {
		d.recordJournal(ctx, node, &j)
	}
	if hasJournal && j.InProgress() {
		return d.resume(ctx, node, &j, boot, first)
	}
	var prev *Journal
	if hasJournal {
		prev = &j
	}
	if prev != nil && prev.Skipped != nil && !prev.Skipped.Closed {
		// Given up at its drain's timeout, not reported yet (a crash, a
		// failed write): the node goes back where it was first.
		return 0, d.closeSkip(ctx, node, prev)
	}
	cur, err := d.currentConfig(ctx, node)
	if err != nil {
		return 0, err
	}
	if cur == nil {
		return d.PollInterval, nil // no config to adopt yet
	}
	desired := node.Annotations[ndpmcv1.DesiredConfigAnnotation]
	if desired == "" || desired == cur.Name {
		req := d.rebootRequest(ctx, node, prev, boot)
		if g, ok := grantFor(node, req); ok {
			return d.startRequestedReboot(ctx, node, cur, req, g, prev, boot)
		}
		if err := d.settled(ctx, node, cur, prev, req); err != nil {
			return 0, err
		}
		var next time.Duration
		if d.historyPending() {
			// A settled node may not sync again for long: look again
			// (but not at every poll: the history is a record).
			next = max(d.PollInterval, historyRetry)
		}
		if d.Sentinel != nil && d.SentinelPeriod > 0 && (next == 0 || d.SentinelPeriod < next) {
			next = d.SentinelPeriod
		}
		return next, nil
	}
	return d.start(ctx, node, cur, desired, prev, boot)
}

// readNode reads the daemon's Node from Nodes (a cache). A cache that has
// not seen the daemon's own last write yet gives nil: the watch event that
// brings the write syncs again (staleRetry covers a lost one); after
// staleReads such reads in a row (another writer changed what the daemon
// wrote before the cache showed it), the node is read from the API
// server. Without Nodes, from the API server.
func (d *Daemon) readNode(ctx context.Context) (*corev1.Node, error) {
	var node corev1.Node
	if d.Nodes != nil {
		if err := d.Nodes.Get(ctx, client.ObjectKey{Name: d.NodeName}, &node); err == nil {
			if d.Status.Shows(&node) {
				d.Status.Seen()
				d.staleReads = 0
				return &node, nil
			}
			if d.staleReads++; d.staleReads < staleReads {
				return nil, nil
			}
		}
	}
	if err := d.Reader.Get(ctx, client.ObjectKey{Name: d.NodeName}, &node); err != nil {
		return nil, fmt.Errorf("reading node %s: %w", d.NodeName, err)
	}
	d.Status.Seen() // the API server's node is newer than any write before
	d.staleReads = 0
	return &node, nil
}

// staleReads and staleRetry bound how long the daemon waits for its cache
// to show its own last write before it reads the API server.
const (
	staleReads = 5
	staleRetry = 200 * time.Millisecond
)

// mcoRecheck is how often a daemon that stands down for the Machine Config
// Operator looks again when its MCO source cannot tell it that the MCO
// went (a Lookup; a Guard's Subscribe wakes it).
const mcoRecheck = time.Minute

// mcoNotifies is an MCO source that tells when presence changes.
type mcoNotifies interface {
	Subscribe() <-chan event.GenericEvent
}

// standDown tells whether the Machine Config Operator manages this node
// (mcoguard). Then the daemon does nothing: no plan step, no write to the
// host, and no write to the node's annotations or MachineConfigNode, which
// the MCO's daemon writes too. It says so in a Warning event on the Node
// (once per message) and the log. A failed lookup is an error, retried:
// the daemon does not act on a guess.
func (d *Daemon) standDown(ctx context.Context, node *corev1.Node) (bool, error) {
	if d.MCO == nil {
		return true, errors.New("no Machine Config Operator source (Daemon.MCO): the daemon cannot tell whether the MCO manages the node")
	}
	o, err := d.MCO.Observe(ctx, node)
	if err != nil {
		return true, transient(fmt.Errorf("looking for the Machine Config Operator: %w", err))
	}
	v := mcoguard.Decide(o)
	if !v.StandDown {
		return false, nil
	}
	d.Log.Info("standing down", "reason", v.Message)
	d.Status.event(node, corev1.EventTypeWarning, mcoguard.Reason, "StandDown", v.Message)
	return true, nil
}

// currentConfig reads the config the host runs. A host without one (a new
// node, or one set up before ndp) adopts the config its annotation names,
// else its desired config: the one it was provisioned with.
func (d *Daemon) currentConfig(ctx context.Context, node *corev1.Node) (*StoredConfig, error) {
	var cur StoredConfig
	found, err := d.Host.ReadJSON(CurrentConfigPath, &cur)
	if err != nil || found {
		return &cur, err
	}
	name := node.Annotations[ndpmcv1.CurrentConfigAnnotation]
	if name == "" {
		name = node.Annotations[ndpmcv1.DesiredConfigAnnotation]
	}
	if name == "" {
		return nil, nil
	}
	var mc ndpmcv1.MachineConfig
	if err := d.Reader.Get(ctx, client.ObjectKey{Name: name}, &mc); err != nil {
		if apierrors.IsNotFound(err) {
			d.Log.Info("the config to adopt does not exist yet", "config", name)
			return nil, nil
		}
		return nil, err
	}
	cur = StoredConfig{Name: name, Pool: mc.Labels[ndpmcv1.RenderedForLabel], Spec: mc.Spec, Sources: sourcesOf(&mc)}
	if err := d.Host.WriteJSON(CurrentConfigPath, &cur); err != nil {
		return nil, err
	}
	d.Status.event(node, corev1.EventTypeNormal, "Adopted", "Adopt", fmt.Sprintf("no config recorded on the host: it runs %s", name))
	return &cur, nil
}

// settled reports a node that runs its desired config.
func (d *Daemon) settled(ctx context.Context, node *corev1.Node, cur *StoredConfig, prev *Journal, req *RebootRequest) error {
	if prev != nil && prev.Failed != nil && !prev.Failed.Closed {
		// Back on its own config after a failed update: undo that update's
		// cordon, once.
		if prev.CordonedByDaemon() {
			if err := d.Drainer.Cordon(ctx, node, false); err != nil {
				return transient(err)
			}
		}
		prev.Failed.Closed = true
		if err := d.Host.WriteJSON(JournalPath, prev); err != nil {
			return err
		}
	}
	degraded.WithLabelValues(d.NodeName).Set(0)
	d.Status.condition(mcfgv1.MachineConfigNodeUpdated, metav1.ConditionTrue, "Updated", "the node runs "+cur.Name)
	d.Status.condition(mcfgv1.MachineConfigNodeNodeDegraded, metav1.ConditionFalse, "AsExpected", "")
	done := map[string]string{
		ndpmcv1.CurrentConfigAnnotation: cur.Name, ndpmcv1.StateAnnotation: ndpmcv1.StateDone, ndpmcv1.ReasonAnnotation: "",
		// What the host asks now ("": nothing); a grant of nothing the
		// host asks is dropped.
		v1alpha1.RebootRequiredAnnotation: "", v1alpha1.RebootRequiredByAnnotation: "",
	}
	if req != nil {
		done[v1alpha1.RebootRequiredAnnotation], done[v1alpha1.RebootRequiredByAnnotation] = req.At, req.By
	}
	if _, ok := grantFor(node, req); !ok {
		done[v1alpha1.RebootGrantAnnotation] = ""
	}
	// The update that brought it here completed, maybe without its report
	// (a crash in between): its pacing annotations too (no change, no
	// write: annotate patches only what differs).
	if prev != nil && prev.Completed && prev.To == cur.Name && prev.CompletedAt != nil {
		done[v1alpha1.UpdateDoneAnnotation] = prev.CompletedAt.UTC().Format(time.RFC3339)
		done[v1alpha1.DrainedPodsAnnotation] = drainedAnnotation(prev.Drained)
	}
	return d.report(ctx, node, cur.Name, node.Annotations[ndpmcv1.DesiredConfigAnnotation], done, cur.Pool)
}

// start verifies the target's plan for the node's config and, if it can be
// executed, journals it and runs it. Everything that can be refused is
// refused here, before the first write.
func (d *Daemon) start(ctx context.Context, node *corev1.Node, cur *StoredConfig, desired string, prev *Journal, boot string) (time.Duration, error) {
	var target ndpmcv1.MachineConfig
	if err := d.Reader.Get(ctx, client.ObjectKey{Name: desired}, &target); err != nil {
		if !apierrors.IsNotFound(err) {
			return 0, err
		}
		d.Status.condition(mcfgv1.MachineConfigNodeUpdatePrepared, metav1.ConditionUnknown, "TargetNotFound", fmt.Sprintf("the desired config %s does not exist (yet)", desired))
		return d.PollInterval, d.report(ctx, node, cur.Name, desired, nil, "")
	}
	pool := target.Labels[ndpmcv1.RenderedForLabel]
	plan := target.Status.PlanFrom(cur.Name)
	if plan == nil {
		d.Status.condition(mcfgv1.MachineConfigNodeUpdatePrepared, metav1.ConditionUnknown, ndpmcv1.PlanPendingReason,
			fmt.Sprintf("waiting for the plan from %s in the status of %s", cur.Name, desired))
		return d.PollInterval, d.report(ctx, node, cur.Name, desired, nil, pool)
	}
	if err := plan.Verify(desired); err != nil {
		reason := "InvalidPlan"
		var mismatch *ndpmcv1.HashMismatchError
		if errors.As(err, &mismatch) {
			reason = "PlanHashMismatch"
		}
		return d.PollInterval, d.refuse(ctx, node, cur.Name, desired, pool, reason, err)
	}
	if prev != nil && prev.Failed != nil && !prev.Failed.Closed && prev.To == desired && prev.Plan.PlanHash == plan.PlanHash {
		// This very plan failed: it is not retried until the target or
		// its plan changes.
		return d.PollInterval, d.degraded(ctx, node, cur.Name, desired, pool, "StepFailed", prev.Failed.Error)
	}
	to, err := machineconfig.New(desired, target.Spec)
	if err != nil {
		return d.PollInterval, d.refuse(ctx, node, cur.Name, desired, pool, "InvalidConfig", fmt.Errorf("the rendered config cannot be parsed: %w", err))
	}
	from, err := machineconfig.New(cur.Name, cur.Spec)
	if err != nil {
		return d.PollInterval, d.refuse(ctx, node, cur.Name, desired, pool, "InvalidConfig", fmt.Errorf("the config recorded on the host cannot be parsed: %w", err))
	}
	files, err := planFiles(d.Host, from, to)
	if err != nil {
		return d.PollInterval, d.refuse(ctx, node, cur.Name, desired, pool, "InvalidConfig", err)
	}
	if err := d.OS.Check(osConfig(cur.Spec), osConfig(target.Spec)); err != nil {
		return d.PollInterval, d.refuse(ctx, node, cur.Name, desired, pool, "OSUpdateNotPossible", err)
	}
	if plan.UpdatesPackages() {
		if d.Packages == nil {
			return d.PollInterval, d.refuse(ctx, node, cur.Name, desired, pool, "PackageUpdateNotPossible", errors.New("the plan updates the host's packages (PackageUpdate), but this daemon runs without a package updater"))
		}
		if err := d.Packages.Check(); err != nil {
			return d.PollInterval, d.refuse(ctx, node, cur.Name, desired, pool, "PackageUpdateNotPossible", err)
		}
	}
	inherit := prev != nil && prev.Failed != nil && !prev.Failed.Closed && prev.CordonedByDaemon()
	j := newJournal(desired, plan, pool, boot, !osConfig(cur.Spec).Equal(osConfig(target.Spec)), inherit)
	j.Sources = changeSources(plan.Reasons, sourcesOf(&target), cur.Sources)
	j.DrainTimeout = d.sentDrainTimeout(node)
	if err := d.Host.WriteJSON(JournalPath, j); err != nil {
		return 0, err
	}
	// The steps reuse what the checks above parsed and computed.
	return d.launch(ctx, node, cur.Name, &update{d: d, j: j, from: from, to: to, target: &target, files: files}, inherit, boot)
}

// launch reports the update u's journal starts, and runs it.
func (d *Daemon) launch(ctx context.Context, node *corev1.Node, current string, u *update, inherit bool, boot string) (time.Duration, error) {
	j, plan, desired := u.j, &u.j.Plan, u.j.To
	d.Status.condition(mcfgv1.MachineConfigNodeUpdatePrepared, metav1.ConditionTrue, "PlanVerified", describePlan(j))
	d.Status.condition(mcfgv1.MachineConfigNodeUpdateExecuted, metav1.ConditionUnknown, "Executing", "updating to "+desired)
	d.Status.condition(mcfgv1.MachineConfigNodeUpdated, metav1.ConditionFalse, "Updating", fmt.Sprintf("updating from %s to %s", current, desired))
	d.Status.condition(mcfgv1.MachineConfigNodeNodeDegraded, metav1.ConditionFalse, "AsExpected", "")
	degraded.WithLabelValues(d.NodeName).Set(0)
	// Every phase starts False: Pending if this plan has it, NotRequired
	// if not, so that a finished update's conditions tell what it did.
	for _, c := range []struct {
		typ    mcfgv1.StateProgress
		needed bool
	}{
		{mcfgv1.MachineConfigNodeUpdateCordoned, plan.Drain || plan.RebootIfAsked()},
		{mcfgv1.MachineConfigNodeUpdateDrained, plan.Drain || plan.RebootIfAsked()},
		{mcfgv1.MachineConfigNodeUpdateFiles, true},
		{mcfgv1.MachineConfigNodeUpdateOS, j.step(StepOS) != nil},
		{mcfgv1.MachineConfigNodeUpdateFilesAndOS, true},
		{mcfgv1.MachineConfigNodeUpdatePostActionComplete, lastAction(j) >= 0},
		{mcfgv1.MachineConfigNodeUpdateRebooted, plan.Reboot || plan.RebootIfAsked()},
		{mcfgv1.MachineConfigNodeUpdateUncordoned, plan.Drain || inherit || plan.RebootIfAsked()},
		{mcfgv1.MachineConfigNodeUpdateComplete, true},
		{mcfgv1.MachineConfigNodeResumed, false},
	} {
		reason := "NotRequired"
		if c.needed {
			reason = "Pending"
		}
		d.Status.condition(c.typ, metav1.ConditionFalse, reason, "")
	}
	// Nothing is written yet: the start is reported with the first step
	// that takes time (reportStarting), or with the end of an update that
	// has none.
	return d.run(ctx, node, u, boot)
}

// reportsBefore tells whether the daemon writes its progress (the
// MachineConfigNode's conditions, the NodeHistory, the node's state)
// before step s runs: before the steps that take time or end the process
// (a drain, an action, an OS update, a reboot), so that a reader — the
// rollout controller, kubectl ndp status, ndp why, the MachineConfigNode's
// consumers — sees the update at work while they run. The quick steps
// between are carried by the next write; an update without such a step is
// written once, when it ends.
func reportsBefore(s *Step) bool {
	switch s.Name {
	case StepDrain, StepAction, StepOS, StepReboot:
		return true
	}
	return false
}

// reportProgress writes the update's progress. The node's state is
// Working since the rollout controller sent it (in the same write as its
// desiredConfig); a daemon resuming an update it was sent by an older
// controller writes it here (a patch only when it differs).
func (d *Daemon) reportProgress(ctx context.Context, node *corev1.Node, j *Journal) error {
	working := map[string]string{ndpmcv1.StateAnnotation: ndpmcv1.StateWorking, ndpmcv1.ReasonAnnotation: ""}
	if err := d.report(ctx, node, "", j.To, working, j.Pool); err != nil {
		return err
	}
	d.recordJournal(ctx, node, j)
	return nil
}

func describePlan(j *Journal) string {
	p := &j.Plan
	var acts []string
	for _, a := range p.Actions {
		acts = append(acts, a.String())
	}
	return fmt.Sprintf("plan %s → %s: %s, drain %t, reboot %t (planHash %s)", p.From, j.To, strings.Join(acts, ", "), p.Drain, p.Reboot, p.PlanHash)
}

// resume continues a journaled update, after a restart of the daemon or a
// reboot of the node.
func (d *Daemon) resume(ctx context.Context, node *corev1.Node, j *Journal, boot string, first bool) (time.Duration, error) {
	if err := j.Plan.Verify(j.To); err != nil {
		return d.PollInterval, d.refuse(ctx, node, j.Plan.From, j.To, j.Pool, "JournalCorrupt", fmt.Errorf("the journal's plan: %w", err))
	}
	if err := j.checkSteps(); err != nil {
		return d.PollInterval, d.refuse(ctx, node, j.Plan.From, j.To, j.Pool, "JournalCorrupt", fmt.Errorf("the journal: %w", err))
	}
	if first {
		why := "a restart of the daemon"
		if boot != j.BootID {
			why = "a reboot"
		}
		r := j.resumed(boot, time.Now().UTC())
		if err := d.Host.WriteJSON(JournalPath, j); err != nil {
			return d.PollInterval, err
		}
		at := r.Step
		if at == "" {
			at = "the end"
		}
		msg := fmt.Sprintf("resumed the update to %s at step %s after %s", j.To, at, why)
		d.Status.condition(mcfgv1.MachineConfigNodeResumed, metav1.ConditionTrue, "Resumed", msg)
		// Back from the reboot it asked for is the plan, told by the
		// update's end; a crash or a reboot nobody planned is news.
		if !r.Planned {
			d.Status.event(node, corev1.EventTypeNormal, "Resumed", "Update", msg)
		}
		if strings.HasPrefix(node.Annotations[ndpmcv1.ReasonAnnotation], v1alpha1.RebootTimeoutReason) {
			// Back after ndp-controller marked it Degraded for staying
			// down too long: at work again.
			back := map[string]string{ndpmcv1.StateAnnotation: ndpmcv1.StateWorking, ndpmcv1.ReasonAnnotation: ""}
			if err := d.Status.annotate(ctx, node, back); err != nil {
				return d.PollInterval, transient(err)
			}
		}
	}
	return d.run(ctx, node, &update{d: d, j: j}, boot)
}

// update holds what the steps of one update read: given by start, which
// checked them, or loaded on first use after a restart.
type update struct {
	d        *Daemon
	j        *Journal
	from, to *machineconfig.Config
	target   *ndpmcv1.MachineConfig
	files    *fileUpdate
}

func (u *update) configs(ctx context.Context) error {
	if u.from != nil {
		return nil
	}
	var cur StoredConfig
	found, err := u.d.Host.ReadJSON(CurrentConfigPath, &cur)
	if err != nil {
		return err
	}
	if !found || cur.Name != u.j.Plan.From {
		return fmt.Errorf("the host records config %q, but the update is from %s", cur.Name, u.j.Plan.From)
	}
	if err := u.loadTarget(ctx); err != nil {
		return err
	}
	if u.from, err = machineconfig.New(cur.Name, cur.Spec); err != nil {
		return err
	}
	if u.to, err = machineconfig.New(u.j.To, u.target.Spec); err != nil {
		return err
	}
	u.files, err = planFiles(u.d.Host, u.from, u.to)
	return err
}

func (u *update) loadTarget(ctx context.Context) error {
	if u.target != nil {
		return nil
	}
	var mc ndpmcv1.MachineConfig
	if err := u.d.Reader.Get(ctx, client.ObjectKey{Name: u.j.To}, &mc); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("the target config %s was deleted during the update", u.j.To)
		}
		return transient(err)
	}
	u.target = &mc
	return nil
}

// run executes the journal's steps not done yet, in order.
func (d *Daemon) run(ctx context.Context, node *corev1.Node, u *update, boot string) (time.Duration, error) {
	j := u.j
	for i := range j.Steps {
		s := &j.Steps[i]
		if s.Done {
			continue
		}
		skip, err := j.skip(s)
		if err != nil {
			return d.PollInterval, d.fail(ctx, node, u, i, boot, err)
		}
		if skip {
			now := time.Now().UTC()
			s.Done, s.Skipped, s.DoneAt = true, true, &now
			if err := d.Host.WriteJSON(JournalPath, j); err != nil {
				return 0, err
			}
			continue
		}
		err = d.step(ctx, node, u, i, boot)
		if err == nil {
			d.crash(i, "ran")
		}
		if errors.Is(err, errRebooting) {
			return 0, nil
		}
		if errors.Is(err, errDrainSkipped) {
			return 0, d.skip(ctx, node, j, boot)
		}
		var te *transientError
		if errors.As(err, &te) || ctx.Err() != nil {
			return 0, err // retried from this step
		}
		if err != nil {
			return d.PollInterval, d.fail(ctx, node, u, i, boot, err)
		}
		now := time.Now().UTC()
		s.Done, s.DoneAt = true, &now
		if err := d.Host.WriteJSON(JournalPath, j); err != nil {
			return 0, err
		}
		if s.StartedAt != nil {
			stepDuration.WithLabelValues(d.NodeName, phase(s.Name)).Observe(now.Sub(*s.StartedAt).Seconds())
		}
		switch {
		case s.Action != nil:
			actionsTotal.WithLabelValues(d.NodeName, string(s.Action.Type)).Inc()
		case s.Name == StepReboot:
			actionsTotal.WithLabelValues(d.NodeName, "Reboot").Inc()
		}
		d.crash(i, "done")
	}
	now := time.Now().UTC()
	j.Completed, j.CompletedAt, j.EndBootID = true, &now, boot
	if err := d.Host.WriteJSON(JournalPath, j); err != nil {
		return 0, err
	}
	updateDuration.WithLabelValues(d.NodeName).Observe(time.Since(j.Started).Seconds())
	msg := fmt.Sprintf("updated from %s to %s", j.Plan.From, j.To)
	d.Status.condition(mcfgv1.MachineConfigNodeUpdateExecuted, metav1.ConditionTrue, "Executed", msg)
	d.Status.condition(mcfgv1.MachineConfigNodeUpdateComplete, metav1.ConditionTrue, "Complete", msg)
	d.Status.condition(mcfgv1.MachineConfigNodeUpdated, metav1.ConditionTrue, "Updated", "the node runs "+j.To)
	// The history first, as the MachineConfigNode: whoever sees the node
	// Done finds its update recorded done, also when the report below
	// fails and a later sync (settled) reports it.
	d.recordJournal(ctx, node, j)
	if err := d.report(ctx, node, j.To, j.To, map[string]string{
		ndpmcv1.CurrentConfigAnnotation: j.To, ndpmcv1.StateAnnotation: ndpmcv1.StateDone, ndpmcv1.ReasonAnnotation: "",
		// Any reboot served what the host asked before it; the next sync
		// reports what it asks now. A grant is used up.
		v1alpha1.RebootRequiredAnnotation: "", v1alpha1.RebootRequiredByAnnotation: "", v1alpha1.RebootGrantAnnotation: "",
		// In the same patch, for the rollout's pacing: when it completed,
		// and what the drain evicted ("": this update drained nothing).
		v1alpha1.UpdateDoneAnnotation:  now.Format(time.RFC3339),
		v1alpha1.DrainedPodsAnnotation: drainedAnnotation(j.Drained),
		// The drain timeout is used up; a node that gave up an earlier
		// target has reached this one.
		v1alpha1.DrainTimeoutAnnotation: "", v1alpha1.DrainSkippedAnnotation: "", v1alpha1.DrainSkippedReasonAnnotation: "",
	}, j.Pool); err != nil {
		return 0, err
	}
	// An Event for what a person reads: the end of a drain or a reboot.
	// What every update did is in the node's history (ndp why).
	if ran(j, StepDrain) || ran(j, StepReboot) {
		d.Status.event(node, corev1.EventTypeNormal, "UpdateComplete", "Update", msg+": "+ranSteps(j))
	}
	return 0, nil
}

// ran tells whether the update ran its step called name (not skipped).
func ran(j *Journal, name string) bool {
	s := j.step(name)
	return s != nil && s.Done && !s.Skipped
}

// ranSteps lists the steps an update ran, skipped ones left out.
func ranSteps(j *Journal) string {
	var ran []string
	for i := range j.Steps {
		if s := &j.Steps[i]; s.Done && !s.Skipped {
			ran = append(ran, s.Title())
		}
	}
	return strings.Join(ran, ", ")
}

// step runs one step: begin journals that it started, then execute runs it
// between what is reported before it (reportStarting) and after it
// (reportStep).
func (d *Daemon) step(ctx context.Context, node *corev1.Node, u *update, i int, boot string) error {
	resumed, err := d.begin(ctx, node, u.j, i, boot)
	if err != nil {
		return err
	}
	if err := d.reportStarting(ctx, node, u.j, i, resumed, boot); err != nil {
		return err
	}
	if !resumed {
		// Journaled as started and reported: nothing of it ran yet.
		d.crash(i, "started")
	}
	out, err := d.execute(ctx, node, u, i, resumed, boot)
	return d.reportStep(ctx, node, u, i, out, err)
}

// begin records in the journal that step i started, before anything of it
// happens, with what resuming it needs (the node's schedulability before a
// cordon, the unit's run before a Reload or Restart). A step found started
// but not done is resumed: resumed is true, and executing it does not
// repeat what it already did.
func (d *Daemon) begin(ctx context.Context, node *corev1.Node, j *Journal, i int, boot string) (resumed bool, err error) {
	s := &j.Steps[i]
	if s.Started {
		return true, nil
	}
	if s.Name == StepCordon && !j.InheritedCordon {
		j.NodeWasUnschedulable = node.Spec.Unschedulable
	}
	if s.Action != nil && (s.Action.Reload != nil || s.Action.Restart != nil) {
		m, err := d.Systemd.Marker(ctx, unitOf(s.Action))
		if err != nil {
			return false, err
		}
		s.Marker = &m
	}
	if s.Name == StepRestartServices && j.Packages != nil {
		for _, unit := range j.Packages.Restart {
			m, err := d.Systemd.Marker(ctx, unit)
			if err != nil {
				return false, err
			}
			if s.Markers == nil {
				s.Markers = map[string]UnitMarker{}
			}
			s.Markers[unit] = m
		}
	}
	now := time.Now().UTC()
	s.Started, s.BootID, s.StartedAt = true, boot, &now
	if err := d.Host.WriteJSON(JournalPath, j); err != nil {
		return false, err
	}
	return false, nil
}

// stepOutcome is what executing a step did, for reportStep to tell.
type stepOutcome int

const (
	// stepRan: the step did its work.
	stepRan stepOutcome = iota
	// stepRebooted: the reboot step found the node booted again since it
	// requested the reboot.
	stepRebooted
	// stepKeptCordon: the uncordon step left cordoned a node that was
	// cordoned before the update.
	stepKeptCordon
)

// rebooted tells whether the reboot step s, resumed, started in another
// boot than the current one: the reboot it requested happened.
func rebooted(s *Step, resumed bool, boot string) bool {
	return resumed && s.BootID != boot
}

// execute executes step i, started (see begin): cordon, drain, files, OS,
// actions, reboot... It reports nothing but the drain's wait for pods,
// through the Drainer's Waiting hook. A reboot it requests returns
// errRebooting.
func (d *Daemon) execute(ctx context.Context, node *corev1.Node, u *update, i int, resumed bool, boot string) (stepOutcome, error) {
	j := u.j
	s := &j.Steps[i]
	switch s.Name {
	case StepCordon:
		if err := d.Drainer.Cordon(ctx, node, true); err != nil {
			return stepRan, transient(err)
		}
	case StepDrain:
		// What it will evict, once, before the first eviction (a resumed
		// drain keeps the first list: its pods are gone).
		if j.Drained == nil {
			drained, err := d.Drainer.ToEvict(ctx, d.NodeName, time.Now())
			if err != nil {
				return stepRan, transient(err)
			}
			j.Drained = drained
			if err := d.Host.WriteJSON(JournalPath, j); err != nil {
				return stepRan, err
			}
		}
		d.Drainer.Waiting = d.reportDrainWaiting(ctx, node, j)
		if err := d.drain(ctx, node, j, s); err != nil {
			return stepRan, err
		}
	case StepBackup:
		if err := u.configs(ctx); err != nil {
			return stepRan, err
		}
		if err := d.backup(ctx, u.files); err != nil {
			return stepRan, err
		}
	case StepFiles:
		if err := u.configs(ctx); err != nil {
			return stepRan, err
		}
		if err := d.writeFiles(ctx, u.files); err != nil {
			return stepRan, err
		}
	case StepOS:
		if err := u.configs(ctx); err != nil {
			return stepRan, err
		}
		if _, err := d.OS.Apply(ctx, osConfig(u.from.Spec), osConfig(u.to.Spec)); err != nil {
			return stepRan, err
		}
	case StepCurrentConfig:
		if err := u.loadTarget(ctx); err != nil {
			return stepRan, err
		}
		if err := d.Host.WriteJSON(CurrentConfigPath, &StoredConfig{Name: j.To, Pool: j.Pool, Spec: u.target.Spec, Sources: sourcesOf(u.target)}); err != nil {
			return stepRan, err
		}
	case StepAction:
		if s.Action.Type == ndpmcv1.PackageUpdateAction {
			return stepRan, d.updatePackages(ctx, j)
		}
		if err := d.action(ctx, s, resumed); err != nil {
			return stepRan, err
		}
	case StepRestartServices:
		for _, unit := range j.Packages.Restart {
			m := s.Markers[unit]
			if err := d.runUnitJob(ctx, ndpmcv1.RestartAction, unit, &m, resumed); err != nil {
				return stepRan, err
			}
		}
	case StepReboot:
		if rebooted(s, resumed, boot) {
			return stepRebooted, nil
		}
		if err := d.Rebooter.Reboot(ctx, "ndp: update to "+j.To); err != nil {
			return stepRan, fmt.Errorf("requesting the reboot: %w", err)
		}
		d.rebooting = true
		return stepRan, errRebooting
	case StepUncordon:
		if !j.CordonedByDaemon() {
			return stepKeptCordon, nil
		}
		if err := d.Drainer.Cordon(ctx, node, false); err != nil {
			return stepRan, transient(err)
		}
	default:
		return stepRan, fmt.Errorf("unknown step %q in the journal", s.Name)
	}
	return stepRan, nil
}

// errDrainSkipped stops an update whose drain ran out of its timeout under
// Skip: run ends it (skip), nothing is written.
var errDrainSkipped = errors.New("drain skipped")

// sentDrainTimeout is the drain timeout the node was sent with, for the
// journal; an unreadable one is reported and ignored: the drain waits, as
// without one.
func (d *Daemon) sentDrainTimeout(node *corev1.Node) string {
	v, ok := node.Annotations[v1alpha1.DrainTimeoutAnnotation]
	if !ok {
		return ""
	}
	if _, err := v1alpha1.ParseDrainTimeout(v); err != nil {
		d.Status.event(node, corev1.EventTypeWarning, "InvalidDrainTimeout", "Drain", err.Error()+": the drain waits as long as it must")
		return ""
	}
	return v
}

// drain runs the drain step s until no pod is left. A drain still blocked
// at its deadline (the journal's drain timeout from the step's start, so
// that a restart does not move it) does what the node was sent with: Wait
// goes on waiting, DeletePods deletes the pods left (an Event each, on the
// Node and the pod) and finishes, Skip returns errDrainSkipped.
func (d *Daemon) drain(ctx context.Context, node *corev1.Node, j *Journal, s *Step) error {
	dt, deadline := j.drainDeadline(s)
	err := d.Drainer.Drain(ctx, d.NodeName, deadline)
	var late *DrainTimeoutError
	if !errors.As(err, &late) {
		return transient(err)
	}
	msg := fmt.Sprintf("the drain ran out of its timeout of %s (started %s): %s", dt.Timeout, s.StartedAt.UTC().Format(time.RFC3339), podList(late.Pods))
	switch {
	case dt.Action == v1alpha1.DrainTimeoutSkip && s.When != "":
		// The drain before the reboot a package update asked for: the
		// packages are on the host already, there is no config to stay on.
		d.Status.event(node, corev1.EventTypeWarning, "DrainTimeout", "Drain", msg+"; waiting on: the packages are updated already, so the node cannot be skipped (onDrainTimeout Skip)")
	case dt.Action == v1alpha1.DrainTimeoutSkip:
		j.Skipped = &DrainSkip{At: time.Now().UTC(), Pods: late.Pods, Message: msg + "; skipped: the node stays on " + j.Plan.From}
		return errDrainSkipped
	case dt.Action == v1alpha1.DrainTimeoutDeletePods:
		d.Status.event(node, corev1.EventTypeWarning, "DrainTimeout", "Drain", msg+"; deleting them")
		err := d.Drainer.DeletePods(ctx, d.NodeName, func(pod *corev1.Pod, budgets []string) {
			m := fmt.Sprintf("deleting pod %s/%s, not evicted within the drain timeout of %s", pod.Namespace, pod.Name, dt.Timeout)
			if len(budgets) > 0 {
				m += " (PodDisruptionBudget " + strings.Join(budgets, ", ") + ")"
			}
			d.Status.event(node, corev1.EventTypeWarning, "DrainDeletedPod", "Drain", m)
			d.Status.podEvent(pod, node, corev1.EventTypeWarning, "DrainDeletedPod", "Drain", m+" for the update of node "+d.NodeName)
		})
		if err != nil {
			return transient(err)
		}
	default:
		d.Status.event(node, corev1.EventTypeWarning, "DrainTimeout", "Drain", msg+"; waiting on (onDrainTimeout Wait)")
	}
	// What is left, if anything (a pod created since), is evicted as
	// before, without a deadline.
	return transient(d.Drainer.Drain(ctx, d.NodeName, time.Time{}))
}

// skip ends an update whose drain ran out of its timeout under Skip: the
// journal records it, then closeSkip puts the node back.
func (d *Daemon) skip(ctx context.Context, node *corev1.Node, j *Journal, boot string) error {
	j.EndBootID = boot
	if err := d.Host.WriteJSON(JournalPath, j); err != nil {
		return err
	}
	d.recordJournal(ctx, node, j)
	return d.closeSkip(ctx, node, j)
}

// closeSkip puts a node whose drain was skipped back where it was, as if
// never sent: uncordoned (if the update cordoned it), Done on the config
// it runs, which becomes its desiredConfig again, and marked skipped for
// the target (v1alpha1.DrainSkippedAnnotation) so that the rollout
// controller does not send it there again. Nothing else was done: the
// drain comes before any write. Repeated until the journal says it is
// closed.
func (d *Daemon) closeSkip(ctx context.Context, node *corev1.Node, j *Journal) error {
	if j.CordonedByDaemon() {
		if err := d.Drainer.Cordon(ctx, node, false); err != nil {
			return transient(err)
		}
	}
	msg := j.Skipped.Message
	d.Status.condition(mcfgv1.MachineConfigNodeUpdateDrained, metav1.ConditionFalse, v1alpha1.DrainSkippedReason, msg)
	d.Status.condition(mcfgv1.MachineConfigNodeUpdateExecuted, metav1.ConditionFalse, v1alpha1.DrainSkippedReason, "the update to "+j.To+" was skipped")
	d.Status.condition(mcfgv1.MachineConfigNodeUpdated, metav1.ConditionTrue, "Updated", "the node runs "+j.Plan.From)
	from := j.Plan.From
	if err := d.report(ctx, node, from, from, map[string]string{
		ndpmcv1.CurrentConfigAnnotation: from, ndpmcv1.DesiredConfigAnnotation: from,
		ndpmcv1.StateAnnotation: ndpmcv1.StateDone, ndpmcv1.ReasonAnnotation: "",
		v1alpha1.DrainSkippedAnnotation: j.To, v1alpha1.DrainSkippedReasonAnnotation: conditions.Truncate("the drain timed out with "+podList(j.Skipped.Pods), maxMessage),
		// Used up, as a grant of a reboot the host asked for is.
		v1alpha1.DrainTimeoutAnnotation: "", v1alpha1.RebootGrantAnnotation: "",
	}, j.Pool); err != nil {
		return err
	}
	d.Status.event(node, corev1.EventTypeWarning, v1alpha1.DrainSkippedReason, "Drain", msg)
	j.Skipped.Closed = true
	return d.Host.WriteJSON(JournalPath, j)
}

// reportStarting reports what a step is about to do, before execute runs
// it: the drain and the reboot are written to the cluster first (a reboot
// leaves no time after it).
func (d *Daemon) reportStarting(ctx context.Context, node *corev1.Node, j *Journal, i int, resumed bool, boot string) error {
	s := &j.Steps[i]
	switch s.Name {
	case StepDrain:
		d.Status.condition(mcfgv1.MachineConfigNodeUpdateDrained, metav1.ConditionUnknown, "Draining", "evicting pods")
	case StepAction:
		d.Status.condition(mcfgv1.MachineConfigNodeUpdatePostActionComplete, metav1.ConditionUnknown, "Running", s.Title())
	case StepReboot:
		if rebooted(s, resumed, boot) {
			return nil
		}
		d.Status.condition(mcfgv1.MachineConfigNodeUpdateRebooted, metav1.ConditionUnknown, "Rebooting", "reboot requested")
	}
	if !reportsBefore(s) {
		return nil
	}
	// The quick steps before it go with it: a few writes per update, not
	// a few a step.
	if err := d.reportProgress(ctx, node, j); err != nil {
		return err
	}
	if s.Name == StepReboot {
		d.Status.event(node, corev1.EventTypeNormal, "Rebooting", "Reboot", "rebooting into "+j.To)
	}
	return nil
}

// reportDrainWaiting returns the Drainer's Waiting hook: it reports the
// pods a drain still waits for.
func (d *Daemon) reportDrainWaiting(ctx context.Context, node *corev1.Node, j *Journal) func(attempt int, pods []string, err error) {
	return func(attempt int, pods []string, err error) {
		drainBlockedPods.WithLabelValues(d.NodeName).Set(float64(len(pods)))
		msg := waitingMessage(attempt, pods, err)
		d.Status.condition(mcfgv1.MachineConfigNodeUpdateDrained, metav1.ConditionUnknown, "WaitingForPods", msg)
		d.Status.event(node, corev1.EventTypeWarning, "DrainWaiting", "Drain", msg)
		if err := d.report(ctx, node, "", j.To, nil, j.Pool); err != nil {
			d.Log.Error(err, "reporting the drain's progress")
		}
	}
}

// reportStep reports step i once execute returned out and err. An error is
// returned as it is, after the drain's gauge is reset: run retries the
// step or fails the update, which reports it.
func (d *Daemon) reportStep(ctx context.Context, node *corev1.Node, u *update, i int, out stepOutcome, err error) error {
	j := u.j
	s := &j.Steps[i]
	if s.Name == StepDrain {
		drainBlockedPods.WithLabelValues(d.NodeName).Set(0) // the drain waits for no pod any more
	}
	if err != nil {
		return err
	}
	switch s.Name {
	case StepCordon:
		msg := "cordoned for the update"
		if j.NodeWasUnschedulable {
			msg = "already cordoned before the update"
		}
		d.Status.condition(mcfgv1.MachineConfigNodeUpdateCordoned, metav1.ConditionTrue, "Cordoned", msg)
	case StepDrain:
		d.Status.condition(mcfgv1.MachineConfigNodeUpdateDrained, metav1.ConditionTrue, "Drained", "every evictable pod left the node")
	case StepFiles:
		msg := fmt.Sprintf("%d files and units written, %d removed", len(u.files.Writes), len(u.files.Removes))
		d.Status.condition(mcfgv1.MachineConfigNodeUpdateFiles, metav1.ConditionTrue, "Applied", msg)
	case StepOS:
		d.Status.condition(mcfgv1.MachineConfigNodeUpdateOS, metav1.ConditionTrue, "Applied", "OS changes staged for "+j.To)
	case StepCurrentConfig:
		d.Status.condition(mcfgv1.MachineConfigNodeUpdateFilesAndOS, metav1.ConditionTrue, "Applied", "the host holds "+j.To)
	case StepAction:
		if s.Action.Type == ndpmcv1.PackageUpdateAction && j.Packages != nil {
			d.Status.event(node, corev1.EventTypeNormal, "PackagesUpdated", "RunAction", j.Packages.Summary())
		}
		if last := lastAction(j); last == i {
			d.Status.condition(mcfgv1.MachineConfigNodeUpdatePostActionComplete, metav1.ConditionTrue, "Done", "every action of the plan ran")
		}
	case StepRestartServices:
		msg := "restarted " + strings.Join(j.Packages.Restart, ", ") + " (needrestart), no reboot"
		if len(j.Packages.Restart) == 0 {
			msg = "nothing to restart (needrestart), no reboot"
		}
		d.Status.event(node, corev1.EventTypeNormal, "ServicesRestarted", "RunAction", msg)
	case StepReboot:
		// A reboot requested returned errRebooting: here the node rebooted.
		d.Status.condition(mcfgv1.MachineConfigNodeUpdateRebooted, metav1.ConditionTrue, "Rebooted", "the node rebooted into "+j.To)
		return nil
	case StepUncordon:
		if out == stepKeptCordon {
			d.Status.condition(mcfgv1.MachineConfigNodeUpdateUncordoned, metav1.ConditionFalse, "CordonedBeforeUpdate", "the node was cordoned before the update and stays cordoned")
			return nil
		}
		d.Status.condition(mcfgv1.MachineConfigNodeUpdateUncordoned, metav1.ConditionTrue, "Uncordoned", "schedulable again")
	}
	// Written with the next step that takes time, or the update's end.
	return nil
}

// crash kills the process at the fault-injection point CrashAt names.
func (d *Daemon) crash(step int, phase string) {
	if d.CrashAt != "" && d.CrashAt == fmt.Sprintf("%d:%s", step, phase) {
		d.Log.Info("fault injection: killing the daemon", "at", d.CrashAt)
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // SIGKILL cannot be caught: the process ends here
	}
}

func lastAction(j *Journal) int {
	last := -1
	for i := range j.Steps {
		if j.Steps[i].Name == StepAction {
			last = i
		}
	}
	return last
}

func unitOf(a *ndpmcv1.PlanAction) string {
	switch {
	case a.Restart != nil:
		return a.Restart.ServiceName
	case a.Reload != nil:
		return a.Reload.ServiceName
	}
	return ""
}

// action runs one post-config action. Resumed after a crash, a Reload or
// Restart that already ran (the unit's run changed since the marker the
// journal holds) is not issued again.
func (d *Daemon) action(ctx context.Context, s *Step, resumed bool) error {
	a := s.Action
	switch a.Type {
	case "DaemonReload":
		return d.Systemd.DaemonReload(ctx) // repeating it is harmless
	case "Reload", "Restart":
	default:
		return fmt.Errorf("unknown action type %q", a.Type)
	}
	return d.runUnitJob(ctx, a.Type, unitOf(a), s.Marker, resumed)
}

// runUnitJob reloads or restarts unit, unless a step resumed after a
// restart of the daemon finds that the job it issued before ran: the
// unit's run is no longer the one marker recorded when the step began.
func (d *Daemon) runUnitJob(ctx context.Context, typ ndpmcv1.PlanActionType, unit string, marker *UnitMarker, resumed bool) error {
	if resumed && marker != nil {
		if err := d.Systemd.WaitIdle(ctx, unit); err != nil {
			return err
		}
		now, err := d.Systemd.Marker(ctx, unit)
		if err != nil {
			return err
		}
		ran := now.InvocationID != marker.InvocationID
		if typ == ndpmcv1.ReloadAction {
			ran = ran || now.StateChange != marker.StateChange
		}
		if ran {
			d.Log.Info("the job ran before the restart of the daemon; not repeating it", "job", string(typ)+" "+unit)
			return d.Systemd.WaitActive(ctx, unit)
		}
	}
	if typ == ndpmcv1.ReloadAction {
		return d.Systemd.Reload(ctx, unit)
	}
	return d.Systemd.Restart(ctx, unit)
}

// updatePackages runs the plan's PackageUpdate and records the host's
// answer in the journal, which the steps after it follow. Run again after
// a crash, the update finishes what it left (osupdate.Apt is idempotent)
// and the host answers again.
func (d *Daemon) updatePackages(ctx context.Context, j *Journal) error {
	if d.Packages == nil {
		return errors.New("the plan updates the host's packages (PackageUpdate), but this daemon runs without a package updater")
	}
	o, err := d.Packages.Apply(ctx)
	if err != nil {
		return fmt.Errorf("updating the packages: %w", err)
	}
	j.Packages = &o
	return d.Host.WriteJSON(JournalPath, j)
}

// backup saves what the files step overwrites or removes, and the
// enablement of the units it changes.
func (d *Daemon) backup(ctx context.Context, fu *fileUpdate) error {
	b := backup{Units: map[string]string{}, UnitFiles: len(fu.Units) > 0}
	for _, p := range append(fu.Touched(), CurrentConfigPath) {
		f, err := d.Host.Snapshot(p)
		if err != nil {
			return fmt.Errorf("backing up %s: %w", p, err)
		}
		b.Files = append(b.Files, f)
	}
	for _, unit := range append(append([]string{}, fu.Enable...), fu.Disable...) {
		state, err := d.Systemd.UnitFileState(ctx, unit)
		if err != nil {
			return fmt.Errorf("reading the enablement of %s: %w", unit, err)
		}
		b.Units[unit] = state
	}
	return d.Host.WriteJSON(BackupPath, &b)
}

type backup struct {
	Files []hostFile `json:"files"`
	// Units maps units whose enablement the update changes to their
	// UnitFileState before it.
	Units map[string]string `json:"units"`
	// UnitFiles: the update touches unit files, so systemd must re-read
	// them after a restore.
	UnitFiles bool `json:"unitFiles"`
}

func (d *Daemon) writeFiles(ctx context.Context, fu *fileUpdate) error {
	for _, w := range fu.Writes {
		if err := d.Host.WriteFile(w); err != nil {
			return err
		}
	}
	for _, p := range fu.Removes {
		if err := d.Host.Remove(p); err != nil {
			return err
		}
	}
	if fu.PasswordHash != nil {
		if err := setPasswordHash(d.Host, *fu.PasswordHash); err != nil {
			return fmt.Errorf("setting the core user's password hash: %w", err)
		}
	}
	if err := d.Systemd.Disable(ctx, fu.Disable); err != nil {
		return fmt.Errorf("disabling %s: %w", strings.Join(fu.Disable, ", "), err)
	}
	if err := d.Systemd.Enable(ctx, fu.Enable); err != nil {
		return fmt.Errorf("enabling %s: %w", strings.Join(fu.Enable, ", "), err)
	}
	return nil
}

// restore puts back what the backup saved, if the backup was taken.
func (d *Daemon) restore(ctx context.Context, j *Journal) (bool, error) {
	if s := j.step(StepBackup); s == nil || !s.Done {
		return false, nil
	}
	var b backup
	found, err := d.Host.ReadJSON(BackupPath, &b)
	if err != nil || !found {
		return false, fmt.Errorf("reading the backup: %v", err)
	}
	var errs []error
	for _, f := range b.Files {
		if err := d.Host.Restore(f); err != nil {
			errs = append(errs, err)
		}
	}
	for _, unit := range sortedKeys(b.Units) {
		var err error
		switch b.Units[unit] {
		case "enabled":
			err = d.Systemd.Enable(ctx, []string{unit})
		case "disabled":
			err = d.Systemd.Disable(ctx, []string{unit})
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("restoring the enablement of %s: %w", unit, err))
		}
	}
	if b.UnitFiles {
		if err := d.Systemd.DaemonReload(ctx); err != nil {
			errs = append(errs, fmt.Errorf("daemon-reload after the restore: %w", err))
		}
	}
	return true, errors.Join(errs...)
}

// fail stops an update at a failed step: the previous files are restored,
// the node is Degraded with the step and the error, and the update is not
// retried until its target or plan changes. Nothing is rebooted.
func (d *Daemon) fail(ctx context.Context, node *corev1.Node, u *update, i int, boot string, stepErr error) error {
	j := u.j
	msg := fmt.Sprintf("step %s of the update to %s failed: %v", j.Steps[i].Title(), j.To, stepErr)
	restored, err := d.restore(ctx, j)
	switch {
	case err != nil:
		msg += fmt.Sprintf("; restoring the previous files failed: %v", err)
	case restored:
		msg += "; the previous files are restored"
	}
	j.Failed = &Failure{Step: j.Steps[i].Title(), Error: msg, At: time.Now().UTC()}
	j.EndBootID = boot
	if err := d.Host.WriteJSON(JournalPath, j); err != nil {
		d.Log.Error(err, "recording the failure in the journal")
	}
	d.Status.condition(mcfgv1.MachineConfigNodeUpdateExecuted, metav1.ConditionFalse, "StepFailed", msg)
	err = d.degraded(ctx, node, j.Plan.From, j.To, j.Pool, "StepFailed", msg)
	d.recordJournal(ctx, node, j)
	return err
}

// refuse degrades the node for a plan or config it will not execute;
// nothing was written.
func (d *Daemon) refuse(ctx context.Context, node *corev1.Node, current, desired, pool, reason string, err error) error {
	msg := fmt.Sprintf("refusing the update to %s: %v", desired, err)
	d.Status.condition(mcfgv1.MachineConfigNodeUpdatePrepared, metav1.ConditionFalse, reason, msg)
	err = d.degraded(ctx, node, current, desired, pool, reason, msg)
	if reason != "JournalCorrupt" {
		// Refused before anything ran. A corrupt journal is no new
		// update: its entry, if any, stays as last written.
		d.recordRefusal(ctx, node, current, desired, pool, msg)
	}
	return err
}

func (d *Daemon) degraded(ctx context.Context, node *corev1.Node, current, desired, pool, reason, msg string) error {
	degraded.WithLabelValues(d.NodeName).Set(1)
	d.Status.condition(mcfgv1.MachineConfigNodeNodeDegraded, metav1.ConditionTrue, reason, msg)
	d.Status.event(node, corev1.EventTypeWarning, reason, "Update", msg)
	return d.report(ctx, node, current, desired, map[string]string{ndpmcv1.StateAnnotation: ndpmcv1.StateDegraded, ndpmcv1.ReasonAnnotation: conditions.Truncate(msg, maxMessage)}, pool)
}

// report writes the node annotations given and the MachineConfigNode,
// skipping a write identical to the last.
func (d *Daemon) report(ctx context.Context, node *corev1.Node, current, desired string, annotations map[string]string, pool string) error {
	if current == "" {
		current = node.Annotations[ndpmcv1.CurrentConfigAnnotation]
		if c, ok := annotations[ndpmcv1.CurrentConfigAnnotation]; ok {
			current = c
		}
	}
	// The MachineConfigNode first: whoever sees the node Done finds its
	// conditions complete.
	if key := fmt.Sprintf("%s|%s|%s|%v", pool, current, desired, d.Status.conds); key != d.lastApplied {
		if err := d.Status.apply(ctx, pool, current, desired); err != nil {
			return transient(err)
		}
		d.lastApplied = key
	}
	if annotations != nil {
		if err := d.Status.annotate(ctx, node, annotations); err != nil {
			return transient(err)
		}
	}
	return nil
}
