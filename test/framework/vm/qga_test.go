package vm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeAgent answers like qemu-ga behind qemu's socket: requests written
// while the guest side is down (asleep) wait, and are all answered once it
// is back, stale ones first.
type fakeAgent struct {
	mu    sync.Mutex
	awake *sync.Cond
	down  bool
}

func startFakeAgent(t *testing.T) (*fakeAgent, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "qga.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	f := &fakeAgent{}
	f.awake = sync.NewCond(&f.mu)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go f.serve(c)
		}
	}()
	return f, path
}

func (f *fakeAgent) setDown(down bool) {
	f.mu.Lock()
	f.down = down
	f.mu.Unlock()
	f.awake.Broadcast()
}

func (f *fakeAgent) serve(c net.Conn) {
	defer c.Close()
	rd := bufio.NewReader(c)
	for {
		line, err := rd.ReadBytes('\n')
		if err != nil {
			return
		}
		f.mu.Lock()
		for f.down {
			f.awake.Wait()
		}
		f.mu.Unlock()
		// Like qemu-ga: a 0xFF byte resets its parser and earns an error
		// without an id.
		if i := bytes.LastIndexByte(line, 0xFF); i >= 0 {
			fmt.Fprintln(c, `{"error": {"class": "GenericError", "desc": "JSON parse error, stray '\uFFFD'"}}`)
			line = line[i+1:]
		}
		var req struct {
			Execute   string          `json:"execute"`
			Arguments json.RawMessage `json:"arguments"`
			ID        json.RawMessage `json:"id"`
		}
		if json.Unmarshal(line, &req) != nil {
			fmt.Fprintln(c, `{"error": {"class": "GenericError", "desc": "JSON parse error"}}`)
			continue
		}
		switch req.Execute {
		case "guest-sync-delimited":
			var a struct{ ID json.RawMessage }
			_ = json.Unmarshal(req.Arguments, &a)
			fmt.Fprintf(c, "\xff{\"return\": %s, \"id\": %s}\n", a.ID, req.ID)
		case "guest-ping":
			fmt.Fprintf(c, "{\"return\": {}, \"id\": %s}\n", req.ID)
		case "echo":
			fmt.Fprintf(c, "{\"return\": %s, \"id\": %s}\n", req.Arguments, req.ID)
		default:
			fmt.Fprintf(c, "{\"id\": %s, \"error\": {\"class\": \"CommandNotFound\", \"desc\": \"The command %s has not been found\"}}\n", req.ID, req.Execute)
		}
	}
}

func TestAgentResynchronisesAfterTheGuestWasAway(t *testing.T) {
	f, path := startFakeAgent(t)
	a := newAgent(path)
	defer a.close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	echo := func(ctx context.Context, n int) (int, error) {
		var out struct{ N int }
		err := a.call(ctx, "echo", map[string]int{"n": n}, &out)
		return out.N, err
	}
	if got, err := echo(ctx, 1); err != nil || got != 1 {
		t.Fatalf("echo 1: %d, %v", got, err)
	}

	// The guest goes away (a reboot): calls time out, their requests wait.
	f.setDown(true)
	for n := 2; n <= 3; n++ {
		short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		_, err := echo(short, n)
		cancel()
		if err == nil || !strings.Contains(err.Error(), "no answer") {
			t.Fatalf("echo %d while the guest is away: %v, want no answer", n, err)
		}
	}
	// Back: the stale requests are answered first; ours must not take
	// their answers.
	f.setDown(false)
	if got, err := echo(ctx, 4); err != nil || got != 4 {
		t.Fatalf("echo 4 after the guest came back: %d, %v", got, err)
	}
	if err := a.call(ctx, "guest-ping", nil, nil); err != nil {
		t.Fatal(err)
	}
	err := a.call(ctx, "no-such-command", nil, nil)
	if err == nil || !strings.Contains(err.Error(), "has not been found") {
		t.Fatalf("an unknown command: %v, want the agent's error", err)
	}
}

func TestAgentReconnects(t *testing.T) {
	_, path := startFakeAgent(t)
	a := newAgent(path)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.call(ctx, "guest-ping", nil, nil); err != nil {
		t.Fatal(err)
	}
	// The connection breaks (qemu gone and back, or a reset socket).
	a.mu.Lock()
	_ = a.conn.Close()
	a.mu.Unlock()
	if err := a.call(ctx, "guest-ping", nil, nil); err == nil {
		t.Fatal("a call on a closed connection succeeded")
	}
	if err := a.call(ctx, "guest-ping", nil, nil); err != nil {
		t.Fatalf("the call after a broken connection did not reconnect: %v", err)
	}
}

func TestNetdevIsRestricted(t *testing.T) {
	got, err := netdevArg(Config{
		GuestForwards: []Forward{{Guest: "10.0.2.100:6443", Host: "127.0.0.1:36443"}},
		HostForwards:  []HostForward{{Host: "127.0.0.1:2222", GuestPort: 10250}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "user,id=net0,restrict=on,guestfwd=tcp:10.0.2.100:6443-cmd:socat STDIO TCP:127.0.0.1:36443,hostfwd=tcp:127.0.0.1:2222-:10250"
	if got != want {
		t.Errorf("netdev\n got %s\nwant %s", got, want)
	}
	// A network of its own: the forwards' guest side in it.
	own := Network{CIDR: "10.99.0.0/24", Host: "10.99.0.2", DNS: "10.99.0.3", GuestIP: "10.99.0.11"}
	got, err = netdevArg(Config{Network: own, GuestForwards: []Forward{{Guest: "10.99.0.1:6443", Host: "127.0.0.1:6443"}}})
	if err != nil {
		t.Fatal(err)
	}
	want = "user,id=net0,restrict=on,net=10.99.0.0/24,host=10.99.0.2,dns=10.99.0.3,dhcpstart=10.99.0.11,guestfwd=tcp:10.99.0.1:6443-cmd:socat STDIO TCP:127.0.0.1:6443"
	if got != want {
		t.Errorf("netdev\n got %s\nwant %s", got, want)
	}
	for _, c := range []Config{
		{Network: own, GuestForwards: []Forward{{Guest: "10.0.2.100:80", Host: "127.0.0.1:80"}}},
		{Network: Network{CIDR: "10.99.0.0/24", Host: "10.99.0.2", DNS: "10.99.0.3", GuestIP: "10.98.0.11"}},
		{Network: Network{CIDR: "10.99.0.0/33"}},
		{GuestForwards: []Forward{{Guest: "192.168.1.1:80", Host: "127.0.0.1:80"}}},
		{GuestForwards: []Forward{{Guest: "10.0.2.100:80", Host: "localhost:80"}}},
		{HostForwards: []HostForward{{Host: "127.0.0.1:80"}}},
	} {
		if _, err := netdevArg(c); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
}

// A qemu that dies is reported with its exit status and its last words.
func TestStartReportsQemuDying(t *testing.T) {
	if _, err := exec.LookPath(qemuBinary); err != nil {
		t.Skipf("no %s: %v", qemuBinary, err)
	}
	img := t.TempDir()
	if out, err := exec.Command("qemu-img", "create", "-q", "-f", "qcow2", filepath.Join(img, BaseImage), "16M").CombinedOutput(); err != nil {
		t.Skipf("qemu-img: %v: %s", err, out)
	}
	// Not a kernel: qemu refuses it at once.
	for _, f := range []string{Kernel, Initrd} {
		if err := os.WriteFile(filepath.Join(img, f), []byte("not a kernel"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	v, err := Start(ctx, Config{Name: "dying", Dir: t.TempDir(), Image: img, Accel: "tcg"})
	if err == nil {
		_ = v.Stop(ctx, StopOptions{})
		t.Fatal("qemu started on a file that is not a kernel")
	}
	t.Log(err)
	for _, want := range []string{"vm dying", "qemu exited (exit status 1)", "qemu's output ends"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
