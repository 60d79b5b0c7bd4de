package preview

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/policy"
)

var (
	rebootOutcome  = planner.Outcome{Actions: []policy.Action{{Type: policy.ActionReboot}}, Drain: true, Reboot: true}
	restartOutcome = planner.Outcome{Actions: []policy.Action{policy.RestartAction("chronyd.service")}}
)

func TestWhatIfWarnings(t *testing.T) {
	for _, tc := range []struct {
		name string
		w    WhatIf
		want []string
	}{
		{"nothing waits", WhatIf{}, []string{"no pending plan changes: no node is waiting for an update"}},
		{"nothing changes", WhatIf{WaitingNodes: 4, WaitingPools: 2}, []string{"no pending plan changes: the plans of 4 waiting nodes in 2 pools stay as they are"}},
		{"one change", WhatIf{WaitingNodes: 3, WaitingPools: 1, Changes: []WaitingChange{{Pool: "worker", From: "rendered-worker-1a2b", To: "rendered-worker-7a8b", Nodes: 3,
			PlanChange: planner.PlanChange{Before: rebootOutcome, After: restartOutcome}}}},
			[]string{"pool worker, 3 nodes rendered-worker-1a2b → rendered-worker-7a8b: Reboot → Restart chronyd.service (no drain)"}},
		{"a node updating keeps its plan", WhatIf{Changes: []WaitingChange{{Pool: "worker", From: "a", To: "b", Nodes: 1, Updating: 1,
			PlanChange: planner.PlanChange{Before: rebootOutcome, After: restartOutcome}}}},
			[]string{"pool worker, 1 node a → b: Reboot → Restart chronyd.service (no drain) (1 node already updating keeps Reboot)"}},
		{"a plan that fails, on one line", WhatIf{Changes: []WaitingChange{{Pool: "infra", From: "a", To: "b", Nodes: 2,
			PlanChange: planner.PlanChange{Before: restartOutcome, After: planner.Outcome{Err: "1 error occurred:\nrego_type_error: x"}}}}},
			[]string{"pool infra, 2 nodes a → b: Restart chronyd.service (no drain) → planning fails: 1 error occurred: rego_type_error: x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.w.Warnings()
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// However many plans change, the warnings stay within what the API server
// passes on whole: each within 256 runes, all within the budget, and what
// is left out is counted.
func TestWhatIfWarningsFitTheAPIServersLimits(t *testing.T) {
	var w WhatIf
	long := strings.Repeat("p", 150)
	for i := range 100 {
		pool := fmt.Sprintf("pool-%02d", i)
		if i%10 == 0 {
			pool = long + pool // long names are cut
		}
		w.Changes = append(w.Changes, WaitingChange{Pool: pool, From: "rendered-" + pool + "-1a2b", To: "rendered-" + pool + "-7a8b", Nodes: 2,
			PlanChange: planner.PlanChange{Before: rebootOutcome, After: restartOutcome}})
	}
	got := w.Warnings()
	total := 0
	for _, s := range got {
		if n := utf8.RuneCountInString(s); n > maxWhatIfLine {
			t.Errorf("a warning of %d runes: %q", n, s)
		}
		total += utf8.RuneCountInString(s)
	}
	if total > maxWhatIfBudget {
		t.Errorf("%d runes of warnings, budget %d", total, maxWhatIfBudget)
	}
	last := got[len(got)-1]
	shown := len(got) - 1
	if want := fmt.Sprintf("and %d more plan changes (%d nodes in %d pools)", 100-shown, 2*(100-shown), 100-shown); last != want {
		t.Errorf("last warning %q, want %q", last, want)
	}
	if shown < 10 {
		t.Errorf("only %d changes shown", shown)
	}
	// A long name: the configs' names go first, then the line is cut.
	if want := "pool " + long + "pool-00, 2 nodes: Reboot → Restart chronyd.service (no drain)"; got[0] != want {
		t.Errorf("a long line: %q, want %q", got[0], want)
	}
	w.Changes[0].Pool = strings.Repeat("p", 253)
	if got := w.Warnings()[0]; !strings.HasSuffix(got, "…") || utf8.RuneCountInString(got) != maxWhatIfLine {
		t.Errorf("a line too long even so is not cut at %d runes: %q", maxWhatIfLine, got)
	}
}

func TestNoWhatIf(t *testing.T) {
	if got, want := NoWhatIf(fmt.Errorf("listing pools: %w", context.DeadlineExceeded), DefaultPreviewDeadline), "ndp: no what-if preview: not done within the webhook's 4s deadline"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	if got, want := NoWhatIf(errors.New("no NodeDisruptionPolicy is active yet"), DefaultPreviewDeadline), "ndp: no what-if preview: no NodeDisruptionPolicy is active yet"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}
