package framework

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ndp-dev/ndp/internal/testkit"
)

// The monitoring's configuration is what Debian's own tools accept:
// promtool checks Prometheus's (and the rule's), amtool Alertmanager's.
func TestMonitoringConfigs(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"prometheus.yml":   fmt.Sprintf(prometheusConfig, nodeIP, alertmanagerPort, nodeExporterPort, filepath.Join(dir, "ndp-controller.json")),
		"rules.yml":        prometheusRules,
		"alertmanager.yml": alertmanagerConfig,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, check := range [][]string{
		{"promtool", "check", "config", filepath.Join(dir, "prometheus.yml")},
		{"amtool", "check-config", filepath.Join(dir, "alertmanager.yml")},
	} {
		bin := testkit.RequirePrometheusTool(t, check[0], map[string]string{"promtool": "prometheus", "amtool": "prometheus-alertmanager"}[check[0]])
		if out, err := exec.Command(bin, check[1:]...).CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", strings.Join(check, " "), err, out)
		}
	}
}
