package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/internal/testkit"
)

// The rollout scenario's policy reads as a RolloutPolicy, field for field
// (strict: a misspelt field would be dropped by the API server and the
// scenario would test less than it says).
func TestRolloutPolicyManifest(t *testing.T) {
	opens := time.Date(2026, 11, 28, 22, 30, 0, 0, time.FixedZone("CET", 3600))
	var p v1alpha1.RolloutPolicy
	if err := yaml.UnmarshalStrict([]byte(rolloutPolicy(opens)), &p); err != nil {
		t.Fatal(err)
	}
	w := p.Spec.Windows
	if len(w) != 1 || w[0].Start != "21:30" || w[0].End != "01:30" || w[0].TimeZone != "UTC" || len(w[0].Days) != 0 ||
		strings.Join([]string{string(w[0].Holds[0]), string(w[0].Holds[1])}, ",") != "Reboot,Drain" {
		t.Errorf("window %+v: want every day 21:30-01:30 UTC (opens in UTC, four hours), holding Reboot and Drain", w)
	}
	g := p.Spec.Gates
	if g == nil || g.Prometheus == nil || g.Prometheus.URL != promURL() || g.Prometheus.Alerts == nil || g.Prometheus.Alerts.Names[0] != backupAlert ||
		g.Alertmanager == nil || g.Alertmanager.URL != alertmanagerURL() || g.Alertmanager.Alerts.Names[0] != backupAlert {
		t.Errorf("gates %+v: want Prometheus and Alertmanager, each on %s", g, backupAlert)
	}
	if p.Spec.PoolSelector.MatchLabels["pools.operator.machineconfiguration.openshift.io/worker"] != "" || len(p.Spec.PoolSelector.MatchLabels) != 1 {
		t.Errorf("pool selector %+v: want the worker pool's label", p.Spec.PoolSelector)
	}
}

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
