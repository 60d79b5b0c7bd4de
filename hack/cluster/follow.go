package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
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
// signals that change (but the consoles' sizes).
func followProgress(ctx context.Context, what string, ceiling time.Duration, observe func() observation) error {
	p := newProgressWait(what, time.Now(), stall(), ceiling)
	for {
		v, changed, err := p.observe(time.Now(), observe())
		for _, l := range changed {
			if !strings.Contains(l, " console: ") {
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

// nodesView is one observation of nodes: the signals and which nodes are
// done on the target.
type nodesView struct {
	observation
	done []string
}

// observeNodes observes the nodes on their way to target ("": no target;
// then nothing is done and only a Degraded node is a failure). Progress:
// each node's configs, state, cordon, Ready and boot ID; its NodeHistory's
// last update and steps (the daemon records each step as it starts and
// ends); the pods on it (the daemon's own, evictions); the events about it
// (the daemon's Cordoned, DrainWaiting, Rebooting, Resumed; the kubelet's
// Starting); the size of its VM's console (a shutdown, a boot).
func (c *cluster) observeNodes(names []string, target string) nodesView {
	o := observation{progress: map[string]string{}}
	var v nodesView
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	rows := func(out string, err error, f func(name string, fields []string)) {
		if err != nil {
			return // unknown this time
		}
		for _, l := range strings.Split(out, "\n") {
			if fields := strings.Split(l, "\t"); len(fields) > 1 && want[fields[0]] {
				f(fields[0], fields[1:])
			}
		}
	}

	// The nodes.
	const a = `.metadata.annotations.machineconfiguration\.openshift\.io/`
	out, err := c.kubectlQuiet("get", "nodes", "-o", `jsonpath={range .items[*]}{.metadata.name}{"\t"}{`+a+`currentConfig}{"\t"}{`+a+`desiredConfig}{"\t"}{`+a+`state}{"\t"}{.spec.unschedulable}{"\t"}{.status.conditions[?(@.type=="Ready")].status}{"\t"}{.status.nodeInfo.bootID}{"\t"}{`+a+`reason}{"\n"}{end}`)
	var failed []string
	rows(out, err, func(name string, f []string) {
		if len(f) < 7 {
			return
		}
		current, desired, state, cordoned, ready, boot, reason := f[0], f[1], f[2], f[3], f[4], f[5], f[6]
		o.progress[name+" node"] = fmt.Sprintf("current=%s desired=%s state=%s cordoned=%s ready=%s boot=%s", current, desired, state, orNo(cordoned), ready, shortID(boot))
		if state == ndpmcv1.StateDegraded || state == "Unreconcilable" {
			failed = append(failed, fmt.Sprintf("%s is %s: %s", name, state, reason))
		}
		if target != "" && current == target && state == ndpmcv1.StateDone {
			v.done = append(v.done, name)
		}
	})

	// Their histories: the steps as the daemon starts and ends them.
	if out, err := c.kubectlQuiet("get", "nodehistories", "-o", "json"); err == nil {
		var l v1alpha1.NodeHistoryList
		if json.Unmarshal([]byte(out), &l) == nil {
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
	}

	// The pods on them.
	out, err = c.kubectlQuiet("get", "pods", "-A", "-o", `jsonpath={range .items[*]}{.spec.nodeName}{"\t"}{.metadata.namespace}/{.metadata.name} {.status.phase} ready={.status.containerStatuses[*].ready} restarts={.status.containerStatuses[*].restartCount}{"\n"}{end}`)
	if err == nil {
		pods := map[string][]string{}
		rows(out, nil, func(name string, f []string) { pods[name] = append(pods[name], f[0]) })
		for _, n := range names {
			slices.Sort(pods[n])
			o.progress[n+" pods"] = strings.Join(pods[n], ", ")
		}
	}

	// The events about them; a repeated event (a drain still waiting)
	// counts up.
	out, err = c.kubectlQuiet("get", "events", "-A", "--field-selector", "involvedObject.kind=Node", "-o", `jsonpath={range .items[*]}{.involvedObject.name}{"\t"}{.metadata.name}{"\t"}{.count}{"\t"}{.series.count}{"\t"}{.reason}{"\n"}{end}`)
	if err == nil {
		events := map[string]int{}
		reasons := map[string]map[string]bool{}
		rows(out, nil, func(name string, f []string) {
			if len(f) < 4 {
				return
			}
			var n, s int
			fmt.Sscan(f[1], &n)
			fmt.Sscan(f[2], &s)
			events[name] += 1 + max(n, s)
			if reasons[name] == nil {
				reasons[name] = map[string]bool{}
			}
			reasons[name][f[3]] = true
		})
		for _, n := range names {
			var rs []string
			for r := range reasons[n] {
				rs = append(rs, r)
			}
			slices.Sort(rs)
			o.progress[n+" events"] = fmt.Sprintf("%d (%s)", events[n], strings.Join(rs, " "))
		}
	}

	// Their VMs' consoles: a shutdown and a boot write there, before the
	// kubelet says anything.
	for _, w := range c.workers {
		if w.vm == nil || !want[w.name] {
			continue
		}
		if st, err := os.Stat(w.vm.SerialLog()); err == nil {
			o.progress[w.name+" console"] = fmt.Sprintf("%d bytes", st.Size())
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

func workerNames(ws []*worker) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.name
	}
	return out
}
