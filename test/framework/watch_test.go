package framework

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A node is out, to the budget, while it is sent a config it does not run
// yet, not Done, cordoned or not Ready.
func TestNodesOut(t *testing.T) {
	row := func(f ...string) string { return strings.Join(f, "\t") }
	rows := strings.Join([]string{
		row("w-done", "r1", "r1", "Done", "", "True", "b1", ""),
		row("w-sent", "r1", "r2", "Done", "", "True", "b1", ""),
		row("w-working", "r2", "r2", "Working", "", "True", "b1", ""),
		row("w-cordoned", "r2", "r2", "Done", "true", "True", "b1", ""),
		row("w-notready", "r2", "r2", "Done", "", "False", "b1", ""),
		row("w-new", "", "", "", "", "True", "b1", ""), // never sent anything: runs what it booted with
		row("w-bare", "", "", "", "", "", "", ""),      // no Ready condition yet: its empty fields are fields
	}, "\n") + "\n"
	cordoned, out := nodesOut(rows)
	if cordoned != 1 {
		t.Errorf("cordoned: %d, want 1", cordoned)
	}
	if diff := cmp.Diff([]string{"w-sent", "w-working", "w-cordoned", "w-notready", "w-bare"}, out); diff != "" {
		t.Errorf("out (-want +got):\n%s", diff)
	}
	if c, o := nodesOut(""); c != 0 || o != nil {
		t.Errorf("no rows: %d, %v", c, o)
	}
}
