//go:build scale

package scale

import (
	"strings"
	"testing"
	"time"
)

// TestPolicyCost: each change under the policy is compared by the mean of
// its rounds against the mean of its "again" runs.
func TestPolicyCost(t *testing.T) {
	res := func(name string, cpu float64) *result {
		r := &result{change: change{name: name}}
		r.after.ctrl.cpu = time.Duration(cpu * float64(time.Second))
		r.after.api, r.after.ctrlRequests = 10*1000, 2*1000
		return r
	}
	lines := policyCost([]*result{
		res("None", 5), res("Restart", 10), res("Reboot", 20),
		res("Restart + policy", 12), res("Reboot + policy", 21),
		res("Restart again", 8), res("Reboot again", 22),
		res("Reboot + pacing", 25),
		res("Restart + policy (2)", 10), res("Reboot + policy (2)", 24),
		res("Reboot + pacing (2)", 23),
		res("Restart again (2)", 12), res("Reboot again (2)", 18),
	}, 1000)
	if len(lines) != 3 {
		t.Fatalf("%d lines, want Restart and Reboot + policy, Reboot + pacing:\n%v", len(lines), lines)
	}
	for i, want := range []string{
		// (12+10)/2 = 11 against (8+12)/2 = 10: Restart (on the first
		// controller) is not compared
		"Restart + policy (mean of 2) requests per node 10.0 → 10.0 (+0.0); controller's 2.00 → 2.00 (+0.00); ndp-controller CPU 10.0 s → 11.0 s (1.10×): met",
		// (21+24)/2 = 22.5 against (22+18)/2 = 20
		"Reboot + policy (mean of 2) requests per node 10.0 → 10.0 (+0.0); controller's 2.00 → 2.00 (+0.00); ndp-controller CPU 20.0 s → 22.5 s (1.12×): NOT MET",
		// (25+23)/2 = 24 against 20: stated, no verdict
		"Reboot + pacing (mean of 2) requests per node 10.0 → 10.0 (+0.0); controller's 2.00 → 2.00 (+0.00); ndp-controller CPU 20.0 s → 24.0 s (1.20×): pacing, not a gate",
	} {
		if !strings.HasPrefix(lines[i].text, want) {
			t.Errorf("line %d:\n%s\nwant it to start with\n%s", i, lines[i].text, want)
		}
	}
	if !strings.Contains(lines[1].text, "Reboot without: mean of 2 runs (22.0, 18.0 s) against Reboot + policy (mean of 2) with (21.0, 24.0 s)") {
		t.Errorf("the runs compared are not named: %s", lines[1].text)
	}
}

// TestDefaultChanges: rounds alternate with and without the policy.
func TestDefaultChanges(t *testing.T) {
	want := "none,restart,reboot,restart+policy,reboot+policy,reboot+pacing,restart-again,reboot-again,restart-again#2,reboot-again#2,restart+policy#2,reboot+policy#2,reboot+pacing#2"
	if got := defaultChanges(2); got != want {
		t.Errorf("defaultChanges(2) = %s, want %s", got, want)
	}
}
