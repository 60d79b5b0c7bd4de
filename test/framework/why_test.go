package framework

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/ndp-dev/ndp/internal/testkit/builder"
	"github.com/ndp-dev/ndp/internal/testkit/policytest"
	"github.com/ndp-dev/ndp/planner"
)

// The drain-and-reboot scenario's premise, offline: the plan for
// 60-worker-app's new file under the default policies alone is a drain and
// a reboot, for the reason whyMissing looks for.
func TestAppChangeIsAnUnclaimedReboot(t *testing.T) {
	base := builder.MachineConfig("rendered-worker-base").WithFiles(builder.File("/etc/kubernetes/kubelet.conf", "base")).Build()
	app := builder.MachineConfig("rendered-worker-app").WithFiles(builder.File("/etc/kubernetes/kubelet.conf", "base"),
		builder.File("/etc/ndp-example/app.conf", "mode=production\n")).Build()
	plan := policytest.Plan(t, policytest.Planner(t), base, app, "worker")
	if !plan.Drain || !plan.Reboot || len(plan.Reasons) != 1 {
		t.Fatalf("plan: drain %t, reboot %t, reasons %+v; want a drain and a reboot for one change", plan.Drain, plan.Reboot, plan.Reasons)
	}
	if r := plan.Reasons[0]; r.Change != appChange || r.Policy != planner.NoPolicy || r.Detail != appReason {
		t.Errorf("reason %+v, want change %q, policy %q, detail %q", r, appChange, planner.NoPolicy, appReason)
	}
}

// whyMissing reads what cmd/ndp prints: the shipped example of such an
// update passes, and each fact it must find fails when absent.
func TestWhyMissingReadsNdpWhy(t *testing.T) {
	out, err := exec.Command("go", "run", "../../cmd/ndp", "why", "ndp-worker-1", "--update", "1",
		"--file", "../../examples/history/ndp-worker-1.yaml").CombinedOutput()
	if err != nil {
		t.Fatalf("ndp why: %v\n%s", err, out)
	}
	const (
		from   = "rendered-worker-99b93f3002fe49cc5205ddc4990f357e"
		to     = "rendered-worker-5b3e018212ed70053f2a62ed378187c1"
		before = "8cace772-46fa-4c18-bf28-4eed8cbccab9"
		after  = "d52e4ccb-00c3-4810-8338-1418a57dbbde"
	)
	text := string(out)
	if m := whyMissing(text, from, to, before, after, ""); len(m) > 0 {
		t.Fatalf("the example lacks %v:\n%s", m, text)
	}
	for _, tc := range []struct {
		name, out, from, bootBefore, want string
	}{
		{"another update", text, "rendered-worker-0000", before, "the newest update from rendered-worker-0000"},
		{"another boot before", text, from, "0000", "the boot IDs before and after"},
		{"no drain", strings.Replace(text, " drain           Done", " drain           Failed", 1), from, before, "a drain step done"},
		{"no reboot", strings.Replace(text, " reboot          Done", " reboot          Running", 1), from, before, "a reboot step done"},
		{"another reason", strings.Replace(text, appReason, "policy default", 1), from, before, "the default policies' reason"},
		{"another MachineConfig", strings.Replace(text, appMachineConfig, "99-worker-other", 1), from, before, "the change and its MachineConfig"},
		{"the MCO ran it", strings.Replace(text, "Run by:   ndp-daemon", "Run by:   the MCO's machine-config-daemon, observed by ndp's advisor", 1), from, before, "ndp-daemon as its executor"},
		{"no steps", strings.Replace(text, "\nRan:\n", "\nRan: nothing recorded\n", 1), from, before, "the steps that ran"},
	} {
		m := whyMissing(tc.out, tc.from, to, tc.bootBefore, after, "")
		if len(m) != 1 || !strings.HasPrefix(m[0], tc.want) {
			t.Errorf("%s: missing %q, want one: %q", tc.name, m, tc.want)
		}
	}
	// The power cut the record shows, and an interruption it does not.
	if m := whyMissing(text, from, to, before, after, "resumed after an unplanned reboot (boot "+before+" -> "); len(m) > 0 {
		t.Errorf("the power cut during the drain: missing %q", m)
	}
	if m := whyMissing(text, from, to, before, after, "resumed after a restart of the daemon"); len(m) != 1 || !strings.HasPrefix(m[0], "how the update was interrupted") {
		t.Errorf("no restart of the daemon recorded: missing %q", m)
	}
	// The reboot before the drain.
	swapped := strings.Replace(strings.Replace(text, " drain           Done", " XXXXX           Done", 1), " reboot          Done", " drain           Done", 1)
	swapped = strings.Replace(swapped, " XXXXX           Done", " reboot          Done", 1)
	if m := whyMissing(swapped, from, to, before, after, ""); len(m) != 1 || m[0] != "a reboot step done after the drain" {
		t.Errorf("reboot before drain: %q", m)
	}
}
