package vm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestVM boots the image and drives the guest through its agent and qemu's
// monitor: exec, a reboot from inside, a power cut, the 9p share at every
// boot, the restricted network, a graceful stop. Minutes under TCG, so
// only with NDP_VM_TEST=1.
func TestVM(t *testing.T) {
	if os.Getenv("NDP_VM_TEST") == "" {
		t.Skip("boots a VM for minutes: set NDP_VM_TEST=1 (make test-vm) to run it")
	}
	image := os.Getenv("NDP_VM_IMAGE")
	if image == "" {
		image = "../../../bin/vm-image"
	}
	// Asked for explicitly: what is missing fails the test.
	if _, err := os.Stat(filepath.Join(image, BaseImage)); err != nil {
		t.Fatalf("no image (make vm-image): %v", err)
	}
	for _, tool := range []string{qemuBinary, "qemu-img", "socat"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed (apt-get install qemu-system-x86 qemu-utils socat): %v", tool, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	dir := t.TempDir()

	// The share: a file whose content changes between boots.
	share := filepath.Join(dir, "share")
	shareFile := filepath.Join(share, "rootfs", "etc", "ndp-share-test")
	if err := os.MkdirAll(filepath.Dir(shareFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(shareFile, []byte("first boot\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	// The host side of the network: a server the guest may reach, one it
	// may not, and a free port for a host forward into the guest.
	reachable := serve(t, func(c net.Conn) { _, _ = io.WriteString(c, "hello from the host\n") })
	var unreachableConns atomic.Int32
	unreachable := serve(t, func(net.Conn) { unreachableConns.Add(1) })
	hostPort := freePort(t)

	cfg := Config{
		Name:          "ndp-vm-test",
		Dir:           filepath.Join(dir, "vm"),
		Image:         image,
		Share:         share,
		Index:         7,
		GuestForwards: []Forward{{Guest: "10.0.2.100:8080", Host: reachable}},
		HostForwards:  []HostForward{{Host: fmt.Sprintf("127.0.0.1:%d", hostPort), GuestPort: 7777}},
	}
	t0 := time.Now()
	v, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	pid := v.PID()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the serial console ends:\n%s", tail(v.SerialLog(), 40))
		}
		_ = v.Stop(context.Background(), StopOptions{})
	})
	t.Logf("qemu started (pid %d, %s) in %s", pid, accelName(), since(t0))

	within := func(d time.Duration) context.Context {
		c, cancel := context.WithTimeout(ctx, d)
		t.Cleanup(cancel)
		return c
	}
	if err := v.WaitAgent(within(5 * time.Minute)); err != nil {
		t.Fatal(err)
	}
	t.Logf("boot: the guest agent answers %s after qemu started", since(t0))

	r, err := v.Exec(within(5*time.Minute), "systemctl", "is-system-running", "--wait")
	if err != nil {
		t.Fatal(err)
	}
	state := strings.TrimSpace(r.Stdout)
	t.Logf("boot: systemctl is-system-running --wait: %s, %s after qemu started", state, since(t0))
	logBoot(t, within(time.Minute), v, "boot", t0)
	switch state {
	case "running":
	case "degraded":
		failed, _ := v.Run(within(time.Minute), "systemctl", "--failed", "--no-legend", "--plain")
		t.Logf("degraded: failed units:\n%s", failed)
	default:
		t.Fatalf("system state %q (exit %d, stderr %q)", state, r.ExitCode, r.Stderr)
	}

	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "VmRSS:") {
				t.Logf("boot: qemu's %s", strings.Join(strings.Fields(l), " "))
			}
		}
	}

	run := func(argv ...string) string {
		t.Helper()
		out, err := v.Run(within(2*time.Minute), argv...)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(out)
	}
	if exe := run("readlink", "/proc/1/exe"); filepath.Base(exe) != "systemd" {
		t.Fatalf("PID 1 is %s, not systemd", exe)
	}
	if h := run("hostname"); h != cfg.Name {
		t.Errorf("hostname %q, want %q", h, cfg.Name)
	}
	if got := run("cat", "/etc/ndp-share-test"); got != "first boot" {
		t.Errorf("/etc/ndp-share-test from the share: %q, want %q", got, "first boot")
	}
	if r, err := v.Exec(within(time.Minute), "touch", "/run/node-share/rootfs/x"); err != nil || r.ExitCode == 0 {
		t.Errorf("the share is writable from the guest: %+v %v", r, err)
	}
	boot1, err := v.BootID(within(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	run("sh", "-c", "echo written before the reboot >/root/marker && sync")
	// A file from the share the node changes: an unchanged share is not
	// copied again at the next boot (provisioned once, as by Ignition).
	run("sh", "-c", "echo changed on the node >/etc/ndp-share-test && sync")

	// The network: the forward works, nothing else is reachable.
	got := run("timeout", "60", "bash", "-c", "exec 3<>/dev/tcp/10.0.2.100/8080; cat <&3")
	if got != "hello from the host" {
		t.Errorf("through the guest forward: %q", got)
	}
	_, unreachablePort, _ := net.SplitHostPort(unreachable)
	for _, addr := range []string{"10.0.2.2", "10.0.2.100"} {
		r, err := v.Exec(within(time.Minute), "timeout", "10", "bash", "-c", fmt.Sprintf("exec 3<>/dev/tcp/%s/%s", addr, unreachablePort))
		if err != nil {
			t.Fatal(err)
		}
		if r.ExitCode == 0 {
			t.Errorf("the guest reached the host's port %s at %s: restrict=on does not hold", unreachablePort, addr)
		}
		t.Logf("network: %s:%s not forwarded: exit %d, %s", addr, unreachablePort, r.ExitCode, strings.TrimSpace(r.Stderr))
	}
	if n := unreachableConns.Load(); n != 0 {
		t.Errorf("the server that is not forwarded got %d connections", n)
	}
	// The host forward: a server in the guest, reached from the host.
	run("systemd-run", "--unit=ndp-vm-test-echo", "socat", "TCP-LISTEN:7777,fork,reuseaddr", "SYSTEM:echo hello from the guest")
	if err := waitRead(within(time.Minute), fmt.Sprintf("127.0.0.1:%d", hostPort), "hello from the guest"); err != nil {
		t.Errorf("through the host forward: %v", err)
	}

	// A reboot from inside: the agent may go before it answers.
	t1 := time.Now()
	if r, err := v.Exec(within(time.Minute), "systemctl", "reboot"); err != nil {
		t.Logf("systemctl reboot: %v (the agent stopped first)", err)
	} else if r.ExitCode != 0 {
		t.Fatalf("systemctl reboot: exit %d: %s", r.ExitCode, r.Stderr)
	}
	boot2 := newBoot(t, within(5*time.Minute), v, boot1)
	t.Logf("reboot (systemctl reboot): a new boot id after %s", since(t1))
	logBoot(t, within(5*time.Minute), v, "reboot", t1)
	if got := run("cat", "/root/marker"); got != "written before the reboot" {
		t.Errorf("/root/marker after the reboot: %q", got)
	}
	if got := run("cat", "/etc/ndp-share-test"); got != "changed on the node" {
		t.Errorf("/etc/ndp-share-test after a reboot with the share unchanged: %q, want the node's change kept", got)
	}
	if pid != v.PID() || v.exited() {
		t.Errorf("qemu did not stay the same process across the reboot")
	}

	// A power cut; the share is copied again at boot.
	if err := os.WriteFile(shareFile, []byte("after the reset\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t2 := time.Now()
	if err := v.Reset(within(time.Minute)); err != nil {
		t.Fatal(err)
	}
	newBoot(t, within(5*time.Minute), v, boot2)
	t.Logf("reset (QMP system_reset): a new boot id after %s", since(t2))
	logBoot(t, within(5*time.Minute), v, "reset", t2)
	if got := run("cat", "/etc/ndp-share-test"); got != "after the reset" {
		t.Errorf("/etc/ndp-share-test after the reset: %q, want the share's new content", got)
	}
	if got := run("cat", "/root/marker"); got != "written before the reboot" {
		t.Errorf("/root/marker after the reset: %q", got)
	}

	// A graceful stop; then nothing of qemu is left.
	t3 := time.Now()
	if err := v.Stop(within(3*time.Minute), StopOptions{Graceful: true}); err != nil {
		t.Error(err)
	}
	t.Logf("stop (graceful): qemu exited %s after the power-off", since(t3))
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("qemu (pid %d) is still there after Stop: kill -0: %v", pid, err)
	}
	if err := syscall.Kill(-pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("a process of qemu's group %d is still there after Stop: kill -0: %v", pid, err)
	}
	if fi, err := os.Stat(filepath.Join(cfg.Dir, diskFile)); err != nil {
		t.Errorf("Stop removed the disk it was not asked to: %v", err)
	} else {
		t.Logf("the disk overlay after three boots: %.1f MB", float64(fi.Size())/1e6)
	}
	if _, err := v.Exec(within(time.Minute), "true"); err == nil || !strings.Contains(err.Error(), "qemu exited") {
		t.Errorf("Exec on a stopped VM: %v, want an error saying qemu exited", err)
	}
}

// logBoot logs how the guest's boot went by its own clock: the time to
// each milestone, the slowest units, when the agent started.
func logBoot(t *testing.T, ctx context.Context, v *VM, what string, start time.Time) {
	t.Helper()
	r, err := v.Exec(ctx, "sh", "-c", `systemctl is-system-running --wait >/dev/null
systemd-analyze | head -n1
echo "qemu-guest-agent started at $(( $(systemctl show -P ActiveEnterTimestampMonotonic qemu-guest-agent) / 1000 )) ms"
systemd-analyze blame --no-pager | head -n4`)
	if err != nil {
		t.Logf("%s: systemd-analyze: %v", what, err)
		return
	}
	t.Logf("%s: the system is up within %s of its start; by the guest's clock:\n%s", what, since(start), strings.TrimSpace(r.Stdout+r.Stderr))
}

// newBoot waits until the guest runs a boot other than old; it returns its
// boot id.
func newBoot(t *testing.T, ctx context.Context, v *VM, old string) string {
	t.Helper()
	for {
		if err := v.WaitAgent(ctx); err != nil {
			t.Fatal(err)
		}
		id, err := v.BootID(ctx)
		if err == nil && id != old {
			return id
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no new boot: %v (boot id %s, last error %v)", context.Cause(ctx), id, err)
		case <-time.After(time.Second):
		}
	}
}

// serve runs a TCP server on 127.0.0.1 calling handle for each connection.
func serve(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			handle(c)
			c.Close()
		}
	}()
	return l.Addr().String()
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// waitRead connects to addr until it reads want: qemu accepts on the host
// side before the guest listens, then closes.
func waitRead(ctx context.Context, addr, want string) error {
	var last string
	for {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err == nil {
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			b, _ := io.ReadAll(c)
			c.Close()
			if last = strings.TrimSpace(string(b)); last == want {
				return nil
			}
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("read %q, want %q: %v", last, want, context.Cause(ctx))
		case <-time.After(time.Second):
		}
	}
}

func since(t time.Time) time.Duration { return time.Since(t).Round(100 * time.Millisecond) }

func accelName() string {
	if KVMUsable() {
		return "KVM"
	}
	return "TCG"
}
