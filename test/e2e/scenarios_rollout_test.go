package e2e

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/rolloutgates"
	"github.com/ndp-dev/ndp/test/framework"
)

// The worker pool's RolloutPolicy (ndp.dev/v1alpha1): a maintenance window
// for plans that reboot or drain, and gates on the alert BackupAlert, asked
// of Prometheus and of Alertmanager.
const rolloutPolicyName = "worker-rollout"

// rolloutPolicy is the policy with its window opening at opens (UTC, every
// day) for four hours.
func rolloutPolicy(opens time.Time) string {
	return fmt.Sprintf(`apiVersion: ndp.dev/v1alpha1
kind: RolloutPolicy
metadata: {name: %[1]s}
spec:
  poolSelector: {matchLabels: {pools.operator.machineconfiguration.openshift.io/worker: ""}}
  windows:
  - {name: maintenance, start: %[2]q, end: %[3]q, timeZone: UTC, holds: [Reboot, Drain]}
  gates:
    prometheus:
      url: %[4]s
      alerts: {names: [%[6]s]}
    alertmanager:
      url: %[5]s
      alerts: {names: [%[6]s]}
`, rolloutPolicyName, opens.UTC().Format("15:04"), opens.Add(4*time.Hour).UTC().Format("15:04"), framework.PromURL(), framework.AlertmanagerURL(), framework.BackupAlert)
}

// rolloutControlsOnVMs: Prometheus, Alertmanager and a node exporter on
// the node, and a RolloutPolicy on the worker pool whose window is closed.
// A chrony change, planned as a restart, goes at once (the window holds
// plans that reboot or drain); with the alert firing the next change
// waits, the reason in the pool's condition and `kubectl ndp status`;
// resolved, it goes, but not to a node held by `kubectl ndp hold`, which
// the pool reports; released, that node goes too. Never more than
// maxUnavailable (1) node out. The reboot scenario then waits for the
// window, opened a minute after its change.
func (s *suite) rolloutControlsOnVMs(t testing.TB) {
	c, ctx := s.c, s.ctx
	c.Step("Rollout controls: Debian's Prometheus, Alertmanager and node exporter on the node (Prometheus scrapes ndp-controller; the rule %s on the exporter's %s); a RolloutPolicy on the worker pool, its window for plans that reboot or drain closed", framework.BackupAlert, framework.BackupMetric)
	if err := c.StartMonitoring(ctx); err != nil {
		t.Fatal(err)
	}
	c.Kubectl("ndp", "status") // nothing pending
	if err := c.ApplyText("rollout-policy.yaml", rolloutPolicy(time.Now().Add(6*time.Hour))); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitFor(ctx, "the RolloutPolicy accepted", "True", "get", "rolloutpolicy", rolloutPolicyName, "-o",
		`jsonpath={.status.conditions[?(@.type=="Accepted")].status}`); err != nil {
		t.Fatal(err)
	}
	watch := c.WatchWorkers(ctx)
	defer watch()
	s.rolloutControls(t)
	seen := watch()
	line := fmt.Sprintf("rollout controls: at most %d worker out at once (maxUnavailable 1; %s)", seen.MaxOut, seen.Out)
	fmt.Println(line)
	c.Report(line)
	if seen.MaxOut != 1 {
		t.Fatalf("%s: want exactly 1", line)
	}
}

// rolloutControls is rolloutControlsOnVMs' changes, watched by it.
func (s *suite) rolloutControls(t testing.TB) {
	c, ctx := s.c, s.ctx
	c.Step("A chrony change, planned as a restart, while the window is closed: it goes at once")
	s.ensureChronyPolicy(t)
	target := s.chronyChange(t, "time5.example.com")
	if err := c.WaitWorkersUncordoned(ctx, target, "a restart-only change"); err != nil {
		t.Fatal(err)
	}
	if held, _ := c.KubectlQuiet("get", "mcp", "worker", "-o", `jsonpath={.status.conditions[?(@.type=="RolloutHeld")].status}`); held == "True" {
		t.Fatalf("the pool is held after a restart-only change went through a closed window for reboots")
	}
	c.Report("rollout controls: a restart-only change went at once, its window for reboots closed")

	c.Step("%s fires (a backup runs, says the node exporter); %s held by `kubectl ndp hold`; another chrony change waits", framework.BackupAlert, c.Workers[1].Name)
	if err := c.SetBackup(true); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitAlert(ctx, true); err != nil {
		t.Fatal(err)
	}
	// ndp asks a policy's gates at most every rolloutgates.DefaultInterval
	// and answers from what it was told last in between (docs/rollouts.md):
	// a start up to that long after the alert fired may still go. The
	// change comes after it, when any answer ndp holds has the alert.
	fmt.Printf("waiting %s, the gates' interval, after %s fired\n", rolloutgates.DefaultInterval+5*time.Second, framework.BackupAlert)
	select {
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	case <-time.After(rolloutgates.DefaultInterval + 5*time.Second):
	}
	heldNode := c.Workers[1]
	if _, err := c.KubectlMust("ndp", "hold", heldNode.Name, "--reason", "disk check", "--by", "make-cluster"); err != nil {
		t.Fatal(err)
	}
	prev := target
	target = s.chronyChange(t, "time6.example.com")
	alertReason := "waiting: alert " + framework.BackupAlert + " firing"
	if err := c.WaitPoolHeld(ctx, alertReason); err != nil {
		t.Fatal(err)
	}
	status := c.Kubectl("ndp", "status")
	if !strings.Contains(status, alertReason) {
		t.Fatalf("kubectl ndp status does not say %q", alertReason)
	}
	if sent := c.SentTo(target); len(sent) != 0 {
		t.Fatalf("sent to %s while %s fires: %v", target, framework.BackupAlert, sent)
	}
	c.Report(fmt.Sprintf("rollout controls: %s firing held the rollout to %s (from %s): %q", framework.BackupAlert, target, prev, framework.FirstLine(framework.GrepLine(status, alertReason), "")))

	c.Step("The backup ends: %s resolves; %s goes, %s stays held and the pool says so", framework.BackupAlert, c.Workers[0].Name, heldNode.Name)
	if err := c.SetBackup(false); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitAlert(ctx, false); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitNodesDone(ctx, []*framework.Worker{c.Workers[0]}, target, nil); err != nil {
		t.Fatal(err)
	}
	heldReason := "held: node " + heldNode.Name + " by annotation ndp.dev/hold: disk check (by make-cluster)"
	if err := c.WaitPoolHeld(ctx, heldReason); err != nil {
		t.Fatal(err)
	}
	status = c.Kubectl("ndp", "status")
	if !strings.Contains(status, heldReason) {
		t.Fatalf("kubectl ndp status does not say %q", heldReason)
	}
	if sent := c.SentTo(target); len(sent) != 1 || sent[0] != c.Workers[0].Name {
		t.Fatalf("sent to %s: %v, want only %s (%s is held)", target, sent, c.Workers[0].Name, heldNode.Name)
	}
	c.Report(fmt.Sprintf("rollout controls: %s resolved, %s went; %s skipped: %q", framework.BackupAlert, c.Workers[0].Name, heldNode.Name, heldReason))

	c.Step("%s released (`kubectl ndp release`): it goes", heldNode.Name)
	if _, err := c.KubectlMust("ndp", "release", heldNode.Name); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitNodesDone(ctx, []*framework.Worker{heldNode}, target, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitFor(ctx, "the pool no longer held", "False", "get", "mcp", "worker", "-o", `jsonpath={.status.conditions[?(@.type=="RolloutHeld")].status}`); err != nil {
		t.Fatal(err)
	}
	s.rebootAskedByTheNode(t)
}

// rebootAskedByTheNode: a worker's host asks for a reboot (its
// /var/run/reboot-required, as a package's postinst writes it, naming the
// package): ndp-daemon reports it, the closed window holds it (no grant,
// the same boot), and once the window is open the node is drained and
// rebooted once, through the rollout, and `kubectl ndp why` names the
// package. The window is closed again after.
func (s *suite) rebootAskedByTheNode(t testing.TB) {
	c, ctx := s.c, s.ctx
	w := c.Workers[0]
	c.Step("%s's host asks for a reboot (/var/run/reboot-required, from ndp-demo-kernel): held by the closed window, rebooted once when it opens", w.Name)
	boots, err := c.BootCount(ctx, w)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.VM.Run(ctx, "sh", "-c", "echo '*** System restart required ***' > /run/reboot-required && echo ndp-demo-kernel > /run/reboot-required.pkgs"); err != nil {
		t.Fatal(err)
	}
	const by = "/var/run/reboot-required (ndp-demo-kernel)"
	if err := c.WaitFor(ctx, w.Name+"'s request reported", by, "get", "node", w.Name, "-o", `jsonpath={.metadata.annotations.ndp\.dev/reboot-required-by}`); err != nil {
		t.Fatal(err)
	}
	reason := "waiting: outside the maintenance window, opens"
	if err := c.WaitPoolHeld(ctx, reason); err != nil {
		t.Fatal(err)
	}
	if granted, _ := c.KubectlQuiet("get", "node", w.Name, "-o", `jsonpath={.metadata.annotations.ndp\.dev/reboot-granted}`); granted != "" {
		t.Fatalf("%s granted a reboot (%s) while the window is closed", w.Name, granted)
	}
	if boot, err := w.VM.BootID(ctx); err != nil || boot != w.BootNow {
		t.Fatalf("%s: boot %s (%v) while its reboot is held, want %s", w.Name, boot, err, w.BootNow)
	}
	held := framework.GrepLine(c.Kubectl("ndp", "status"), reason)

	// The window opens: it began an hour ago.
	if err := c.ApplyText("rollout-policy.yaml", rolloutPolicy(time.Now().Add(-time.Hour))); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitEvent(ctx, w.Name, "RebootGranted", "rebooting as requested by the node: "+by); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitFor(ctx, w.Name+"'s request done", "", "get", "node", w.Name, "-o", `jsonpath={.metadata.annotations.ndp\.dev/reboot-required}{.metadata.annotations.ndp\.dev/reboot-granted}{.spec.unschedulable}`); err != nil {
		t.Fatal(err)
	}
	after, err := c.BootCount(ctx, w)
	if err != nil {
		t.Fatal(err)
	}
	boot, err := w.VM.BootID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after-boots != 1 || boot == w.BootNow {
		t.Fatalf("%s: %d boot(s) since its request (boot %s -> %s), want 1", w.Name, after-boots, w.BootNow, boot)
	}
	// The daemon records its history after it reports the node Done.
	want := "reboot requested by the node: " + by
	if err := framework.Poll(ctx, 3*time.Minute, "kubectl ndp why "+w.Name+" to name "+by, func() (bool, error) {
		why, err := c.KubectlQuiet("ndp", "why", w.Name, "--update", "1")
		return err == nil && strings.Contains(why, want) && strings.Contains(why, "Result:   Done"), nil
	}); err != nil {
		t.Fatal(err)
	}
	c.Kubectl("ndp", "why", w.Name, "--update", "1")
	line := fmt.Sprintf("reboot asked by %s (%s): held (%q), rebooted once when the window opened, boot %s -> %s",
		w.Name, by, strings.TrimSpace(held), framework.ShortID(w.BootNow), framework.ShortID(boot))
	fmt.Println(line)
	c.Report(line)
	w.BootNow = boot
	if err := c.ApplyText("rollout-policy.yaml", rolloutPolicy(time.Now().Add(6*time.Hour))); err != nil {
		t.Fatal(err)
	}
}

// chronyChange points the worker pool's chrony config at server and
// returns the new target.
func (s *suite) chronyChange(t testing.TB, server string) string {
	t.Helper()
	c := s.c
	current, _ := c.KubectlQuiet("get", "mcp", "worker", "-o", jsonTarget)
	sources := c.SourcesNow()
	conf := "server " + server + " iburst\ndriftfile /var/lib/chrony/drift\n"
	mc := fmt.Sprintf(`apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 50-worker-chrony
  labels: {machineconfiguration.openshift.io/role: worker}
spec:
  config:
    ignition: {version: 3.4.0}
    storage:
      files:
      - {path: /etc/chrony.conf, mode: 420, overwrite: true, contents: {source: "data:,%s"}}
`, url.PathEscape(conf))
	if err := c.ApplyText("50-worker-chrony-"+server+".yaml", mc); err != nil {
		t.Fatal(err)
	}
	target, err := c.WaitTargetSources(s.ctx, strings.TrimSpace(current), sources)
	if err != nil {
		t.Fatal(err)
	}
	return target
}

// openWindowSoon moves the policy's window (if there is the policy: the
// rollout scenario makes it) to open at the first whole minute 40 s or
// more from now (the change is held within seconds of being applied);
// zero without the policy.
func (s *suite) openWindowSoon(t testing.TB) time.Time {
	t.Helper()
	if _, err := s.c.KubectlQuiet("get", "rolloutpolicy", rolloutPolicyName); err != nil {
		return time.Time{}
	}
	opens := time.Now().Add(40 * time.Second).Truncate(time.Minute).Add(time.Minute)
	if err := s.c.ApplyText("rollout-policy.yaml", rolloutPolicy(opens)); err != nil {
		t.Fatal(err)
	}
	return opens
}

// waitWindow checks that a rollout to target waits for the window that
// opens at opens: the pool held for it before, no node sent until then.
func (s *suite) waitWindow(t testing.TB, target string, opens time.Time) {
	t.Helper()
	c, ctx := s.c, s.ctx
	reason := "waiting: outside the maintenance window, opens"
	if err := c.WaitPoolHeldBefore(ctx, reason, opens); err != nil {
		t.Fatal(err)
	}
	status := c.Kubectl("ndp", "status")
	if !strings.Contains(status, reason) {
		t.Fatalf("kubectl ndp status does not say %q", reason)
	}
	for time.Now().Before(opens) {
		if sent := c.SentTo(target); len(sent) > 0 {
			t.Fatalf("sent to %s before the window opens at %s: %v", target, opens.Format("15:04:05"), sent)
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(time.Second):
		}
	}
	line := fmt.Sprintf("window: the change that reboots waited for its window, opening %s UTC (set 40 to 100 s before): %q",
		opens.UTC().Format("15:04"), framework.GrepLine(status, reason))
	fmt.Println(line)
	c.Report(line)
}

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
	if g == nil || g.Prometheus == nil || g.Prometheus.URL != framework.PromURL() || g.Prometheus.Alerts == nil || g.Prometheus.Alerts.Names[0] != framework.BackupAlert ||
		g.Alertmanager == nil || g.Alertmanager.URL != framework.AlertmanagerURL() || g.Alertmanager.Alerts.Names[0] != framework.BackupAlert {
		t.Errorf("gates %+v: want Prometheus and Alertmanager, each on %s", g, framework.BackupAlert)
	}
	if p.Spec.PoolSelector.MatchLabels["pools.operator.machineconfiguration.openshift.io/worker"] != "" || len(p.Spec.PoolSelector.MatchLabels) != 1 {
		t.Errorf("pool selector %+v: want the worker pool's label", p.Spec.PoolSelector)
	}
}
