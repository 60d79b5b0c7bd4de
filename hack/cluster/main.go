// Command cluster is `make cluster`: ndp installed from its install
// manifests on a real one-node Kubernetes cluster on this machine, and
// used through kubectl only, then everything stopped.
//
// The node is real: kubelet, kube-proxy, kube-controller-manager and
// kube-scheduler built from the Go module proxy (bin/), containerd and
// runc from Debian, the CNI bridge, all in a network namespace and a
// private mount namespace of their own. ndp's image is pulled by digest
// from a registry on that namespace's loopback (go-containerregistry's).
// What is not real, because this machine has no systemd as PID 1: the
// daemon pod's systemd is a systemd user manager reached through the
// mounted socket, its host root a directory, and a reboot is recorded, then
// played by this program (a new boot ID, the daemon's pod killed as a
// reboot would).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/ndp-dev/ndp/internal/systemdtest"
)

const nodeName = "ndp-node"

type cluster struct {
	root string // the repository
	s    *stack
	sd   *systemdtest.Manager
	// host is the daemon's host root; ndpImage and pauseImage are
	// REPO@DIGEST in the registry.
	host, ndpImage, pauseImage string
	keep                       bool
	start                      time.Time
	summary                    []string
	// workers are the worker VMs, when this machine can run them.
	workers []*worker
	// seenEvents holds the uids of the events waitEvent returned.
	seenEvents map[string]bool
}

func main() {
	keep := flag.Bool("keep", false, "leave the cluster running (print how to reach and stop it) instead of stopping it")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c := &cluster{keep: *keep, start: time.Now()}
	err := c.run(ctx)
	failedStep := steps.title
	if err != nil {
		fmt.Fprintf(os.Stderr, "\ncluster: %v\n", err)
		c.dumpLogs()
	}
	if !c.keep || err != nil {
		if left := c.down(); len(left) > 0 {
			fmt.Fprintf(os.Stderr, "left behind:\n  %s\n", strings.Join(left, "\n  "))
			if err == nil {
				err = errors.New("something was left behind")
			}
		}
	}
	if err != nil {
		// Again, last: the logs above are long and CI shows a log's tail.
		fmt.Fprintf(os.Stderr, "\neach step's time:\n%s\n", strings.Join(steps.took, "\n"))
		fmt.Fprintf(os.Stderr, "\ncluster FAILED in step %q after %s:\n  %v\n", failedStep, time.Since(c.start).Round(time.Second), err)
		os.Exit(1)
	}
}

func (c *cluster) run(ctx context.Context) error {
	var err error
	if c.root, err = os.Getwd(); err != nil {
		return err
	}
	if err := c.preflight(); err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "ndp-cluster-")
	if err != nil {
		return err
	}
	c.s = &stack{work: work, cgroup: filepath.Base(work)}
	s := c.s
	if n := workerCount(); n == 0 {
		fmt.Println("Scenario: without worker VMs, as asked (NDP_CLUSTER_VMS=0, make cluster VMS=0): the scenarios run on the namespace's own node, without systemd as PID 1.")
	} else {
		fmt.Printf("Scenario: the full one, with %d worker VMs (make cluster VMS=0 runs the smaller one without them).\n", n)
		if only := os.Getenv("NDP_CLUSTER_SCENARIOS"); only != "" {
			fmt.Printf("Only the worker-VM scenarios %s after the pool's first rollout, as asked (NDP_CLUSTER_SCENARIOS, make cluster SCENARIOS=...).\n", only)
		}
		for i := 1; i <= n; i++ {
			c.workers = append(c.workers, &worker{name: fmt.Sprintf("ndp-worker-%d", i), ip: workerIP(i), index: i})
		}
	}

	step("Namespaces: the node's network (%s on a veth, pods %s) and a private mount namespace", nodeIP, podCIDR)
	if err := s.namespaces(); err != nil {
		return err
	}
	if err := s.cgroups(); err != nil {
		return err
	}
	fmt.Printf("work directory %s; cgroup /%s\n", work, s.cgroup)

	step("A registry on the namespace's loopback (%s); the ndp image and a pause image pushed to it", registry)
	if err := s.start("registry", false, c.bin("image-tool"), "serve", "--addr", registry, "--dir", s.path("registry")); err != nil {
		return err
	}
	if err := s.waitTCP(ctx, registry, 30*time.Second); err != nil {
		return err
	}
	if c.ndpImage, err = c.push(c.bin("ndp-image"), ndpTag); err != nil {
		return err
	}
	if _, err := c.imageTool("build", "--out", s.path("pause-image"), "--entrypoint", "/pause", "--file", "/pause="+c.bin("pause")); err != nil {
		return err
	}
	if c.pauseImage, err = c.push(s.path("pause-image"), pauseTag); err != nil {
		return err
	}
	fmt.Printf("ndp   %s\npause %s\n", c.ndpImage, c.pauseImage)

	step("containerd (Debian's) with runc and the CNI bridge; images pulled from the registry")
	for _, d := range []string{"containerd/root", "containerd/state", "containerd/runc", "containerd/opt", "cni/net.d", "cni/ipam", "kubelet/root", "kubelet/pki", "kubelet/podlogs", "etcd"} {
		if err := os.MkdirAll(s.path(d), 0o700); err != nil {
			return err
		}
	}
	if err := writeFiles(map[string]string{
		s.path("containerd", "config.toml"):               s.containerdConfig(c.pauseImage),
		s.path("cni", "net.d", "10-ndp-cluster.conflist"): s.cniConfig(),
		s.path("kubelet", "config.yaml"):                  s.kubeletConfig(),
		s.path("kubelet", "resolv.conf"):                  "nameserver 127.0.0.1\n",
	}); err != nil {
		return err
	}
	if err := s.start("containerd", true, "containerd", "--config", s.path("containerd", "config.toml")); err != nil {
		return err
	}
	if err := poll(ctx, 30*time.Second, "containerd's socket", func() (bool, error) { return exists(s.containerdSocket()), nil }); err != nil {
		return err
	}

	step("Control plane: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kube-proxy (bin/)")
	if err := c.controlPlane(ctx); err != nil {
		return err
	}

	if len(c.workers) > 0 {
		step("Worker VMs: Debian, systemd as PID 1, containerd and a real kubelet each, booted by qemu in the namespace")
		for _, w := range c.workers {
			w.token = s.pki.nodeTokens[w.name]
		}
		if err := c.startWorkers(ctx); err != nil {
			return err
		}
	}

	step("ndp installed from dist/install.yaml (the image by digest), through kubectl")
	if err := c.install(ctx); err != nil {
		return err
	}

	step("The node joins: a real kubelet")
	if err := c.joinNode(ctx); err != nil {
		return err
	}

	if len(c.workers) > 0 {
		step("The worker VMs join")
		if err := c.joinWorkers(ctx); err != nil {
			return err
		}
		if err := c.waitNDPReady(ctx); err != nil {
			return err
		}
		if err := c.vmScenarios(ctx); err != nil {
			return err
		}
	} else if err := c.scenarios(ctx); err != nil {
		return err
	}
	step("Summary")
	for _, l := range c.summary {
		fmt.Println(l)
	}
	fmt.Println("\neach step's time:")
	for _, l := range steps.took {
		fmt.Println(l)
	}
	fmt.Printf("\nfrom nothing to here: %s\n", time.Since(c.start).Round(time.Second))
	if c.keep {
		fmt.Printf("\nkept running: kubectl with\n  %s %s --kubeconfig %s ...\nstop it by killing this run's processes (work directory %s)\n",
			strings.Join(s.nsenter(false), " "), c.bin("kubectl"), s.admin, work)
	}
	return nil
}

// preflight names what is missing before anything starts.
func (c *cluster) preflight() error {
	if os.Geteuid() != 0 {
		return errors.New("needs root: it creates network and mount namespaces, cgroups and runs containerd")
	}
	if _, err := chosenScenarios(); err != nil {
		return err
	}
	if os.Getenv("NDP_CLUSTER_SCENARIOS") != "" && workerCount() == 0 {
		return errors.New("NDP_CLUSTER_SCENARIOS chooses among the worker-VM scenarios: the smaller scenario (NDP_CLUSTER_VMS=0) runs whole")
	}
	var missing []string
	for _, b := range []string{"etcd", "kube-apiserver", "kubectl", "kubelet", "kube-controller-manager", "kube-scheduler", "kube-proxy", "image-tool", "pause", "ndp-image/index.json"} {
		if !exists(c.bin(b)) {
			missing = append(missing, "bin/"+b+" (make cluster builds it)")
		}
	}
	for _, t := range []string{"containerd", "containerd-shim-runc-v2", "runc", "ctr", "iptables", "nsenter", "unshare", "ip"} {
		if _, err := exec.LookPath(t); err != nil {
			missing = append(missing, t+" (apt-get install containerd runc iptables iproute2 util-linux)")
		}
	}
	if !exists("/usr/lib/cni/bridge") {
		missing = append(missing, "/usr/lib/cni/bridge (apt-get install containernetworking-plugins)")
	}
	if !exists(systemdtest.Binary) {
		missing = append(missing, systemdtest.Binary+" (apt-get install systemd)")
	}
	if workerCount() > 0 {
		if !exists(c.bin("rpm-ostree-standin")) {
			missing = append(missing, "bin/rpm-ostree-standin (make cluster builds it)")
		}
		for _, t := range []string{"prometheus", "promtool", "prometheus-alertmanager", "prometheus-node-exporter"} {
			if _, err := exec.LookPath(t); err != nil {
				missing = append(missing, t+" (apt-get install prometheus prometheus-alertmanager prometheus-node-exporter)")
			}
		}
		if err := c.vmsMissing(); err != nil {
			missing = append(missing, fmt.Sprintf("the worker VMs: %v; make cluster VMS=0 runs without them", err))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing:\n  %s", strings.Join(missing, "\n  "))
	}
	return nil
}

func (c *cluster) bin(name string) string { return filepath.Join(c.root, "bin", name) }

func (c *cluster) imageTool(args ...string) (string, error) {
	argv := append(c.s.nsenter(false), append([]string{c.bin("image-tool")}, args...)...)
	out, err := exec.Command(argv[0], argv[1:]...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("image-tool %s: %w\n%s", strings.Join(args, " "), err, ee.Stderr)
		}
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// push pushes an OCI layout to the registry, from inside the namespace,
// and returns REPO@DIGEST.
func (c *cluster) push(layout, to string) (string, error) {
	return c.imageTool("push", "--insecure", "--layout", layout, "--to", to)
}

func (c *cluster) controlPlane(ctx context.Context) error {
	s := c.s
	var err error
	nodes := []string{nodeName}
	for _, w := range c.workers {
		nodes = append(nodes, w.name)
	}
	if s.pki, err = newPKI(s.path("pki"), nodes, ips("127.0.0.1", nodeIP, kubernetesIP)); err != nil {
		return err
	}
	server := "https://127.0.0.1:" + apiPort
	if s.admin, err = s.pki.kubeconfig("admin", server, s.pki.adminToken); err != nil {
		return err
	}
	if _, err = s.pki.kubeconfig("kubelet", server, s.pki.nodeTokens[nodeName]); err != nil {
		return err
	}
	p := s.pki.path
	if err := s.start("etcd", true, c.bin("etcd"), "--name", "ndp-cluster", "--data-dir", s.path("etcd"),
		"--listen-client-urls", "http://127.0.0.1:2379", "--advertise-client-urls", "http://127.0.0.1:2379",
		"--listen-peer-urls", "http://127.0.0.1:2380", "--initial-advertise-peer-urls", "http://127.0.0.1:2380",
		"--initial-cluster", "ndp-cluster=http://127.0.0.1:2380", "--listen-metrics-urls", "http://127.0.0.1:2381",
		"--quota-backend-bytes", "1073741824", "--unsafe-no-fsync"); err != nil {
		return err
	}
	if err := s.start("kube-apiserver", true, c.bin("kube-apiserver"), "--etcd-servers", "http://127.0.0.1:2379",
		"--bind-address", "0.0.0.0", "--advertise-address", nodeIP, "--secure-port", apiPort,
		"--tls-cert-file", p("apiserver.crt"), "--tls-private-key-file", p("apiserver.key"), "--client-ca-file", p("ca.crt"),
		"--token-auth-file", p("tokens.csv"), "--authorization-mode", "Node,RBAC", "--enable-admission-plugins", "NodeRestriction",
		"--allow-privileged=true", "--service-cluster-ip-range", serviceCIDR,
		"--service-account-issuer", "https://kubernetes.default.svc", "--service-account-key-file", p("sa.pub"),
		"--service-account-signing-key-file", p("sa.key"),
		// The node's name is not in any DNS: logs and exec go to its IP.
		"--kubelet-preferred-address-types", "InternalIP"); err != nil {
		return err
	}
	if err := poll(ctx, 2*time.Minute, "kube-apiserver to be ready", func() (bool, error) {
		out, _ := c.kubectlQuiet("get", "--raw", "/readyz")
		return out == "ok", nil
	}); err != nil {
		return err
	}
	if err := s.start("kube-controller-manager", true, c.bin("kube-controller-manager"), "--kubeconfig", s.admin,
		"--leader-elect=false", "--bind-address", "127.0.0.1", "--secure-port", "10257",
		"--service-account-private-key-file", p("sa.key"), "--root-ca-file", p("ca.crt"),
		"--use-service-account-credentials=false", "--controllers", "*"); err != nil {
		return err
	}
	if err := s.start("kube-scheduler", true, c.bin("kube-scheduler"), "--kubeconfig", s.admin, "--leader-elect=false",
		"--bind-address", "127.0.0.1", "--secure-port", "10259"); err != nil {
		return err
	}
	// iptables mode; conntrack limits and timeouts at 0 so that kube-proxy
	// writes no global sysctl of the host.
	if err := s.start("kube-proxy", true, c.bin("kube-proxy"), "--kubeconfig", s.admin, "--hostname-override", nodeName,
		"--proxy-mode", "iptables", "--cluster-cidr", podCIDR, "--metrics-bind-address", "127.0.0.1:10249",
		"--healthz-bind-address", "127.0.0.1:10256", "--conntrack-max-per-core", "0",
		"--conntrack-tcp-timeout-established", "0", "--conntrack-tcp-timeout-close-wait", "0"); err != nil {
		return err
	}
	c.kubectl("version")
	return nil
}

// install renders the install manifests with the image pushed to the
// registry, applies them as an administrator would, and points the
// daemon at what this node has instead of systemd as PID 1.
func (c *cluster) install(ctx context.Context) error {
	s := c.s
	if err := c.installImage(c.ndpImage); err != nil {
		return err
	}
	if len(c.workers) > 0 {
		// The worker VMs run the DaemonSet as shipped. The namespace's
		// node is this machine itself (its root is the host's, its PID 1
		// no systemd): no daemon there.
		patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":`+
			`{"nodeSelectorTerms":[{"matchExpressions":[{"key":"kubernetes.io/hostname","operator":"NotIn","values":[%q]}]}]}}}}}}}`, nodeName)
		fmt.Printf("# %s is this machine's own namespace (its root the host's, no systemd as PID 1): ndp-daemon runs on the worker VMs only.\n", nodeName)
		_, err := c.kubectlMust("-n", "ndp-system", "patch", "daemonset", "ndp-daemon", "--type=strategic", "-p", patch)
		return err
	}
	// The host root and the systemd manager the daemon's pod mounts.
	c.host = s.path("node", "root")
	if err := writeFiles(map[string]string{
		filepath.Join(c.host, "etc", "passwd"):      "root:x:0:0:root:/root:/bin/bash\ncore:x:1000:1000:CoreOS Admin:/home/core:/bin/bash\n",
		filepath.Join(c.host, "etc", "group"):       "root:x:0:\ncore:x:1000:\n",
		filepath.Join(c.host, "etc", "shadow"):      "root:*:19000:0:99999:7:::\ncore:*:19000:0:99999:7:::\n",
		filepath.Join(c.host, "etc", "chrony.conf"): "pool 0.rhel.pool.ntp.org iburst\ndriftfile /var/lib/chrony/drift\n",
		filepath.Join(c.host, "boot_id"):            newBootID() + "\n",
	}); err != nil {
		return err
	}
	var err error
	if c.sd, err = systemdtest.Start(s.path("node", "run"), filepath.Join(c.host, "etc", "xdg")); err != nil {
		return err
	}
	for _, unit := range []string{"chronyd.service", "crio.service"} {
		trace := s.path("node", unit+".trace")
		body := fmt.Sprintf("[Unit]\nDescription=%s (simulated)\n[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=/bin/sh -c 'echo start >> %s'\nExecReload=/bin/sh -c 'echo reload >> %s'\n", unit, trace, trace)
		if err := os.WriteFile(filepath.Join(c.sd.UnitDir(), unit), []byte(body), 0o644); err != nil {
			return err
		}
	}
	if err := c.sd.Systemctl("daemon-reload"); err != nil {
		return err
	}
	if err := c.sd.Systemctl("start", "chronyd.service", "crio.service"); err != nil {
		return err
	}
	patch := fmt.Sprintf(`[
 {"op": "replace", "path": "/spec/template/spec/volumes/0/hostPath/path", "value": %q},
 {"op": "replace", "path": "/spec/template/spec/volumes/1/hostPath/path", "value": %q},
 {"op": "add", "path": "/spec/template/spec/containers/0/args/-", "value": "--unit-dir=/etc/xdg/systemd/user"},
 {"op": "add", "path": "/spec/template/spec/containers/0/args/-", "value": "--boot-id-file=/rootfs/boot_id"},
 {"op": "add", "path": "/spec/template/spec/containers/0/args/-", "value": "--simulate-reboot=/rootfs/reboots"},
 {"op": "add", "path": "/spec/template/spec/containers/0/args/-", "value": "--simulate-os-updates=/rootfs/os-updates"},
 {"op": "add", "path": "/spec/template/spec/containers/0/args/-", "value": "--drain-evict-retry-delay=2s"}
]`, c.host, filepath.Join(c.sd.RuntimeDir, "systemd"))
	fmt.Println("# This node has no systemd as PID 1: the daemon's pod gets a directory as its host root, a systemd user")
	fmt.Println("# manager's socket as systemd's, and records reboots (this program plays them); nothing else changes.")
	if _, err := c.kubectlMust("-n", "ndp-system", "patch", "daemonset", "ndp-daemon", "--type=json", "-p", patch); err != nil {
		return err
	}
	return nil
}

// installImage renders the install manifests for image (REPO@DIGEST) and
// applies them, as an administrator installs or upgrades ndp.
func (c *cluster) installImage(image string) error {
	s := c.s
	repo, digest, _ := strings.Cut(image, "@")
	cmd := exec.Command(filepath.Join(c.root, "hack", "install-manifests.sh"), repo, digest, c.bin("kubectl"))
	cmd.Env = append(os.Environ(), "DIST="+s.path("dist"))
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("install-manifests: %w\n%s", err, out)
	}
	install := s.path("dist", "install.yaml")
	fmt.Printf("$ make install-manifests IMAGE=%s  # %s → %s\n", repo, digest, install)
	out, err := c.kubectlQuiet("apply", "-f", install)
	if err != nil {
		return fmt.Errorf("kubectl apply -f %s: %w\n%s", install, err, out)
	}
	fmt.Printf("$ kubectl apply -f install.yaml\n%d objects applied (%d configured)\n", strings.Count(out, "\n"), strings.Count(out, " configured"))
	return nil
}

func (c *cluster) joinNode(ctx context.Context) error {
	s := c.s
	t := time.Now()
	args := []string{"--config", s.path("kubelet", "config.yaml"),
		"--kubeconfig", s.pki.path("kubelet.kubeconfig"), "--root-dir", s.path("kubelet", "root"),
		"--cert-dir", s.path("kubelet", "pki"), "--node-ip", nodeIP, "--hostname-override", nodeName}
	if len(c.workers) > 0 {
		// The control-plane node: ndp-controller (which tolerates this
		// taint and prefers such nodes) runs here, workloads on the VMs.
		args = append(args, "--register-with-taints", "node-role.kubernetes.io/control-plane=:NoSchedule")
	}
	if err := s.start("kubelet", true, append([]string{c.bin("kubelet")}, args...)...); err != nil {
		return err
	}
	if err := c.waitFor(ctx, "the node to be Ready", "True",
		"get", "node", nodeName, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`); err != nil {
		return err
	}
	fmt.Printf("kubelet started → node Ready in %s\n", time.Since(t).Round(10*time.Millisecond))
	if len(c.workers) > 0 {
		if _, err := c.kubectlMust("label", "node", nodeName, "node-role.kubernetes.io/control-plane="); err != nil {
			return err
		}
		c.kubectl("get", "nodes", "-o", "wide")
		return nil
	}
	c.kubectl("get", "nodes", "-o", "wide")
	t = time.Now()
	if err := c.waitNDPReady(ctx); err != nil {
		return err
	}
	fmt.Printf("every ndp pod Ready %s after the node\n", time.Since(t).Round(10*time.Millisecond))
	return nil
}

// waitNDPReady waits for ndp's pods to be Ready: the controller's two
// replicas and one daemon per node that runs one.
func (c *cluster) waitNDPReady(ctx context.Context) error {
	want := strings.TrimSpace(strings.Repeat("True ", 2+max(1, len(c.workers))))
	if err := c.waitFor(ctx, "every ndp pod to be Ready", want,
		"-n", "ndp-system", "get", "pods", "-o", `jsonpath={.items[*].status.conditions[?(@.type=="Ready")].status}`); err != nil {
		return err
	}
	c.kubectl("-n", "ndp-system", "get", "pods", "-o", "wide")
	return nil
}

// down stops everything, verifies nothing is left, and removes the work
// directory. It returns what was left behind.
func (c *cluster) down() []string {
	s := c.s
	if s == nil {
		return nil
	}
	step("Stopping everything")
	if s.running("kubelet") && s.running("kube-apiserver") {
		// (The worker VMs' kubelets too, while the VMs run.)
		// The kubelet tears the pods down (volumes, CNI) while it can.
		out, _ := c.kubectlQuiet("delete", "namespace", "ndp-system", "--wait=true", "--timeout=60s")
		fmt.Print(out)
		out, _ = c.kubectlQuiet("delete", "deployment,pod", "--all", "-n", "default", "--wait=true", "--timeout=60s")
		fmt.Print(out)
	}
	left := c.stopWorkers()
	left = append(left, s.down(20*time.Second)...)
	if c.sd != nil {
		c.sd.Stop()
	}
	if pids := pidsMatching(s.work); len(pids) > 0 {
		left = append(left, fmt.Sprintf("processes %v", pids))
	}
	if b, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(b), s.work) {
		left = append(left, "mounts under "+s.work)
	}
	if len(s.cgroupDirs()) > 0 {
		left = append(left, fmt.Sprintf("cgroups %v", s.cgroupDirs()))
	}
	if len(left) == 0 {
		if err := os.RemoveAll(s.work); err != nil {
			left = append(left, err.Error())
		}
		fmt.Printf("stopped %d processes, %d worker VMs and the systemd manager; no process, mount, namespace or cgroup left; %s removed\n", len(s.procs), len(c.workers), s.work)
	}
	return left
}

// dumpLogs prints the end of each component's log after a failure.
func (c *cluster) dumpLogs() {
	if c.s == nil {
		return
	}
	for _, p := range c.s.procs {
		b, _ := os.ReadFile(c.s.path("logs", p.name+".log"))
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		fmt.Fprintf(os.Stderr, "--- %s (last lines)\n%s\n", p.name, strings.Join(lines[max(0, len(lines)-15):], "\n"))
	}
	for _, args := range [][]string{{"get", "pods", "-A", "-o", "wide"}, {"get", "events", "-A", "--sort-by=.lastTimestamp"}} {
		out, _ := c.kubectlQuiet(args...)
		fmt.Fprintf(os.Stderr, "--- kubectl %s\n%s", strings.Join(args, " "), out)
	}
	for _, sel := range []string{"app.kubernetes.io/name=ndp-controller", "app.kubernetes.io/name=ndp-daemon"} {
		out, _ := c.kubectlQuiet("-n", "ndp-system", "logs", "-l", sel, "--tail=20", "--prefix")
		fmt.Fprintf(os.Stderr, "--- logs %s\n%s", sel, out)
	}
}

// steps times each step, so a slow scenario shows in the log and the summary.
var steps stepClock

type stepClock struct {
	title string
	start time.Time
	took  []string
}

// end closes the current step, printing and recording its time.
func (s *stepClock) end() {
	if s.title == "" {
		return
	}
	d := time.Since(s.start).Round(100 * time.Millisecond)
	fmt.Printf("(took %s)\n", d)
	s.took = append(s.took, fmt.Sprintf("%8s  %s", d, s.title))
	s.title = ""
}

func step(format string, args ...any) {
	steps.end()
	steps.title, steps.start = fmt.Sprintf(format, args...), time.Now()
	fmt.Printf("\n=== %s\n", steps.title)
}

func writeFiles(files map[string]string) error {
	for p, data := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func newBootID() string {
	b := []byte(strings.ToLower(randText()))
	return fmt.Sprintf("%s-%s-%s-%s-%s", b[0:8], b[8:12], b[12:16], b[16:20], b[20:26])
}
