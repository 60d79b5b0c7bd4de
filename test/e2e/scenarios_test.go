package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ndp-dev/ndp/test/framework"
)

// jsonTarget reads a pool's target, its rendered config.
const jsonTarget = `jsonpath={.spec.configuration.name}`

// The scenarios without worker VMs: what an administrator would do and
// watch, through kubectl only; each checks its outcome on the node itself.

// nodePool: the worker pool and its chrony MachineConfig, the node
// labelled a worker, and the pool's first rollout.
func (s *suite) nodePool(t testing.TB) {
	c, ctx := s.c, s.ctx
	c.Step("The worker pool and its chrony MachineConfig; the node labelled a worker")
	if _, err := c.KubectlMust("apply", "-f", "examples/cluster/worker-pool.yaml", "-f", "examples/cluster/50-worker-chrony.yaml"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.KubectlMust("label", "node", framework.NodeName, "node-role.kubernetes.io/worker="); err != nil {
		t.Fatal(err)
	}
	var err error
	if s.first, err = c.WaitTargetSources(ctx, "", 2); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitNodeDone(ctx, s.first); err != nil {
		t.Fatal(err)
	}
	c.Kubectl("ndp", "status")
}

// nodeChrony: the chrony change, rendered, planned and executed by the
// daemon's pod: chronyd restarted once, the new file, no reboot.
func (s *suite) nodeChrony(t testing.TB) {
	c, ctx := s.c, s.ctx
	c.Step("The change: rendered, planned, executed by the daemon's pod (chronyd restarted, no drain, no reboot)")
	before := c.Count("chronyd.service.trace", "start")
	if _, err := c.KubectlMust("apply", "-f", "examples/cluster/50-worker-chrony-v2.yaml"); err != nil {
		t.Fatal(err)
	}
	var err error
	if s.second, err = c.WaitTargetSources(ctx, s.first, 2); err != nil {
		t.Fatal(err)
	}
	c.Kubectl("get", "mc", s.second, "-o", "jsonpath={.status.postConfigActions[0].actions}")
	fmt.Println()
	if err := c.WaitNodeDone(ctx, s.second); err != nil {
		t.Fatal(err)
	}
	conf, _ := os.ReadFile(filepath.Join(c.Host, "etc", "chrony.conf"))
	restarts := c.Count("chronyd.service.trace", "start") - before
	c.Report(fmt.Sprintf("chrony change: chronyd restarted %d time(s); /etc/chrony.conf %q; reboots %d", restarts, framework.FirstLine(string(conf), ""), c.Count("reboots", "")))
	if restarts != 1 || !strings.Contains(string(conf), "time1.example.com") || c.Count("reboots", "") != 0 {
		t.Fatalf("the chrony change: want one restart, the new file and no reboot; got %d restarts, %q, %d reboots", restarts, conf, c.Count("reboots", ""))
	}
}

// leader kills the leading controller's pod and waits for the other
// replica to take over.
func (s *suite) leader(t testing.TB) {
	c, ctx := s.c, s.ctx
	c.Step("Leader election: two ndp-controller replicas, one leads; its pod is killed")
	leader, err := c.Leader(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("leader: %s\n", leader)
	if _, err := c.KubectlMust("-n", "ndp-system", "delete", "pod", leader, "--grace-period=0", "--force", "--wait=false"); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	next, err := c.Leader(ctx, leader)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("new leader: %s, %s after the kill\n", next, time.Since(killed).Round(100*time.Millisecond))
	c.Report(fmt.Sprintf("leader election: %s killed, %s took over in %s", leader, next, time.Since(killed).Round(100*time.Millisecond)))
}

// ensureChronyPolicy applies the chrony policy (chrony changes restart
// chronyd) and waits until it plans: every scenario whose chrony change
// must be a restart calls it, so that each stands on its own
// (NDP_CLUSTER_SCENARIOS).
func (s *suite) ensureChronyPolicy(t testing.TB) {
	t.Helper()
	if _, err := s.c.KubectlMust("apply", "-f", "examples/policies/chrony.yaml"); err != nil {
		t.Fatal(err)
	}
	if err := s.c.WaitFor(s.ctx, "the chrony policy to be active", "True True",
		"get", "ndp", "chrony", "-o", `jsonpath={.status.conditions[?(@.type=="Accepted")].status} {.status.conditions[?(@.type=="Active")].status}`); err != nil {
		t.Fatal(err)
	}
}

// preview applies the chrony policy and previews the chrony change with a
// server-side dry-run, through the webhook's Service.
func (s *suite) preview(t testing.TB) {
	c := s.c
	c.Step("A policy (chrony changes restart chronyd); a dry-run previews the change through the webhook's Service")
	s.ensureChronyPolicy(t)
	preview, err := c.KubectlMust("apply", "--dry-run=server", "-f", "examples/cluster/50-worker-chrony-v2.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(preview, "Warning:") || !strings.Contains(preview, "Restart") {
		t.Fatalf("the dry-run showed no preview warning with the plan:\n%s", preview)
	}
	c.Report("preview: " + framework.FirstLine(preview, "Warning:"))
}

// drain: a change that needs a drain and a reboot, with a Deployment whose
// PodDisruptionBudget the real disruption controller maintains.
func (s *suite) drain(t testing.TB) {
	c, ctx := s.c, s.ctx
	c.Step("A second Node object (no kubelet): ndp, like the MCO, never drains a single-node cluster")
	fmt.Println("# absent-node stays NotReady and outside every pool; it only makes this a cluster of two nodes,")
	fmt.Println("# where a node's drain has somewhere to send pods to (here: nowhere Ready, so they wait for the uncordon).")
	fmt.Println("# The DaemonSet's pod for it stays Pending: no kubelet runs it.")
	other := `{"apiVersion":"v1","kind":"Node","metadata":{"name":"absent-node"}}`
	if err := os.WriteFile(c.Path("absent-node.json"), []byte(other), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := c.KubectlMust("create", "-f", c.Path("absent-node.json")); err != nil {
		t.Fatal(err)
	}

	c.Step("A workload: a Deployment of 2 (the pause image, by digest) and a PodDisruptionBudget (minAvailable 1)")
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
`, c.PauseImage)
	f := c.Path("web.yaml")
	if err := os.WriteFile(f, []byte(workload), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := c.KubectlMust("apply", "-f", f); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitFor(ctx, "2 web pods ready and the budget computed", "2 1",
		"get", "deploy,pdb", "web", "-o", `jsonpath={.items[0].status.readyReplicas} {.items[1].status.disruptionsAllowed}`); err != nil {
		t.Fatal(err)
	}
	c.Kubectl("get", "pods,pdb", "-o", "wide")

	c.Step("A change the default policies answer with drain and reboot; previewed, then applied")
	if _, err := c.KubectlMust("apply", "--dry-run=server", "-f", "examples/cluster/60-worker-app.yaml"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.KubectlMust("apply", "-f", "examples/cluster/60-worker-app.yaml"); err != nil {
		t.Fatal(err)
	}
	target, err := c.WaitTargetSources(ctx, s.second, 3)
	if err != nil {
		t.Fatal(err)
	}
	c.Step("The daemon's pod cordons and drains: one pod evicted, the second refused by the budget")
	var blockedFor time.Duration
	err = framework.Poll(ctx, 3*time.Minute, "the drain to be held by the budget", func() (bool, error) {
		cordoned, _ := c.KubectlQuiet("get", "node", framework.NodeName, "-o", "jsonpath={.spec.unschedulable}")
		pods, _ := c.KubectlQuiet("get", "pods", "-l", "app=web", "-o", `jsonpath={range .items[*]}{.status.phase} {end}`)
		allowed, _ := c.KubectlQuiet("get", "pdb", "web", "-o", "jsonpath={.status.disruptionsAllowed}")
		return cordoned == "true" && strings.Count(pods, "Running") == 1 && strings.Contains(pods, "Pending") && allowed == "0", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	held := time.Now()
	// Hold: the daemon keeps asking, the budget keeps refusing.
	time.Sleep(10 * time.Second)
	c.Kubectl("get", "pods,pdb", "-o", "wide")
	logs := c.Kubectl("-n", "ndp-system", "logs", "-l", "app.kubernetes.io/name=ndp-daemon", "--tail=200")
	refusals := strings.Count(logs, "disruption budget")
	if refusals == 0 {
		t.Fatalf("the daemon's log shows no eviction refused by the budget")
	}
	if c.Count("reboots", "") != 0 {
		t.Fatalf("the node rebooted while its drain was held")
	}
	blockedFor = time.Since(held)

	c.Step("The daemon's pod deleted mid-drain: the DaemonSet's new pod resumes from the journal at the drain")
	if err := c.DeleteDaemonPod(ctx); err != nil {
		t.Fatal(err)
	}
	resumed, err := c.WaitEvent(ctx, framework.NodeName, "Resumed", "at step drain")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("event: %s\n", resumed)
	if err := framework.Poll(ctx, 2*time.Minute, "the new pod's drain to be refused by the budget again", func() (bool, error) {
		logs, _ := c.KubectlQuiet("-n", "ndp-system", "logs", "-l", "app.kubernetes.io/name=ndp-daemon", "--tail=200")
		return strings.Contains(logs, "disruption budget"), nil
	}); err != nil {
		t.Fatal(err)
	}
	if cordoned, _ := c.KubectlQuiet("get", "node", framework.NodeName, "-o", "jsonpath={.spec.unschedulable}"); cordoned != "true" || c.Count("reboots", "") != 0 {
		t.Fatalf("after the daemon's pod was replaced mid-drain: cordoned %q (want true), %d reboots (want 0)", cordoned, c.Count("reboots", ""))
	}
	c.Report("daemon pod deleted mid-drain: " + resumed)

	c.Step("The budget allows it (minAvailable 0): the drain completes, the reboot is recorded")
	if _, err := c.KubectlMust("patch", "pdb", "web", "--type=merge", "-p", `{"spec":{"minAvailable":0}}`); err != nil {
		t.Fatal(err)
	}
	if err := framework.Poll(ctx, 3*time.Minute, "the daemon to request a reboot", func() (bool, error) { return c.Count("reboots", "") > 0, nil }); err != nil {
		t.Fatal(err)
	}
	c.Kubectl("get", "pods", "-o", "wide")
	c.Step("The reboot, played: a new boot ID, and the daemon's pod killed (a reboot would); its new pod resumes from the journal")
	oldBoot, _ := os.ReadFile(filepath.Join(c.Host, "boot_id"))
	newBoot := framework.NewBootID()
	if err := os.WriteFile(filepath.Join(c.Host, "boot_id"), []byte(newBoot+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteDaemonPod(ctx); err != nil {
		t.Fatal(err)
	}
	// Back from the reboot it asked for, the update ends: its Event names
	// the steps that ran (a planned reboot is no Resumed event).
	if msg, err := c.WaitEvent(ctx, framework.NodeName, "UpdateComplete", target+": "); err != nil {
		t.Fatal(err)
	} else if !strings.Contains(msg, "reboot") {
		t.Fatalf("UpdateComplete does not name the reboot: %q", msg)
	}
	if err := c.WaitNodeDone(ctx, target); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitFor(ctx, "the node uncordoned", "", "get", "node", framework.NodeName, "-o", "jsonpath={.spec.unschedulable}"); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitFor(ctx, "the scheduler to place both web pods again", "2",
		"get", "deploy", "web", "-o", "jsonpath={.status.readyReplicas}"); err != nil {
		t.Fatal(err)
	}
	c.Kubectl("get", "pods", "-o", "wide")
	c.Kubectl("ndp", "status")
	reboots := c.Count("reboots", "")
	file, err := os.ReadFile(filepath.Join(c.Host, "etc", "ndp-example", "app.conf"))
	if err != nil {
		t.Fatalf("the new file on the node: %v", err)
	}
	c.Report(
		fmt.Sprintf("drain: held by the budget (%d refusals in the daemon's log, %s watched), released at minAvailable 0", refusals, blockedFor.Round(time.Second)),
		fmt.Sprintf("reboot: %d requested; %s: boot %s -> %s; the new daemon pod resumed and uncordoned; app.conf %q", reboots, framework.NodeName, strings.TrimSpace(string(oldBoot))[:8], newBoot[:8], strings.TrimSpace(string(file))))
	if reboots != 1 {
		t.Fatalf("want exactly one reboot request, got %d", reboots)
	}
}

// token checks the daemon's admission policies with its pod's own
// projected token, read from the volume the kubelet mounted.
func (s *suite) token(t testing.TB) {
	c := s.c
	c.Step("The daemon's admission policies, with the daemon pod's own projected token")
	uid, err := c.KubectlMust("-n", "ndp-system", "get", "pods", "-l", "app.kubernetes.io/name=ndp-daemon", "--field-selector", "spec.nodeName="+framework.NodeName, "-o", "jsonpath={.items[0].metadata.uid}")
	if err != nil {
		t.Fatal(err)
	}
	// The token the kubelet projected into the pod (a tmpfs the kubelet
	// mounted in the node's mount namespace).
	dir := c.Path("kubelet", "root", "pods", uid, "volumes", "kubernetes.io~projected")
	argv := append(c.NSEnter(true), "sh", "-c", "cat "+dir+"/*/token")
	raw, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	out := string(raw)
	if err != nil || len(out) < 100 {
		ls, _ := exec.Command(argv[0], append(argv[1:3], "ls", "-laR", filepath.Dir(dir))...).CombinedOutput()
		t.Fatalf("reading the daemon pod's token in %s: %v %s\n%s", dir, err, out, ls)
	}
	token := strings.TrimSpace(out)
	who, _ := c.KubectlAs(token, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.extra.authentication\\.kubernetes\\.io/node-name}")
	fmt.Printf("the token is %s\n", who)
	patch := `{"metadata":{"annotations":{"machineconfiguration.openshift.io/reason":""}}}`
	own, ownErr := c.KubectlAs(token, "patch", "node", framework.NodeName, "--dry-run=server", "--type=merge", "-p", patch)
	fmt.Printf("$ kubectl --token <daemon pod's> patch node %s --dry-run=server ...\n%s", framework.NodeName, own)
	theirs, theirErr := c.KubectlAs(token, "patch", "node", "absent-node", "--dry-run=server", "--type=merge", "-p", patch)
	fmt.Printf("$ kubectl --token <daemon pod's> patch node absent-node --dry-run=server ...\n%s", theirs)
	if ownErr != nil || theirErr == nil || !strings.Contains(theirs, "may only change its own Node") {
		t.Fatalf("the daemon's token: own node (%v) must be allowed and another refused by the policy (%v)", ownErr, theirErr)
	}
	c.Report("admission: the daemon pod's own token may patch " + framework.NodeName + " and not absent-node")
}
