package framework

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// The node's addresses, inside the cluster's network namespace: the node
// IP on one end of a veth pair (the kernel here has no dummy links; the
// kubelet refuses a loopback node IP), pods on a bridge, Services virtual.
const (
	nodeIP       = "10.99.0.1"
	podCIDR      = "10.88.0.0/24"
	serviceCIDR  = "10.96.0.0/24"
	kubernetesIP = "10.96.0.1"
	// Registry is the registry's address, on the namespace's loopback.
	Registry = "127.0.0.1:5000"
	apiPort  = "6443"
)

// stack is the one-node cluster: every process runs inside a network
// namespace and a private mount namespace pinned to files of the work
// directory, so the host's /run/containerd, /var/lib/kubelet, /var/lib/cni,
// /var/log and ip_forward stay untouched, and nothing it starts can send a
// packet anywhere but to itself.
type stack struct {
	work string
	// cgroup is the name of the cgroup, in every hierarchy, that the
	// kubelet puts pods under (its cgroupRoot).
	cgroup string
	procs  []*proc
	pki    *pki
	admin  string // the admin kubeconfig
}

type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
}

func (s *stack) path(p ...string) string { return filepath.Join(append([]string{s.work}, p...)...) }

// nsenter is the prefix that runs a command inside the namespaces: with
// nsenter, not `ip netns exec`, which remounts /sys and hides the cgroups.
func (s *stack) nsenter(mount bool) []string {
	args := []string{"nsenter", "--net=" + s.path("run", "netns")}
	if mount {
		args = append(args, "--mount="+s.path("run", "mntns"))
	}
	return args
}

// namespaces creates and pins the two namespaces.
func (s *stack) namespaces() error {
	for _, d := range []string{"run", "logs", "ovl/var-lib", "ovl/work"} {
		if err := os.MkdirAll(s.path(d), 0o755); err != nil {
			return err
		}
	}
	for _, f := range []string{"netns", "mntns"} {
		if err := os.WriteFile(s.path("run", f), nil, 0o644); err != nil {
			return err
		}
	}
	if err := sh("unshare", "--net="+s.path("run", "netns"), "true"); err != nil {
		return err
	}
	if err := sh(append(s.nsenter(false), "sh", "-ec", fmt.Sprintf(`
ip link set lo up
ip link add ndp0 type veth peer name ndp1
ip addr add %s/24 dev ndp0
ip link set ndp1 up
ip link set ndp0 up
# The API server needs a default route to choose its address; nothing answers there.
ip route add default via 10.99.0.254 dev ndp0 onlink`, nodeIP))...); err != nil {
		return err
	}
	// tmpfs on /run and /var/log, an overlay on /var/lib: what containerd
	// and the kubelet write at fixed paths stays in the work directory.
	// Shared propagation inside (only): the daemon's host root is mounted
	// with HostToContainer propagation, which containerd allows only from
	// a shared or slave mount.
	return sh("unshare", "--mount="+s.path("run", "mntns"), "--propagation", "private", "sh", "-ec", fmt.Sprintf(`
mount -t tmpfs -o mode=755 ndp-run /run
mount -t tmpfs -o mode=755 ndp-log /var/log
mount -t overlay ndp-varlib -o lowerdir=/var/lib,upperdir=%s,workdir=%s /var/lib
mount --make-rshared /`, s.path("ovl", "var-lib"), s.path("ovl", "work")))
}

// cgroups creates the kubelet's cgroupRoot in every hierarchy (cgroup v1
// here: the kubelet does not create it in all of them), with the cpuset
// the root has.
func (s *stack) cgroups() error {
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		return os.MkdirAll(filepath.Join("/sys/fs/cgroup", s.cgroup), 0o755) // cgroup v2
	}
	hs, err := filepath.Glob("/sys/fs/cgroup/*/cgroup.procs")
	if err != nil {
		return err
	}
	for _, h := range hs {
		d := filepath.Join(filepath.Dir(h), s.cgroup)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		if filepath.Base(filepath.Dir(h)) == "cpuset" {
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				b, err := os.ReadFile(filepath.Join(filepath.Dir(h), f))
				if err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(d, f), b, 0o644); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// start runs a component inside the namespaces, its output in logs/NAME.log.
func (s *stack) start(name string, mount bool, args ...string) error {
	f, err := os.Create(s.path("logs", name+".log"))
	if err != nil {
		return err
	}
	argv := append(s.nsenter(mount), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("starting %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); f.Close(); close(p.done) }()
	s.procs = append(s.procs, p)
	return nil
}

// stop stops one component: SIGTERM, then SIGKILL after grace.
func (p *proc) stop(grace time.Duration) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		fmt.Printf("  %s ignored SIGTERM for %s: SIGKILL\n", p.name, grace)
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

func (s *stack) stopComponent(name string, grace time.Duration) {
	for _, p := range s.procs {
		if p.name == name {
			p.stop(grace)
		}
	}
}

func (s *stack) running(name string) bool {
	for _, p := range s.procs {
		if p.name == name {
			select {
			case <-p.done:
				return false
			default:
				return true
			}
		}
	}
	return false
}

// containerdConfig is containerd's configuration: its state under the work
// directory; the sandbox image built here; images pulled from the registry
// on the namespace's loopback over plain HTTP.
func (s *stack) containerdConfig(sandboxImage string) string {
	return fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
oom_score = 0

[grpc]
  address = %[3]q

[plugins."io.containerd.internal.v1.opt"]
  path = %[4]q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[5]q
  netns_mounts_under_state_dir = true
  # This machine's root lacks CAP_SYS_RESOURCE: runc cannot give a sandbox
  # a negative oom_score_adj, so clamp it to containerd's own (0).
  restrict_oom_score_adj = true
  disable_hugetlb_controller = true
  tolerate_missing_hugetlb_controller = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = %[6]q
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %[7]q
  [plugins."io.containerd.grpc.v1.cri".registry.mirrors.%[8]q]
    endpoint = ["http://%[8]s"]
`, s.path("containerd", "root"), s.path("containerd", "state"), s.containerdSocket(), s.path("containerd", "opt"),
		sandboxImage, s.path("containerd", "runc"), s.path("cni", "net.d"), Registry)
}

func (s *stack) containerdSocket() string { return s.path("containerd", "containerd.sock") }

func (s *stack) cniConfig() string {
	return fmt.Sprintf(`{
  "cniVersion": "0.4.0",
  "name": "ndp-cluster",
  "plugins": [
    {"type": "bridge", "bridge": "ndpbr0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "dataDir": %q, "ranges": [[{"subnet": %q}]], "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`, s.path("cni", "ipam"), podCIDR)
}

// kubeletConfig: the fixes this machine needs are marked.
func (s *stack) kubeletConfig() string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false          # cgroup v1 here; the kubelet refuses it otherwise
failSwapOn: false
oomScoreAdj: 0               # no CAP_SYS_RESOURCE: the default -999 cannot be set
cgroupDriver: cgroupfs
cgroupRoot: /%s
containerRuntimeEndpoint: unix://%s
address: %s
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
# Only the namespace's own processes can reach this port, and the API
# server calls it without a client certificate (logs, exec).
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization:
  mode: AlwaysAllow
clusterDomain: cluster.local
clusterDNS: []
resolvConf: %s
podLogsDir: %s
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%%
  nodefs.inodesFree: 1%%
  imagefs.available: 1%%
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
maxPods: 50
serializeImagePulls: false
`, s.cgroup, s.containerdSocket(), nodeIP, s.path("kubelet", "resolv.conf"), s.path("kubelet", "podlogs"))
}

// down stops everything the stack started and removes what it left:
// components newest first, containers and their shims, the namespace
// pins (with the last process of the mount namespace its mounts go),
// the cgroups. It returns what it could not remove.
func (s *stack) down(grace time.Duration) []string {
	for i := len(s.procs) - 1; i >= 0; i-- {
		if s.procs[i].name == "containerd" {
			s.killContainers()
		}
		s.procs[i].stop(grace)
	}
	// Shims outlive containerd by design (live restore): kill those of
	// this containerd, and whatever still runs in the cluster's cgroups.
	for _, pid := range pidsMatching(s.containerdSocket()) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	s.killCgroupProcs()
	var problems []string
	for _, f := range []string{"netns", "mntns"} {
		p := s.path("run", f)
		if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			problems = append(problems, fmt.Sprintf("unmount %s: %v", p, err))
		}
	}
	problems = append(problems, s.removeCgroups()...)
	return problems
}

// killContainers kills every container task of the stack's containerd.
func (s *stack) killContainers() {
	if _, err := os.Stat(s.containerdSocket()); err != nil {
		return
	}
	ctr := append(s.nsenter(true), "ctr", "--address", s.containerdSocket(), "-n", "k8s.io")
	out, _ := exec.Command(ctr[0], append(ctr[1:], "tasks", "ls", "-q")...).Output()
	for _, id := range strings.Fields(string(out)) {
		_ = exec.Command(ctr[0], append(ctr[1:], "tasks", "kill", "-s", "KILL", id)...).Run()
	}
}

func (s *stack) cgroupDirs() []string {
	dirs, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", s.cgroup))
	if d := filepath.Join("/sys/fs/cgroup", s.cgroup); exists(d) {
		dirs = append(dirs, d)
	}
	return dirs
}

func (s *stack) killCgroupProcs() {
	for _, d := range s.cgroupDirs() {
		_ = filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
			if err != nil || e.IsDir() || e.Name() != "cgroup.procs" {
				return nil
			}
			b, _ := os.ReadFile(p)
			for _, f := range strings.Fields(string(b)) {
				var pid int
				if _, err := fmt.Sscan(f, &pid); err == nil {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			return nil
		})
	}
}

// removeCgroups removes the stack's cgroups, deepest first, retrying while
// killed processes exit.
func (s *stack) removeCgroups() []string {
	var left []string
	for _, d := range s.cgroupDirs() {
		var dirs []string
		_ = filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
			if err == nil && e.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		sort.Sort(sort.Reverse(sort.StringSlice(dirs)))
		for _, dir := range dirs {
			var err error
			for i := 0; i < 50; i++ {
				if err = os.Remove(dir); err == nil || os.IsNotExist(err) {
					err = nil
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if err != nil {
				left = append(left, fmt.Sprintf("cgroup %s: %v", dir, err))
			}
		}
	}
	return left
}

// pidsMatching lists the processes whose command line contains s.
func pidsMatching(s string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil || pid == os.Getpid() {
			continue
		}
		b, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if bytes.Contains(b, []byte(s)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// sh runs a command, its output returned in the error when it fails.
func sh(args ...string) error {
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// waitTCP waits until addr accepts connections inside the network
// namespace (probed with the namespace's own nc-free tool: bash's /dev/tcp).
func (s *stack) waitTCP(ctx context.Context, addr string, timeout time.Duration) error {
	host, port, _ := net.SplitHostPort(addr)
	return Poll(ctx, timeout, "port "+addr, func() (bool, error) {
		err := exec.Command(s.nsenter(false)[0], append(s.nsenter(false)[1:], "bash", "-c", fmt.Sprintf("exec 3<>/dev/tcp/%s/%s", host, port))...).Run()
		return err == nil, nil
	})
}

// Poll calls cond every 200 ms until it is true, fails, or timeout passes.
func Poll(ctx context.Context, timeout time.Duration, what string, cond func() (bool, error)) error {
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) { return cond() })
	if wait.Interrupted(err) {
		return fmt.Errorf("waiting for %s: not within %s", what, timeout)
	}
	return err
}
