package planner_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/engine"
	"github.com/ndp-dev/ndp/planner/policy"
)

// compiledDefaults is the default policy compiled once per test binary,
// with an evaluation deadline generous enough for a loaded machine: a
// deadline hit must not pass for a defect.
var compiledDefaults = sync.OnceValues(func() (*planner.Planner, error) {
	return planner.New(context.Background(), []policy.Policy{policy.DefaultPolicy()}, engine.Options{EvalTimeout: time.Minute})
})

// sharedPlanner is the planner of the default policy alone that the
// differential test, the fuzz targets and the benchmarks share.
func sharedPlanner(tb testing.TB) *planner.Planner {
	tb.Helper()
	p, err := compiledDefaults()
	if err != nil {
		tb.Fatalf("compiling the default policy: %v", err)
	}
	return p
}

func plan(t testing.TB, p *planner.Planner, from, to *machineconfig.Config) *planner.Plan {
	t.Helper()
	pl, err := p.Plan(context.Background(), planner.Request{From: from, To: to})
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

func actionsString(actions []policy.Action) string {
	b, _ := json.Marshal(actions)
	return string(b)
}
