package framework

import (
	"strings"
	"testing"
)

// TestRun: a scenario's last step ends with it (its time printed before
// the next subtest starts), its time goes to the summary, a skipped one's
// does not.
func TestRun(t *testing.T) {
	c := &Cluster{}
	c.Run(t, "first", func(t testing.TB) { c.Step("one") })
	if c.steps.title != "" || len(c.steps.took) != 1 || !strings.HasSuffix(c.steps.took[0], "  one") {
		t.Errorf("after the scenario: open step %q, took %q; want step one ended", c.steps.title, c.steps.took)
	}
	c.Run(t, "skipped", func(t testing.TB) { t.Skip("not chosen") })
	if len(c.summary) != 1 || !strings.HasPrefix(c.summary[0], "scenario first: ") {
		t.Errorf("summary %q, want the first scenario's time only", c.summary)
	}
}

// TestFailedVerdict: a failed run ends with what passed, each step's
// time, then the step it failed in and why, last (CI shows a log's tail).
func TestFailedVerdict(t *testing.T) {
	c := &Cluster{summary: []string{"leader election: a killed, b took over"}, failures: []string{"waiting for x: not within 2m0s"},
		steps: stepClock{took: []string{"    1.5s  Leader election"}}}
	var b strings.Builder
	c.failedVerdict(&b, "Reboot")
	out := b.String()
	order := []string{"summary of the scenarios before the failure:", "leader election: a killed", "each step's time:", "    1.5s  Leader election", `cluster FAILED in step "Reboot"`, "waiting for x: not within 2m0s"}
	at := 0
	for _, want := range order {
		i := strings.Index(out[at:], want)
		if i < 0 {
			t.Fatalf("%q not after %q in:\n%s", want, out[:at], out)
		}
		at += i + len(want)
	}
	if strings.TrimSpace(out[at:]) != "" {
		t.Errorf("after the failure: %q, want nothing", out[at:])
	}
}
