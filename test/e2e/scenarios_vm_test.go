package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/test/framework"
)

// The scenarios with worker VMs: what an administrator would do and
// watch, through kubectl only, each outcome checked on the worker VMs
// themselves (their systemd, journal, files and boot IDs, through the
// guest agent).

// heldDrainTimeout bounds the wait for a drain held by a budget: quiet by
// design (the daemon's first attempt ends, and says DrainWaiting, after its
// 90 s attempt timeout), so a wait with its own condition, not a progress
// wait, whose stall bound is shorter.
const heldDrainTimeout = 5 * time.Minute

// vmPool: the worker pool with its kubelet.conf and chrony
// MachineConfigs, the worker VMs labelled workers, and the pool's first
// rollout.
func (s *suite) vmPool(t testing.TB) {
	c, ctx := s.c, s.ctx
	c.Step("The worker pool, its kubelet.conf (01-worker-kubelet) and chrony MachineConfigs; the worker VMs labelled workers")
	base := c.Path("01-worker-kubelet.yaml")
	if err := os.WriteFile(base, []byte(framework.WorkerKubeletMC()), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := c.KubectlMust("apply", "-f", "examples/cluster/worker-pool.yaml", "-f", base, "-f", "examples/cluster/50-worker-chrony.yaml"); err != nil {
		t.Fatal(err)
	}
	for _, w := range c.Workers {
		if _, err := c.KubectlMust("label", "node", w.Name, "node-role.kubernetes.io/worker="); err != nil {
			t.Fatal(err)
		}
	}
	var err error
	if s.first, err = c.WaitTargetSources(ctx, "", 3); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitWorkersDone(ctx, s.first, nil); err != nil {
		t.Fatal(err)
	}
	c.Kubectl("ndp", "status")
}

// chronyOnVMs: the chrony change under the restart policy: chronyd
// restarted exactly once per node (systemd's journal), the file written
// with its mode and owner, no reboot (same boot ID), no node cordoned.
func (s *suite) chronyOnVMs(t testing.TB) {
	c, ctx := s.c, s.ctx
	c.Step("The chrony change on the worker VMs: chronyd restarted once per node, no cordon, no reboot")
	s.ensureChronyPolicy(t)
	before, err := c.StartsOnWorkers(ctx, "chrony.service")
	if err != nil {
		t.Fatal(err)
	}
	sources := c.SourcesNow()
	if _, err := c.KubectlMust("apply", "-f", "examples/cluster/50-worker-chrony-v2.yaml"); err != nil {
		t.Fatal(err)
	}
	target, err := c.WaitTargetSources(ctx, s.first, sources)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WaitWorkersUncordoned(ctx, target, "a restart-only change"); err != nil {
		t.Fatal(err)
	}
	for _, w := range c.Workers {
		n, err := c.Starts(ctx, w, "chrony.service")
		if err != nil {
			t.Fatal(err)
		}
		stat, err := w.VM.Run(ctx, "stat", "-c", "%a %U:%G", "/etc/chrony.conf")
		if err != nil {
			t.Fatal(err)
		}
		conf, err := w.VM.ReadFile(ctx, "/etc/chrony.conf")
		if err != nil {
			t.Fatal(err)
		}
		boot, err := w.VM.BootID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		line := fmt.Sprintf("%s: chronyd started %d time(s) by the change; /etc/chrony.conf %s %q; boot %s (unchanged: %t)",
			w.Name, n-before[w.Name], strings.TrimSpace(stat), framework.FirstLine(string(conf), ""), boot[:8], boot == w.BootNow)
		fmt.Println(line)
		c.Report(line)
		if n-before[w.Name] != 1 || strings.TrimSpace(stat) != "644 root:root" || !strings.Contains(string(conf), "time1.example.com") || boot != w.BootNow {
			t.Fatalf("%s: want chronyd started once, /etc/chrony.conf 644 root:root with the new servers, the same boot", w.Name)
		}
	}
}

// kubeletConfigOnVMs: a KubeletConfig with the shipped kubelet-live
// policy, which reads inside kubelet.conf: previewed, rendered into
// 99-worker-generated-kubelet, planned as a kubelet restart; the kubelet
// restarted exactly once per node (systemd's journal), the new maxPods in
// the Node's capacity (the real kubelet read the file ndp-daemon wrote),
// the same boot, no node cordoned.
func (s *suite) kubeletConfigOnVMs(t testing.TB) {
	c, ctx := s.c, s.ctx
	c.Step("A KubeletConfig (maxPods 150) under kubelet-live, a policy that reads inside kubelet.conf: the kubelet restarted once per node")
	if _, err := c.KubectlMust("apply", "-f", "examples/policies/kubelet-live.yaml"); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitFor(ctx, "the kubelet-live policy to be accepted", "True",
		"get", "ndp", "kubelet-live", "-o", `jsonpath={.status.conditions[?(@.type=="Accepted")].status}`); err != nil {
		t.Fatal(err)
	}
	const want = "Restart kubelet.service, no drain, no reboot (policy kubelet-live: maxPods changed)"
	preview, err := c.KubectlMust("apply", "--dry-run=server", "-f", "examples/cluster/kubeletconfig-max-pods.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(preview, want) {
		t.Fatalf("the KubeletConfig's dry-run did not preview %q:\n%s", want, preview)
	}
	c.Report("KubeletConfig preview: " + framework.FirstLine(preview, "Warning:"))
	before, err := c.StartsOnWorkers(ctx, "kubelet.service")
	if err != nil {
		t.Fatal(err)
	}
	current, _ := c.KubectlQuiet("get", "mcp", "worker", "-o", jsonTarget)
	sources := c.SourcesNow()
	if _, err := c.KubectlMust("apply", "-f", "examples/cluster/kubeletconfig-max-pods.yaml"); err != nil {
		t.Fatal(err)
	}
	target, err := c.WaitTargetSources(ctx, current, sources+1)
	if err != nil {
		t.Fatal(err)
	}
	plan, _ := c.KubectlQuiet("get", "mc", target, "-o", `jsonpath={range .status.postConfigActions[*]}{.from}: {.actions[*].type} drain={.drain} reboot={.reboot}{"\n"}{end}`)
	fmt.Print(plan)
	c.Kubectl("get", "kubeletconfig", "max-pods", "-o", `jsonpath={range .status.conditions[*]}{.type}={.status} {.message}{"\n"}{end}`)
	if err := c.WaitWorkersUncordoned(ctx, target, "a kubelet restart"); err != nil {
		t.Fatal(err)
	}
	for _, w := range c.Workers {
		n, err := c.Starts(ctx, w, "kubelet.service")
		if err != nil {
			t.Fatal(err)
		}
		boot, err := w.VM.BootID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// The kubelet reports its new capacity once it has restarted.
		pods := "150"
		if err := c.WaitFor(ctx, w.Name+"'s capacity of 150 pods", pods, "get", "node", w.Name, "-o", "jsonpath={.status.capacity.pods}"); err != nil {
			t.Fatal(err)
		}
		line := fmt.Sprintf("%s: kubelet started %d time(s) by the KubeletConfig; capacity %s pods; boot %s (unchanged: %t)",
			w.Name, n-before[w.Name], pods, boot[:8], boot == w.BootNow)
		fmt.Println(line)
		c.Report(line)
		if n-before[w.Name] != 1 || boot != w.BootNow {
			t.Fatalf("%s: want the kubelet started once, the same boot", w.Name)
		}
	}
}

// rebootOnVMs: a change that needs a drain and a reboot, with a workload
// spread over the workers and a PodDisruptionBudget: one node at a time
// cordoned, drained, rebooted for real, back, uncordoned; the workload
// never below its budget.
func (s *suite) rebootOnVMs(t testing.TB) {
	c, ctx := s.c, s.ctx
	n := len(c.Workers)
	c.Step("A workload spread over the workers: a Deployment of %d (one pod per node) and a PodDisruptionBudget (minAvailable %d)", n, n-1)
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
`, n, c.PauseImage, n-1)
	f := c.Path("web.yaml")
	if err := os.WriteFile(f, []byte(workload), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := c.KubectlMust("apply", "-f", f); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitFor(ctx, fmt.Sprintf("%d web pods ready and the budget computed", n), fmt.Sprintf("%d 1", n),
		"get", "deploy,pdb", "web", "-o", `jsonpath={.items[0].status.readyReplicas} {.items[1].status.disruptionsAllowed}`); err != nil {
		t.Fatal(err)
	}
	c.Kubectl("get", "pods", "-o", "wide")
	boots := map[string]int{}
	for _, w := range c.Workers {
		b, err := c.BootCount(ctx, w)
		if err != nil {
			t.Fatal(err)
		}
		boots[w.Name] = b
	}

	c.Step("A change the default policies answer with drain and reboot, with an OS update (osImageURL and a kernel argument, %s); the pool paused once its first worker is sent", framework.OSMachineConfig)
	current, _ := c.KubectlQuiet("get", "mcp", "worker", "-o", jsonTarget)
	sources := c.SourcesNow()
	osMC := c.Path(framework.OSMachineConfig + ".yaml")
	if err := os.WriteFile(osMC, []byte(framework.OSUpdateMC), 0o644); err != nil {
		t.Fatal(err)
	}
	callsBefore := map[string]int{}
	for _, w := range c.Workers {
		calls, err := c.StandinCalls(ctx, w)
		if err != nil {
			t.Fatal(err)
		}
		callsBefore[w.Name] = len(calls)
	}
	// With the rollout scenario's policy, the change waits for its
	// window, which opens 40 to 100 s after the change.
	opens := s.openWindowSoon(t)
	if _, err := c.KubectlMust("apply", "-f", "examples/cluster/60-worker-app.yaml", "-f", osMC); err != nil {
		t.Fatal(err)
	}
	target, err := c.WaitTargetSources(ctx, current, sources+2)
	if err != nil {
		t.Fatal(err)
	}
	watch := c.WatchWorkers(ctx)
	defer watch()
	if !opens.IsZero() {
		s.waitWindow(t, target, opens)
	}
	sentAt := time.Now()
	first := c.WaitSent(ctx, target)
	if first == nil {
		t.Fatalf("no worker was sent to %s", target)
	}
	if _, err := c.KubectlMust("patch", "mcp", "worker", "--type=merge", "-p", `{"spec":{"paused":true}}`); err != nil {
		t.Fatal(err)
	}
	// Its reboot will not come back until the scenario powers it on.
	if err := c.PowerOffAtNextReboot(ctx, first); err != nil {
		t.Fatal(err)
	}

	c.Step("%s: its daemon's pod deleted mid-update (as a crash would end it); the DaemonSet's next pod resumes", first.Name)
	// Once cordoned: the update has started (the cordon is a journaled step).
	if err := c.WaitFor(ctx, first.Name+" cordoned", "true", "get", "node", first.Name, "-o", "jsonpath={.spec.unschedulable}"); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteDaemonPodOn(ctx, first.Name); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitEvent(ctx, first.Name, "Resumed", "after a restart of the daemon"); err != nil {
		t.Fatal(err)
	}
	s.rebootNeverBack(t, first, target)
	if err := c.WaitNodesDone(ctx, []*framework.Worker{first}, target, nil); err != nil {
		t.Fatal(err)
	}

	second := c.Workers[0]
	if second == first {
		second = c.Workers[1]
	}
	c.Step("%s: sent with the budget at minAvailable %d (its drain held), then reset (a power cut) while held", second.Name, n)
	if _, err := c.KubectlMust("patch", "pdb", "web", "--type=merge", "-p", fmt.Sprintf(`{"spec":{"minAvailable":%d}}`, n)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.KubectlMust("patch", "mcp", "worker", "--type=merge", "-p", `{"spec":{"paused":false}}`); err != nil {
		t.Fatal(err)
	}
	if err := framework.Poll(ctx, heldDrainTimeout, second.Name+"'s drain to be held by the budget", func() (bool, error) {
		logs, _ := c.KubectlQuiet("get", "events", "--field-selector", "involvedObject.name="+second.Name, "-o", "jsonpath={.items[*].reason}")
		cordoned, _ := c.KubectlQuiet("get", "node", second.Name, "-o", "jsonpath={.spec.unschedulable}")
		pod, _ := c.KubectlQuiet("get", "pods", "-l", "app=web", "--field-selector", "spec.nodeName="+second.Name, "-o", "jsonpath={.items[*].metadata.name}")
		return cordoned == "true" && pod != "" && strings.Contains(logs, "DrainWaiting"), nil
	}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Second) // the daemon asks, the budget refuses
	if err := second.VM.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("%s: reset\n", second.Name)
	if _, err := c.WaitEvent(ctx, second.Name, "Resumed", "at step drain after a reboot"); err != nil {
		t.Fatal(err)
	}
	c.Step("The budget allows it again (minAvailable %d): %s drained, rebooted once, back", n-1, second.Name)
	if _, err := c.KubectlMust("patch", "pdb", "web", "--type=merge", "-p", fmt.Sprintf(`{"spec":{"minAvailable":%d}}`, n-1)); err != nil {
		t.Fatal(err)
	}
	err = c.WaitWorkersDone(ctx, target, func(w *framework.Worker) error {
		if err := c.WaitFor(ctx, w.Name+" uncordoned", "", "get", "node", w.Name, "-o", "jsonpath={.spec.unschedulable}"); err != nil {
			return err
		}
		// The update's end names the reboot (back from a planned reboot
		// is no Resumed event).
		msg, err := c.WaitEvent(ctx, w.Name, "UpdateComplete", target+": ")
		if err == nil && !strings.Contains(msg, "reboot") {
			err = fmt.Errorf("%s: UpdateComplete does not name the reboot: %q", w.Name, msg)
		}
		return err
	})
	seen := watch()
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(sentAt)
	if err := c.WaitFor(ctx, "the scheduler to place every web pod again", strconv.Itoa(n),
		"get", "deploy", "web", "-o", "jsonpath={.status.readyReplicas}"); err != nil {
		t.Fatal(err)
	}
	c.Kubectl("get", "pods", "-o", "wide")
	c.Kubectl("ndp", "status")
	for _, w := range c.Workers {
		b, err := c.BootCount(ctx, w)
		if err != nil {
			t.Fatal(err)
		}
		boot, err := w.VM.BootID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		nodeBoot, _ := c.KubectlQuiet("get", "node", w.Name, "-o", "jsonpath={.status.nodeInfo.bootID}")
		file, err := w.VM.ReadFile(ctx, "/etc/ndp-example/app.conf")
		if err != nil {
			t.Fatalf("%s: the new file: %v", w.Name, err)
		}
		want, what := 1, "daemon pod deleted mid-update"
		if w == second {
			want, what = 2, "power cut during its drain, then its one planned reboot"
		}
		line := fmt.Sprintf("%s: boot %s -> %s (%d boots since the change, want %d: %s; the Node says %s); app.conf %q",
			w.Name, w.BootNow[:8], boot[:8], b-boots[w.Name], want, what, framework.ShortID(nodeBoot), strings.TrimSpace(string(file)))
		fmt.Println(line)
		fmt.Printf("%s: %s\n", w.Name, c.BootCost(ctx, w))
		c.Report(line)
		if b-boots[w.Name] != want || boot == w.BootNow || nodeBoot != boot {
			t.Fatalf("%s: want %d boot(s), the last seen by the node and its Node object", w.Name, want)
		}
		// Why it rebooted, as ndp recorded it: w.BootNow is still the boot
		// the update started from.
		// and how it was interrupted: the first's daemon pod deleted, the
		// second's power cut during its drain.
		resumed := "resumed after a restart of the daemon"
		if w == second {
			resumed = "resumed after an unplanned reboot (boot " + w.BootNow + " -> "
		}
		if err := c.WhyRebooted(ctx, w.Name, strings.TrimSpace(current), target, w.BootNow, boot, resumed); err != nil {
			t.Fatal(err)
		}
		if err := c.OSUpdatedOn(ctx, w, callsBefore[w.Name], boot); err != nil {
			t.Fatal(err)
		}
		w.BootNow = boot
	}
	line := fmt.Sprintf("reboots: %d nodes in %s, at most %d cordoned and %d out at once, web pods ready never below %d (lowest %d)",
		n, took.Round(time.Second), seen.MaxCordoned, seen.MaxOut, n-1, seen.MinReady)
	c.Report(line)
	if seen.MaxCordoned != 1 || seen.MaxOut != 1 || seen.MinReady < n-1 {
		t.Fatalf("%s: want one node at a time, the budget kept", line)
	}
}

// failuresPolicy is the reboot scenario's RolloutPolicy for failed nodes,
// beside the rollout scenario's: a node not back from its reboot within 30
// seconds is Degraded (shorter than make cluster's waits' stall bound), and one such node halts the pool.
const failuresPolicy = `apiVersion: ndp.dev/v1alpha1
kind: RolloutPolicy
metadata: {name: worker-failures}
spec:
  poolSelector: {matchLabels: {pools.operator.machineconfiguration.openshift.io/worker: ""}}
  failures: {rebootTimeout: 30s, haltAfter: 1}
`

// rebootNeverBack: first, in its update to target with the pool paused,
// reboots and its VM stays powered off. Under failuresPolicy it is marked
// Degraded, the pool still paused, once rebootTimeout has passed since it
// went NotReady (not before); with the pool resumed and its budget open
// to a second node (maxUnavailable 2), the rollout halts on it and sends
// no other node.
// Powered on, it resumes its update; the policy is then removed and the
// pool paused again at its own budget, as the scenario goes on.
func (s *suite) rebootNeverBack(t testing.TB, first *framework.Worker, target string) {
	c, ctx := s.c, s.ctx
	c.Step("%s: its reboot never comes back (the VM stays powered off): Degraded after the rebootTimeout (30s), the pool paused; resumed, the rollout halted (haltAfter 1) with its budget open to the other node; powered on, it resumes", first.Name)
	if err := c.ApplyText("rollout-failures.yaml", failuresPolicy); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitPoweredOff(ctx, first); err != nil {
		t.Fatal(err)
	}
	offAt := time.Now()
	fmt.Printf("%s: powered off at its reboot\n", first.Name)
	msg, err := c.WaitEvent(ctx, first.Name, v1alpha1.RebootTimeoutReason, "not Ready for 30s of its update")
	if err != nil {
		t.Fatal(err)
	}
	// When the controller marked it: the Event's own time (events.k8s.io
	// sets eventTime, core/v1 recorders lastTimestamp).
	stamp, _ := c.KubectlQuiet("get", "events", "--field-selector", "involvedObject.name="+first.Name+",reason="+v1alpha1.RebootTimeoutReason,
		"-o", `jsonpath={range .items[*]}{.eventTime} {.lastTimestamp}{"\n"}{end}`)
	var markedAt time.Time
	for _, f := range strings.Fields(stamp) {
		if at, err := time.Parse(time.RFC3339, f); err == nil && at.After(markedAt) {
			markedAt = at
		}
	}
	if markedAt.IsZero() {
		t.Fatalf("the %s Event on %s has no time: %q", v1alpha1.RebootTimeoutReason, first.Name, stamp)
	}
	state, _ := c.KubectlQuiet("get", "node", first.Name, "-o", `jsonpath={.metadata.annotations.machineconfiguration\.openshift\.io/state}`)
	notReady, _ := c.KubectlQuiet("get", "node", first.Name, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].lastTransitionTime}`)
	since, err := time.Parse(time.RFC3339, strings.TrimSpace(notReady))
	if err != nil {
		t.Fatalf("%s's Ready condition's last transition %q: %v", first.Name, notReady, err)
	}
	if state != "Degraded" {
		t.Fatalf("%s: state %q after %q, want Degraded", first.Name, state, msg)
	}
	if paused, _ := c.KubectlQuiet("get", "mcp", "worker", "-o", "jsonpath={.spec.paused}"); paused != "true" {
		t.Fatalf("the pool is not paused (%q) when %s is marked", paused, first.Name)
	}
	// The Event's second-rounded clock against the condition's: marked no
	// earlier than the timeout after the node went NotReady.
	if markedAt.Before(since.Add(30 * time.Second)) {
		t.Fatalf("%s marked Degraded at %s, before its rebootTimeout (30s) since it went NotReady at %s", first.Name, markedAt.UTC().Format(time.TimeOnly), since.UTC().Format(time.TimeOnly))
	}

	oldBudget, err := c.KubectlMust("get", "mcp", "worker", "-o", "jsonpath={.spec.maxUnavailable}")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.KubectlMust("patch", "mcp", "worker", "--type=merge", "-p", `{"spec":{"paused":false,"maxUnavailable":2}}`); err != nil {
		t.Fatal(err)
	}
	halted := "halted: 1 of the pool's nodes failed (" + first.Name + "), haltAfter is 1 [rolloutpolicy worker-failures]"
	if err := c.WaitPoolHeld(ctx, halted); err != nil {
		t.Fatal(err)
	}
	if sent := c.SentTo(target); len(sent) != 1 || sent[0] != first.Name {
		t.Fatalf("sent to %s while halted: %v, want only %s", target, sent, first.Name)
	}
	for _, w := range c.Workers {
		if cordoned, _ := c.KubectlQuiet("get", "node", w.Name, "-o", "jsonpath={.spec.unschedulable}"); w != first && cordoned != "" {
			t.Fatalf("%s cordoned while the rollout is halted", w.Name)
		}
	}
	status := c.Kubectl("ndp", "status")
	if !strings.Contains(status, "halted: 1 of the pool's nodes failed") {
		t.Fatalf("kubectl ndp status does not say the pool is halted")
	}
	line := fmt.Sprintf("reboot never back: %s powered off at its reboot at %s, NotReady from %s, Degraded at %s (rebootTimeout 30s: %s after NotReady); with maxUnavailable 2, %q, nothing else sent or cordoned",
		first.Name, offAt.UTC().Format(time.TimeOnly), since.UTC().Format(time.TimeOnly), markedAt.UTC().Format(time.TimeOnly), markedAt.Sub(since).Round(time.Second), halted)
	fmt.Println(line)
	c.Report(line)

	// Paused again at its own budget before first comes back: the
	// scenario sends the other node itself.
	if _, err := c.KubectlMust("patch", "mcp", "worker", "--type=merge", "-p", fmt.Sprintf(`{"spec":{"paused":true,"maxUnavailable":%s}}`, budgetJSON(oldBudget))); err != nil {
		t.Fatal(err)
	}
	if err := c.PowerOn(ctx, first); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitNodesDone(ctx, []*framework.Worker{first}, target, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.KubectlMust("delete", "rolloutpolicy", "worker-failures"); err != nil {
		t.Fatal(err)
	}
}

// upgradeOnVMs: ndp upgraded (a new image digest, applied as an
// administrator would: make install-manifests, kubectl apply) in the
// middle of a rollout of a chrony change: the DaemonSet's rolling update
// replaces the daemons between steps, the Deployment the controllers; the
// rollout completes with chronyd restarted exactly once per node.
func (s *suite) upgradeOnVMs(t testing.TB) {
	c, ctx := s.c, s.ctx
	c.Step("ndp upgraded (a new image digest) in the middle of a rollout")
	root := filepath.Join(c.Root, "bin", "image-root")
	if _, err := c.ImageTool("build", "--out", c.Path("ndp-image-2"), "--name", "ndp:upgrade", "--user", "65532:65532", "--entrypoint", "/ndp",
		"--label", "org.opencontainers.image.version=upgrade",
		"--file", "/ndp="+filepath.Join(root, "ndp"), "--file", "/ndp-controller="+filepath.Join(root, "ndp-controller"),
		"--file", "/ndp-daemon="+filepath.Join(root, "ndp-daemon")); err != nil {
		t.Fatal(err)
	}
	upgraded, err := c.Push(c.Path("ndp-image-2"), framework.Registry+"/ndp:upgrade")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("ndp %s -> %s\n", c.NDPImage, upgraded)
	before, err := c.StartsOnWorkers(ctx, "chrony.service")
	if err != nil {
		t.Fatal(err)
	}
	s.ensureChronyPolicy(t)
	target := s.chronyChange(t, "time3.example.com")
	if err := framework.Poll(ctx, 3*time.Minute, "a worker's update to start", func() (bool, error) {
		for _, w := range c.Workers {
			out, _ := c.KubectlQuiet("get", "node", w.Name, "-o", `jsonpath={.metadata.annotations.machineconfiguration\.openshift\.io/desiredConfig}`)
			if out == target {
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.InstallImage(upgraded); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitWorkersDone(ctx, target, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitFor(ctx, "every ndp pod on the new image", strings.TrimSpace(strings.Repeat(upgraded+" ", 2+len(c.Workers))),
		"-n", "ndp-system", "get", "pods", "--field-selector", "status.phase=Running", "-o", `jsonpath={.items[*].spec.containers[0].image}`); err != nil {
		t.Fatal(err)
	}
	c.Kubectl("-n", "ndp-system", "get", "pods", "-o", "wide")
	for _, w := range c.Workers {
		n, err := c.Starts(ctx, w, "chrony.service")
		if err != nil {
			t.Fatal(err)
		}
		line := fmt.Sprintf("%s (ndp upgraded mid-rollout): chronyd started %d time(s) by the change", w.Name, n-before[w.Name])
		fmt.Println(line)
		c.Report(line)
		if n-before[w.Name] != 1 {
			t.Fatalf("%s: want chronyd started once", w.Name)
		}
	}
}
