package framework

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ndp-dev/ndp/test/framework/vm"
)

// Worker VMs: Debian with systemd as PID 1, containerd and a real kubelet,
// booted by qemu inside the cluster's network namespace. Each VM's user
// network is the node network's own addresses (10.99.0.0/24) and reaches
// exactly two things, through forwards to the namespace's loopback: the
// API server and the registry, both at 10.99.0.1, the address the API
// server advertises (so the kubernetes Service works from the VMs too).
// The API server reaches each kubelet at the VM's address, which the
// namespace holds on its loopback and qemu forwards to the guest.
const (
	workerNet     = "10.99.0.0/24"
	workerGateway = "10.99.0.2" // qemu's user-network host: nothing answers there (restrict=on)
	workerDNS     = "10.99.0.3"
	kubeletPort   = 10250
	workerMemory  = 768
)

// WorkerCount is how many worker VMs make cluster boots (NDP_CLUSTER_VMS,
// make cluster VMS=n, sets it; 0: none, the smaller scenario): two show one node at a time and a budget spread over
// nodes, at a TCG boot's cost each.
func WorkerCount() int {
	if n, err := strconv.Atoi(os.Getenv("NDP_CLUSTER_VMS")); err == nil && n >= 0 {
		return n
	}
	return 2
}

// Worker is one worker VM.
type Worker struct {
	Name, IP string
	Index    int
	token    string
	VM       *vm.VM
	// Boot is the boot ID the node started with; BootNow the last seen
	// (a scenario that reboots the node sets it).
	Boot, BootNow string
}

func workerIP(i int) string { return fmt.Sprintf("10.99.0.%d", 10+i) }

// vmsMissing names what this machine lacks to run the worker VMs, nil when
// it has it all. Asked for (the default) and missing fails the run: the
// smaller scenario runs only when asked for (NDP_CLUSTER_VMS=0).
func (c *Cluster) vmsMissing() error {
	for _, f := range []string{vm.BaseImage, vm.Kernel, vm.Initrd} {
		if !exists(filepath.Join(c.Bin("vm-image"), f)) {
			return errors.New("no worker VM image in bin/vm-image (make vm-image)")
		}
	}
	for _, t := range []string{"qemu-system-x86_64", "qemu-img", "socat"} {
		if _, err := exec.LookPath(t); err != nil {
			return errors.New(t + " is not installed (apt-get install qemu-system-x86 qemu-utils socat)")
		}
	}
	return nil
}

// startWorkers writes each worker's share (the kubelet and kube-proxy, their
// configuration and credentials, containerd's and the CNI's) and boots the
// VMs. They join on their own; joinWorkers waits for them.
func (c *Cluster) startWorkers(ctx context.Context) error {
	s := c.s
	binDir := s.path("vms", "bin")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return err
	}
	for b, src := range map[string]string{"kubelet": "kubelet", "kube-proxy": "kube-proxy", "rpm-ostree": "rpm-ostree-standin"} {
		if err := copyFile(c.Bin(src), filepath.Join(binDir, b), 0o755); err != nil {
			return err
		}
	}
	ca, err := os.ReadFile(s.pki.path("ca.crt"))
	if err != nil {
		return err
	}
	// The images the nodes start with, as archives in the share: pulled
	// over the VMs' user network they took a minute and more of each join.
	// (The upgrade scenario's image still comes from the registry.)
	images := c.shareImages()
	for f, img := range images {
		if _, err := c.ImageTool("archive", "--layout", img.layout, "--name", img.tag, "--out", filepath.Join(binDir, f)); err != nil {
			return err
		}
	}
	for _, w := range c.Workers {
		for f := range images {
			dst := s.path("vms", w.Name, "share", "images", f)
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return err
			}
			if err := os.Link(filepath.Join(binDir, f), dst); err != nil {
				return err
			}
		}
		share := s.path("vms", w.Name, "share", "rootfs")
		// The kubelet and kube-proxy (150 MB) run from the share, where a
		// link in rootfs/ points: copied into the guest, they were most of
		// its first boot's writes, and under load minutes of it. The
		// stand-in is installed software, as rpm-ostree is: copied.
		for b, dst := range map[string]string{"kubelet": "usr/local/bin/kubelet", "kube-proxy": "usr/local/bin/kube-proxy"} {
			if err := os.MkdirAll(s.path("vms", w.Name, "share", "bin"), 0o755); err != nil {
				return err
			}
			if err := os.Link(filepath.Join(binDir, b), s.path("vms", w.Name, "share", "bin", b)); err != nil {
				return err
			}
			if err := linkInto(filepath.Join(share, dst), path.Join(guestShareDir, "bin", b)); err != nil {
				return err
			}
		}
		standin := filepath.Join(share, "usr", "bin", "rpm-ostree")
		if err := os.MkdirAll(filepath.Dir(standin), 0o755); err != nil {
			return err
		}
		if err := os.Link(filepath.Join(binDir, "rpm-ostree"), standin); err != nil {
			return err
		}
		// The stand-in's boot unit, enabled: from the second boot on (the
		// first has nothing staged) it runs before containerd, so the
		// daemon's pod sees the deployment this boot made current.
		wants := filepath.Join(share, "etc", "systemd", "system", "sysinit.target.wants")
		if err := os.MkdirAll(wants, 0o755); err != nil {
			return err
		}
		if err := os.Symlink("../"+standinUnit, filepath.Join(wants, standinUnit)); err != nil {
			return err
		}
		server := "https://" + nodeIP + ":" + apiPort
		if err := writeFiles(map[string]string{
			filepath.Join(share, "etc", "kubernetes", "ca.crt"):                    string(ca),
			filepath.Join(share, "etc", "kubernetes", "kubelet.kubeconfig"):        kubeconfigText(server, "/etc/kubernetes/ca.crt", "kubelet", w.token),
			filepath.Join(share, "etc", "kubernetes", "kube-proxy.kubeconfig"):     kubeconfigText(server, "/etc/kubernetes/ca.crt", "kube-proxy", s.pki.proxyToken),
			filepath.Join(share, "etc", "kubernetes", "kube-proxy-config.yaml"):    guestProxyConfig(),
			filepath.Join(share, "etc", "containerd", "config.toml"):               guestContainerdConfig(c.PauseImage),
			filepath.Join(share, "etc", "cni", "net.d", "10-ndp-cluster.conflist"): guestCNIConfig(w.Index),
			// The node's address, static (no wait for DHCP), and the
			// kubelet told it: it finds none by its host name here.
			filepath.Join(share, "etc", "systemd", "network", "10-node.network"):                     guestNetwork(w.IP),
			filepath.Join(share, "etc", "systemd", "system", "kubelet.service.d", "10-node-ip.conf"): guestKubeletDropIn(w.IP),
			filepath.Join(share, "etc", "systemd", "system", "kubelet.service.d", "20-images.conf"):  guestImagesDropIn,
			filepath.Join(share, "usr", "local", "sbin", "node-images"):                              guestImagesScript,
			filepath.Join(share, "etc", "systemd", "system", standinUnit):                            standinUnitText,
			// A Debian host whose OS changes go to rpm-ostree's stand-in: it
			// names its updater, as an administrator of such a host would
			// (ndp-daemon would otherwise choose apt).
			filepath.Join(share, "etc", "ndp", "os-updater"): "rpm-ostree\n",
			// kubelet.conf is the worker pool's (its MachineConfig
			// 01-worker-kubelet, which ndp-daemon updates): the share only
			// provisions it, as Ignition would at first boot.
			s.path("vms", w.Name, "share", "firstboot", "etc", "kubernetes", "kubelet.conf"): guestKubeletConfig(),
		}); err != nil {
			return err
		}
	}
	// The kubelets' addresses, on the namespace's loopback: qemu listens
	// there for the API server's calls (logs, exec) and forwards them.
	for _, w := range c.Workers {
		if err := sh(append(s.nsenter(false), "ip", "addr", "add", w.IP+"/32", "dev", "lo")...); err != nil {
			return err
		}
	}
	for _, w := range c.Workers {
		cfg := vm.Config{
			Name: w.Name, Index: w.Index, Dir: s.path("vms", w.Name), Image: c.Bin("vm-image"),
			Share: s.path("vms", w.Name, "share"), MemoryMB: workerMemory,
			Network: vm.Network{CIDR: workerNet, Host: workerGateway, DNS: workerDNS, GuestIP: w.IP},
			GuestForwards: []vm.Forward{
				{Guest: nodeIP + ":" + apiPort, Host: "127.0.0.1:" + apiPort},
				{Guest: nodeIP + ":5000", Host: Registry},
			},
			HostForwards: []vm.HostForward{{Host: fmt.Sprintf("%s:%d", w.IP, kubeletPort), GuestPort: kubeletPort}},
			// qemu in the cluster's network namespace, at the priority of
			// everything else: a worker VM stands for a machine of its
			// own, and below other work (it was nice 5) a busy machine
			// left it a quarter of a core, its boot and import minutes.
			Command: func(name string, args ...string) *exec.Cmd {
				argv := append(s.nsenter(false), append([]string{name}, args...)...)
				return exec.Command(argv[0], argv[1:]...)
			},
			KeepOnExit: c.keep,
		}
		if w.VM, err = vm.Start(ctx, cfg); err != nil {
			return err
		}
		fmt.Printf("%s: qemu %d (%s), address %s, console %s\n", w.Name, w.VM.PID(), accelName(), w.IP, w.VM.SerialLog())
	}
	return nil
}

// standinUnit makes the deployment the rpm-ostree stand-in
// (hack/rpm-ostree-standin, the VMs' /usr/bin/rpm-ostree) staged before this
// boot the booted one, early, before anything that could ask.
const standinUnit = "rpm-ostree-standin-boot.service"

const standinUnitText = `[Unit]
Description=rpm-ostree stand-in: the deployment staged before this boot becomes the booted one
DefaultDependencies=no
After=local-fs.target node-share.service
Before=sysinit.target containerd.service kubelet.service shutdown.target
Conflicts=shutdown.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/bin/rpm-ostree standin-boot

[Install]
WantedBy=sysinit.target
`

// joinWorkers waits for each worker VM's agent and kubelet, and records the
// boot IDs the nodes started with.
func (c *Cluster) joinWorkers(ctx context.Context) error {
	t := time.Now()
	for _, w := range c.Workers {
		if err := waitAgent(ctx, w); err != nil {
			return err
		}
		var err error
		if w.Boot, err = w.VM.BootID(ctx); err != nil {
			return err
		}
		w.BootNow = w.Boot
		fmt.Printf("%s: booted (%s), boot %s\n", w.Name, time.Since(t).Round(time.Second), w.Boot[:8])
	}
	for _, w := range c.Workers {
		if err := c.waitJoined(ctx, w); err != nil {
			// What the node itself says: the share's copy and the kubelet.
			for _, unit := range []string{"node-share.service", "kubelet.service"} {
				out, _ := w.VM.Run(ctx, "journalctl", "--no-pager", "-b", "-n", "25", "-u", unit)
				fmt.Fprintf(os.Stderr, "--- %s: journalctl -u %s\n%s\n", w.Name, unit, out)
			}
			return err
		}
	}
	for _, w := range c.Workers {
		// A failed import costs only time (the kubelet pulls): say so.
		out, err := w.VM.Run(ctx, "sh", "-c", "ls /var/lib/node-images 2>/dev/null | wc -l")
		if n, _ := strconv.Atoi(strings.TrimSpace(out)); err != nil || n != len(c.shareImages()) {
			log, _ := w.VM.Run(ctx, "journalctl", "--no-pager", "-b", "-n", "15", "-u", "kubelet.service")
			fmt.Printf("%s: WARNING: %s of the share's %d images imported (%v); the kubelet pulls the others\n%s\n", w.Name, strings.TrimSpace(out), len(c.shareImages()), err, log)
		}
	}
	for _, w := range c.Workers {
		fmt.Printf("%s: %s\n", w.Name, c.BootCost(ctx, w))
	}
	fmt.Printf("every worker VM Ready %s after qemu started\n", time.Since(t).Round(time.Second))
	return nil
}

// waitJoined waits for a booted worker's node to be Ready, while the VM
// makes progress: its first-boot units (the share's copy, containerd, the
// kubelet) change state or use CPU, its console grows, its Node appears
// and its conditions move. On a loaded machine the copy alone can take
// minutes, quietly: a fixed bound failed runs that were progressing.
func (c *Cluster) waitJoined(ctx context.Context, w *Worker) error {
	return followProgress(ctx, w.Name+" to join and be Ready", minCeiling, func() observation {
		o := observation{progress: map[string]string{}}
		if out, err := c.KubectlQuiet("get", "node", w.Name, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`); err == nil {
			o.progress["node Ready"] = out
			o.done = out == "True"
		} else if strings.Contains(out, "NotFound") {
			o.progress["node Ready"] = "no Node yet"
		}
		rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		units, err := w.VM.Run(rctx, "systemctl", "show", "-p", "Id,ActiveState,SubState,CPUUsageNSec",
			"node-share.service", "containerd.service", "kubelet.service")
		cancel()
		if err == nil {
			o.progress[w.Name+" units"] = strings.Join(strings.Fields(units), " ")
		}
		if st, err := os.Stat(w.VM.SerialLog()); err == nil {
			o.progress[w.Name+" console"] = strconv.FormatInt(st.Size(), 10)
		}
		return o
	})
}

// waitAgent waits for w's guest agent. Booting under TCG on a busy
// machine can take minutes: it waits while the console grows (the kernel,
// systemd), until the agent answers.
func waitAgent(ctx context.Context, w *Worker) error {
	var agentErr error
	err := followProgress(ctx, w.Name+"'s guest agent", minCeiling, func() observation {
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		agentErr = w.VM.WaitAgent(actx)
		cancel()
		o := observation{progress: map[string]string{}, done: agentErr == nil}
		if st, err := os.Stat(w.VM.SerialLog()); err == nil {
			o.progress[w.Name+" console"] = strconv.FormatInt(st.Size(), 10)
		}
		return o
	})
	if err != nil {
		return fmt.Errorf("%s: %w (the agent: %v)", w.Name, err, agentErr)
	}
	return nil
}

// PowerOffAtNextReboot makes w's next reboot power its VM off: it stays
// off, a machine whose reboot never comes back, until PowerOn.
func (c *Cluster) PowerOffAtNextReboot(ctx context.Context, w *Worker) error {
	return w.VM.PowerOffAtReboot(ctx)
}

// WaitPoweredOff waits, as long as the node makes progress, for w's VM to
// power off (PowerOffAtNextReboot, then its reboot).
func (c *Cluster) WaitPoweredOff(ctx context.Context, w *Worker) error {
	return followProgress(ctx, w.Name+" powered off at its reboot", ceilingFor(1), func() observation {
		v := c.observeNodes([]string{w.Name}, "")
		select {
		case <-w.VM.Done():
			v.observation.done = true
		default:
		}
		return v.observation
	})
}

// PowerOn starts w's powered-off VM again, on its disk, and waits for its
// guest agent.
func (c *Cluster) PowerOn(ctx context.Context, w *Worker) error {
	v, err := w.VM.PowerOn(ctx)
	if err != nil {
		return err
	}
	w.VM = v
	fmt.Printf("%s: powered on, qemu %d\n", w.Name, v.PID())
	return waitAgent(ctx, w)
}

// BootCost says where a worker's last boot spent its time, from systemd:
// the kernel and userspace, the share's copy and image import, and when
// the kubelet started (what a reboot costs a scenario, and why).
func (c *Cluster) BootCost(ctx context.Context, w *Worker) string {
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	total, err := w.VM.Run(rctx, "systemd-analyze", "time")
	if err != nil {
		return "boot cost unknown: " + err.Error()
	}
	total, _, _ = strings.Cut(strings.TrimSpace(total), "\n")
	total = strings.TrimPrefix(total, "Startup finished in ")
	out, _ := w.VM.Run(rctx, "systemctl", "show", "-p", "Id,InactiveExitTimestampMonotonic,ExecMainStartTimestampMonotonic,ExecMainExitTimestampMonotonic,ActiveEnterTimestampMonotonic",
		"node-share.service", "kubelet.service")
	parts := []string{"boot " + total}
	for _, unit := range strings.Split(strings.TrimSpace(out), "\n\n") {
		f := map[string]string{}
		for _, l := range strings.Split(unit, "\n") {
			k, v, _ := strings.Cut(l, "=")
			f[k] = v
		}
		us := func(k string) float64 { n, _ := strconv.ParseFloat(f[k], 64); return n / 1e6 }
		name := strings.TrimSuffix(f["Id"], ".service")
		switch {
		case name == "kubelet":
			// Its ExecStartPre imports the share's images (node-images).
			parts = append(parts, fmt.Sprintf("images imported in %.1fs; kubelet started %.1fs after the kernel",
				us("ExecMainStartTimestampMonotonic")-us("InactiveExitTimestampMonotonic"), us("ActiveEnterTimestampMonotonic")))
		case us("ExecMainExitTimestampMonotonic") > 0:
			parts = append(parts, fmt.Sprintf("%s %.1fs", name, us("ExecMainExitTimestampMonotonic")-us("ExecMainStartTimestampMonotonic")))
		}
	}
	return strings.Join(parts, "; ")
}

// stopWorkers stops the VMs (qemu and its forwards' socat) and reports
// what it could not stop.
func (c *Cluster) stopWorkers() []string {
	var left []string
	for _, w := range c.Workers {
		if w.VM == nil {
			continue
		}
		fmt.Println(vmCost(w.Name, w.VM))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := w.VM.Stop(ctx, vm.StopOptions{}); err != nil {
			left = append(left, err.Error())
		}
		cancel()
	}
	return left
}

// vmCost says what a worker VM cost the host: the CPU its qemu used and,
// under TCG, how often the translated-code cache was flushed (each flush
// makes the guest's code be translated again).
func vmCost(name string, v *vm.VM) string {
	line := name + ":"
	if cpu, err := processCPU(v.PID()); err == nil {
		line += fmt.Sprintf(" qemu used %s of CPU;", cpu.Round(time.Second))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	jit, err := v.JITStats(ctx)
	if err != nil {
		return line + " " + err.Error()
	}
	for _, l := range strings.Split(jit, "\n") {
		for _, key := range []string{"TB flush count", "TB count", "gen code size"} {
			if strings.HasPrefix(strings.TrimSpace(l), key) {
				line += " " + strings.Join(strings.Fields(l), " ") + ";"
			}
		}
	}
	return line
}

// processCPU is the user and system CPU time process pid used so far.
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command's closing parenthesis; utime and stime are
	// the 14th and 15th of the line, in clock ticks (100 a second here).
	_, rest, ok := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, b)
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(u+s) * 10 * time.Millisecond, nil
}

func accelName() string {
	if vm.KVMUsable() {
		return "KVM"
	}
	return "TCG: no hardware virtualization here"
}

func guestNetwork(ip string) string {
	return fmt.Sprintf(`[Match]
Name=en* eth*

[Network]
Address=%s/24
Gateway=%s
LinkLocalAddressing=no
IPv6AcceptRA=no
`, ip, workerGateway)
}

// The tags the images are pushed under, and imported under from the share.
const (
	ndpTag   = Registry + "/ndp:dev"
	pauseTag = Registry + "/pause:1"
)

// shareImage is an image archived into each worker's share.
type shareImage struct{ layout, tag string }

// shareImages: the archives in each worker's share, by file name.
func (c *Cluster) shareImages() map[string]shareImage {
	return map[string]shareImage{
		"ndp.tar":   {c.Bin("ndp-image"), ndpTag},
		"pause.tar": {c.s.path("pause-image"), pauseTag},
	}
}

// The share's images/ imported into containerd before the kubelet starts,
// once per archive (a reboot finds them imported), by the kubelet's own
// unit: a unit the share adds is not in the first boot's transaction, a
// drop-in on the kubelet is read before it starts. A failed import ("-")
// leaves the pull from the registry.
const (
	guestImagesDropIn = `[Service]
ExecStartPre=-/bin/sh /usr/local/sbin/node-images
# The import takes what the machine gives it: under load, more than the
# default 90 s start timeout, which killed it and restarted it forever.
TimeoutStartSec=infinity
`
	guestImagesScript = `#!/bin/sh
set -eu
mkdir -p /var/lib/node-images
for f in ` + guestShareDir + `/images/*.tar; do
	[ -e "$f" ] || continue
	stamp=/var/lib/node-images/$(basename "$f").$(stat -c %s-%Y "$f")
	[ -e "$stamp" ] && continue
	ctr -n k8s.io images import "$f"
	touch "$stamp"
done
`
)

func guestKubeletDropIn(ip string) string {
	return fmt.Sprintf(`[Service]
ExecStart=
ExecStart=/usr/local/bin/kubelet --config=/etc/kubernetes/kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.kubeconfig --node-ip=%s
`, ip)
}

// guestKubeletConfig: the kubelet of a worker VM, with systemd's cgroups as
// containerd's (SystemdCgroup: containerd 1.6 cannot tell the kubelet).
func guestKubeletConfig() string {
	return `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: systemd
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
failSwapOn: false
readOnlyPort: 0
# Only the API server reaches this port (qemu's one forward to it), and it
# calls without a client certificate (logs, exec).
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization:
  mode: AlwaysAllow
clusterDomain: cluster.local
clusterDNS: []
resolvConf: /etc/resolv.conf
evictionHard:
  memory.available: 50Mi
  nodefs.available: 1%
  nodefs.inodesFree: 1%
  imagefs.available: 1%
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
`
}

// WorkerKubeletMC is the worker pool's kubelet.conf as a MachineConfig
// (the MCO's 01-worker-kubelet): what the VMs' first boot provisions.
func WorkerKubeletMC() string {
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

func guestProxyConfig() string {
	return `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: /etc/kubernetes/kube-proxy.kubeconfig}
mode: iptables
clusterCIDR: 10.88.0.0/16
`
}

// guestContainerdConfig: the registry is reached at the API server's
// address, through the VM's forward, under the name the images have.
func guestContainerdConfig(sandboxImage string) string {
	return fmt.Sprintf(`version = 2
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "/etc/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".registry.mirrors.%q]
    endpoint = ["http://%s:5000"]
`, sandboxImage, Registry, nodeIP)
}

// guestCNIConfig: pods of worker i on a bridge of their own subnet (pods on
// different VMs cannot reach each other: qemu's user network joins nothing).
func guestCNIConfig(i int) string {
	return fmt.Sprintf(`{
  "cniVersion": "0.4.0",
  "name": "ndp-cluster",
  "plugins": [
    {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.88.%d.0/24"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`, i)
}

// guestShareDir is where the image's node-share.service mounts the share
// in the guest (hack/vm/rootfs/usr/local/sbin/node-share).
const guestShareDir = "/run/node-share"

// linkInto makes dst a symbolic link to target, with dst's directories.
func linkInto(dst, target string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.Symlink(target, dst)
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
