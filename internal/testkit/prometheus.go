package testkit

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/alertmanager/api/v2/models"
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

// StartAlertmanager starts Debian's prometheus-alertmanager on loopback,
// alone (no gossip), routing everything nowhere, its storage in a
// temporary directory; it returns its URL. Without the binary the test
// skips (RequirePrometheusTool).
func StartAlertmanager(t testing.TB) string {
	t.Helper()
	bin := RequirePrometheusTool(t, "prometheus-alertmanager", "prometheus-alertmanager")
	dir := t.TempDir()
	config := filepath.Join(dir, "alertmanager.yml")
	if err := os.WriteFile(config, []byte("route: {receiver: nowhere}\nreceivers: [{name: nowhere}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", FreePort(t))
	url := "http://" + addr
	StartServer(t, url, bin, "--config.file="+config, "--storage.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--cluster.listen-address=")
	return url
}

// AlertmanagerSilences are the silences an Alertmanager lists
// (GET /api/v2/silences), expired ones included.
func AlertmanagerSilences(t testing.TB, url string) models.GettableSilences {
	t.Helper()
	resp, err := http.Get(url + "/api/v2/silences")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var out models.GettableSilences
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s/api/v2/silences: %s: %v", url, resp.Status, err)
	}
	return out
}
