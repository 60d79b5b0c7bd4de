package testkit

import (
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"testing"
)

// KubectlNdp builds this tree's ndp CLI as kubectl's plugin (kubectl-ndp)
// into a temporary directory and returns the directory, to put first on
// the PATH of a kubectl that runs `kubectl ndp …`.
func KubectlNdp(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "kubectl-ndp"), "github.com/ndp-dev/ndp/cmd/ndp").CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/ndp: %v\n%s", err, out)
	}
	return dir
}

// Scrape reads a Prometheus metrics endpoint (http://addr/metrics).
func Scrape(addr string) (string, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET http://%s/metrics: %s", addr, resp.Status)
	}
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}
