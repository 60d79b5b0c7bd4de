package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// The monitoring a RolloutPolicy's gates ask, as an administrator's
// cluster has it: Debian's Prometheus, Alertmanager and node exporter in
// the node's namespace, on the node's address, where ndp-controller's pods
// reach them. Prometheus scrapes the node exporter and ndp-controller's
// own metrics (its pods, written to a file_sd file: Debian builds
// Prometheus without its Kubernetes discovery), evaluates a real alert
// rule and sends what fires to Alertmanager.
const (
	promPort         = "9090"
	alertmanagerPort = "9093"
	nodeExporterPort = "9100"
	// BackupAlert fires while the node exporter's textfile collector
	// reports a backup running (BackupMetric 1): the kind of "not now" an
	// administrator's own tooling says, which a rollout should respect.
	BackupAlert  = "BackupRunning"
	BackupMetric = "node_backup_running"
)

// PromURL and AlertmanagerURL are where ndp-controller's pods reach
// Prometheus and Alertmanager.
func PromURL() string         { return "http://" + nodeIP + ":" + promPort }
func AlertmanagerURL() string { return "http://" + nodeIP + ":" + alertmanagerPort }

const prometheusConfig = `global: {scrape_interval: 5s, evaluation_interval: 5s}
alerting:
  alertmanagers:
  - static_configs: [{targets: ["%[1]s:%[2]s"]}]
rule_files: [rules.yml]
scrape_configs:
- job_name: node
  static_configs: [{targets: ["127.0.0.1:%[3]s"]}]
- job_name: ndp-controller
  file_sd_configs: [{files: ["%[4]s"]}]
`

const prometheusRules = `groups:
- name: maintenance
  rules:
  - alert: ` + BackupAlert + `
    expr: ` + BackupMetric + ` == 1
    labels: {severity: warning}
    annotations: {summary: "a backup runs on {{ $labels.instance }}: no disruption now"}
`

const alertmanagerConfig = `route: {receiver: none, group_wait: 1s, group_interval: 1s}
receivers: [{name: none}]
`

// StartMonitoring starts the three and waits until Prometheus scrapes
// both the node exporter and ndp-controller.
func (c *Cluster) StartMonitoring(ctx context.Context) error {
	s := c.s
	dir := s.path("monitoring")
	for _, d := range []string{"textfile", "prometheus-data", "alertmanager-data"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	if err := writeFiles(map[string]string{
		filepath.Join(dir, "prometheus.yml"):   fmt.Sprintf(prometheusConfig, nodeIP, alertmanagerPort, nodeExporterPort, filepath.Join(dir, "ndp-controller.json")),
		filepath.Join(dir, "rules.yml"):        prometheusRules,
		filepath.Join(dir, "alertmanager.yml"): alertmanagerConfig,
	}); err != nil {
		return err
	}
	if err := c.SetBackup(false); err != nil {
		return err
	}
	if err := c.writeControllerTargets(); err != nil {
		return err
	}
	for _, p := range []struct {
		name, addr string
		argv       []string
	}{
		{"node-exporter", "127.0.0.1:" + nodeExporterPort, []string{"prometheus-node-exporter",
			"--web.listen-address=127.0.0.1:" + nodeExporterPort, "--collector.textfile.directory=" + filepath.Join(dir, "textfile")}},
		{"alertmanager", nodeIP + ":" + alertmanagerPort, []string{"prometheus-alertmanager",
			"--config.file=" + filepath.Join(dir, "alertmanager.yml"), "--storage.path=" + filepath.Join(dir, "alertmanager-data"),
			"--web.listen-address=" + nodeIP + ":" + alertmanagerPort, "--cluster.listen-address="}},
		{"prometheus", nodeIP + ":" + promPort, []string{"prometheus",
			"--config.file=" + filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path=" + filepath.Join(dir, "prometheus-data"),
			"--web.listen-address=" + nodeIP + ":" + promPort}},
	} {
		if err := s.start(p.name, false, p.argv...); err != nil {
			return err
		}
		if err := s.waitTCP(ctx, p.addr, time.Minute); err != nil {
			return fmt.Errorf("%s: %w (its log: %s)", p.name, err, s.path("logs", p.name+".log"))
		}
	}
	// Both jobs scraped and up: the rule has its metric, and ndp's own
	// metrics are in (ndp-controller's two replicas).
	want := []string{`{job="ndp-controller"} => 2`, `{job="node"} => 1`}
	return followProgress(ctx, "Prometheus scraping the node exporter and ndp-controller", minCeiling, func() observation {
		o := observation{progress: map[string]string{}}
		out, err := c.promQuery(`count by (job) (up == 1)`)
		if err != nil {
			return o
		}
		got := promValues(out)
		o.progress["targets up"] = strings.Join(got, ", ")
		o.done = strings.Join(got, ", ") == strings.Join(want, ", ")
		return o
	})
}

// promValues are promtool's result lines without their times, sorted.
func promValues(out string) []string {
	var vs []string
	for _, l := range strings.Split(out, "\n") {
		if v, _, _ := strings.Cut(l, " @["); strings.TrimSpace(v) != "" {
			vs = append(vs, strings.TrimSpace(v))
		}
	}
	sort.Strings(vs)
	return vs
}

// writeControllerTargets writes ndp-controller's pods (their metrics
// ports) as Prometheus's file_sd targets, as they are now.
func (c *Cluster) writeControllerTargets() error {
	out, err := c.KubectlMust("-n", "ndp-system", "get", "pods", "-l", "app.kubernetes.io/name=ndp-controller", "-o",
		`jsonpath={range .items[*]}{.metadata.name} {.status.podIP}{"\n"}{end}`)
	if err != nil {
		return err
	}
	var groups []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(l)
		if len(f) != 2 {
			continue
		}
		groups = append(groups, map[string]any{"targets": []string{f[1] + ":8080"}, "labels": map[string]string{"pod": f[0]}})
	}
	b, err := json.Marshal(groups)
	if err != nil {
		return err
	}
	f := c.s.path("monitoring", "ndp-controller.json")
	if err := os.WriteFile(f+".tmp", b, 0o644); err != nil {
		return err
	}
	return os.Rename(f+".tmp", f)
}

// SetBackup writes the node exporter's textfile: a backup running or not.
// Written aside and renamed, as the collector's documentation asks.
func (c *Cluster) SetBackup(running bool) error {
	v := 0
	if running {
		v = 1
	}
	dir := c.s.path("monitoring", "textfile")
	tmp := filepath.Join(dir, ".backup.prom")
	text := fmt.Sprintf("# HELP %[1]s Whether the nightly backup runs (1) or not (0).\n# TYPE %[1]s gauge\n%[1]s %[2]d\n", BackupMetric, v)
	if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, "backup.prom"))
}

// promQuery runs an instant query with Debian's promtool, inside the
// node's namespace: one line per series, its value last.
func (c *Cluster) promQuery(expr string) (string, error) {
	argv := append(c.s.nsenter(false), "promtool", "query", "instant", PromURL(), expr)
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}
