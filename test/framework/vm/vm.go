// Package vm starts and controls one worker virtual machine: qemu booting
// the image of hack/vm/build-image.sh (bin/vm-image) directly (kernel,
// initrd, root=/dev/vda), on a copy-on-write overlay of its own, with
// systemd as PID 1 and real reboots.
//
// The host controls the guest without ssh or a network path: commands and
// file reads go through the QEMU guest agent on a virtio-serial port, power
// (reset, power button, quit) through qemu's QMP monitor, both on unix
// sockets in the VM's directory. The guest's network is qemu user
// networking with restrict=on: it reaches only the host addresses it is
// given (GuestForwards), and the host reaches only the guest ports it
// forwards (HostForwards). Files come in through a read-only 9p share
// tagged "node", whose rootfs/ the image's node-share.service copies over
// / at every boot, before containerd and the kubelet start.
//
// Without hardware virtualization (this machine kind's /dev/kvm is kvm_pvm,
// which cannot run a stock kernel) qemu emulates the CPU (TCG): the agent
// answers 17 s after qemu starts and the system is up at 25 s on an idle
// host, 1.5-2 min when the host's cores are busy; a reboot takes as long.
//
// TestVM boots a VM for minutes, so it runs only with NDP_VM_TEST=1 (make
// test-vm), from the image in NDP_VM_IMAGE (default bin/vm-image); plain
// go test ./... skips it and runs the fast tests only.
package vm

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Files of an image directory (hack/vm/build-image.sh).
const (
	BaseImage = "base.qcow2"
	Kernel    = "vmlinuz"
	Initrd    = "initrd.img"
	stampFile = "inputs.sha256"
)

// ShareTag is the 9p mount tag of Config.Share, the one the image's
// node-share.service mounts.
const ShareTag = "node"

// Files of a VM's directory.
const (
	diskFile   = "disk.qcow2"
	diskStamp  = "disk.base" // the base image's stamp the overlay was made on
	qgaSocket  = "qga.sock"
	qmpSocket  = "qmp.sock"
	SerialLog  = "serial.log" // the guest's console, appended across starts
	qemuLog    = "qemu.log"   // qemu's own output, of the last start
	pidFile    = "qemu.pid"
	qemuBinary = "qemu-system-x86_64"
)

// Forward makes a host TCP address reachable from the guest at a TCP
// address of qemu's user network (10.0.2.0/24, e.g. 10.0.2.100:6443): qemu
// runs `socat STDIO TCP:Host` for each connection (socat must be installed).
type Forward struct {
	Guest string // IP:PORT the guest connects to
	Host  string // IP:PORT, as seen from qemu's network namespace
}

// HostForward makes a guest TCP port reachable at a host address (in
// qemu's network namespace).
type HostForward struct {
	Host      string // IP:PORT qemu listens on
	GuestPort int
}

// Network is a user network other than qemu's default, e.g. so that a
// guest forward can have the address a service has elsewhere: the guest
// then reaches it under the same name as everyone else.
type Network struct {
	CIDR    string // e.g. 10.99.0.0/24
	Host    string // qemu's side (the gateway; nothing answers with restrict=on)
	DNS     string // the resolver's address (nothing answers with restrict=on)
	GuestIP string // the address qemu's DHCP gives the guest
}

// Config describes one VM.
type Config struct {
	// Name is the VM's and the guest's host name (systemd.hostname=).
	Name string
	// Dir holds the VM's state: its disk overlay, sockets, serial log and
	// pid file. Created if missing; an overlay there is reused.
	Dir string
	// Image is the directory of base.qcow2, vmlinuz and initrd.img.
	Image string
	// Share, if set, is a host directory exported read-only as 9p tag
	// "node"; its rootfs/ is copied over the guest's / at boot, when
	// its files changed since the last copy.
	Share string
	// MemoryMB is the guest's memory (default 768); CPUs its vCPUs
	// (default 1: more only slow TCG down on a small host).
	MemoryMB int
	CPUs     int
	// CodeCacheMB is TCG's translated-code cache (tb-size; default 512).
	// A guest running a kubelet, containerd and Go daemons translates
	// more code than a small cache holds: each time it fills, qemu
	// flushes it and translates everything again (JITStats counts the
	// flushes).
	CodeCacheMB int
	// UUID is the SMBIOS UUID (-uuid); systemd derives the guest's
	// machine-id from it. Default: one made from Index. Index also makes
	// the NIC's MAC address.
	UUID  string
	Index int
	// Network is the guest's user network (default qemu's: 10.0.2.0/24,
	// the guest at 10.0.2.15).
	Network Network
	// GuestForwards and HostForwards are the only network paths between
	// guest and host (user networking with restrict=on).
	GuestForwards []Forward
	HostForwards  []HostForward
	// KernelArgs are added to the kernel command line.
	KernelArgs []string
	// Accel is "tcg", "kvm", or empty: KVM when it is real hardware
	// virtualization, TCG otherwise.
	Accel string
	// Command makes the qemu command (default exec.Command), so that the
	// caller can wrap it, e.g. in `nsenter --net=FILE` (the forwards' host
	// addresses are then that namespace's) or nice. The wrapper must exec
	// qemu; the process is put in a process group of its own.
	Command func(name string, args ...string) *exec.Cmd
	// KeepOnExit leaves qemu running when this process exits without
	// Stop (make cluster KEEP=1); otherwise it is sent SIGTERM then.
	KeepOnExit bool
}

// VM is a running (or exited) qemu process and the guest inside it.
type VM struct {
	cfg   Config
	cmd   *exec.Cmd
	done  chan struct{}
	err   error // qemu's exit, once done is closed
	agent *agent
	log   *os.File
}

// Result is what a command run in the guest did.
type Result struct {
	// ExitCode is the command's exit status; 128+Signal if a signal
	// ended it.
	ExitCode int
	Signal   int
	Stdout   string
	Stderr   string
}

var validName = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// Start creates the VM's overlay if needed and starts qemu. It returns once
// qemu runs (its monitor answers), not when the guest has booted: see
// WaitAgent. The caller owns the process: Stop it.
func Start(ctx context.Context, cfg Config) (*VM, error) {
	if cfg.MemoryMB == 0 {
		cfg.MemoryMB = 768
	}
	if cfg.CPUs == 0 {
		cfg.CPUs = 1
	}
	if cfg.CodeCacheMB == 0 {
		cfg.CodeCacheMB = 512
	}
	if cfg.UUID == "" {
		cfg.UUID = fmt.Sprintf("00000000-0000-4000-8000-%012d", cfg.Index)
	}
	if cfg.Command == nil {
		cfg.Command = exec.Command
	}
	fail := func(format string, a ...any) (*VM, error) {
		return nil, fmt.Errorf("vm %s: %s", cfg.Name, fmt.Sprintf(format, a...))
	}
	if !validName.MatchString(cfg.Name) {
		return fail("the name must be a host name label (a-z, 0-9, -)")
	}
	if cfg.Dir == "" || cfg.Image == "" {
		return fail("Dir and Image are required")
	}
	var err error
	if cfg.Dir, err = filepath.Abs(cfg.Dir); err != nil {
		return fail("%v", err)
	}
	if cfg.Image, err = filepath.Abs(cfg.Image); err != nil {
		return fail("%v", err)
	}
	for _, f := range []string{BaseImage, Kernel, Initrd} {
		if _, err := os.Stat(filepath.Join(cfg.Image, f)); err != nil {
			return fail("image: %v (make vm-image builds it)", err)
		}
	}
	if cfg.Share != "" {
		if cfg.Share, err = filepath.Abs(cfg.Share); err != nil {
			return fail("%v", err)
		}
		if fi, err := os.Stat(cfg.Share); err != nil || !fi.IsDir() {
			return fail("share %s is not a directory", cfg.Share)
		}
	}
	// A unix socket's path has room for 107 bytes.
	if n := len(filepath.Join(cfg.Dir, qmpSocket)); n > 107 {
		return fail("Dir %s is too long for unix sockets in it (%d bytes > 107)", cfg.Dir, n)
	}
	accel, err := accelArgs(cfg.Accel, cfg.CodeCacheMB)
	if err != nil {
		return fail("%v", err)
	}
	netdev, err := netdevArg(cfg)
	if err != nil {
		return fail("%v", err)
	}
	if len(cfg.GuestForwards) > 0 {
		if _, err := exec.LookPath("socat"); err != nil {
			return fail("guest forwards need socat on the host: %v", err)
		}
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return fail("%v", err)
	}
	if err := overlay(ctx, cfg); err != nil {
		return fail("disk: %v", err)
	}

	v := &VM{cfg: cfg, done: make(chan struct{}), agent: newAgent(filepath.Join(cfg.Dir, qgaSocket))}
	// Sockets of an earlier run would pass for this one's.
	for _, f := range []string{qgaSocket, qmpSocket} {
		if err := os.Remove(v.path(f)); err != nil && !os.IsNotExist(err) {
			return fail("%v", err)
		}
	}
	args := append(accel, v.args(netdev)...)
	v.log, err = os.Create(v.path(qemuLog))
	if err != nil {
		return fail("%v", err)
	}
	v.cmd = cfg.Command(qemuBinary, args...)
	v.cmd.Stdout, v.cmd.Stderr = v.log, v.log
	if v.cmd.SysProcAttr == nil {
		v.cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	v.cmd.SysProcAttr.Setpgid = true // Stop signals qemu and its socat helpers together
	// If this process dies without Stop, qemu gets SIGTERM (it then exits
	// cleanly) instead of running on, orphaned. The signal comes when the
	// thread that started qemu ends: a goroutine locked to its thread
	// starts it and stays until qemu has exited.
	if v.cmd.SysProcAttr.Pdeathsig == 0 && !cfg.KeepOnExit {
		v.cmd.SysProcAttr.Pdeathsig = syscall.SIGTERM
	}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine, after qemu
		if err := v.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		v.err = v.cmd.Wait()
		v.log.Close()
		close(v.done)
	}()
	if err := <-started; err != nil {
		v.log.Close()
		return fail("starting qemu: %v", err)
	}

	// qemu is up once its monitor answers: the socket listens early, the
	// monitor runs once the machine is built (kernel and disks opened). A
	// bad argument or file ends qemu first.
	for {
		if _, err := os.Stat(v.path(qmpSocket)); err == nil {
			qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			_, err := qmp(qctx, v.path(qmpSocket), "query-status", nil)
			cancel()
			if err == nil {
				return v, nil
			}
		}
		select {
		case <-v.done:
			return nil, v.exitError("qemu did not start")
		case <-ctx.Done():
			_ = v.Stop(context.Background(), StopOptions{})
			return fail("qemu did not start: %v", context.Cause(ctx))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (v *VM) path(f string) string { return filepath.Join(v.cfg.Dir, f) }

// Name is the VM's name.
func (v *VM) Name() string { return v.cfg.Name }

// PID is qemu's process id (or its wrapper's, which execs it).
func (v *VM) PID() int { return v.cmd.Process.Pid }

// Done is closed when qemu has exited.
func (v *VM) Done() <-chan struct{} { return v.done }

// SerialLog is the path of the guest's console log.
func (v *VM) SerialLog() string { return v.path(SerialLog) }

// args are qemu's arguments but the accelerator's.
func (v *VM) args(netdev string) []string {
	c := v.cfg
	kernelArgs := append([]string{"root=/dev/vda", "rw", "console=ttyS0,115200", "systemd.hostname=" + c.Name}, c.KernelArgs...)
	a := []string{
		"-name", c.Name,
		// No default devices (VGA, a monitor on stdio, a NIC): only these.
		"-nodefaults", "-no-user-config", "-display", "none",
		"-smp", strconv.Itoa(c.CPUs), "-m", strconv.Itoa(c.MemoryMB),
		"-uuid", c.UUID,
		"-kernel", filepath.Join(c.Image, Kernel), "-initrd", filepath.Join(c.Image, Initrd),
		"-append", strings.Join(kernelArgs, " "),
		// cache=unsafe: guest flushes are not passed on (speed); the
		// overlay is consistent as long as qemu exits, not on a host crash.
		"-drive", "file=" + esc(v.path(diskFile)) + ",if=virtio,format=qcow2,cache=unsafe,discard=unmap",
		"-netdev", netdev,
		"-device", fmt.Sprintf("virtio-net-pci,netdev=net0,mac=52:54:00:4e:%02x:%02x", (c.Index>>8)&0xff, c.Index&0xff),
		"-device", "virtio-rng-pci",
		// Memory the guest frees goes back to the host.
		"-device", "virtio-balloon-pci,free-page-reporting=on",
		// The guest agent's port; qemu-ga in the image starts when it appears.
		"-chardev", "socket,id=qga0,server=on,wait=off,path=" + esc(v.path(qgaSocket)),
		"-device", "virtio-serial-pci,id=vser0",
		"-device", "virtserialport,bus=vser0.0,chardev=qga0,name=org.qemu.guest_agent.0",
		"-chardev", "socket,id=qmp0,server=on,wait=off,path=" + esc(v.path(qmpSocket)),
		"-mon", "chardev=qmp0,mode=control",
		"-chardev", "file,id=ser0,append=on,path=" + esc(v.path(SerialLog)),
		"-serial", "chardev:ser0",
		"-pidfile", v.path(pidFile),
	}
	if c.Share != "" {
		a = append(a, "-virtfs", "local,path="+esc(c.Share)+",mount_tag="+ShareTag+",security_model=none,readonly=on")
	}
	return a
}

// esc quotes a value inside a qemu option list (a comma is doubled).
func esc(s string) string { return strings.ReplaceAll(s, ",", ",,") }

// netdevArg is user networking that reaches nothing but the forwards.
func netdevArg(c Config) (string, error) {
	s := "user,id=net0,restrict=on"
	cidr := "10.0.2.0/24"
	if n := c.Network; n != (Network{}) {
		_, ipn, err := net.ParseCIDR(n.CIDR)
		if err != nil {
			return "", fmt.Errorf("network %q: %v", n.CIDR, err)
		}
		for _, a := range []string{n.Host, n.DNS, n.GuestIP} {
			if ip := net.ParseIP(a); ip == nil || !ipn.Contains(ip) {
				return "", fmt.Errorf("network %s: host, DNS and guest addresses must be in it, got %q", n.CIDR, a)
			}
		}
		cidr = n.CIDR
		s += fmt.Sprintf(",net=%s,host=%s,dns=%s,dhcpstart=%s", n.CIDR, n.Host, n.DNS, n.GuestIP)
	}
	_, slirp, _ := net.ParseCIDR(cidr)
	for _, f := range c.GuestForwards {
		gh, gp, err := splitIPPort(f.Guest)
		if err != nil || !slirp.Contains(gh) {
			return "", fmt.Errorf("guest forward %q: the guest side must be IP:PORT in %s", f.Guest, cidr)
		}
		hh, hp, err := splitIPPort(f.Host)
		if err != nil || hh.To4() == nil {
			return "", fmt.Errorf("guest forward to %q: the host side must be IPv4:PORT", f.Host)
		}
		s += fmt.Sprintf(",guestfwd=tcp:%s:%d-cmd:socat STDIO TCP:%s:%d", gh, gp, hh, hp)
	}
	for _, f := range c.HostForwards {
		hh, hp, err := splitIPPort(f.Host)
		if err != nil || hh.To4() == nil || f.GuestPort <= 0 || f.GuestPort > 65535 {
			return "", fmt.Errorf("host forward %q -> %d: want IPv4:PORT and a guest port", f.Host, f.GuestPort)
		}
		s += fmt.Sprintf(",hostfwd=tcp:%s:%d-:%d", hh, hp, f.GuestPort)
	}
	return s, nil
}

func splitIPPort(s string) (net.IP, int, error) {
	h, p, err := net.SplitHostPort(s)
	if err != nil {
		return nil, 0, err
	}
	ip := net.ParseIP(h)
	port, err := strconv.Atoi(p)
	if ip == nil || err != nil || port <= 0 || port > 65535 {
		return nil, 0, fmt.Errorf("bad address %q", s)
	}
	return ip, port, nil
}

// accelArgs picks the accelerator. KVM only if the CPU has hardware
// virtualization and /dev/kvm is not kvm_pvm (which runs only PVM guest
// kernels: a stock kernel crawls there, then dies with an emulation
// failure); otherwise qemu's JIT, multi-threaded, with a code cache of
// codeCacheMB.
func accelArgs(accel string, codeCacheMB int) ([]string, error) {
	// -cpu max, as is: TCG's max CPU offers AMD-V (the guest loads
	// kvm_amd for nothing), but max,svm=off broke the guest's boot here
	// (mounts, udevd and machine-id writes failed).
	tcg := []string{"-accel", fmt.Sprintf("tcg,thread=multi,tb-size=%d", codeCacheMB), "-cpu", "max"}
	kvm := []string{"-accel", "kvm", "-cpu", "host"}
	switch accel {
	case "tcg":
		return tcg, nil
	case "kvm":
		return kvm, nil
	case "":
		if KVMUsable() {
			return kvm, nil
		}
		return tcg, nil
	}
	return nil, fmt.Errorf("accel %q: want tcg, kvm or empty", accel)
}

// KVMUsable says whether /dev/kvm is hardware virtualization.
func KVMUsable() bool {
	if _, err := os.Stat("/dev/kvm"); err != nil {
		return false
	}
	if _, err := os.Stat("/sys/module/kvm_pvm"); err == nil {
		return false
	}
	b, err := os.ReadFile("/proc/cpuinfo")
	return err == nil && regexp.MustCompile(`(?m)^flags\s*:.*\b(vmx|svm)\b`).Match(b)
}

// overlay creates the VM's copy-on-write disk on the base image, unless
// there is one; one made on another build of the base is refused (its
// blocks would land on the wrong file system).
func overlay(ctx context.Context, c Config) error {
	disk := filepath.Join(c.Dir, diskFile)
	base := filepath.Join(c.Image, BaseImage)
	stamp, _ := os.ReadFile(filepath.Join(c.Image, stampFile))
	if _, err := os.Stat(disk); err == nil {
		had, _ := os.ReadFile(filepath.Join(c.Dir, diskStamp))
		if !bytes.Equal(had, stamp) {
			return fmt.Errorf("%s was made on another build of %s: remove it for a fresh disk", disk, base)
		}
		return nil
	}
	tmp := disk + ".new"
	out, err := exec.CommandContext(ctx, "qemu-img", "create", "-q", "-f", "qcow2", "-b", base, "-F", "qcow2", tmp).CombinedOutput()
	if err != nil {
		return fmt.Errorf("qemu-img create: %v: %s", err, bytes.TrimSpace(out))
	}
	if err := os.WriteFile(filepath.Join(c.Dir, diskStamp), stamp, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, disk)
}

// exited reports qemu's end, if it has ended.
func (v *VM) exited() bool {
	select {
	case <-v.done:
		return true
	default:
		return false
	}
}

// exitError says that qemu has exited (what, how, and the last lines of
// its output and of the guest's console).
func (v *VM) exitError(what string) error {
	status := "exit status 0"
	if v.err != nil {
		status = v.err.Error()
	}
	msg := fmt.Sprintf("vm %s: %s: qemu exited (%s)", v.cfg.Name, what, status)
	if t := tail(v.path(qemuLog), 10); t != "" {
		msg += "\nqemu's output ends:\n" + t
	}
	if t := tail(v.path(SerialLog), 20); t != "" {
		msg += "\nthe serial console ends:\n" + t
	}
	return errors.New(msg)
}

var ansi = regexp.MustCompile("\x1b\\[[0-9;?]*[A-Za-z]")

// tail is the last n lines of a file (read from its last 64 KiB).
func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	off := max(fi.Size()-64<<10, 0)
	b := make([]byte, fi.Size()-off)
	if _, err := f.ReadAt(b, off); err != nil {
		return ""
	}
	// The console's colours and carriage returns would garble an error.
	text := strings.ReplaceAll(ansi.ReplaceAllString(string(b), ""), "\r", "")
	if strings.TrimSpace(text) == "" {
		return ""
	}
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	lines = lines[max(len(lines)-n, 0):]
	return "  " + strings.Join(lines, "\n  ")
}

// agentCall is one guest agent call, abandoned if qemu exits meanwhile.
func (v *VM) agentCall(ctx context.Context, what, cmd string, args, out any) error {
	if v.exited() {
		return v.exitError(what)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-v.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	err := v.agent.call(ctx, cmd, args, out)
	if err != nil {
		if v.exited() {
			return v.exitError(what)
		}
		return fmt.Errorf("vm %s: %s: guest agent: %w", v.cfg.Name, what, err)
	}
	return nil
}

// rpcTimeout bounds one agent call: the agent answers in milliseconds, but
// a guest that reboots never answers, and a busy TCG guest is slow.
const rpcTimeout = 30 * time.Second

func rpcContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, rpcTimeout)
}

// WaitAgent waits until the guest agent answers: after a start, a reboot
// or a reset. It reconnects and resynchronises as often as needed.
func (v *VM) WaitAgent(ctx context.Context) error {
	var last error
	for {
		// While an attempt waits, the agent may come up and answer its
		// sync, or an earlier one's: no time is lost between attempts.
		start := time.Now()
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := v.agentCall(actx, "waiting for the guest agent", "guest-ping", nil, nil)
		cancel()
		if err == nil {
			return nil
		}
		if v.exited() {
			return err
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("vm %s: the guest agent did not answer: %v (last: %v)", v.cfg.Name, context.Cause(ctx), last)
		case <-v.done:
			return v.exitError("waiting for the guest agent")
		case <-time.After(time.Second - time.Since(start)): // no busy loop when it fails at once
		}
	}
}

// Exec runs argv in the guest (argv[0] looked up in the agent's PATH) and
// waits for it to end, with its output. A non-zero exit is not an error;
// not reaching the agent, or the command not starting, is.
func (v *VM) Exec(ctx context.Context, argv ...string) (Result, error) {
	return v.ExecInput(ctx, nil, argv...)
}

// ExecInput is Exec with input as the command's standard input.
func (v *VM) ExecInput(ctx context.Context, input []byte, argv ...string) (Result, error) {
	what := "exec " + strings.Join(argv, " ")
	if len(argv) == 0 {
		return Result{}, fmt.Errorf("vm %s: exec: no command", v.cfg.Name)
	}
	args := map[string]any{"path": argv[0], "arg": argv[1:], "capture-output": true}
	if input != nil {
		args["input-data"] = base64.StdEncoding.EncodeToString(input)
	}
	var started struct {
		PID int `json:"pid"`
	}
	rctx, cancel := rpcContext(ctx)
	err := v.agentCall(rctx, what, "guest-exec", args, &started)
	cancel()
	if err != nil {
		return Result{}, err
	}
	for delay := 20 * time.Millisecond; ; delay = min(2*delay, 500*time.Millisecond) {
		var st struct {
			Exited   bool   `json:"exited"`
			ExitCode *int   `json:"exitcode"`
			Signal   *int   `json:"signal"`
			Out      string `json:"out-data"`
			Err      string `json:"err-data"`
		}
		rctx, cancel := rpcContext(ctx)
		err := v.agentCall(rctx, what, "guest-exec-status", map[string]int{"pid": started.PID}, &st)
		cancel()
		if err != nil {
			return Result{}, err
		}
		if st.Exited {
			var r Result
			if st.ExitCode != nil {
				r.ExitCode = *st.ExitCode
			}
			if st.Signal != nil {
				r.Signal, r.ExitCode = *st.Signal, 128+*st.Signal
			}
			out, err1 := base64.StdEncoding.DecodeString(st.Out)
			errOut, err2 := base64.StdEncoding.DecodeString(st.Err)
			if err := errors.Join(err1, err2); err != nil {
				return Result{}, fmt.Errorf("vm %s: %s: decoding its output: %w", v.cfg.Name, what, err)
			}
			r.Stdout, r.Stderr = string(out), string(errOut)
			return r, nil
		}
		select {
		case <-ctx.Done():
			return Result{}, fmt.Errorf("vm %s: %s: still running: %w", v.cfg.Name, what, context.Cause(ctx))
		case <-time.After(delay):
		}
	}
}

// Run is Exec for a command that must succeed: its standard output, or an
// error with its exit status and standard error.
func (v *VM) Run(ctx context.Context, argv ...string) (string, error) {
	r, err := v.Exec(ctx, argv...)
	if err != nil {
		return "", err
	}
	if r.ExitCode != 0 {
		return r.Stdout, fmt.Errorf("vm %s: %s: exit status %d: %s", v.cfg.Name, strings.Join(argv, " "), r.ExitCode, strings.TrimSpace(r.Stderr))
	}
	return r.Stdout, nil
}

// ReadFile reads a file of the guest (through the agent, no command run).
func (v *VM) ReadFile(ctx context.Context, path string) ([]byte, error) {
	what := "reading " + path
	var h int
	rctx, cancel := rpcContext(ctx)
	defer cancel()
	if err := v.agentCall(rctx, what, "guest-file-open", map[string]string{"path": path, "mode": "r"}, &h); err != nil {
		return nil, err
	}
	defer func() {
		// Briefly: a guest that stopped answering keeps no handle open.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = v.agentCall(cctx, what, "guest-file-close", map[string]int{"handle": h}, nil)
	}()
	var data []byte
	for {
		var chunk struct {
			Count int    `json:"count"`
			Buf   string `json:"buf-b64"`
			EOF   bool   `json:"eof"`
		}
		if err := v.agentCall(rctx, what, "guest-file-read", map[string]int{"handle": h, "count": 1 << 20}, &chunk); err != nil {
			return nil, err
		}
		b, err := base64.StdEncoding.DecodeString(chunk.Buf)
		if err != nil {
			return nil, fmt.Errorf("vm %s: %s: %w", v.cfg.Name, what, err)
		}
		data = append(data, b...)
		if chunk.EOF || chunk.Count == 0 {
			return data, nil
		}
	}
}

// BootID is the guest kernel's boot id: it changes with every boot.
func (v *VM) BootID(ctx context.Context) (string, error) {
	b, err := v.ReadFile(ctx, "/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// Reset resets the machine at once, as a power cut would: the guest's
// unwritten data is lost, qemu keeps running and the guest boots again.
func (v *VM) Reset(ctx context.Context) error { return v.monitor(ctx, "system_reset") }

// Powerdown presses the ACPI power button (the guest powers off and qemu
// exits) and returns at once.
func (v *VM) Powerdown(ctx context.Context) error { return v.monitor(ctx, "system_powerdown") }

// PowerOffAtReboot makes the guest's next reboot power the VM off instead:
// qemu exits where the guest would start again (QMP set-action), as a
// machine whose reboot never comes back. PowerOn starts it again.
func (v *VM) PowerOffAtReboot(ctx context.Context) error {
	if v.exited() {
		return v.exitError("set-action")
	}
	if _, err := qmp(ctx, v.path(qmpSocket), "set-action", map[string]string{"reboot": "shutdown", "shutdown": "poweroff"}); err != nil {
		return fmt.Errorf("vm %s: %w", v.cfg.Name, err)
	}
	return nil
}

// PowerOn starts a VM that powered off (or was stopped) again, on the
// same disk and configuration, as a new VM; v is cleaned up first (its
// socat helpers). It returns once qemu runs, as Start does.
func (v *VM) PowerOn(ctx context.Context) (*VM, error) {
	if !v.exited() {
		return nil, fmt.Errorf("vm %s: still running", v.cfg.Name)
	}
	if err := v.Stop(ctx, StopOptions{}); err != nil {
		return nil, err
	}
	return Start(ctx, v.cfg)
}

// JITStats is qemu's `info jit` (TCG's translation counts, the code
// cache's size and how often it was flushed), or an error under KVM.
func (v *VM) JITStats(ctx context.Context) (string, error) {
	if v.exited() {
		return "", v.exitError("info jit")
	}
	ret, err := qmp(ctx, v.path(qmpSocket), "human-monitor-command", map[string]string{"command-line": "info jit"})
	if err != nil {
		return "", fmt.Errorf("vm %s: %w", v.cfg.Name, err)
	}
	var out string
	if err := json.Unmarshal(ret, &out); err != nil {
		return "", fmt.Errorf("vm %s: info jit: %w", v.cfg.Name, err)
	}
	return out, nil
}

func (v *VM) monitor(ctx context.Context, cmd string) error {
	if v.exited() {
		return v.exitError(cmd)
	}
	if _, err := qmp(ctx, v.path(qmpSocket), cmd, nil); err != nil {
		if v.exited() {
			return v.exitError(cmd)
		}
		return fmt.Errorf("vm %s: %w", v.cfg.Name, err)
	}
	return nil
}

// StopOptions say how Stop stops.
type StopOptions struct {
	// Graceful powers the guest off first (the guest agent's
	// guest-shutdown and the ACPI power button) and waits until ctx ends
	// for qemu to exit, before stopping it the hard way.
	Graceful bool
	// RemoveDir removes the VM's directory (disk overlay included) once
	// qemu is gone. Otherwise nothing is removed.
	RemoveDir bool
}

// killGrace is how long qemu has to exit on SIGTERM (it then closes its
// disks cleanly) before SIGKILL.
const killGrace = 10 * time.Second

// Stop stops qemu, gracefully if asked, and waits until it has exited. The
// process group goes with it (the socat helpers of guest forwards). It
// returns an error if a graceful stop had to be forced or something could
// not be removed; qemu is gone either way.
func (v *VM) Stop(ctx context.Context, o StopOptions) error {
	var errs []error
	if o.Graceful && !v.exited() {
		// Both: the power button works without the agent (early in a
		// boot), the agent without ACPI; each has its own few seconds.
		for _, press := range []func(context.Context) error{
			v.Powerdown,
			func(ctx context.Context) error {
				return v.agent.send(ctx, "guest-shutdown", map[string]string{"mode": "powerdown"})
			},
		} {
			sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_ = press(sctx)
			cancel()
		}
		select {
		case <-v.done:
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("vm %s: did not power off (%v): stopped the hard way", v.cfg.Name, context.Cause(ctx)))
		}
	}
	pgid := v.cmd.Process.Pid
	if !v.exited() {
		// qemu ends cleanly on QMP quit or SIGTERM (its disk overlay
		// consistent); the monitor first, which reaches qemu whatever
		// wraps it.
		qctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		if _, err := qmp(qctx, v.path(qmpSocket), "quit", nil); err != nil {
			_ = syscall.Kill(pgid, syscall.SIGTERM)
		}
		cancel()
		select {
		case <-v.done:
		case <-time.After(killGrace):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-v.done
		}
	}
	// What is left of the group: socat helpers of guest forwards.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	v.agent.close()
	if o.RemoveDir {
		if err := os.RemoveAll(v.cfg.Dir); err != nil {
			errs = append(errs, fmt.Errorf("vm %s: %w", v.cfg.Name, err))
		}
	}
	return errors.Join(errs...)
}
