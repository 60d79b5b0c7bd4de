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
