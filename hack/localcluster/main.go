// Command localcluster runs ndp end to end on this machine, as a person
// would watch it (make local-cluster): etcd and kube-apiserver from bin/
// with ndp's CRDs and admission webhooks, ndp-controller, three simulated
// nodes — each a Node object, a host root of its own, a real systemd user
// manager and an ndp-daemon process — then a chrony change previewed,
// planned and rolled out node by node. It checks the outcome, prints it,
// and stops everything it started.
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	kwait "k8s.io/apimachinery/pkg/util/wait"

	"github.com/ndp-dev/ndp/internal/controlplane"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/scheme"
	"github.com/ndp-dev/ndp/internal/systemdtest"
)

const nodes = 3

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c := &cluster{}
	err := c.run(ctx)
	c.cleanup()
	if err == nil && c.leftBehind {
		err = errors.New("processes were left behind")
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "\nlocal-cluster: %v\n", err)
		if c.work != "" {
			fmt.Fprintf(os.Stderr, "logs were in %s (removed); rerun with NDP_KEEP=1 to keep them\n", c.work)
		}
		os.Exit(1)
	}
}

type cluster struct {
	root, bin, work, kubeconfig string
	env                         *envtest.Environment
	k8s                         client.Client
	procs                       []*exec.Cmd // ndp-controller and the daemons, stopped in reverse
	managers                    []*systemdtest.Manager
	hosts                       []string // host roots, by node
	leftBehind                  bool
}

// leftovers lists the processes, other than this one, whose command line
// or environment names the work directory: daemons, systemd managers.
func leftovers(work string) []string {
	if work == "" {
		return nil
	}
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid := e.Name()
		if pid[0] < '0' || pid[0] > '9' || pid == fmt.Sprint(os.Getpid()) {
			continue
		}
		for _, f := range []string{"cmdline", "environ"} {
			b, _ := os.ReadFile(filepath.Join("/proc", pid, f))
			if bytes.Contains(b, []byte(work)) {
				cmd, _ := os.ReadFile(filepath.Join("/proc", pid, "cmdline"))
				out = append(out, pid+" "+strings.ReplaceAll(string(cmd), "\x00", " "))
				break
			}
		}
	}
	return out
}

func step(format string, args ...any) {
	fmt.Printf("\n==> %s\n", fmt.Sprintf(format, args...))
}

func (c *cluster) run(ctx context.Context) error {
	var err error
	if c.root, err = os.Getwd(); err != nil {
		return err
	}
	c.bin = filepath.Join(c.root, "bin")
	for _, b := range []string{"etcd", "kube-apiserver", "kubectl", "ndp", "kubectl-ndp", "ndp-controller", "ndp-daemon"} {
		if _, err := os.Stat(filepath.Join(c.bin, b)); err != nil {
			return fmt.Errorf("bin/%s is missing: run make build control-plane (make local-cluster does)", b)
		}
	}
	if c.work, err = os.MkdirTemp("", "ndp-local-"); err != nil {
		return err
	}

	step("Control plane: etcd and kube-apiserver from bin/, ndp's CRDs and admission webhooks")
	c.env = controlplane.Environment(c.root, c.bin, true)
	cfg, err := c.env.Start()
	if err != nil {
		return fmt.Errorf("starting the control plane: %w", err)
	}
	if c.kubeconfig, err = controlplane.AdminKubeconfig(c.env, c.work); err != nil {
		return err
	}
	if c.k8s, err = client.New(cfg, client.Options{Scheme: scheme.New()}); err != nil {
		return err
	}
	fmt.Printf("kube-apiserver at %s (kubeconfig %s)\n", cfg.Host, c.kubeconfig)

	step("ndp-controller: policy, render, registries, plan, rollout and status controllers, and the webhooks")
	probe, err := controlplane.FreePort()
	if err != nil {
		return err
	}
	wh := c.env.WebhookInstallOptions
	if err := c.start("ndp-controller", filepath.Join(c.work, "ndp-controller.log"), filepath.Join(c.bin, "ndp-controller"),
		"--kubeconfig", c.kubeconfig, "--leader-elect=false", "--metrics-bind-address=0",
		"--health-probe-bind-address", fmt.Sprintf("127.0.0.1:%d", probe),
		"--webhook-port", fmt.Sprint(wh.LocalServingPort), "--webhook-cert-dir", wh.LocalServingCertDir); err != nil {
		return err
	}
	if err := wait(ctx, 2*time.Minute, "ndp-controller to be ready", func() (bool, error) {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", probe))
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	}); err != nil {
		return err
	}
	if err := c.kubectlUntil(ctx, "the default policy", "default", "get", "ndp"); err != nil {
		return err
	}

	// The shipped admission policies: ndp-daemon's service account confined
	// to its own node (the daemons here run as the admin user), and
	// rendered configs immutable.
	c.kubectl("apply", "-f", "manifests/admission/")

	step("The worker pool and its chrony MachineConfig, before any node joins")
	c.kubectl("apply", "-f", "examples/cluster/worker-pool.yaml")
	if _, err := c.waitTarget(ctx, ""); err != nil { // rendered from the registries controller's config
		return err
	}
	c.kubectl("apply", "-f", "examples/cluster/50-worker-chrony.yaml")
	first, err := c.waitSources(ctx, 2)
	if err != nil {
		return err
	}

	step("Three nodes join: each a Node, a host root, a systemd user manager running chronyd and crio, and ndp-daemon")
	for i := 1; i <= nodes; i++ {
		if err := c.addNode(ctx, fmt.Sprintf("worker-%d", i), i); err != nil {
			return err
		}
	}
	if err := c.waitDone(ctx, first); err != nil {
		return err
	}
	c.kubectl("get", "nodes")
	c.kubectl("ndp", "status")

	step("A policy: a change to /etc/chrony.conf restarts chronyd (no drain, no reboot)")
	c.kubectl("apply", "-f", "examples/policies/chrony.yaml")
	if err := c.kubectlUntil(ctx, "the chrony policy to be accepted", "True", "get", "ndp", "chrony", "-o", "jsonpath={.status.conditions[?(@.type==\"Accepted\")].status}"); err != nil {
		return err
	}
	fmt.Println()
	c.kubectl("get", "ndp")

	step("Before applying: a server-side dry-run previews the plan")
	c.kubectl("apply", "--dry-run=server", "-f", "examples/cluster/50-worker-chrony-v2.yaml")

	step("The change, with the pool paused: rendered and planned, nobody moves yet")
	c.kubectl("patch", "machineconfigpool", "worker", "--type=merge", "-p", `{"spec":{"paused":true}}`)
	before := c.restarts()
	c.kubectl("apply", "-f", "examples/cluster/50-worker-chrony-v2.yaml")
	target, err := c.waitTarget(ctx, first)
	if err != nil {
		return err
	}
	if err := wait(ctx, 2*time.Minute, "the plan in "+target+"'s status", func() (bool, error) {
		out, _ := c.kubectlQuiet("get", "mc", target, "-o", "jsonpath={.status.postConfigActions[0].actions[0].type}")
		return out == "Restart", nil
	}); err != nil {
		return err
	}
	out, _ := c.kubectlQuiet("get", "mc", target, "-o", "jsonpath={.status.postConfigActions[0]}")
	var plan any
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		return fmt.Errorf("the plan in %s's status: %w", target, err)
	}
	pretty, _ := json.MarshalIndent(plan, "", "  ")
	fmt.Printf("$ kubectl get mc %s -o jsonpath='{.status.postConfigActions[0]}'\n%s\n", target, pretty)
	c.kubectl("ndp", "status")

	step("Unpaused: the rollout, one node at a time (maxUnavailable: 1)")
	c.kubectl("patch", "machineconfigpool", "worker", "--type=merge", "-p", `{"spec":{"paused":false}}`)
	if err := c.watchRollout(ctx, target); err != nil {
		return err
	}

	step("Final state")
	c.kubectl("ndp", "status")
	c.kubectl("get", "machineconfigpool", "worker")
	c.kubectl("get", "machineconfignodes")
	c.kubectl("get", "clusteroperator", "ndp")
	after := c.restarts()
	var problems []string
	for i, host := range c.hosts {
		name := fmt.Sprintf("worker-%d", i+1)
		b, _ := os.ReadFile(filepath.Join(host, "etc", "chrony.conf"))
		fmt.Printf("%s: chronyd restarted %d time(s); /etc/chrony.conf: %q\n", name, after[i]-before[i], strings.SplitN(string(b), "\n", 2)[0])
		if after[i]-before[i] != 1 || !strings.Contains(string(b), "time1.example.com") {
			problems = append(problems, name)
		}
		if _, err := os.Stat(filepath.Join(c.work, name, "reboots")); err == nil {
			problems = append(problems, name+" rebooted")
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("unexpected outcome on %s", strings.Join(problems, ", "))
	}
	fmt.Println("\nEvery node runs the new config; chronyd restarted once on each, nothing drained or rebooted.")
	return nil
}

// addNode creates a simulated node and starts its daemon.
func (c *cluster) addNode(ctx context.Context, name string, i int) error {
	dir := filepath.Join(c.work, name)
	host := filepath.Join(dir, "root")
	for p, data := range map[string]string{
		"etc/passwd":      "root:x:0:0:root:/root:/bin/bash\ncore:x:1000:1000:CoreOS Admin:/home/core:/bin/bash\n",
		"etc/group":       "root:x:0:\ncore:x:1000:\n",
		"etc/shadow":      "root:*:19000:0:99999:7:::\ncore:*:19000:0:99999:7:::\n",
		"etc/chrony.conf": "pool 0.rhel.pool.ntp.org iburst\ndriftfile /var/lib/chrony/drift\n",
	} {
		if err := os.MkdirAll(filepath.Join(host, filepath.Dir(p)), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(host, p), []byte(data), 0o644); err != nil {
			return err
		}
	}
	m, err := systemdtest.Start(filepath.Join(dir, "run"), filepath.Join(host, "etc", "xdg"))
	if err != nil {
		return err
	}
	c.managers = append(c.managers, m)
	c.hosts = append(c.hosts, host)
	for _, unit := range []string{"chronyd.service", "crio.service"} {
		trace := filepath.Join(dir, unit+".trace")
		body := fmt.Sprintf("[Unit]\nDescription=%s (simulated)\n[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=/bin/sh -c 'echo start >> %s'\nExecReload=/bin/sh -c 'echo reload >> %s'\n", unit, trace, trace)
		if err := os.WriteFile(filepath.Join(m.UnitDir(), unit), []byte(body), 0o644); err != nil {
			return err
		}
	}
	if err := m.Systemctl("daemon-reload"); err != nil {
		return err
	}
	if err := m.Systemctl("start", "chronyd.service", "crio.service"); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "boot_id"), []byte(fmt.Sprintf("%x\n", sha256.Sum256([]byte(name)))[:33]), 0o644); err != nil {
		return err
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		"node-role.kubernetes.io/worker": "", corev1.LabelTopologyZone: fmt.Sprintf("zone-%c", 'a'+i%2), corev1.LabelHostname: name}}}
	if err := c.k8s.Create(ctx, node); err != nil {
		return err
	}
	// No kubelet here: the node is reported Ready as a kubelet would, with
	// a patch of its status (the rollout controller may already have
	// written the node: it adopts a node that runs no config at once).
	base := node.DeepCopy()
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "simulated by make local-cluster", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	if err := c.k8s.Status().Patch(ctx, node, client.MergeFrom(base)); err != nil {
		return err
	}
	return c.start(name, filepath.Join(dir, "ndp-daemon.log"), filepath.Join(c.bin, "ndp-daemon"),
		"--kubeconfig", c.kubeconfig, "--node-name", name, "--root", host,
		"--unit-dir", "/etc/xdg/systemd/user", "--systemd-address", m.Address(),
		"--boot-id-file", filepath.Join(dir, "boot_id"),
		"--simulate-reboot", filepath.Join(dir, "reboots"), "--simulate-os-updates", filepath.Join(dir, "os-updates"),
		"--metrics-bind-address=0", "--health-probe-bind-address=0", "--plan-poll-interval=1s")
}

// restarts counts chronyd's starts on each node, from its trace.
func (c *cluster) restarts() []int {
	out := make([]int, len(c.hosts))
	for i := range c.hosts {
		b, _ := os.ReadFile(filepath.Join(c.work, fmt.Sprintf("worker-%d", i+1), "chronyd.service.trace"))
		out[i] = bytes.Count(b, []byte("start"))
	}
	return out
}

func (c *cluster) pool(ctx context.Context) (*mcfgv1.MachineConfigPool, error) {
	var p mcfgv1.MachineConfigPool
	err := c.k8s.Get(ctx, client.ObjectKey{Name: "worker"}, &p)
	return &p, err
}

// waitTarget waits for the pool's target to change from old.
func (c *cluster) waitTarget(ctx context.Context, old string) (string, error) {
	var target string
	err := wait(ctx, 2*time.Minute, "the pool's new target", func() (bool, error) {
		p, err := c.pool(ctx)
		if err != nil {
			return false, nil
		}
		target = p.Spec.Configuration.Name
		return target != "" && target != old, nil
	})
	return target, err
}

// waitSources waits for the pool's target to be rendered from n
// MachineConfigs and returns it.
func (c *cluster) waitSources(ctx context.Context, n int) (string, error) {
	var target string
	err := wait(ctx, 2*time.Minute, fmt.Sprintf("a rendering of %d MachineConfigs", n), func() (bool, error) {
		p, err := c.pool(ctx)
		if err != nil {
			return false, nil
		}
		target = p.Spec.Configuration.Name
		return len(p.Spec.Configuration.Source) == n, nil
	})
	return target, err
}

// waitDone waits until every node runs target and is Done.
func (c *cluster) waitDone(ctx context.Context, target string) error {
	return wait(ctx, 3*time.Minute, "every node on "+target, func() (bool, error) {
		states, err := c.states(ctx)
		if err != nil || len(states) < nodes {
			return false, nil
		}
		for _, s := range states {
			if s != target+" Done" {
				return false, nil
			}
		}
		return true, nil
	})
}

// states reads each node's current config and state.
func (c *cluster) states(ctx context.Context) ([]string, error) {
	var list corev1.NodeList
	if err := c.k8s.List(ctx, &list); err != nil {
		return nil, err
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	var out []string
	for _, n := range list.Items {
		a := n.Annotations
		s := a[ndpmcv1.CurrentConfigAnnotation] + " " + a[ndpmcv1.StateAnnotation]
		if a[ndpmcv1.DesiredConfigAnnotation] != a[ndpmcv1.CurrentConfigAnnotation] {
			s += " → " + a[ndpmcv1.DesiredConfigAnnotation]
		}
		if n.Spec.Unschedulable {
			s += " cordoned"
		}
		out = append(out, s)
	}
	return out, nil
}

// watchRollout prints `kubectl ndp status` whenever a node's state
// changes, until every node is Done on target; it fails if more nodes than
// the budget (1) are ever out at once.
func (c *cluster) watchRollout(ctx context.Context, target string) error {
	last := ""
	peak := 0
	err := waitEvery(ctx, 5*time.Minute, 50*time.Millisecond, "the rollout", func() (bool, error) {
		states, err := c.states(ctx)
		if err != nil {
			return false, nil
		}
		done, out := 0, 0
		for _, s := range states {
			if s == target+" Done" {
				done++
			} else if strings.Contains(s, "→") || strings.Contains(s, "Working") {
				out++
			}
		}
		peak = max(peak, out)
		if key := strings.Join(states, "|"); key != last {
			last = key
			c.kubectl("ndp", "status")
		}
		return done == len(states), nil
	})
	if err != nil {
		return err
	}
	if peak > 1 {
		return fmt.Errorf("%d nodes were updating at once with maxUnavailable 1", peak)
	}
	return nil
}

// kubectl runs the real kubectl (with bin/ on PATH for the ndp plugin) and
// prints the command and its output.
func (c *cluster) kubectl(args ...string) string {
	shown := make([]string, len(args))
	for i, a := range args {
		shown[i] = a
		if strings.ContainsAny(a, `{}[]"?* '`) {
			shown[i] = "'" + a + "'"
		}
	}
	fmt.Printf("$ kubectl %s\n", strings.Join(shown, " "))
	out, _ := c.kubectlQuiet(args...)
	fmt.Print(out)
	return out
}

func (c *cluster) kubectlQuiet(args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(c.bin, "kubectl"), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.kubeconfig, "PATH="+c.bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// kubectlUntil runs kubectl until its output contains want, then prints it.
func (c *cluster) kubectlUntil(ctx context.Context, what, want string, args ...string) error {
	err := wait(ctx, 2*time.Minute, what, func() (bool, error) {
		out, _ := c.kubectlQuiet(args...)
		return strings.Contains(out, want), nil
	})
	if err == nil {
		c.kubectl(args...)
	}
	return err
}

// start runs a process of the cluster, its output in logFile.
func (c *cluster) start(name, logFile, bin string, args ...string) error {
	f, err := os.Create(logFile)
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", name, err)
	}
	c.procs = append(c.procs, cmd)
	fmt.Printf("started %s (pid %d, log %s)\n", name, cmd.Process.Pid, logFile)
	return nil
}

// cleanup stops everything run started, in reverse order, and removes its
// files (unless NDP_KEEP is set).
func (c *cluster) cleanup() {
	for i := len(c.procs) - 1; i >= 0; i-- {
		p := c.procs[i]
		_ = p.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = p.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = p.Process.Kill()
			<-done
		}
	}
	for _, m := range c.managers {
		m.Stop()
	}
	if c.env != nil {
		if err := c.env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the control plane:", err)
		}
	}
	if left := leftovers(c.work); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "processes left behind: %v\n", left)
		c.leftBehind = true
	}
	if c.work != "" {
		if os.Getenv("NDP_KEEP") != "" {
			fmt.Printf("\nkept %s\n", c.work)
		} else {
			_ = os.RemoveAll(c.work)
		}
	}
	fmt.Printf("\nstopped ndp-controller, %d daemons, %d systemd managers, kube-apiserver and etcd\n", max(len(c.procs)-1, 0), len(c.managers))
}

// wait polls cond until it holds, ctx ends or timeout passes.
func wait(ctx context.Context, timeout time.Duration, what string, cond func() (bool, error)) error {
	return waitEvery(ctx, timeout, 300*time.Millisecond, what, cond)
}

func waitEvery(ctx context.Context, timeout, every time.Duration, what string, cond func() (bool, error)) error {
	err := kwait.PollUntilContextTimeout(ctx, every, timeout, true, func(context.Context) (bool, error) { return cond() })
	switch {
	case err == nil || !kwait.Interrupted(err):
		return err
	case ctx.Err() != nil:
		return errors.New("interrupted")
	}
	return fmt.Errorf("waited %s for %s", timeout, what)
}
