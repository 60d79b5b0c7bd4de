package rolloutgates

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ndp-dev/ndp/internal/testkit"
)

// requireTool finds one of Debian's prometheus binaries. Missing, the test
// skips, unless NDP_REQUIRE_PROMETHEUS is set (make test sets it, so CI
// fails instead of skipping; hack/packages.sh installs them).
func requireTool(t *testing.T, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	msg := fmt.Sprintf("%s not found (Debian package %s: apt-get install -y --no-install-recommends %s, or hack/packages.sh test)", name, pkg, pkg)
	if os.Getenv("NDP_REQUIRE_PROMETHEUS") != "" {
		t.Fatal(msg + "; NDP_REQUIRE_PROMETHEUS is set")
	}
	t.Skip(msg + "; set NDP_REQUIRE_PROMETHEUS=1 to fail instead")
	return ""
}

// startProcess runs a server for the test's duration, its output in a
// file shown when the test fails, and waits until url/-/ready answers 200.
func startProcess(t *testing.T, url string, bin string, args ...string) {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), filepath.Base(bin)+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var exitErr error
	go func() { exitErr = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		testkit.Terminate(cmd.Process, done, 10*time.Second)
		_ = logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("%s's last lines:\n%s", filepath.Base(bin), testkit.LastLines(string(b), 30))
		}
	})
	testkit.Eventually(t, filepath.Base(bin)+" ready at "+url, func() (bool, string) {
		select {
		case <-done:
			b, _ := os.ReadFile(logPath)
			t.Fatalf("%s exited: %v\n%s", bin, exitErr, testkit.LastLines(string(b), 30))
		default:
		}
		resp, err := http.Get(url + "/-/ready")
		if err != nil {
			return false, err.Error()
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	}, testkit.Within(time.Minute))
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// silentServer accepts connections on addr and never answers; stop closes
// it.
func silentServer(t *testing.T, addr string) (stop func()) {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	return func() {
		_ = l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	}
}
