package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
)

// followInterval is the pause between two observations of a progress wait.
const followInterval = 2 * time.Second

// stall is the stall bound; NDP_CLUSTER_STALL (a Go duration) changes it,
// for a machine slower than any this was tried on.
func stall() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("NDP_CLUSTER_STALL")); err == nil && d > 0 {
		return d
	}
	return stallBound
}

// followProgress observes until progressWait ends the wait, printing the
// signals that change (but the consoles' sizes and the units' CPU times).
func followProgress(ctx context.Context, what string, ceiling time.Duration, observe func() observation) error {
	p := newProgressWait(what, time.Now(), stall(), ceiling)
	for {
		v, changed, err := p.observe(time.Now(), observe())
		for _, l := range changed {
			// A console's size and a unit's CPU time move all the time:
			// progress, but not worth a line each.
			if !strings.Contains(l, " console: ") && !strings.Contains(l, " units: ") {
				fmt.Printf("  %s %s\n", time.Now().Format("15:04:05"), l)
			}
		}
		switch v {
		case waitDone:
			return nil
		case waitContinue:
		default:
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(followInterval):
		}
	}
}

// What observeNodes reads, a row per object, tab-separated, the node's
// name first.
const (
	mcAnnotation = `.metadata.annotations.machineconfiguration\.openshift\.io/`
	// jsonNodeRow is one Node's row (nodeRow in Go); jsonNodeRows a list's.
	jsonNodeRow   = `{.metadata.name}{"\t"}{` + mcAnnotation + `currentConfig}{"\t"}{` + mcAnnotation + `desiredConfig}{"\t"}{` + mcAnnotation + `state}{"\t"}{.spec.unschedulable}{"\t"}{.status.conditions[?(@.type=="Ready")].status}{"\t"}{.status.nodeInfo.bootID}{"\t"}{` + mcAnnotation + `reason}{"\n"}`
	jsonNodeRows  = `{range .items[*]}` + jsonNodeRow + `{end}`
	jsonPodRows   = `{range .items[*]}{.spec.nodeName}{"\t"}{.metadata.namespace}/{.metadata.name} {.status.phase} ready={.status.containerStatuses[*].ready} restarts={.status.containerStatuses[*].restartCount}{"\n"}{end}`
	jsonEventRows = `{range .items[*]}{.involvedObject.name}{"\t"}{.metadata.name}{"\t"}{.count}{"\t"}{.series.count}{"\t"}{.reason}{"\n"}{end}`
)

// nodesView is one observation of nodes: the signals and which nodes are
// done on the target.
type nodesView struct {
	observation
	done []string
}

// nodeReads is what observeNodes read, each "" with ok false where the
// read failed (then its signals are unknown this time).
type nodeReads struct {
	nodes, histories, pods, events         string // jsonNodeRows, NodeHistoryList JSON, jsonPodRows, jsonEventRows
	nodesOK, historiesOK, podsOK, eventsOK bool
	consoles                               map[string]int64 // VM console sizes by node
	// units: each VM's share copy, containerd and kubelet as its systemd shows them
	// (state and CPU time), by node; absent while the guest does not
	// answer (a reboot).
	units map[string]string
}

// observeNodes observes the nodes on their way to target ("": no target;
// then nothing is done and only a Degraded node is a failure): it reads,
// judgeNodes judges.
func (c *Cluster) observeNodes(names []string, target string) nodesView {
	var r nodeReads
	var err error
	r.nodes, err = c.KubectlQuiet("get", "nodes", "-o", "jsonpath="+jsonNodeRows)
	r.nodesOK = err == nil
	r.histories, err = c.KubectlQuiet("get", "nodehistories", "-o", "json")
	r.historiesOK = err == nil
	r.pods, err = c.KubectlQuiet("get", "pods", "-A", "-o", "jsonpath="+jsonPodRows)
	r.podsOK = err == nil
	r.events, err = c.KubectlQuiet("get", "events", "-A", "--field-selector", "involvedObject.kind=Node", "-o", "jsonpath="+jsonEventRows)
	r.eventsOK = err == nil
	r.consoles = map[string]int64{}
	for _, w := range c.Workers {
		if w.VM == nil {
			continue
		}
		if st, err := os.Stat(w.VM.SerialLog()); err == nil {
			r.consoles[w.Name] = st.Size()
		}
	}
	r.units = c.units.read(c.Workers)
	return judgeNodes(names, target, r)
}

// unitsEvery bounds how often observeNodes reads the VMs' units: a
// systemctl in a guest under TCG costs it a sixth of a CPU-second, every
// 2 s a share of what the boots it watches need.
const unitsEvery = 10 * time.Second

// guestUnits reads the CPU time and state of the units a boot goes
// through on each worker VM, at most every unitsEvery (in between, what
// was read last).
type guestUnits struct {
	mu   sync.Mutex
	at   time.Time
	last map[string]string
}

// read: after a boot, the console falls quiet while the kubelet starts,
// the node turns Ready and the daemon's pod comes back: on a busy machine
// that can take over a minute with no other sign; the units' CPU time
// moves all along.
func (g *guestUnits) read(workers []*Worker) map[string]string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.last != nil && time.Since(g.at) < unitsEvery {
		return g.last
	}
	units := map[string]string{}
	for _, w := range workers {
		if w.VM == nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		out, err := w.VM.Run(ctx, "systemctl", "show", "-p", "Id,ActiveState,SubState,CPUUsageNSec", "node-share.service", "containerd.service", "kubelet.service")
		cancel()
		if err == nil {
			units[w.Name] = strings.Join(strings.Fields(out), " ")
		}
	}
	g.at, g.last = time.Now(), units
	return units
}

// judgeNodes turns what was read of the nodes into an observation.
// Progress: each node's configs, state, cordon, Ready and boot ID; its
// NodeHistory's last update and steps (the daemon records each step as it
// starts and ends); the pods on it (the daemon's own, evictions) and ndp's
// pods wherever they run (the controller sends the next node); the
// events about it (the daemon's Cordoned, DrainWaiting, Rebooting,
// Resumed; the kubelet's Starting), a repeated one counting up; the size
// of its VM's console (a shutdown and a boot write there before the
// kubelet says anything). Failed: a node Degraded (but for a reboot
// timeout: it goes on once back) or Unreconcilable, or
// its update to target Failed (a step, or the update) in its history.
// Done: every node on target, Done.
func judgeNodes(names []string, target string, r nodeReads) nodesView {
	o := observation{progress: map[string]string{}}
	var v nodesView
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	rows := func(out string, f func(name string, fields []string)) {
		for _, l := range strings.Split(out, "\n") {
			if fields := strings.Split(l, "\t"); len(fields) > 1 && want[fields[0]] {
				f(fields[0], fields[1:])
			}
		}
	}

	var failed []string
	if r.nodesOK {
		rows(r.nodes, func(name string, f []string) {
			if len(f) < 7 {
				return
			}
			current, desired, state, cordoned, ready, boot, reason := f[0], f[1], f[2], f[3], f[4], f[5], f[6]
			o.progress[name+" node"] = fmt.Sprintf("current=%s desired=%s state=%s cordoned=%s ready=%s boot=%s", current, desired, state, orNo(cordoned), ready, ShortID(boot))
			// A node the rollout controller marked for not coming back from
			// its reboot goes on once it is back: waited for, as a reboot.
			overdue := state == ndpmcv1.StateDegraded && strings.HasPrefix(reason, v1alpha1.RebootTimeoutReason+":")
			if (state == ndpmcv1.StateDegraded && !overdue) || state == "Unreconcilable" {
				failed = append(failed, fmt.Sprintf("%s is %s: %s", name, state, reason))
			}
			if target != "" && current == target && state == ndpmcv1.StateDone {
				v.done = append(v.done, name)
			}
		})
	}

	var l v1alpha1.NodeHistoryList
	if r.historiesOK && json.Unmarshal([]byte(r.histories), &l) == nil {
		for _, h := range l.Items {
			if !want[h.Name] || len(h.Status.Updates) == 0 {
				continue
			}
			u := h.Status.Updates[0]
			var steps []string
			for _, s := range u.Steps {
				steps = append(steps, s.Name+" "+s.Result)
			}
			o.progress[h.Name+" history"] = fmt.Sprintf("to %s %s: %s", u.To, u.Result, strings.Join(steps, ", "))
			if target != "" && u.To == target {
				if why := updateFailure(u); why != "" {
					failed = append(failed, h.Name+": "+why)
				}
			}
		}
	}

	if r.podsOK {
		pods := map[string][]string{}
		rows(r.pods, func(name string, f []string) { pods[name] = append(pods[name], f[0]) })
		for _, n := range names {
			slices.Sort(pods[n])
			o.progress[n+" pods"] = strings.Join(pods[n], ", ")
		}
		// ndp's own pods wherever they are: the controller that sends
		// the next node, replaced in an upgrade.
		var ndp []string
		for _, l := range strings.Split(r.pods, "\n") {
			if _, pod, ok := strings.Cut(l, "\t"); ok && strings.HasPrefix(pod, "ndp-system/") {
				ndp = append(ndp, pod)
			}
		}
		slices.Sort(ndp)
		o.progress["ndp pods"] = strings.Join(ndp, ", ")
	}

	if r.eventsOK {
		events := map[string]int{}
		reasons := map[string]map[string]bool{}
		rows(r.events, func(name string, f []string) {
			if len(f) < 4 {
				return
			}
			var n, s int
			fmt.Sscan(f[1], &n)
			fmt.Sscan(f[2], &s)
			events[name] += max(1, n, s)
			if reasons[name] == nil {
				reasons[name] = map[string]bool{}
			}
			reasons[name][f[3]] = true
		})
		for _, n := range names {
			rs := slices.Sorted(maps.Keys(reasons[n]))
			o.progress[n+" events"] = fmt.Sprintf("%d (%s)", events[n], strings.Join(rs, " "))
		}
	}

	for n, size := range r.consoles {
		if want[n] {
			o.progress[n+" console"] = fmt.Sprintf("%d bytes", size)
		}
	}
	for n, u := range r.units {
		if want[n] {
			o.progress[n+" units"] = u
		}
	}

	o.failed = strings.Join(failed, "; ")
	o.done = target != "" && len(v.done) == len(names)
	v.observation = o
	return v
}

// updateFailure says why an update failed, from its history: its failed
// step, or its message.
func updateFailure(u v1alpha1.NodeUpdate) string {
	for _, s := range u.Steps {
		if s.Result == "Failed" {
			return fmt.Sprintf("the update to %s failed at step %s: %s", u.To, s.Name, s.Detail)
		}
	}
	if u.Result == v1alpha1.UpdateFailed {
		return fmt.Sprintf("the update to %s failed: %s", u.To, u.Message)
	}
	return ""
}

func orNo(s string) string {
	if s == "" {
		return "false"
	}
	return s
}

func workerNames(ws []*Worker) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.Name
	}
	return out
}
