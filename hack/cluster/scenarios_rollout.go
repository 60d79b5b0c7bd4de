package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/ndp-dev/ndp/rolloutgates"
)

// The worker pool's RolloutPolicy (ndp.dev/v1alpha1): a maintenance window
// for plans that reboot or drain, and gates on the alert backupAlert, asked
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
`, rolloutPolicyName, opens.UTC().Format("15:04"), opens.Add(4*time.Hour).UTC().Format("15:04"), promURL(), alertmanagerURL(), backupAlert)
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
func (c *cluster) rolloutControlsOnVMs(ctx context.Context) error {
	step("Rollout controls: Debian's Prometheus, Alertmanager and node exporter on the node (Prometheus scrapes ndp-controller; the rule %s on the exporter's %s); a RolloutPolicy on the worker pool, its window for plans that reboot or drain closed", backupAlert, backupMetric)
	if err := c.startMonitoring(ctx); err != nil {
		return err
	}
	c.kubectl("ndp", "status") // nothing pending
	if err := c.applyText("rollout-policy.yaml", rolloutPolicy(time.Now().Add(6*time.Hour))); err != nil {
		return err
	}
	if err := c.waitFor(ctx, "the RolloutPolicy accepted", "True", "get", "rolloutpolicy", rolloutPolicyName, "-o",
		`jsonpath={.status.conditions[?(@.type=="Accepted")].status}`); err != nil {
		return err
	}
	watch := c.watchWorkers(ctx)
	err := c.rolloutControls(ctx)
	s := watch()
	if err != nil {
		return err
	}
	line := fmt.Sprintf("rollout controls: at most %d worker out at once (maxUnavailable 1; %s)", s.maxOut, s.out)
	fmt.Println(line)
	c.summary = append(c.summary, line)
	if s.maxOut != 1 {
		return fmt.Errorf("%s: want exactly 1", line)
	}
	return nil
}

func (c *cluster) rolloutControls(ctx context.Context) error {
	step("A chrony change, planned as a restart, while the window is closed: it goes at once")
	if err := c.ensureChronyPolicy(ctx); err != nil {
		return err
	}
	target, err := c.chronyChange(ctx, "time5.example.com")
	if err != nil {
		return err
	}
	if err := c.waitWorkersUncordoned(ctx, target, "a restart-only change"); err != nil {
		return err
	}
	if held, _ := c.kubectlQuiet("get", "mcp", "worker", "-o", `jsonpath={.status.conditions[?(@.type=="RolloutHeld")].status}`); held == "True" {
		return fmt.Errorf("the pool is held after a restart-only change went through a closed window for reboots")
	}
	c.summary = append(c.summary, "rollout controls: a restart-only change went at once, its window for reboots closed")

	step("%s fires (a backup runs, says the node exporter); %s held by `kubectl ndp hold`; another chrony change waits", backupAlert, c.workers[1].name)
	if err := c.setBackup(true); err != nil {
		return err
	}
	if err := c.waitAlert(ctx, true); err != nil {
		return err
	}
	// ndp asks a policy's gates at most every rolloutgates.DefaultInterval
	// and answers from what it was told last in between (docs/rollouts.md):
	// a start up to that long after the alert fired may still go. The
	// change comes after it, when any answer ndp holds has the alert.
	fmt.Printf("waiting %s, the gates' interval, after %s fired\n", rolloutgates.DefaultInterval+5*time.Second, backupAlert)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(rolloutgates.DefaultInterval + 5*time.Second):
	}
	heldNode := c.workers[1]
	if _, err := c.kubectlMust("ndp", "hold", heldNode.name, "--reason", "disk check", "--by", "make-cluster"); err != nil {
		return err
	}
	prev := target
	if target, err = c.chronyChange(ctx, "time6.example.com"); err != nil {
		return err
	}
	alertReason := "waiting: alert " + backupAlert + " firing"
	if err := c.waitPoolHeld(ctx, alertReason); err != nil {
		return err
	}
	status := c.kubectl("ndp", "status")
	if !strings.Contains(status, alertReason) {
		return fmt.Errorf("kubectl ndp status does not say %q", alertReason)
	}
	if sent := c.sentTo(target); len(sent) != 0 {
		return fmt.Errorf("sent to %s while %s fires: %v", target, backupAlert, sent)
	}
	c.summary = append(c.summary, fmt.Sprintf("rollout controls: %s firing held the rollout to %s (from %s): %q", backupAlert, target, prev, firstLine(grepLine(status, alertReason), "")))

	step("The backup ends: %s resolves; %s goes, %s stays held and the pool says so", backupAlert, c.workers[0].name, heldNode.name)
	if err := c.setBackup(false); err != nil {
		return err
	}
	if err := c.waitAlert(ctx, false); err != nil {
		return err
	}
	if err := c.waitNodesDone(ctx, []*worker{c.workers[0]}, target, nil); err != nil {
		return err
	}
	heldReason := "held: node " + heldNode.name + " by annotation ndp.dev/hold: disk check (by make-cluster)"
	if err := c.waitPoolHeld(ctx, heldReason); err != nil {
		return err
	}
	status = c.kubectl("ndp", "status")
	if !strings.Contains(status, heldReason) {
		return fmt.Errorf("kubectl ndp status does not say %q", heldReason)
	}
	if sent := c.sentTo(target); len(sent) != 1 || sent[0] != c.workers[0].name {
		return fmt.Errorf("sent to %s: %v, want only %s (%s is held)", target, sent, c.workers[0].name, heldNode.name)
	}
	c.summary = append(c.summary, fmt.Sprintf("rollout controls: %s resolved, %s went; %s skipped: %q", backupAlert, c.workers[0].name, heldNode.name, heldReason))

	step("%s released (`kubectl ndp release`): it goes", heldNode.name)
	if _, err := c.kubectlMust("ndp", "release", heldNode.name); err != nil {
		return err
	}
	if err := c.waitNodesDone(ctx, []*worker{heldNode}, target, nil); err != nil {
		return err
	}
	return c.waitFor(ctx, "the pool no longer held", "False", "get", "mcp", "worker", "-o", `jsonpath={.status.conditions[?(@.type=="RolloutHeld")].status}`)
}

// chronyChange points the worker pool's chrony config at server and
// returns the new target.
func (c *cluster) chronyChange(ctx context.Context, server string) (string, error) {
	current, _ := c.kubectlQuiet("get", "mcp", "worker", "-o", jsonTarget)
	sources := c.sourcesNow()
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
	if err := c.applyText("50-worker-chrony-"+server+".yaml", mc); err != nil {
		return "", err
	}
	return c.waitTargetSources(ctx, strings.TrimSpace(current), sources)
}

// applyText applies a manifest written into the work directory as name.
func (c *cluster) applyText(name, text string) error {
	f := c.s.path(name)
	if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
		return err
	}
	_, err := c.kubectlMust("apply", "-f", f)
	return err
}

// waitAlert waits until Prometheus says backupAlert fires (or no longer
// does).
func (c *cluster) waitAlert(ctx context.Context, firing bool) error {
	what := backupAlert + " firing"
	if !firing {
		what = backupAlert + " resolved"
	}
	return followProgress(ctx, what, minCeiling, func() observation {
		o := c.clusterProgress()
		out, err := c.promQuery(fmt.Sprintf(`ALERTS{alertname=%q,alertstate="firing"}`, backupAlert))
		if err != nil {
			return o
		}
		metric, _ := c.promQuery(backupMetric)
		o.progress["alert"], o.progress[backupMetric] = strings.Join(promValues(out), ", "), strings.Join(promValues(metric), ", ")
		o.done = (len(promValues(out)) > 0) == firing
		return o
	})
}

// waitPoolHeld waits for the worker pool's RolloutHeld condition to say
// reason.
func (c *cluster) waitPoolHeld(ctx context.Context, reason string) error {
	return c.waitPoolHeldBefore(ctx, reason, time.Time{})
}

// waitPoolHeldBefore is waitPoolHeld that fails once deadline (if set)
// passes: a hold seen too late proves nothing.
func (c *cluster) waitPoolHeldBefore(ctx context.Context, reason string, deadline time.Time) error {
	return followProgress(ctx, "the worker pool held: "+reason, minCeiling, func() observation {
		o := c.clusterProgress()
		out, err := c.kubectlQuiet("get", "mcp", "worker", "-o", `jsonpath={.status.conditions[?(@.type=="RolloutHeld")].message}`)
		if err == nil {
			o.progress["RolloutHeld"] = out
			o.done = strings.Contains(out, reason)
		}
		if !o.done && !deadline.IsZero() && time.Now().After(deadline) {
			o.failed = fmt.Sprintf("not held by %s %s (RolloutHeld: %q)", deadline.Format("15:04:05"), reason, out)
		}
		return o
	})
}

// openWindowSoon moves the policy's window (if there is the policy: the
// rollout scenario makes it) to open at the first whole minute 90 s or
// more from now; zero without the policy.
func (c *cluster) openWindowSoon() (time.Time, error) {
	if _, err := c.kubectlQuiet("get", "rolloutpolicy", rolloutPolicyName); err != nil {
		return time.Time{}, nil
	}
	opens := time.Now().Add(90 * time.Second).Truncate(time.Minute).Add(time.Minute)
	return opens, c.applyText("rollout-policy.yaml", rolloutPolicy(opens))
}

// waitWindow checks that a rollout to target waits for the window that
// opens at opens: the pool held for it before, no node sent until then.
func (c *cluster) waitWindow(ctx context.Context, target string, opens time.Time) error {
	reason := "waiting: outside the maintenance window, opens"
	if err := c.waitPoolHeldBefore(ctx, reason, opens); err != nil {
		return err
	}
	status := c.kubectl("ndp", "status")
	if !strings.Contains(status, reason) {
		return fmt.Errorf("kubectl ndp status does not say %q", reason)
	}
	for time.Now().Before(opens) {
		if sent := c.sentTo(target); len(sent) > 0 {
			return fmt.Errorf("sent to %s before the window opens at %s: %v", target, opens.Format("15:04:05"), sent)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	line := fmt.Sprintf("window: the change that reboots waited for its window, opening %s UTC (set 90 to 150 s before): %q",
		opens.UTC().Format("15:04"), grepLine(status, reason))
	fmt.Println(line)
	c.summary = append(c.summary, line)
	return nil
}

// sentTo names the workers whose desired config is target.
func (c *cluster) sentTo(target string) []string {
	var sent []string
	for _, w := range c.workers {
		out, _ := c.kubectlQuiet("get", "node", w.name, "-o", `jsonpath={.metadata.annotations.machineconfiguration\.openshift\.io/desiredConfig}`)
		if out == target {
			sent = append(sent, w.name)
		}
	}
	return sent
}

// grepLine is the first line of text containing s.
func grepLine(text, s string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			return strings.TrimSpace(l)
		}
	}
	return ""
}
