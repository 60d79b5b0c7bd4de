package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// unitStarted is systemd's catalog message "A start job for unit … has
// finished successfully" (SD_MESSAGE_UNIT_STARTED): systemd's own record of
// each start of a unit, in the node's journal.
const unitStarted = "39f53479d3a045ac8e11786248231fbf"

// heldDrainTimeout bounds the wait for a drain held by a budget: quiet by
// design (the daemon's first attempt ends, and says DrainWaiting, after its
// 90 s attempt timeout), so a wait with its own condition, not a progress
// wait, whose stall bound is shorter.
const heldDrainTimeout = 5 * time.Minute

// vmScenarios: what an administrator would do and watch, through kubectl
// only, each outcome checked on the worker VMs themselves (their systemd,
// journal, files and boot IDs, through the guest agent).
func (c *cluster) vmScenarios(ctx context.Context) error {
	step("The worker pool, its kubelet.conf (01-worker-kubelet) and chrony MachineConfigs; the worker VMs labelled workers")
	base := c.s.path("01-worker-kubelet.yaml")
	if err := os.WriteFile(base, []byte(workerKubeletMC()), 0o644); err != nil {
		return err
	}
	if _, err := c.kubectlMust("apply", "-f", "examples/cluster/worker-pool.yaml", "-f", base, "-f", "examples/cluster/50-worker-chrony.yaml"); err != nil {
		return err
	}
	for _, w := range c.workers {
		if _, err := c.kubectlMust("label", "node", w.name, "node-role.kubernetes.io/worker="); err != nil {
			return err
		}
	}
	first, err := c.waitTargetSources(ctx, "", 3)
	if err != nil {
		return err
	}
	if err := c.waitWorkersDone(ctx, first, nil); err != nil {
		return err
	}
	c.kubectl("ndp", "status")

	chosen, err := chosenScenarios()
	if err != nil {
		return err
	}
	for _, sc := range []struct {
		name string
		run  func(context.Context) error
	}{
		{"leader", c.leaderScenario},
		{"preview", c.previewScenario},
		{"chrony", func(ctx context.Context) error { return c.chronyOnVMs(ctx, first) }},
		{"kubelet", c.kubeletConfigOnVMs},
		{"rollout", c.rolloutControlsOnVMs},
		{"reboot", c.rebootOnVMs},
		{"upgrade", c.upgradeOnVMs},
	} {
		if !chosen[sc.name] {
			fmt.Printf("# scenario %s skipped (NDP_CLUSTER_SCENARIOS=%s)\n", sc.name, os.Getenv("NDP_CLUSTER_SCENARIOS"))
			continue
		}
		t := time.Now()
		if err := sc.run(ctx); err != nil {
			return err
		}
		c.summary = append(c.summary, fmt.Sprintf("scenario %s: %s", sc.name, time.Since(t).Round(time.Second)))
	}
	return nil
}

// vmScenarioNames are the worker-VM scenarios, in the order they run;
// os-update names the drain-and-reboot one, which carries the OS update.
var vmScenarioNames = []string{"leader", "preview", "chrony", "kubelet", "rollout", "reboot", "upgrade"}

// chosenScenarios reads NDP_CLUSTER_SCENARIOS (make cluster SCENARIOS=...),
// a comma-separated subset of the worker-VM scenarios, for development:
// empty runs them all. The pool's first rollout always runs; each scenario
// stands on its own after it.
func chosenScenarios() (map[string]bool, error) {
	env := strings.TrimSpace(os.Getenv("NDP_CLUSTER_SCENARIOS"))
	chosen := map[string]bool{}
	if env == "" {
		for _, n := range vmScenarioNames {
			chosen[n] = true
		}
		return chosen, nil
	}
	for _, n := range strings.Split(env, ",") {
		n = strings.TrimSpace(n)
		if n == "os-update" {
			n = "reboot"
		}
		if !slices.Contains(vmScenarioNames, n) {
			return nil, fmt.Errorf("NDP_CLUSTER_SCENARIOS: no scenario %q (the worker-VM scenarios: %s, and os-update, the reboot one)", n, strings.Join(vmScenarioNames, ", "))
		}
		chosen[n] = true
	}
	return chosen, nil
}

// sourcesNow counts the worker pool's source MachineConfigs now: a
// scenario's rendering has as many plus those it adds, whichever ran before.
func (c *cluster) sourcesNow() int {
	out, _ := c.kubectlQuiet("get", "mcp", "worker", "-o", `jsonpath={range .spec.configuration.source[*]}{.name} {end}`)
	return len(strings.Fields(out))
}

// chronyOnVMs: the chrony change under the restart policy: chronyd
// restarted exactly once per node (systemd's journal), the file written
// with its mode and owner, no reboot (same boot ID), no node cordoned.
func (c *cluster) chronyOnVMs(ctx context.Context, current string) error {
	step("The chrony change on the worker VMs: chronyd restarted once per node, no cordon, no reboot")
	if err := c.ensureChronyPolicy(ctx); err != nil {
		return err
	}
	before, err := c.startsOnWorkers(ctx, "chrony.service")
	if err != nil {
		return err
	}
	sources := c.sourcesNow()
	if _, err := c.kubectlMust("apply", "-f", "examples/cluster/50-worker-chrony-v2.yaml"); err != nil {
		return err
	}
	target, err := c.waitTargetSources(ctx, current, sources)
	if err != nil {
		return err
	}
	if err := c.waitWorkersUncordoned(ctx, target, "a restart-only change"); err != nil {
		return err
	}
	for _, w := range c.workers {
		n, err := c.starts(ctx, w, "chrony.service")
		if err != nil {
			return err
		}
		stat, err := w.vm.Run(ctx, "stat", "-c", "%a %U:%G", "/etc/chrony.conf")
		if err != nil {
			return err
		}
		conf, err := w.vm.ReadFile(ctx, "/etc/chrony.conf")
		if err != nil {
			return err
		}
		boot, err := w.vm.BootID(ctx)
		if err != nil {
			return err
		}
		line := fmt.Sprintf("%s: chronyd started %d time(s) by the change; /etc/chrony.conf %s %q; boot %s (unchanged: %t)",
			w.name, n-before[w.name], strings.TrimSpace(stat), firstLine(string(conf), ""), boot[:8], boot == w.bootNow)
		fmt.Println(line)
		c.summary = append(c.summary, line)
		if n-before[w.name] != 1 || strings.TrimSpace(stat) != "644 root:root" || !strings.Contains(string(conf), "time1.example.com") || boot != w.bootNow {
			return fmt.Errorf("%s: want chronyd started once, /etc/chrony.conf 644 root:root with the new servers, the same boot", w.name)
		}
	}
	return nil
}

// kubeletConfigOnVMs: a KubeletConfig with the shipped kubelet-live
// policy, which reads inside kubelet.conf: previewed, rendered into
// 99-worker-generated-kubelet, planned as a kubelet restart; the kubelet
// restarted exactly once per node (systemd's journal), the new maxPods in
// the Node's capacity (the real kubelet read the file ndp-daemon wrote),
// the same boot, no node cordoned.
func (c *cluster) kubeletConfigOnVMs(ctx context.Context) error {
	step("A KubeletConfig (maxPods 150) under kubelet-live, a policy that reads inside kubelet.conf: the kubelet restarted once per node")
	if _, err := c.kubectlMust("apply", "-f", "examples/policies/kubelet-live.yaml"); err != nil {
		return err
	}
	if err := c.waitFor(ctx, "the kubelet-live policy to be accepted", "True",
		"get", "ndp", "kubelet-live", "-o", `jsonpath={.status.conditions[?(@.type=="Accepted")].status}`); err != nil {
		return err
	}
	const want = "Restart kubelet.service, no drain, no reboot (policy kubelet-live: maxPods changed)"
	preview, err := c.kubectlMust("apply", "--dry-run=server", "-f", "examples/cluster/kubeletconfig-max-pods.yaml")
	if err != nil {
		return err
	}
	if !strings.Contains(preview, want) {
		return fmt.Errorf("the KubeletConfig's dry-run did not preview %q:\n%s", want, preview)
	}
	c.summary = append(c.summary, "KubeletConfig preview: "+firstLine(preview, "Warning:"))
	before, err := c.startsOnWorkers(ctx, "kubelet.service")
	if err != nil {
		return err
	}
	current, _ := c.kubectlQuiet("get", "mcp", "worker", "-o", jsonTarget)
	sources := c.sourcesNow()
	if _, err := c.kubectlMust("apply", "-f", "examples/cluster/kubeletconfig-max-pods.yaml"); err != nil {
		return err
	}
	target, err := c.waitTargetSources(ctx, current, sources+1)
	if err != nil {
		return err
	}
	plan, _ := c.kubectlQuiet("get", "mc", target, "-o", `jsonpath={range .status.postConfigActions[*]}{.from}: {.actions[*].type} drain={.drain} reboot={.reboot}{"\n"}{end}`)
	fmt.Print(plan)
	c.kubectl("get", "kubeletconfig", "max-pods", "-o", `jsonpath={range .status.conditions[*]}{.type}={.status} {.message}{"\n"}{end}`)
	if err := c.waitWorkersUncordoned(ctx, target, "a kubelet restart"); err != nil {
		return err
	}
	for _, w := range c.workers {
		n, err := c.starts(ctx, w, "kubelet.service")
		if err != nil {
			return err
		}
		boot, err := w.vm.BootID(ctx)
		if err != nil {
			return err
		}
		// The kubelet reports its new capacity once it has restarted.
		pods := "150"
		if err := c.waitFor(ctx, w.name+"'s capacity of 150 pods", pods, "get", "node", w.name, "-o", "jsonpath={.status.capacity.pods}"); err != nil {
			return err
		}
		line := fmt.Sprintf("%s: kubelet started %d time(s) by the KubeletConfig; capacity %s pods; boot %s (unchanged: %t)",
			w.name, n-before[w.name], pods, boot[:8], boot == w.bootNow)
		fmt.Println(line)
		c.summary = append(c.summary, line)
		if n-before[w.name] != 1 || boot != w.bootNow {
			return fmt.Errorf("%s: want the kubelet started once, the same boot", w.name)
		}
	}
	return nil
}

// workerKubeletMC is the worker pool's kubelet.conf as a MachineConfig
// (the MCO's 01-worker-kubelet): what the VMs' first boot provisions.
func workerKubeletMC() string {
	return `apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 01-worker-kubelet
  labels:
    machineconfiguration.openshift.io/role: worker
spec:
  config:
    ignition: {version: 3.4.0}
    storage:
      files:
      - path: /etc/kubernetes/kubelet.conf
        mode: 420
        overwrite: true
        contents:
          source: data:text/plain;charset=utf-8;base64,` + base64.StdEncoding.EncodeToString([]byte(guestKubeletConfig())) + "\n"
}

// rebootOnVMs: a change that needs a drain and a reboot, with a workload
// spread over the workers and a PodDisruptionBudget: one node at a time
// cordoned, drained, rebooted for real, back, uncordoned; the workload
// never below its budget.
func (c *cluster) rebootOnVMs(ctx context.Context) error {
	n := len(c.workers)
	step("A workload spread over the workers: a Deployment of %d (one pod per node) and a PodDisruptionBudget (minAvailable %d)", n, n-1)
	workload := fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: %[1]d
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 2
      nodeSelector: {node-role.kubernetes.io/worker: ""}
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - topologyKey: kubernetes.io/hostname
            labelSelector: {matchLabels: {app: web}}
      containers:
      - {name: web, image: %[2]q}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: default}
spec:
  minAvailable: %[3]d
  selector: {matchLabels: {app: web}}
`, n, c.pauseImage, n-1)
	f := c.s.path("web.yaml")
	if err := os.WriteFile(f, []byte(workload), 0o644); err != nil {
		return err
	}
	if _, err := c.kubectlMust("apply", "-f", f); err != nil {
		return err
	}
	if err := c.waitFor(ctx, fmt.Sprintf("%d web pods ready and the budget computed", n), fmt.Sprintf("%d 1", n),
		"get", "deploy,pdb", "web", "-o", `jsonpath={.items[0].status.readyReplicas} {.items[1].status.disruptionsAllowed}`); err != nil {
		return err
	}
	c.kubectl("get", "pods", "-o", "wide")
	boots := map[string]int{}
	for _, w := range c.workers {
		b, err := c.bootCount(ctx, w)
		if err != nil {
			return err
		}
		boots[w.name] = b
	}

	step("A change the default policies answer with drain and reboot, with an OS update (osImageURL and a kernel argument, %s); the pool paused once its first worker is sent", osMachineConfig)
	current, _ := c.kubectlQuiet("get", "mcp", "worker", "-o", jsonTarget)
	sources := c.sourcesNow()
	osMC := c.s.path(osMachineConfig + ".yaml")
	if err := os.WriteFile(osMC, []byte(osUpdateMC), 0o644); err != nil {
		return err
	}
	callsBefore := map[string]int{}
	for _, w := range c.workers {
		calls, err := c.standinCalls(ctx, w)
		if err != nil {
			return err
		}
		callsBefore[w.name] = len(calls)
	}
	// With the rollout scenario's policy, the change waits for its
	// window, which opens a minute or two after the change.
	opens, err := c.openWindowSoon()
	if err != nil {
		return err
	}
	if _, err := c.kubectlMust("apply", "-f", "examples/cluster/60-worker-app.yaml", "-f", osMC); err != nil {
		return err
	}
	target, err := c.waitTargetSources(ctx, current, sources+2)
	if err != nil {
		return err
	}
	watch := c.watchWorkers(ctx)
	if !opens.IsZero() {
		if err := c.waitWindow(ctx, target, opens); err != nil {
			watch()
			return err
		}
	}
	t := time.Now()
	first := c.waitSent(ctx, target)
	if first == nil {
		watch()
		return fmt.Errorf("no worker was sent to %s", target)
	}
	if _, err := c.kubectlMust("patch", "mcp", "worker", "--type=merge", "-p", `{"spec":{"paused":true}}`); err != nil {
		watch()
		return err
	}

	step("%s: its daemon's pod deleted mid-update (as a crash would end it); the DaemonSet's next pod resumes", first.name)
	// Once cordoned: the update has started (the cordon is a journaled step).
	if err := c.waitFor(ctx, first.name+" cordoned", "true", "get", "node", first.name, "-o", "jsonpath={.spec.unschedulable}"); err != nil {
		watch()
		return err
	}
	if err := c.deleteDaemonPodOn(ctx, first.name); err != nil {
		watch()
		return err
	}
	err = c.waitNodesDone(ctx, []*worker{first}, target, nil)
	if err == nil {
		_, err = c.waitEvent(ctx, first.name, "Resumed", "after a restart of the daemon")
	}
	if err != nil {
		watch()
		return err
	}

	second := c.workers[0]
	if second == first {
		second = c.workers[1]
	}
	step("%s: sent with the budget at minAvailable %d (its drain held), then reset (a power cut) while held", second.name, n)
	if _, err := c.kubectlMust("patch", "pdb", "web", "--type=merge", "-p", fmt.Sprintf(`{"spec":{"minAvailable":%d}}`, n)); err != nil {
		watch()
		return err
	}
	if _, err := c.kubectlMust("patch", "mcp", "worker", "--type=merge", "-p", `{"spec":{"paused":false}}`); err != nil {
		watch()
		return err
	}
	if err := poll(ctx, heldDrainTimeout, second.name+"'s drain to be held by the budget", func() (bool, error) {
		logs, _ := c.kubectlQuiet("get", "events", "--field-selector", "involvedObject.name="+second.name, "-o", "jsonpath={.items[*].reason}")
		cordoned, _ := c.kubectlQuiet("get", "node", second.name, "-o", "jsonpath={.spec.unschedulable}")
		pod, _ := c.kubectlQuiet("get", "pods", "-l", "app=web", "--field-selector", "spec.nodeName="+second.name, "-o", "jsonpath={.items[*].metadata.name}")
		return cordoned == "true" && pod != "" && strings.Contains(logs, "DrainWaiting"), nil
	}); err != nil {
		watch()
		return err
	}
	time.Sleep(5 * time.Second) // the daemon asks, the budget refuses
	if err := second.vm.Reset(ctx); err != nil {
		watch()
		return err
	}
	fmt.Printf("%s: reset\n", second.name)
	if _, err := c.waitEvent(ctx, second.name, "Resumed", "at step drain after a reboot"); err != nil {
		watch()
		return err
	}
	step("The budget allows it again (minAvailable %d): %s drained, rebooted once, back", n-1, second.name)
	if _, err := c.kubectlMust("patch", "pdb", "web", "--type=merge", "-p", fmt.Sprintf(`{"spec":{"minAvailable":%d}}`, n-1)); err != nil {
		watch()
		return err
	}
	err = c.waitWorkersDone(ctx, target, func(w *worker) error {
		if err := c.waitFor(ctx, w.name+" uncordoned", "", "get", "node", w.name, "-o", "jsonpath={.spec.unschedulable}"); err != nil {
			return err
		}
		_, err := c.waitEvent(ctx, w.name, "Resumed", "after a reboot")
		return err
	})
	seen := watch()
	if err != nil {
		return err
	}
	took := time.Since(t)
	if err := c.waitFor(ctx, "the scheduler to place every web pod again", strconv.Itoa(n),
		"get", "deploy", "web", "-o", "jsonpath={.status.readyReplicas}"); err != nil {
		return err
	}
	c.kubectl("get", "pods", "-o", "wide")
	c.kubectl("ndp", "status")
	for _, w := range c.workers {
		b, err := c.bootCount(ctx, w)
		if err != nil {
			return err
		}
		boot, err := w.vm.BootID(ctx)
		if err != nil {
			return err
		}
		nodeBoot, _ := c.kubectlQuiet("get", "node", w.name, "-o", "jsonpath={.status.nodeInfo.bootID}")
		file, err := w.vm.ReadFile(ctx, "/etc/ndp-example/app.conf")
		if err != nil {
			return fmt.Errorf("%s: the new file: %w", w.name, err)
		}
		want, what := 1, "daemon pod deleted mid-update"
		if w == second {
			want, what = 2, "power cut during its drain, then its one planned reboot"
		}
		line := fmt.Sprintf("%s: boot %s -> %s (%d boots since the change, want %d: %s; the Node says %s); app.conf %q",
			w.name, w.bootNow[:8], boot[:8], b-boots[w.name], want, what, shortID(nodeBoot), strings.TrimSpace(string(file)))
		fmt.Println(line)
		fmt.Printf("%s: %s\n", w.name, c.bootCost(ctx, w))
		c.summary = append(c.summary, line)
		if b-boots[w.name] != want || boot == w.bootNow || nodeBoot != boot {
			return fmt.Errorf("%s: want %d boot(s), the last seen by the node and its Node object", w.name, want)
		}
		// Why it rebooted, as ndp recorded it: w.bootNow is still the boot
		// the update started from.
		// and how it was interrupted: the first's daemon pod deleted, the
		// second's power cut during its drain.
		resumed := "resumed after a restart of the daemon"
		if w == second {
			resumed = "resumed after an unplanned reboot (boot " + w.bootNow + " -> "
		}
		if err := c.whyRebooted(ctx, w.name, strings.TrimSpace(current), target, w.bootNow, boot, resumed); err != nil {
			return err
		}
		if err := c.osUpdatedOn(ctx, w, callsBefore[w.name], boot); err != nil {
			return err
		}
		w.bootNow = boot
	}
	line := fmt.Sprintf("reboots: %d nodes in %s, at most %d cordoned and %d out at once, web pods ready never below %d (lowest %d)",
		n, took.Round(time.Second), seen.maxCordoned, seen.maxOut, n-1, seen.minReady)
	c.summary = append(c.summary, line)
	if seen.maxCordoned != 1 || seen.maxOut != 1 || seen.minReady < n-1 {
		return fmt.Errorf("%s: want one node at a time, the budget kept", line)
	}
	return nil
}

// seen is what watchWorkers saw during a rollout.
type seen struct {
	maxCordoned int // workers unschedulable at the same time, at most
	minReady    int // ready web pods, at least (-1: no Deployment)
	// maxOut: workers out at the same time, at most: sent to a config
	// they do not run yet, not Done, cordoned or not Ready (the budget's
	// own count of unavailable nodes).
	maxOut int
	out    string // which, when maxOut was seen
}

// nodesOut reads jsonNodeRows: how many nodes are cordoned, and which are
// out (unavailable to the budget: updating, cordoned or not Ready).
func nodesOut(rows string) (cordoned int, out []string) {
	for _, l := range strings.Split(strings.TrimSpace(rows), "\n") {
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

// watchWorkers watches the workers and the web Deployment until the
// returned function is called, which returns what it saw.
func (c *cluster) watchWorkers(ctx context.Context) func() seen {
	ctx, cancel := context.WithCancel(ctx)
	var mu sync.Mutex
	s := seen{minReady: -1}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			out, err := c.kubectlQuiet("get", "nodes", "-l", "node-role.kubernetes.io/worker", "-o", "jsonpath="+jsonNodeRows)
			ready, rerr := c.kubectlQuiet("get", "deploy", "web", "-o", "jsonpath={.status.readyReplicas}")
			mu.Lock()
			if err == nil {
				cordoned, out := nodesOut(out)
				s.maxCordoned = max(s.maxCordoned, cordoned)
				if len(out) > s.maxOut {
					s.maxOut, s.out = len(out), strings.Join(out, ", ")
				}
			}
			if rerr == nil {
				r, _ := strconv.Atoi(strings.TrimSpace(ready))
				if s.minReady < 0 || r < s.minReady {
					s.minReady = r
				}
			}
			mu.Unlock()
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	return func() seen {
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return s
	}
}

// waitWorkersDone waits for every worker to run target, Done, as long as
// they make progress (followProgress), printing what changes; then calls
// each (if set) for each worker in the order they finished.
func (c *cluster) waitWorkersDone(ctx context.Context, target string, each func(*worker) error) error {
	return c.waitNodesDone(ctx, c.workers, target, each)
}

// waitNodesDone is waitWorkersDone for the workers ws.
func (c *cluster) waitNodesDone(ctx context.Context, ws []*worker, target string, each func(*worker) error) error {
	var order []*worker
	err := followProgress(ctx, "the worker nodes on "+target, ceilingFor(len(ws)), func() observation {
		v := c.observeNodes(workerNames(ws), target)
		for _, w := range ws {
			if slices.Contains(v.done, w.name) && !slices.Contains(order, w) {
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

// starts counts the starts of unit in the node's journal, over every boot
// of the node (the journal is persistent).
func (c *cluster) starts(ctx context.Context, w *worker, unit string) (int, error) {
	out, err := w.vm.Run(ctx, "journalctl", "--no-pager", "-o", "cat", "MESSAGE_ID="+unitStarted, "UNIT="+unit)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", w.name, err)
	}
	return strings.Count(out, "\n"), nil
}

// waitWorkersUncordoned waits for every worker to be done on target, and
// fails if a node was cordoned meanwhile: what a change without a drain
// promises.
func (c *cluster) waitWorkersUncordoned(ctx context.Context, target, what string) error {
	watch := c.watchWorkers(ctx)
	err := c.waitWorkersDone(ctx, target, nil)
	seen := watch()
	if err != nil {
		return err
	}
	if seen.maxCordoned != 0 {
		return fmt.Errorf("%s cordoned %d node(s)", what, seen.maxCordoned)
	}
	return nil
}

// startsOnWorkers counts the starts of unit on every worker.
func (c *cluster) startsOnWorkers(ctx context.Context, unit string) (map[string]int, error) {
	out := map[string]int{}
	for _, w := range c.workers {
		n, err := c.starts(ctx, w, unit)
		if err != nil {
			return nil, err
		}
		out[w.name] = n
	}
	return out, nil
}

// bootCount counts the node's boots in its persistent journal.
func (c *cluster) bootCount(ctx context.Context, w *worker) (int, error) {
	out, err := w.vm.Run(ctx, "journalctl", "--no-pager", "-q", "--list-boots")
	if err != nil {
		return 0, fmt.Errorf("%s: %w", w.name, err)
	}
	n := 0
	for _, l := range strings.Split(out, "\n") {
		if strings.TrimSpace(l) != "" {
			n++
		}
	}
	return n, nil
}

func shortID(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 8 {
		return s[:8]
	}
	return s
}

// upgradeOnVMs: ndp upgraded (a new image digest, applied as an
// administrator would: make install-manifests, kubectl apply) in the
// middle of a rollout of a chrony change: the DaemonSet's rolling update
// replaces the daemons between steps, the Deployment the controllers; the
// rollout completes with chronyd restarted exactly once per node.
func (c *cluster) upgradeOnVMs(ctx context.Context) error {
	step("ndp upgraded (a new image digest) in the middle of a rollout")
	root := filepath.Join(c.root, "bin", "image-root")
	if _, err := c.imageTool("build", "--out", c.s.path("ndp-image-2"), "--name", "ndp:upgrade", "--user", "65532:65532", "--entrypoint", "/ndp",
		"--label", "org.opencontainers.image.version=upgrade",
		"--file", "/ndp="+filepath.Join(root, "ndp"), "--file", "/ndp-controller="+filepath.Join(root, "ndp-controller"),
		"--file", "/ndp-daemon="+filepath.Join(root, "ndp-daemon")); err != nil {
		return err
	}
	upgraded, err := c.push(c.s.path("ndp-image-2"), registry+"/ndp:upgrade")
	if err != nil {
		return err
	}
	fmt.Printf("ndp %s -> %s\n", c.ndpImage, upgraded)
	before, err := c.startsOnWorkers(ctx, "chrony.service")
	if err != nil {
		return err
	}
	if err := c.ensureChronyPolicy(ctx); err != nil {
		return err
	}
	target, err := c.chronyChange(ctx, "time3.example.com")
	if err != nil {
		return err
	}
	if err := poll(ctx, 3*time.Minute, "a worker's update to start", func() (bool, error) {
		for _, w := range c.workers {
			out, _ := c.kubectlQuiet("get", "node", w.name, "-o", `jsonpath={.metadata.annotations.machineconfiguration\.openshift\.io/desiredConfig}`)
			if out == target {
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		return err
	}
	if err := c.installImage(upgraded); err != nil {
		return err
	}
	if err := c.waitWorkersDone(ctx, target, nil); err != nil {
		return err
	}
	if err := c.waitFor(ctx, "every ndp pod on the new image", strings.TrimSpace(strings.Repeat(upgraded+" ", 2+len(c.workers))),
		"-n", "ndp-system", "get", "pods", "--field-selector", "status.phase=Running", "-o", `jsonpath={.items[*].spec.containers[0].image}`); err != nil {
		return err
	}
	c.kubectl("-n", "ndp-system", "get", "pods", "-o", "wide")
	for _, w := range c.workers {
		n, err := c.starts(ctx, w, "chrony.service")
		if err != nil {
			return err
		}
		line := fmt.Sprintf("%s (ndp upgraded mid-rollout): chronyd started %d time(s) by the change", w.name, n-before[w.name])
		fmt.Println(line)
		c.summary = append(c.summary, line)
		if n-before[w.name] != 1 {
			return fmt.Errorf("%s: want chronyd started once", w.name)
		}
	}
	return nil
}

// waitSent waits for a worker to be sent to target (its desiredConfig) and
// returns it.
func (c *cluster) waitSent(ctx context.Context, target string) *worker {
	var sent *worker
	_ = poll(ctx, 3*time.Minute, "a worker sent to "+target, func() (bool, error) {
		for _, w := range c.workers {
			out, _ := c.kubectlQuiet("get", "node", w.name, "-o", `jsonpath={.metadata.annotations.machineconfiguration\.openshift\.io/desiredConfig}`)
			if out == target {
				sent = w
				return true, nil
			}
		}
		return false, nil
	})
	return sent
}
