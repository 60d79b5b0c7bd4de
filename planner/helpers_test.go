package planner_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"testing"

	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/engine"
	"github.com/ndp-dev/ndp/planner/policy"
)

// mc builds a rendered MachineConfig document: ign is the Ignition config
// (its version defaults to 3.4.0), spec holds the other spec fields.
func mc(t testing.TB, name string, ign map[string]any, spec map[string]any) *machineconfig.Config {
	t.Helper()
	cfg, err := machineconfig.Parse(name+".yaml", mcDoc(t, name, ign, spec))
	if err != nil {
		t.Fatalf("parsing %s: %v", name, err)
	}
	return cfg
}

func mcDoc(t testing.TB, name string, ign map[string]any, spec map[string]any) []byte {
	t.Helper()
	if ign == nil {
		ign = map[string]any{}
	}
	if _, ok := ign["ignition"]; !ok {
		ign["ignition"] = map[string]any{"version": "3.4.0"}
	}
	s := map[string]any{"config": ign}
	for k, v := range spec {
		s[k] = v
	}
	b, err := json.Marshal(map[string]any{
		"apiVersion": "machineconfiguration.openshift.io/v1",
		"kind":       "MachineConfig",
		"metadata":   map[string]any{"name": name},
		"spec":       s,
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func files(fs ...map[string]any) map[string]any {
	list := make([]any, len(fs))
	for i, f := range fs {
		list[i] = f
	}
	return map[string]any{"storage": map[string]any{"files": list}}
}

// file is an Ignition file with plain data-URL contents.
func file(path, contents string) map[string]any {
	return map[string]any{"path": path, "contents": map[string]any{"source": "data:," + url.PathEscape(contents)}}
}

func fileB64(path, contents string) map[string]any {
	return map[string]any{"path": path, "contents": map[string]any{"source": "data:;base64," + base64.StdEncoding.EncodeToString([]byte(contents))}}
}

func with(f map[string]any, k string, v any) map[string]any {
	out := map[string]any{}
	for kk, vv := range f {
		out[kk] = vv
	}
	out[k] = v
	return out
}

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
