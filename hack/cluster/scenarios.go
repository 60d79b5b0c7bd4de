package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

const (
	jsonNodeState = `jsonpath={.metadata.annotations.machineconfiguration\.openshift\.io/currentConfig} {.metadata.annotations.machineconfiguration\.openshift\.io/state}`
	jsonTarget    = `jsonpath={.spec.configuration.name}`
)

// scenarios is what an administrator would do and watch, through kubectl
// only; each checks its outcome on the node itself.
func (c *cluster) scenarios(ctx context.Context) error {
	step("The worker pool and its chrony MachineConfig; the node labelled a worker")
	if _, err := c.kubectlMust("apply", "-f", "examples/cluster/worker-pool.yaml", "-f", "examples/cluster/50-worker-chrony.yaml"); err != nil {
		return err
	}
	if _, err := c.kubectlMust("label", "node", nodeName, "node-role.kubernetes.io/worker="); err != nil {
		return err
	}
	first, err := c.waitTargetSources(ctx, "", 2)
	if err != nil {
		return err
	}
	if err := c.waitNodeDone(ctx, first); err != nil {
		return err
	}
	c.kubectl("ndp", "status")

	if err := c.leaderScenario(ctx); err != nil {
		return err
	}
	if err := c.previewScenario(ctx); err != nil {
		return err
	}
	step("The change: rendered, planned, executed by the daemon's pod (chronyd restarted, no drain, no reboot)")
	before := c.count("chronyd.service.trace", "start")
	if _, err := c.kubectlMust("apply", "-f", "examples/cluster/50-worker-chrony-v2.yaml"); err != nil {
		return err
	}
	second, err := c.waitTargetSources(ctx, first, 2)
	if err != nil {
		return err
	}
	c.kubectl("get", "mc", second, "-o", "jsonpath={.status.postConfigActions[0].actions}")
	fmt.Println()
	if err := c.waitNodeDone(ctx, second); err != nil {
		return err
	}
	conf, _ := os.ReadFile(filepath.Join(c.host, "etc", "chrony.conf"))
	restarts := c.count("chronyd.service.trace", "start") - before
	c.summary = append(c.summary, fmt.Sprintf("chrony change: chronyd restarted %d time(s); /etc/chrony.conf %q; reboots %d", restarts, firstLine(string(conf), ""), c.count("reboots", "")))
	if restarts != 1 || !strings.Contains(string(conf), "time1.example.com") || c.count("reboots", "") != 0 {
		return fmt.Errorf("the chrony change: want one restart, the new file and no reboot; got %d restarts, %q, %d reboots", restarts, conf, c.count("reboots", ""))
	}

	if err := c.drainScenario(ctx, second); err != nil {
		return err
	}
	return c.tokenScenario(ctx)
}

// leaderScenario kills the leading controller's pod and waits for the
// other replica to take over.
func (c *cluster) leaderScenario(ctx context.Context) error {
	step("Leader election: two ndp-controller replicas, one leads; its pod is killed")
	leader, err := c.leader(ctx, "")
	if err != nil {
		return err
	}
	fmt.Printf("leader: %s\n", leader)
	if _, err := c.kubectlMust("-n", "ndp-system", "delete", "pod", leader, "--grace-period=0", "--force", "--wait=false"); err != nil {
		return err
	}
	t := time.Now()
	next, err := c.leader(ctx, leader)
	if err != nil {
		return err
	}
	fmt.Printf("new leader: %s, %s after the kill\n", next, time.Since(t).Round(100*time.Millisecond))
	c.summary = append(c.summary, fmt.Sprintf("leader election: %s killed, %s took over in %s", leader, next, time.Since(t).Round(100*time.Millisecond)))
	return nil
}

// ensureChronyPolicy applies the chrony policy (chrony changes restart
// chronyd) and waits until it plans: every scenario whose chrony change
// must be a restart calls it, so that each stands on its own
// (NDP_CLUSTER_SCENARIOS).
func (c *cluster) ensureChronyPolicy(ctx context.Context) error {
	if _, err := c.kubectlMust("apply", "-f", "examples/policies/chrony.yaml"); err != nil {
		return err
	}
	return c.waitFor(ctx, "the chrony policy to be active", "True True",
		"get", "ndp", "chrony", "-o", `jsonpath={.status.conditions[?(@.type=="Accepted")].status} {.status.conditions[?(@.type=="Active")].status}`)
}

// previewScenario applies the chrony policy and previews the chrony change
// with a server-side dry-run, through the webhook's Service.
func (c *cluster) previewScenario(ctx context.Context) error {
	step("A policy (chrony changes restart chronyd); a dry-run previews the change through the webhook's Service")
	if err := c.ensureChronyPolicy(ctx); err != nil {
		return err
	}
	preview, err := c.kubectlMust("apply", "--dry-run=server", "-f", "examples/cluster/50-worker-chrony-v2.yaml")
	if err != nil {
		return err
	}
	if !strings.Contains(preview, "Warning:") || !strings.Contains(preview, "Restart") {
		return fmt.Errorf("the dry-run showed no preview warning with the plan:\n%s", preview)
	}
	c.summary = append(c.summary, "preview: "+firstLine(preview, "Warning:"))
	return nil
}

// drainScenario: a change that needs a drain and a reboot, with a
// Deployment whose PodDisruptionBudget the real disruption controller
// maintains.
func (c *cluster) drainScenario(ctx context.Context, current string) error {
	step("A second Node object (no kubelet): ndp, like the MCO, never drains a single-node cluster")
	fmt.Println("# absent-node stays NotReady and outside every pool; it only makes this a cluster of two nodes,")
	fmt.Println("# where a node's drain has somewhere to send pods to (here: nowhere Ready, so they wait for the uncordon).")
	fmt.Println("# The DaemonSet's pod for it stays Pending: no kubelet runs it.")
	other := `{"apiVersion":"v1","kind":"Node","metadata":{"name":"absent-node"}}`
	if err := os.WriteFile(c.s.path("absent-node.json"), []byte(other), 0o644); err != nil {
		return err
	}
	if _, err := c.kubectlMust("create", "-f", c.s.path("absent-node.json")); err != nil {
		return err
	}

	step("A workload: a Deployment of 2 (the pause image, by digest) and a PodDisruptionBudget (minAvailable 1)")
	workload := fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 2
      containers:
      - {name: web, image: %q}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: default}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: web}}
`, c.pauseImage)
	f := c.s.path("web.yaml")
	if err := os.WriteFile(f, []byte(workload), 0o644); err != nil {
		return err
	}
	if _, err := c.kubectlMust("apply", "-f", f); err != nil {
		return err
	}
	if err := c.waitFor(ctx, "2 web pods ready and the budget computed", "2 1",
		"get", "deploy,pdb", "web", "-o", `jsonpath={.items[0].status.readyReplicas} {.items[1].status.disruptionsAllowed}`); err != nil {
		return err
	}
	c.kubectl("get", "pods,pdb", "-o", "wide")

	step("A change the default policies answer with drain and reboot; previewed, then applied")
	if _, err := c.kubectlMust("apply", "--dry-run=server", "-f", "examples/cluster/60-worker-app.yaml"); err != nil {
		return err
	}
	if _, err := c.kubectlMust("apply", "-f", "examples/cluster/60-worker-app.yaml"); err != nil {
		return err
	}
	target, err := c.waitTargetSources(ctx, current, 3)
	if err != nil {
		return err
	}
	step("The daemon's pod cordons and drains: one pod evicted, the second refused by the budget")
	var blockedFor time.Duration
	err = poll(ctx, 3*time.Minute, "the drain to be held by the budget", func() (bool, error) {
		cordoned, _ := c.kubectlQuiet("get", "node", nodeName, "-o", "jsonpath={.spec.unschedulable}")
		pods, _ := c.kubectlQuiet("get", "pods", "-l", "app=web", "-o", `jsonpath={range .items[*]}{.status.phase} {end}`)
		allowed, _ := c.kubectlQuiet("get", "pdb", "web", "-o", "jsonpath={.status.disruptionsAllowed}")
		return cordoned == "true" && strings.Count(pods, "Running") == 1 && strings.Contains(pods, "Pending") && allowed == "0", nil
	})
	if err != nil {
		return err
	}
	held := time.Now()
	// Hold: the daemon keeps asking, the budget keeps refusing.
	time.Sleep(10 * time.Second)
	c.kubectl("get", "pods,pdb", "-o", "wide")
	logs := c.kubectl("-n", "ndp-system", "logs", "-l", "app.kubernetes.io/name=ndp-daemon", "--tail=200")
	refusals := strings.Count(logs, "disruption budget")
	if refusals == 0 {
		return fmt.Errorf("the daemon's log shows no eviction refused by the budget")
	}
	if c.count("reboots", "") != 0 {
		return fmt.Errorf("the node rebooted while its drain was held")
	}
	blockedFor = time.Since(held)

	step("The daemon's pod deleted mid-drain: the DaemonSet's new pod resumes from the journal at the drain")
	if err := c.deleteDaemonPod(ctx); err != nil {
		return err
	}
	resumed, err := c.waitEvent(ctx, nodeName, "Resumed", "at step drain")
	if err != nil {
		return err
	}
	fmt.Printf("event: %s\n", resumed)
	if err := poll(ctx, 2*time.Minute, "the new pod's drain to be refused by the budget again", func() (bool, error) {
		logs, _ := c.kubectlQuiet("-n", "ndp-system", "logs", "-l", "app.kubernetes.io/name=ndp-daemon", "--tail=200")
		return strings.Contains(logs, "disruption budget"), nil
	}); err != nil {
		return err
	}
	if cordoned, _ := c.kubectlQuiet("get", "node", nodeName, "-o", "jsonpath={.spec.unschedulable}"); cordoned != "true" || c.count("reboots", "") != 0 {
		return fmt.Errorf("after the daemon's pod was replaced mid-drain: cordoned %q (want true), %d reboots (want 0)", cordoned, c.count("reboots", ""))
	}
	c.summary = append(c.summary, "daemon pod deleted mid-drain: "+resumed)

	step("The budget allows it (minAvailable 0): the drain completes, the reboot is recorded")
	if _, err := c.kubectlMust("patch", "pdb", "web", "--type=merge", "-p", `{"spec":{"minAvailable":0}}`); err != nil {
		return err
	}
	if err := poll(ctx, 3*time.Minute, "the daemon to request a reboot", func() (bool, error) { return c.count("reboots", "") > 0, nil }); err != nil {
		return err
	}
	c.kubectl("get", "pods", "-o", "wide")
	step("The reboot, played: a new boot ID, and the daemon's pod killed (a reboot would); its new pod resumes from the journal")
	oldBoot, _ := os.ReadFile(filepath.Join(c.host, "boot_id"))
	newBoot := newBootID()
	if err := os.WriteFile(filepath.Join(c.host, "boot_id"), []byte(newBoot+"\n"), 0o644); err != nil {
		return err
	}
	if err := c.deleteDaemonPod(ctx); err != nil {
		return err
	}
	if _, err := c.waitEvent(ctx, nodeName, "Resumed", "after a reboot"); err != nil {
		return err
	}
	if err := c.waitNodeDone(ctx, target); err != nil {
		return err
	}
	if err := c.waitFor(ctx, "the node uncordoned", "", "get", "node", nodeName, "-o", "jsonpath={.spec.unschedulable}"); err != nil {
		return err
	}
	if err := c.waitFor(ctx, "the scheduler to place both web pods again", "2",
		"get", "deploy", "web", "-o", "jsonpath={.status.readyReplicas}"); err != nil {
		return err
	}
	c.kubectl("get", "pods", "-o", "wide")
	c.kubectl("ndp", "status")
	reboots := c.count("reboots", "")
	file, err := os.ReadFile(filepath.Join(c.host, "etc", "ndp-example", "app.conf"))
	if err != nil {
		return fmt.Errorf("the new file on the node: %w", err)
	}
	c.summary = append(c.summary,
		fmt.Sprintf("drain: held by the budget (%d refusals in the daemon's log, %s watched), released at minAvailable 0", refusals, blockedFor.Round(time.Second)),
		fmt.Sprintf("reboot: %d requested; %s: boot %s -> %s; the new daemon pod resumed and uncordoned; app.conf %q", reboots, nodeName, strings.TrimSpace(string(oldBoot))[:8], newBoot[:8], strings.TrimSpace(string(file))))
	if reboots != 1 {
		return fmt.Errorf("want exactly one reboot request, got %d", reboots)
	}
	return nil
}

// tokenScenario checks the daemon's admission policies with its pod's own
// projected token, read from the volume the kubelet mounted.
func (c *cluster) tokenScenario(ctx context.Context) error {
	step("The daemon's admission policies, with the daemon pod's own projected token")
	uid, err := c.kubectlMust("-n", "ndp-system", "get", "pods", "-l", "app.kubernetes.io/name=ndp-daemon", "--field-selector", "spec.nodeName="+nodeName, "-o", "jsonpath={.items[0].metadata.uid}")
	if err != nil {
		return err
	}
	// The token the kubelet projected into the pod (a tmpfs the kubelet
	// mounted in the node's mount namespace).
	dir := c.s.path("kubelet", "root", "pods", uid, "volumes", "kubernetes.io~projected")
	argv := append(c.s.nsenter(true), "sh", "-c", "cat "+dir+"/*/token")
	raw, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	out := string(raw)
	if err != nil || len(out) < 100 {
		ls, _ := exec.Command(argv[0], append(argv[1:3], "ls", "-laR", filepath.Dir(dir))...).CombinedOutput()
		return fmt.Errorf("reading the daemon pod's token in %s: %v %s\n%s", dir, err, out, ls)
	}
	token := strings.TrimSpace(out)
	who, _ := c.kubectlAs(token, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.extra.authentication\\.kubernetes\\.io/node-name}")
	fmt.Printf("the token is %s\n", who)
	patch := `{"metadata":{"annotations":{"machineconfiguration.openshift.io/reason":""}}}`
	own, ownErr := c.kubectlAs(token, "patch", "node", nodeName, "--dry-run=server", "--type=merge", "-p", patch)
	fmt.Printf("$ kubectl --token <daemon pod's> patch node %s --dry-run=server ...\n%s", nodeName, own)
	theirs, theirErr := c.kubectlAs(token, "patch", "node", "absent-node", "--dry-run=server", "--type=merge", "-p", patch)
	fmt.Printf("$ kubectl --token <daemon pod's> patch node absent-node --dry-run=server ...\n%s", theirs)
	if ownErr != nil || theirErr == nil || !strings.Contains(theirs, "may only change its own Node") {
		return fmt.Errorf("the daemon's token: own node (%v) must be allowed and another refused by the policy (%v)", ownErr, theirErr)
	}
	c.summary = append(c.summary, "admission: the daemon pod's own token may patch "+nodeName+" and not absent-node")
	return nil
}

// deleteDaemonPod deletes the daemon's pod on the node at once (as a crash
// or a reboot would end it) and waits for the DaemonSet's next pod there.
func (c *cluster) deleteDaemonPod(ctx context.Context) error {
	return c.deleteDaemonPodOn(ctx, nodeName)
}

// deleteDaemonPodOn deletes the daemon's pod on node and waits for the
// DaemonSet's next one there.
func (c *cluster) deleteDaemonPodOn(ctx context.Context, nodeName string) error {
	get := []string{"-n", "ndp-system", "get", "pods", "-l", "app.kubernetes.io/name=ndp-daemon", "--field-selector", "spec.nodeName=" + nodeName}
	old, err := c.kubectlMust(append(get, "-o", "jsonpath={.items[0].metadata.name}")...)
	if err != nil {
		return err
	}
	if _, err := c.kubectlMust("-n", "ndp-system", "delete", "pod", old, "--grace-period=0", "--force", "--wait=false"); err != nil {
		return err
	}
	return poll(ctx, 2*time.Minute, "the DaemonSet's new pod on "+nodeName, func() (bool, error) {
		out, _ := c.kubectlQuiet(append(get, "-o", `jsonpath={range .items[*]}{.metadata.name} {.status.phase}{"\n"}{end}`)...)
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) == 2 && f[0] != old && f[1] == "Running" {
				return true, nil
			}
		}
		return false, nil
	})
}

// waitEvent waits for an event of node with reason whose message holds
// substr and was not seen by an earlier call, and returns its message. It
// waits as long as the node makes progress (followProgress): the event may
// come from the daemon's next pod, after a worker VM's reboot, the kubelet
// and the pod's start under TCG.
func (c *cluster) waitEvent(ctx context.Context, node, reason, substr string) (string, error) {
	var msg string
	err := followProgress(ctx, fmt.Sprintf("a %s event (%q) on %s", reason, substr, node), ceilingFor(1), func() observation {
		v := c.observeNodes([]string{node}, "")
		out, err := c.kubectlQuiet("get", "events", "--field-selector", "involvedObject.name="+node+",reason="+reason,
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

// leader waits for the controller's leader election lease to be held by a
// pod other than not, and returns the pod's name.
func (c *cluster) leader(ctx context.Context, not string) (string, error) {
	var holder string
	err := poll(ctx, 3*time.Minute, "a leader other than "+not, func() (bool, error) {
		out, _ := c.kubectlQuiet("-n", "ndp-system", "get", "lease", "-o", "jsonpath={.items[*].spec.holderIdentity}")
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

// waitTargetSources waits for the pool's target to move from old to a
// rendering of n MachineConfigs, and returns it.
func (c *cluster) waitTargetSources(ctx context.Context, old string, n int) (string, error) {
	var target string
	err := poll(ctx, 2*time.Minute, fmt.Sprintf("a rendering of %d MachineConfigs", n), func() (bool, error) {
		out, err := c.kubectlQuiet("get", "mcp", "worker", "-o", `jsonpath={.spec.configuration.name} {range .spec.configuration.source[*]}{.name} {end}`)
		f := strings.Fields(out)
		if err != nil || len(f) == 0 || f[0] == old {
			return false, nil
		}
		target = f[0]
		return len(f)-1 == n, nil
	})
	return target, err
}

// waitNodeDone waits for the node to run target, Done, as long as it makes
// progress (followProgress), printing what changes.
func (c *cluster) waitNodeDone(ctx context.Context, target string) error {
	return followProgress(ctx, "the node on "+target, ceilingFor(1), func() observation {
		return c.observeNodes([]string{nodeName}, target).observation
	})
}

// count counts the lines of a node file (containing substr).
func (c *cluster) count(name, substr string) int {
	p := c.s.path("node", name)
	if name == "reboots" {
		p = filepath.Join(c.host, "reboots")
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

func firstLine(s, prefix string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}
