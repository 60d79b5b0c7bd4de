package framework

// The waits and checks the scenarios share: each reads the cluster through
// kubectl (or a worker VM through its guest agent), and a wait on a node's
// update follows its progress (followProgress) rather than a fixed bound.

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// DeleteDaemonPod deletes the daemon's pod on the node at once (as a crash
// or a reboot would end it) and waits for the DaemonSet's next pod there.
func (c *Cluster) DeleteDaemonPod(ctx context.Context) error {
	return c.DeleteDaemonPodOn(ctx, NodeName)
}

// DeleteDaemonPodOn deletes the daemon's pod on node and waits for the
// DaemonSet's next one there.
func (c *Cluster) DeleteDaemonPodOn(ctx context.Context, node string) error {
	get := []string{"-n", "ndp-system", "get", "pods", "-l", "app.kubernetes.io/name=ndp-daemon", "--field-selector", "spec.nodeName=" + node}
	old, err := c.KubectlMust(append(get, "-o", "jsonpath={.items[0].metadata.name}")...)
	if err != nil {
		return err
	}
	if _, err := c.KubectlMust("-n", "ndp-system", "delete", "pod", old, "--grace-period=0", "--force", "--wait=false"); err != nil {
		return err
	}
	// The new pod's start (the image from the node's cache, the kubelet
	// and containerd under TCG) is followed, not timed: it may take
	// minutes on a loaded machine, and its progress shows.
	return followProgress(ctx, "the DaemonSet's new pod on "+node, ceilingFor(1), func() observation {
		v := c.observeNodes([]string{node}, "")
		out, err := c.KubectlQuiet(append(get, "-o", `jsonpath={range .items[*]}{.metadata.name} {.status.phase}{"\n"}{end}`)...)
		if err != nil {
			return v.observation
		}
		v.observation.progress["daemon pods on "+node] = out
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) == 2 && f[0] != old && f[1] == "Running" {
				v.observation.done = true
			}
		}
		return v.observation
	})
}

// WaitEvent waits for an event of node with reason whose message holds
// substr and was not seen by an earlier call, and returns its message. It
// waits as long as the node makes progress (followProgress): the event may
// come from the daemon's next pod, after a worker VM's reboot, the kubelet
// and the pod's start under TCG.
func (c *Cluster) WaitEvent(ctx context.Context, node, reason, substr string) (string, error) {
	var msg string
	err := followProgress(ctx, fmt.Sprintf("a %s event (%q) on %s", reason, substr, node), ceilingFor(1), func() observation {
		v := c.observeNodes([]string{node}, "")
		out, err := c.KubectlQuiet("get", "events", "--field-selector", "involvedObject.name="+node+",reason="+reason,
			"-o", `jsonpath={range .items[*]}{.metadata.uid} {.message}{"\n"}{end}`)
		if err != nil {
			return v.observation
		}
		for _, l := range strings.Split(out, "\n") {
			uid, m, _ := strings.Cut(l, " ")
			if strings.Contains(m, substr) && !c.seenEvents[uid] {
				if c.seenEvents == nil {
					c.seenEvents = map[string]bool{}
				}
				c.seenEvents[uid], msg = true, m
				v.observation.done = true
				break
			}
		}
		return v.observation
	})
	return msg, err
}

// Leader waits for the controller's leader election lease to be held by a
// pod other than not, and returns the pod's name.
func (c *Cluster) Leader(ctx context.Context, not string) (string, error) {
	var holder string
	err := Poll(ctx, 3*time.Minute, "a leader other than "+not, func() (bool, error) {
		out, _ := c.KubectlQuiet("-n", "ndp-system", "get", "lease", "-o", "jsonpath={.items[*].spec.holderIdentity}")
		for _, h := range strings.Fields(out) {
			pod, _, _ := strings.Cut(h, "_")
			if strings.HasPrefix(pod, "ndp-controller-") && pod != not {
				holder = pod
				return true, nil
			}
		}
		return false, nil
	})
	return holder, err
}

// WaitTargetSources waits for the pool's target to move from old to a
// rendering of n MachineConfigs, and returns it.
func (c *Cluster) WaitTargetSources(ctx context.Context, old string, n int) (string, error) {
	var target string
	err := Poll(ctx, 2*time.Minute, fmt.Sprintf("a rendering of %d MachineConfigs", n), func() (bool, error) {
		out, err := c.KubectlQuiet("get", "mcp", "worker", "-o", `jsonpath={.spec.configuration.name} {range .spec.configuration.source[*]}{.name} {end}`)
		f := strings.Fields(out)
		if err != nil || len(f) == 0 || f[0] == old {
			return false, nil
		}
		target = f[0]
		return len(f)-1 == n, nil
	})
	return target, err
}

// WaitNodeDone waits for the node to run target, Done, as long as it makes
// progress (followProgress), printing what changes.
func (c *Cluster) WaitNodeDone(ctx context.Context, target string) error {
	return followProgress(ctx, "the node on "+target, ceilingFor(1), func() observation {
		return c.observeNodes([]string{NodeName}, target).observation
	})
}

// Count counts the lines of a file of the node (without worker VMs),
// those containing substr: a simulated unit's trace, or the reboots the
// daemon recorded.
func (c *Cluster) Count(name, substr string) int {
	p := c.s.path("node", name)
	if name == "reboots" {
		p = filepath.Join(c.Host, "reboots")
	}
	b, _ := os.ReadFile(p)
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		if l != "" && strings.Contains(l, substr) {
			n++
		}
	}
	return n
}

// FirstLine is the first line of s that starts with prefix.
func FirstLine(s, prefix string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

// unitStarted is systemd's catalog message "A start job for unit … has
// finished successfully" (SD_MESSAGE_UNIT_STARTED): systemd's own record of
// each start of a unit, in the node's journal.
const unitStarted = "39f53479d3a045ac8e11786248231fbf"

// SourcesNow counts the worker pool's source MachineConfigs now: a
// scenario's rendering has as many plus those it adds, whichever ran before.
func (c *Cluster) SourcesNow() int {
	out, _ := c.KubectlQuiet("get", "mcp", "worker", "-o", `jsonpath={range .spec.configuration.source[*]}{.name} {end}`)
	return len(strings.Fields(out))
}

// Seen is what WatchWorkers saw during a rollout.
type Seen struct {
	MaxCordoned int // workers unschedulable at the same time, at most
	MinReady    int // ready web pods, at least (-1: no Deployment)
	// MaxOut: workers out at the same time, at most: sent to a config
	// they do not run yet, not Done, cordoned or not Ready (the budget's
	// own count of unavailable nodes).
	MaxOut int
	Out    string // which, when MaxOut was seen
}

// nodeRow is n's row as jsonNodeRow prints it.
func nodeRow(n *corev1.Node) string {
	ready := ""
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			ready = string(c.Status)
		}
	}
	unschedulable := ""
	if n.Spec.Unschedulable {
		unschedulable = "true"
	}
	a := func(k string) string { return n.Annotations["machineconfiguration.openshift.io/"+k] }
	return strings.Join([]string{n.Name, a("currentConfig"), a("desiredConfig"), a("state"), unschedulable, ready, n.Status.NodeInfo.BootID, a("reason")}, "\t")
}

// nodesOut reads jsonNodeRows: how many nodes are cordoned, and which are
// out (unavailable to the budget: updating, cordoned or not Ready).
func nodesOut(rows string) (cordoned int, out []string) {
	for _, l := range strings.Split(strings.Trim(rows, "\n"), "\n") {
		f := strings.Split(l, "\t")
		if len(f) < 6 || f[0] == "" {
			continue
		}
		name, cur, desired, state, unschedulable, ready := f[0], f[1], f[2], f[3], f[4], f[5]
		if unschedulable == "true" {
			cordoned++
		}
		if cur != desired || (state != "" && state != "Done") || unschedulable == "true" || ready != "True" {
			out = append(out, name)
		}
	}
	return cordoned, out
}

// WatchWorkers watches the workers and the web Deployment until the
// returned function is called, which returns what it saw: every state
// they passed through (kubectl --watch), not samples of them.
func (c *Cluster) WatchWorkers(ctx context.Context) func() Seen {
	return c.watchWorkers(ctx).stop
}

// workerWatch is what WatchWorkers runs: seen so far, and how to stop.
type workerWatch struct {
	mu     sync.Mutex
	s      Seen
	rows   map[string]string // a worker's name: its nodeRow
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func (c *Cluster) watchWorkers(ctx context.Context) *workerWatch {
	ctx, cancel := context.WithCancel(ctx)
	w := &workerWatch{s: Seen{MinReady: -1}, rows: map[string]string{}, cancel: cancel}
	w.wg.Add(2)
	go func() {
		defer w.wg.Done()
		c.kubectlWatch(ctx, w.node, "get", "nodes", "-l", "node-role.kubernetes.io/worker")
	}()
	go func() {
		defer w.wg.Done()
		c.kubectlWatch(ctx, w.deployment, "get", "deploy", "web")
	}()
	return w
}

func (w *workerWatch) node(raw json.RawMessage) {
	var n corev1.Node
	if json.Unmarshal(raw, &n) != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.rows[n.Name] = nodeRow(&n)
	cordoned, out := nodesOut(strings.Join(slices.Collect(maps.Values(w.rows)), "\n"))
	w.s.MaxCordoned = max(w.s.MaxCordoned, cordoned)
	if len(out) > w.s.MaxOut {
		slices.Sort(out)
		w.s.MaxOut, w.s.Out = len(out), strings.Join(out, ", ")
	}
}

func (w *workerWatch) deployment(raw json.RawMessage) {
	var d appsv1.Deployment
	if json.Unmarshal(raw, &d) != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if r := int(d.Status.ReadyReplicas); w.s.MinReady < 0 || r < w.s.MinReady {
		w.s.MinReady = r
	}
}

// seen is what the watch saw so far.
func (w *workerWatch) seen() Seen {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.s
}

func (w *workerWatch) stop() Seen {
	w.cancel()
	w.wg.Wait()
	return w.seen()
}

// WaitWorkersDone waits for every worker to run target, Done, as long as
// they make progress (followProgress), printing what changes; then calls
// each (if set) for each worker in the order they finished.
func (c *Cluster) WaitWorkersDone(ctx context.Context, target string, each func(*Worker) error) error {
	return c.WaitNodesDone(ctx, c.Workers, target, each)
}

// WaitNodesDone is WaitWorkersDone for the workers ws.
func (c *Cluster) WaitNodesDone(ctx context.Context, ws []*Worker, target string, each func(*Worker) error) error {
	var order []*Worker
	err := followProgress(ctx, "the worker nodes on "+target, ceilingFor(len(ws)), func() observation {
		v := c.observeNodes(workerNames(ws), target)
		for _, w := range ws {
			if slices.Contains(v.done, w.Name) && !slices.Contains(order, w) {
				order = append(order, w)
			}
		}
		return v.observation
	})
	if err != nil || each == nil {
		return err
	}
	for _, w := range order {
		if err := each(w); err != nil {
			return err
		}
	}
	return nil
}

// Starts counts the starts of unit in the node's journal, over every boot
// of the node (the journal is persistent).
func (c *Cluster) Starts(ctx context.Context, w *Worker, unit string) (int, error) {
	out, err := w.VM.Run(ctx, "journalctl", "--no-pager", "-o", "cat", "MESSAGE_ID="+unitStarted, "UNIT="+unit)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", w.Name, err)
	}
	return strings.Count(out, "\n"), nil
}

// WaitWorkersUncordoned waits for every worker to be done on target, and
// fails if a node was cordoned meanwhile: what a change without a drain
// promises.
func (c *Cluster) WaitWorkersUncordoned(ctx context.Context, target, what string) error {
	watch := c.WatchWorkers(ctx)
	err := c.WaitWorkersDone(ctx, target, nil)
	seen := watch()
	if err != nil {
		return err
	}
	if seen.MaxCordoned != 0 {
		return fmt.Errorf("%s cordoned %d node(s)", what, seen.MaxCordoned)
	}
	return nil
}

// StartsOnWorkers counts the starts of unit on every worker.
func (c *Cluster) StartsOnWorkers(ctx context.Context, unit string) (map[string]int, error) {
	out := map[string]int{}
	for _, w := range c.Workers {
		n, err := c.Starts(ctx, w, unit)
		if err != nil {
			return nil, err
		}
		out[w.Name] = n
	}
	return out, nil
}

// BootCount counts the node's boots in its persistent journal.
func (c *Cluster) BootCount(ctx context.Context, w *Worker) (int, error) {
	out, err := w.VM.Run(ctx, "journalctl", "--no-pager", "-q", "--list-boots")
	if err != nil {
		return 0, fmt.Errorf("%s: %w", w.Name, err)
	}
	n := 0
	for _, l := range strings.Split(out, "\n") {
		if strings.TrimSpace(l) != "" {
			n++
		}
	}
	return n, nil
}

// ShortID is a boot ID or config hash cut to its first 8 characters.
func ShortID(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 8 {
		return s[:8]
	}
	return s
}

// WaitSent waits for a worker to be sent to target (its desiredConfig) and
// returns it.
func (c *Cluster) WaitSent(ctx context.Context, target string) *Worker {
	var sent *Worker
	_ = Poll(ctx, 3*time.Minute, "a worker sent to "+target, func() (bool, error) {
		for _, w := range c.Workers {
			out, _ := c.KubectlQuiet("get", "node", w.Name, "-o", `jsonpath={.metadata.annotations.machineconfiguration\.openshift\.io/desiredConfig}`)
			if out == target {
				sent = w
				return true, nil
			}
		}
		return false, nil
	})
	return sent
}

// ApplyText applies a manifest written into the work directory as name.
func (c *Cluster) ApplyText(name, text string) error {
	f := c.s.path(name)
	if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
		return err
	}
	_, err := c.KubectlMust("apply", "-f", f)
	return err
}

// WaitAlert waits until Prometheus says BackupAlert fires (or no longer
// does).
func (c *Cluster) WaitAlert(ctx context.Context, firing bool) error {
	what := BackupAlert + " firing"
	if !firing {
		what = BackupAlert + " resolved"
	}
	return followProgress(ctx, what, minCeiling, func() observation {
		o := c.clusterProgress()
		out, err := c.promQuery(fmt.Sprintf(`ALERTS{alertname=%q,alertstate="firing"}`, BackupAlert))
		if err != nil {
			return o
		}
		metric, _ := c.promQuery(BackupMetric)
		o.progress["alert"], o.progress[BackupMetric] = strings.Join(promValues(out), ", "), strings.Join(promValues(metric), ", ")
		o.done = (len(promValues(out)) > 0) == firing
		return o
	})
}

// WaitPoolHeld waits for the worker pool's RolloutHeld condition to say
// reason.
func (c *Cluster) WaitPoolHeld(ctx context.Context, reason string) error {
	return c.WaitPoolHeldBefore(ctx, reason, time.Time{})
}

// WaitPoolHeldBefore is WaitPoolHeld that fails once deadline (if set)
// passes: a hold seen too late proves nothing.
func (c *Cluster) WaitPoolHeldBefore(ctx context.Context, reason string, deadline time.Time) error {
	return followProgress(ctx, "the worker pool held: "+reason, minCeiling, func() observation {
		o := c.clusterProgress()
		out, err := c.KubectlQuiet("get", "mcp", "worker", "-o", `jsonpath={.status.conditions[?(@.type=="RolloutHeld")].message}`)
		if err == nil {
			o.progress["RolloutHeld"] = out
			o.done = strings.Contains(out, reason)
		}
		if !o.done && !deadline.IsZero() && time.Now().After(deadline) {
			o.failed = fmt.Sprintf("not held by %s %s (RolloutHeld: %q)", deadline.Format("15:04:05"), reason, out)
		}
		return o
	})
}

// SentTo names the workers whose desired config is target.
func (c *Cluster) SentTo(target string) []string {
	var sent []string
	for _, w := range c.Workers {
		out, _ := c.KubectlQuiet("get", "node", w.Name, "-o", `jsonpath={.metadata.annotations.machineconfiguration\.openshift\.io/desiredConfig}`)
		if out == target {
			sent = append(sent, w.Name)
		}
	}
	return sent
}

// GrepLine is the first line of text containing s.
func GrepLine(text, s string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			return strings.TrimSpace(l)
		}
	}
	return ""
}
