package testkit

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// RequirePrometheusTool finds one of Debian's prometheus binaries
// (prometheus, prometheus-alertmanager) of package pkg. Missing, the test
// skips, unless NDP_REQUIRE_PROMETHEUS is set (make test sets it, so CI
// fails instead of skipping; hack/packages.sh installs them).
func RequirePrometheusTool(t testing.TB, name, pkg string) string {
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

// StartServer runs a server (bin args) for the test's duration, its
// output in a file shown when the test fails, and waits until
// url/-/ready answers 200, as Prometheus and Alertmanager do.
func StartServer(t testing.TB, url, bin string, args ...string) {
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
		Terminate(cmd.Process, done, 10*time.Second)
		_ = logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("%s's last lines:\n%s", filepath.Base(bin), LastLines(string(b), 30))
		}
	})
	Eventually(t, filepath.Base(bin)+" ready at "+url, func() (bool, string) {
		select {
		case <-done:
			b, _ := os.ReadFile(logPath)
			t.Fatalf("%s exited: %v\n%s", bin, exitErr, LastLines(string(b), 30))
		default:
		}
		resp, err := http.Get(url + "/-/ready")
		if err != nil {
			return false, err.Error()
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	}, Within(time.Minute))
}
