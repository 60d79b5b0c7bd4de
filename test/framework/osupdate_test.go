package framework

import (
	"strings"
	"testing"

	"github.com/ndp-dev/ndp/internal/testkit/builder"
	"github.com/ndp-dev/ndp/internal/testkit/policytest"
)

// The OS update's premise, offline: with 60-worker-app's file, the plan
// under the default policies is still one drain and one reboot, now for
// three changes (the scenario adds no reboot).
func TestOSUpdateRidesTheAppReboot(t *testing.T) {
	base := builder.MachineConfig("rendered-worker-base").WithFiles(builder.File("/etc/kubernetes/kubelet.conf", "base")).Build()
	next := builder.MachineConfig("rendered-worker-os").WithFiles(builder.File("/etc/kubernetes/kubelet.conf", "base"),
		builder.File("/etc/ndp-example/app.conf", "mode=production\n")).WithOSImageURL(osImage).WithKernelArguments(osKarg).Build()
	plan := policytest.Plan(t, policytest.Planner(t), base, next, "worker")
	if !plan.Drain || !plan.Reboot || len(plan.Reasons) != 3 {
		t.Fatalf("plan: drain %t, reboot %t, reasons %+v; want a drain and a reboot for three changes", plan.Drain, plan.Reboot, plan.Reasons)
	}
}

func TestCallsMismatch(t *testing.T) {
	call := func(boot string, argv ...string) StandinCall { return StandinCall{Boot: boot, Argv: argv} }
	rebase, kargs := osCommandLines[0], osCommandLines[1]
	for _, tc := range []struct {
		name  string
		calls []StandinCall
		want  string // "" or a part of the mismatch
		times int
	}{
		{"once", []StandinCall{call("b1", rebase...), call("b1", kargs...)}, "", 1},
		{"again after a restart", []StandinCall{call("b1", rebase...), call("b1", kargs...), call("b1", rebase...), call("b1", kargs...)}, "", 2},
		{"cut short, then again", []StandinCall{call("b1", rebase...), call("b1", rebase...), call("b1", kargs...)}, "", 2},
		{"none", nil, "0 call(s)", 0},
		{"no kargs", []StandinCall{call("b1", rebase...)}, "1 call(s)", 0},
		{"kargs twice", []StandinCall{call("b1", rebase...), call("b1", kargs...), call("b1", kargs...)}, "call 3 is", 0},
		{"out of order", []StandinCall{call("b1", kargs...), call("b1", rebase...)}, "call 1 is", 0},
		{"another karg", []StandinCall{call("b1", rebase...), call("b1", "kargs", "--append-if-missing=x")}, "call 2 is", 0},
		{"refused", []StandinCall{call("b1", rebase...), {Boot: "b1", Argv: kargs, Error: "usage: no"}}, "refused", 0},
		{"after the reboot", []StandinCall{call("b1", rebase...), call("b2", kargs...)}, "after the reboot", 0},
	} {
		got, times := callsMismatch(tc.calls, "b2")
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) || times != tc.times {
			t.Errorf("%s: %q, %d; want %q, %d", tc.name, got, times, tc.want, tc.times)
		}
	}
}

func TestWhyOSMissing(t *testing.T) {
	out := `Changed (3):
  file /etc/ndp-example/app.conf: added (MachineConfig 60-worker-app)
    decided by: no policy -> Reboot (no policy claims this change)
  kernelArguments: added (MachineConfig 70-worker-os)
    decided by: policy default -> Reboot
  osImageURL: added (MachineConfig 70-worker-os)
    decided by: policy default -> Reboot
`
	if m := whyOSMissing(out); len(m) != 0 {
		t.Fatalf("missing %v in\n%s", m, out)
	}
	if m := whyOSMissing(strings.Replace(out, "policy default -> Reboot\n  osImageURL", "policy default -> None\n  osImageURL", 1)); len(m) != 1 || !strings.Contains(m[0], "kernelArguments") {
		t.Fatalf("kernelArguments not a reboot: %v", m)
	}
	if m := whyOSMissing(strings.Replace(out, "  osImageURL: added", "  osImage: added", 1)); len(m) != 1 || !strings.Contains(m[0], "osImageURL") {
		t.Fatalf("no osImageURL change: %v", m)
	}
	if m := whyOSMissing(strings.Replace(out, "osImageURL: added (MachineConfig 70-worker-os)", "osImageURL: added", 1)); len(m) != 1 || !strings.Contains(m[0], "osImageURL") {
		t.Fatalf("the osImageURL change's MachineConfig not named: %v", m)
	}
}
