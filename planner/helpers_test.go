package planner_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/engine"
	"github.com/ndp-dev/ndp/planner/policy"
)

func defaultPlanner(t testing.TB, extra ...policy.Policy) *planner.Planner {
	t.Helper()
	p, err := planner.New(context.Background(), append([]policy.Policy{policy.DefaultPolicy()}, extra...), engine.Options{})
	if err != nil {
		t.Fatal(err)
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
