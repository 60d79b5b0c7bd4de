// Package framework brings up what `make cluster` tests ndp on, for the
// scenarios of test/e2e: ndp installed from its install manifests on a
// real one-node Kubernetes cluster on this machine, and used through
// kubectl only, then everything stopped. It also holds the waits that
// follow the cluster's progress and the observers that read what its
// nodes did.
//
// The node is real: kubelet, kube-proxy, kube-controller-manager and
// kube-scheduler built from the Go module proxy (bin/), containerd and
// runc from Debian, the CNI bridge, all in a network namespace and a
// private mount namespace of their own. ndp's image is pulled by digest
// from a registry on that namespace's loopback (go-containerregistry's).
// What is not real, because this machine has no systemd as PID 1: the
// daemon pod's systemd is a systemd user manager reached through the
// mounted socket, its host root a directory, and a reboot is recorded, then
// played by the scenario (a new boot ID, the daemon's pod killed as a
// reboot would). The worker VMs (package vm), when there are, are real
// machines with systemd as PID 1 that really reboot.
package framework

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ndp-dev/ndp/internal/systemdtest"
)

// NodeName is the namespace's own node: the control-plane node with
// worker VMs, the only node without.
const NodeName = "ndp-node"

// Cluster is the running cluster a test's scenarios use.
type Cluster struct {
	// Root is the repository: kubectl runs there, so that the scenarios
	// name its examples/ as a person at its root would.
	Root string
	s    *stack
	sd   *systemdtest.Manager
	// Host is the daemon's host root (without worker VMs); NDPImage and
	// PauseImage are REPO@DIGEST in the registry.
	Host, NDPImage, PauseImage string
	// Workers are the worker VMs, when this machine can run them.
	Workers []*Worker

	ctx      context.Context
	keep     bool
	start    time.Time
	steps    stepClock
	summary  []string
	failures []string
	// seenEvents holds the uids of the events WaitEvent returned.
	seenEvents map[string]bool
	// units: what observeNodes last read of the VMs' units, and when.
	units guestUnits
}

// Enabled says whether the real cluster was asked for: make cluster sets
// NDP_E2E=1. It needs root, minutes and, with the worker VMs, qemu: plain
// go test ./... (make test) does not start it.
func Enabled() bool { return os.Getenv("NDP_E2E") == "1" }

// RequireEnabled skips t unless the real cluster was asked for.
func RequireEnabled(t testing.TB) {
	t.Helper()
	if !Enabled() {
		t.Skip("the real cluster (a one-node Kubernetes cluster and worker VMs on this machine, as root, for half an hour) runs with make cluster, which sets NDP_E2E=1")
	}
}

// keepRequested: NDP_CLUSTER_KEEP=1 (make cluster KEEP=1) leaves the
// cluster running after a run that passed, and says how to reach and stop
// it.
func keepRequested() bool { return os.Getenv("NDP_CLUSTER_KEEP") == "1" }

// teardownMargin is the part of the test's -timeout kept for the
// teardown: past the timeout the test binary dies, and what it started
// would be left behind.
const teardownMargin = 10 * time.Minute

// Start brings the cluster up (it skips t unless Enabled), with the worker
// VMs WorkerCount asks for, ndp installed and every node joined. When t
// ends, everything is stopped and checked gone, and the scenarios'
// summary and each step's time are printed last (a failure too, with the
// step it failed in): CI shows a log's tail.
func Start(t *testing.T) *Cluster {
	t.Helper()
	RequireEnabled(t)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	cancel := context.CancelFunc(func() {})
	if d, ok := t.Deadline(); ok {
		ctx, cancel = context.WithDeadline(ctx, d.Add(-teardownMargin))
	}
	c := &Cluster{ctx: ctx, keep: keepRequested(), start: time.Now()}
	rt := recorder{t, c}
	t.Cleanup(func() {
		c.finish(rt)
		cancel()
		stop()
	})
	if err := c.up(ctx); err != nil {
		rt.Fatal(err) // the step it failed in stays open, for the verdict
	}
	c.steps.end()
	return c
}

// Context is the run's: cancelled by SIGINT or SIGTERM, and before the
// test's timeout, leaving time for the teardown.
func (c *Cluster) Context() context.Context { return c.ctx }

func (c *Cluster) up(ctx context.Context) error {
	var err error
	if c.Root, err = repoRoot(); err != nil {
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
	for i := 1; i <= WorkerCount(); i++ {
		c.Workers = append(c.Workers, &Worker{Name: fmt.Sprintf("ndp-worker-%d", i), IP: workerIP(i), Index: i})
	}

	c.Step("Namespaces: the node's network (%s on a veth, pods %s) and a private mount namespace", nodeIP, podCIDR)
	if err := s.namespaces(); err != nil {
		return err
	}
	if err := s.cgroups(); err != nil {
		return err
	}
	fmt.Printf("work directory %s; cgroup /%s\n", work, s.cgroup)

	c.Step("A registry on the namespace's loopback (%s); the ndp image and a pause image pushed to it", Registry)
	if err := s.start("registry", false, c.Bin("image-tool"), "serve", "--addr", Registry, "--dir", s.path("registry")); err != nil {
		return err
	}
	if err := s.waitTCP(ctx, Registry, 30*time.Second); err != nil {
		return err
	}
	if c.NDPImage, err = c.Push(c.Bin("ndp-image"), ndpTag); err != nil {
		return err
	}
	if _, err := c.ImageTool("build", "--out", s.path("pause-image"), "--entrypoint", "/pause", "--file", "/pause="+c.Bin("pause")); err != nil {
		return err
	}
	if c.PauseImage, err = c.Push(s.path("pause-image"), pauseTag); err != nil {
		return err
	}
	fmt.Printf("ndp   %s\npause %s\n", c.NDPImage, c.PauseImage)

	c.Step("containerd (Debian's) with runc and the CNI bridge; images pulled from the registry")
	for _, d := range []string{"containerd/root", "containerd/state", "containerd/runc", "containerd/opt", "cni/net.d", "cni/ipam", "kubelet/root", "kubelet/pki", "kubelet/podlogs", "etcd"} {
		if err := os.MkdirAll(s.path(d), 0o700); err != nil {
			return err
		}
	}
	if err := writeFiles(map[string]string{
		s.path("containerd", "config.toml"):               s.containerdConfig(c.PauseImage),
		s.path("cni", "net.d", "10-ndp-cluster.conflist"): s.cniConfig(),
		s.path("kubelet", "config.yaml"):                  s.kubeletConfig(),
		s.path("kubelet", "resolv.conf"):                  "nameserver 127.0.0.1\n",
	}); err != nil {
		return err
	}
	if err := s.start("containerd", true, "containerd", "--config", s.path("containerd", "config.toml")); err != nil {
		return err
	}
	if err := Poll(ctx, 30*time.Second, "containerd's socket", func() (bool, error) { return exists(s.containerdSocket()), nil }); err != nil {
		return err
	}

	c.Step("Control plane: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kube-proxy (bin/)")
	if err := c.controlPlane(ctx); err != nil {
		return err
	}

	if len(c.Workers) > 0 {
		c.Step("Worker VMs: Debian, systemd as PID 1, containerd and a real kubelet each, booted by qemu in the namespace")
		for _, w := range c.Workers {
			w.token = s.pki.nodeTokens[w.Name]
		}
		if err := c.startWorkers(ctx); err != nil {
			return err
		}
	}

	c.Step("ndp installed from dist/install.yaml (the image by digest), through kubectl")
	if err := c.install(ctx); err != nil {
		return err
	}

	c.Step("The node joins: a real kubelet")
	if err := c.joinNode(ctx); err != nil {
		return err
	}

	if len(c.Workers) > 0 {
		c.Step("The worker VMs join")
		if err := c.joinWorkers(ctx); err != nil {
			return err
		}
		if err := c.waitNDPReady(ctx); err != nil {
			return err
		}
	}
	return nil
}

// repoRoot is the repository's root: the nearest directory up with go.mod
// (a test runs in its package's directory).
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for !exists(filepath.Join(dir, "go.mod")) {
		if filepath.Dir(dir) == dir {
			return "", errors.New("no go.mod above the working directory: run from the repository")
		}
		dir = filepath.Dir(dir)
	}
	return dir, nil
}

// preflight names what is missing before anything starts.
func (c *Cluster) preflight() error {
	if os.Geteuid() != 0 {
		return errors.New("needs root: it creates network and mount namespaces, cgroups and runs containerd")
	}
	var missing []string
	for _, b := range []string{"etcd", "kube-apiserver", "kubectl", "kubelet", "kube-controller-manager", "kube-scheduler", "kube-proxy", "image-tool", "pause", "ndp-image/index.json"} {
		if !exists(c.Bin(b)) {
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
	if WorkerCount() > 0 {
		if !exists(c.Bin("rpm-ostree-standin")) {
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

// Bin is a file of the repository's bin/, where make cluster builds.
func (c *Cluster) Bin(name string) string { return filepath.Join(c.Root, "bin", name) }

// Path is a file of the run's work directory.
func (c *Cluster) Path(p ...string) string { return c.s.path(p...) }

// NSEnter is the prefix that runs a command in the cluster's network
// namespace, and with mount in its mount namespace too.
func (c *Cluster) NSEnter(mount bool) []string { return c.s.nsenter(mount) }

// ImageTool runs bin/image-tool in the cluster's network namespace.
func (c *Cluster) ImageTool(args ...string) (string, error) {
	argv := append(c.s.nsenter(false), append([]string{c.Bin("image-tool")}, args...)...)
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

// Push pushes an OCI layout to the registry, from inside the namespace,
// and returns REPO@DIGEST.
func (c *Cluster) Push(layout, to string) (string, error) {
	return c.ImageTool("push", "--insecure", "--layout", layout, "--to", to)
}

func (c *Cluster) controlPlane(ctx context.Context) error {
	s := c.s
	var err error
	nodes := []string{NodeName}
	for _, w := range c.Workers {
		nodes = append(nodes, w.Name)
	}
	if s.pki, err = newPKI(s.path("pki"), nodes, ips("127.0.0.1", nodeIP, kubernetesIP)); err != nil {
		return err
	}
	server := "https://127.0.0.1:" + apiPort
	if s.admin, err = s.pki.kubeconfig("admin", server, s.pki.adminToken); err != nil {
		return err
	}
	if _, err = s.pki.kubeconfig("kubelet", server, s.pki.nodeTokens[NodeName]); err != nil {
		return err
	}
	p := s.pki.path
	if err := s.start("etcd", true, c.Bin("etcd"), "--name", "ndp-cluster", "--data-dir", s.path("etcd"),
		"--listen-client-urls", "http://127.0.0.1:2379", "--advertise-client-urls", "http://127.0.0.1:2379",
		"--listen-peer-urls", "http://127.0.0.1:2380", "--initial-advertise-peer-urls", "http://127.0.0.1:2380",
		"--initial-cluster", "ndp-cluster=http://127.0.0.1:2380", "--listen-metrics-urls", "http://127.0.0.1:2381",
		"--quota-backend-bytes", "1073741824", "--unsafe-no-fsync"); err != nil {
		return err
	}
	if err := s.start("kube-apiserver", true, c.Bin("kube-apiserver"), "--etcd-servers", "http://127.0.0.1:2379",
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
	if err := Poll(ctx, 2*time.Minute, "kube-apiserver to be ready", func() (bool, error) {
		out, _ := c.KubectlQuiet("get", "--raw", "/readyz")
		return out == "ok", nil
	}); err != nil {
		return err
	}
	if err := s.start("kube-controller-manager", true, c.Bin("kube-controller-manager"), "--kubeconfig", s.admin,
		"--leader-elect=false", "--bind-address", "127.0.0.1", "--secure-port", "10257",
		"--service-account-private-key-file", p("sa.key"), "--root-ca-file", p("ca.crt"),
		"--use-service-account-credentials=false", "--controllers", "*"); err != nil {
		return err
	}
	if err := s.start("kube-scheduler", true, c.Bin("kube-scheduler"), "--kubeconfig", s.admin, "--leader-elect=false",
		"--bind-address", "127.0.0.1", "--secure-port", "10259"); err != nil {
		return err
	}
	// iptables mode; conntrack limits and timeouts at 0 so that kube-proxy
	// writes no global sysctl of the host.
	if err := s.start("kube-proxy", true, c.Bin("kube-proxy"), "--kubeconfig", s.admin, "--hostname-override", NodeName,
		"--proxy-mode", "iptables", "--cluster-cidr", podCIDR, "--metrics-bind-address", "127.0.0.1:10249",
		"--healthz-bind-address", "127.0.0.1:10256", "--conntrack-max-per-core", "0",
		"--conntrack-tcp-timeout-established", "0", "--conntrack-tcp-timeout-close-wait", "0"); err != nil {
		return err
	}
	c.Kubectl("version")
	return nil
}

// install renders the install manifests with the image pushed to the
// registry, applies them as an administrator would, and points the
// daemon at what this node has instead of systemd as PID 1.
func (c *Cluster) install(ctx context.Context) error {
	s := c.s
	if err := c.InstallImage(c.NDPImage); err != nil {
		return err
	}
	if len(c.Workers) > 0 {
		// The worker VMs run the DaemonSet as shipped. The namespace's
		// node is this machine itself (its root is the host's, its PID 1
		// no systemd): no daemon there.
		patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":`+
			`{"nodeSelectorTerms":[{"matchExpressions":[{"key":"kubernetes.io/hostname","operator":"NotIn","values":[%q]}]}]}}}}}}}`, NodeName)
		fmt.Printf("# %s is this machine's own namespace (its root the host's, no systemd as PID 1): ndp-daemon runs on the worker VMs only.\n", NodeName)
		_, err := c.KubectlMust("-n", "ndp-system", "patch", "daemonset", "ndp-daemon", "--type=strategic", "-p", patch)
		return err
	}
	// The host root and the systemd manager the daemon's pod mounts.
	c.Host = s.path("node", "root")
	if err := writeFiles(map[string]string{
		filepath.Join(c.Host, "etc", "passwd"):      "root:x:0:0:root:/root:/bin/bash\ncore:x:1000:1000:CoreOS Admin:/home/core:/bin/bash\n",
		filepath.Join(c.Host, "etc", "group"):       "root:x:0:\ncore:x:1000:\n",
		filepath.Join(c.Host, "etc", "shadow"):      "root:*:19000:0:99999:7:::\ncore:*:19000:0:99999:7:::\n",
		filepath.Join(c.Host, "etc", "chrony.conf"): "pool 0.rhel.pool.ntp.org iburst\ndriftfile /var/lib/chrony/drift\n",
		filepath.Join(c.Host, "boot_id"):            NewBootID() + "\n",
	}); err != nil {
		return err
	}
	var err error
	if c.sd, err = systemdtest.Start(s.path("node", "run"), filepath.Join(c.Host, "etc", "xdg")); err != nil {
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
]`, c.Host, filepath.Join(c.sd.RuntimeDir, "systemd"))
	fmt.Println("# This node has no systemd as PID 1: the daemon's pod gets a directory as its host root, a systemd user")
	fmt.Println("# manager's socket as systemd's, and records reboots (this program plays them); nothing else changes.")
	if _, err := c.KubectlMust("-n", "ndp-system", "patch", "daemonset", "ndp-daemon", "--type=json", "-p", patch); err != nil {
		return err
	}
	return nil
}

// InstallImage renders the install manifests for image (REPO@DIGEST) and
// applies them, as an administrator installs or upgrades ndp.
func (c *Cluster) InstallImage(image string) error {
	s := c.s
	repo, digest, _ := strings.Cut(image, "@")
	cmd := exec.Command(filepath.Join(c.Root, "hack", "install-manifests.sh"), repo, digest, c.Bin("kubectl"))
	cmd.Env = append(os.Environ(), "DIST="+s.path("dist"))
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("install-manifests: %w\n%s", err, out)
	}
	install := s.path("dist", "install.yaml")
	fmt.Printf("$ make install-manifests IMAGE=%s  # %s → %s\n", repo, digest, install)
	out, err := c.KubectlQuiet("apply", "-f", install)
	if err != nil {
		return fmt.Errorf("kubectl apply -f %s: %w\n%s", install, err, out)
	}
	fmt.Printf("$ kubectl apply -f install.yaml\n%d objects applied (%d configured)\n", strings.Count(out, "\n"), strings.Count(out, " configured"))
	return nil
}

func (c *Cluster) joinNode(ctx context.Context) error {
	s := c.s
	t := time.Now()
	args := []string{"--config", s.path("kubelet", "config.yaml"),
		"--kubeconfig", s.pki.path("kubelet.kubeconfig"), "--root-dir", s.path("kubelet", "root"),
		"--cert-dir", s.path("kubelet", "pki"), "--node-ip", nodeIP, "--hostname-override", NodeName}
	if len(c.Workers) > 0 {
		// The control-plane node: ndp-controller (which tolerates this
		// taint and prefers such nodes) runs here, workloads on the VMs.
		args = append(args, "--register-with-taints", "node-role.kubernetes.io/control-plane=:NoSchedule")
	}
	if err := s.start("kubelet", true, append([]string{c.Bin("kubelet")}, args...)...); err != nil {
		return err
	}
	if err := c.WaitFor(ctx, "the node to be Ready", "True",
		"get", "node", NodeName, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`); err != nil {
		return err
	}
	fmt.Printf("kubelet started → node Ready in %s\n", time.Since(t).Round(10*time.Millisecond))
	if len(c.Workers) > 0 {
		if _, err := c.KubectlMust("label", "node", NodeName, "node-role.kubernetes.io/control-plane="); err != nil {
			return err
		}
		c.Kubectl("get", "nodes", "-o", "wide")
		return nil
	}
	c.Kubectl("get", "nodes", "-o", "wide")
	t = time.Now()
	if err := c.waitNDPReady(ctx); err != nil {
		return err
	}
	fmt.Printf("every ndp pod Ready %s after the node\n", time.Since(t).Round(10*time.Millisecond))
	return nil
}

// waitNDPReady waits for ndp's pods to be Ready: the controller's two
// replicas and one daemon per node that runs one.
func (c *Cluster) waitNDPReady(ctx context.Context) error {
	want := strings.TrimSpace(strings.Repeat("True ", 2+max(1, len(c.Workers))))
	if err := c.WaitFor(ctx, "every ndp pod to be Ready", want,
		"-n", "ndp-system", "get", "pods", "-o", `jsonpath={.items[*].status.conditions[?(@.type=="Ready")].status}`); err != nil {
		return err
	}
	c.Kubectl("-n", "ndp-system", "get", "pods", "-o", "wide")
	return nil
}

// down stops everything, verifies nothing is left, and removes the work
// directory. It returns what was left behind.
func (c *Cluster) down() []string {
	s := c.s
	if s == nil {
		return nil
	}
	c.Step("Stopping everything")
	if s.running("kubelet") && s.running("kube-apiserver") {
		// (The worker VMs' kubelets too, while the VMs run.)
		// The kubelet tears the pods down (volumes, CNI) while it can.
		out, _ := c.KubectlQuiet("delete", "namespace", "ndp-system", "--wait=true", "--timeout=60s")
		fmt.Print(out)
		out, _ = c.KubectlQuiet("delete", "deployment,pod", "--all", "-n", "default", "--wait=true", "--timeout=60s")
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
		fmt.Printf("stopped %d processes, %d worker VMs and the systemd manager; no process, mount, namespace or cgroup left; %s removed\n", len(s.procs), len(c.Workers), s.work)
	}
	return left
}

// dumpLogs prints the end of each component's log after a failure.
func (c *Cluster) dumpLogs() {
	if c.s == nil {
		return
	}
	for _, p := range c.s.procs {
		b, _ := os.ReadFile(c.s.path("logs", p.name+".log"))
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		fmt.Fprintf(os.Stderr, "--- %s (last lines)\n%s\n", p.name, strings.Join(lines[max(0, len(lines)-15):], "\n"))
	}
	for _, args := range [][]string{{"get", "pods", "-A", "-o", "wide"}, {"get", "events", "-A", "--sort-by=.lastTimestamp"}} {
		out, _ := c.KubectlQuiet(args...)
		fmt.Fprintf(os.Stderr, "--- kubectl %s\n%s", strings.Join(args, " "), out)
	}
	for _, sel := range []string{"app.kubernetes.io/name=ndp-controller", "app.kubernetes.io/name=ndp-daemon"} {
		out, _ := c.KubectlQuiet("-n", "ndp-system", "logs", "-l", sel, "--tail=20", "--prefix")
		fmt.Fprintf(os.Stderr, "--- logs %s\n%s", sel, out)
	}
}

// stepClock times each step, so a slow scenario shows in the log and the
// summary.
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

// Step ends the current step and starts the next, printing its title as
// `=== title`; its time goes to the list printed at the end.
func (c *Cluster) Step(format string, args ...any) {
	c.steps.end()
	c.steps.title, c.steps.start = fmt.Sprintf(format, args...), time.Now()
	fmt.Printf("\n=== %s\n", c.steps.title)
}

// Report adds lines to the summary printed at the end: what a scenario
// checked and found.
func (c *Cluster) Report(lines ...string) { c.summary = append(c.summary, lines...) }

// Run runs the scenario f as the subtest name of t, after those run
// before it: each stands on what the earlier ones left, so a failure ends
// the run there. The scenario's time goes to the summary.
func (c *Cluster) Run(t *testing.T, name string, f func(t testing.TB)) {
	t.Helper()
	start, skipped := time.Now(), false
	ok := t.Run(name, func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		f(recorder{t, c})
	})
	if !ok {
		t.FailNow() // the step it failed in stays open, for the verdict
	}
	// Its last step's time, before the next subtest's === RUN line.
	c.steps.end()
	if !skipped {
		c.Report(fmt.Sprintf("scenario %s: %s", name, time.Since(start).Round(time.Second)))
	}
}

// recorder is the testing.TB the bring-up and the scenarios fail through:
// it keeps each failure's message for the verdict printed last, after the
// components' logs and the teardown.
type recorder struct {
	*testing.T
	c *Cluster
}

func (r recorder) Error(args ...any) {
	r.Helper()
	r.c.failed(fmt.Sprintln(args...))
	r.T.Error(args...)
}

func (r recorder) Errorf(format string, args ...any) {
	r.Helper()
	r.c.failed(fmt.Sprintf(format, args...))
	r.T.Errorf(format, args...)
}

func (r recorder) Fatal(args ...any) {
	r.Helper()
	r.c.failed(fmt.Sprintln(args...))
	r.T.Fatal(args...)
}

func (r recorder) Fatalf(format string, args ...any) {
	r.Helper()
	r.c.failed(fmt.Sprintf(format, args...))
	r.T.Fatalf(format, args...)
}

func (c *Cluster) failed(msg string) { c.failures = append(c.failures, strings.TrimSpace(msg)) }

// finish ends the run: after a failure the components' logs; everything
// stopped (unless kept) and checked gone, anything left behind a failure
// too; then the summary, or the failure, last.
func (c *Cluster) finish(t testing.TB) {
	failedStep := c.steps.title
	if t.Failed() {
		c.dumpLogs()
	}
	if !c.keep || t.Failed() {
		if left := c.down(); len(left) > 0 {
			fmt.Fprintf(os.Stderr, "left behind:\n  %s\n", strings.Join(left, "\n  "))
			if !t.Failed() {
				failedStep = c.steps.title
			}
			t.Errorf("something was left behind")
		}
	}
	if t.Failed() {
		// Again, last: the logs above are long and CI shows a log's tail.
		c.failedVerdict(os.Stderr, failedStep)
		return
	}
	c.Step("Summary")
	c.writeSummary(os.Stdout)
	fmt.Printf("\nfrom nothing to here: %s\n", time.Since(c.start).Round(time.Second))
	if c.keep {
		fmt.Printf("\nkept running: kubectl with\n  %s %s --kubeconfig %s ...\nstop it by killing this run's processes (work directory %s)\n",
			strings.Join(c.s.nsenter(false), " "), c.Bin("kubectl"), c.s.admin, c.s.work)
	}
}

// writeSummary writes what the scenarios checked and found, then each
// step's time.
func (c *Cluster) writeSummary(w io.Writer) {
	for _, l := range c.summary {
		fmt.Fprintln(w, l)
	}
	fmt.Fprintf(w, "\neach step's time:\n%s\n", strings.Join(c.steps.took, "\n"))
}

// failedVerdict writes a failed run's end: the summary of the scenarios
// that passed, each step's time, and the step the run failed in, with why.
func (c *Cluster) failedVerdict(w io.Writer, failedStep string) {
	if len(c.summary) > 0 {
		fmt.Fprintln(w, "\nsummary of the scenarios before the failure:")
	}
	c.writeSummary(w)
	why := strings.Join(c.failures, "\n  ")
	if why == "" {
		why = "(the failure is in the test's output above)"
	}
	fmt.Fprintf(w, "\ncluster FAILED in step %q after %s:\n  %s\n", failedStep, time.Since(c.start).Round(time.Second), why)
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

// NewBootID is a random boot ID, as the kernel's.
func NewBootID() string {
	b := []byte(strings.ToLower(randText()))
	return fmt.Sprintf("%s-%s-%s-%s-%s", b[0:8], b[8:12], b[12:16], b[16:20], b[20:26])
}
