// Package policytest builds the small policies the planner's stages test
// with (one declarative file entry, or one Rego module) and the planner of
// the default policy and some others. It links the planner (and so OPA),
// which internal/testkit/builder does not.
package policytest

import (
	"context"
	"testing"

	operatorv1 "github.com/openshift/api/operator/v1"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/engine"
	"github.com/ndp-dev/ndp/planner/policy"
)

// Actions without a service.
var (
	None          = policy.Action{Type: policy.ActionNone}
	Reboot        = policy.Action{Type: policy.ActionReboot}
	Drain         = policy.Action{Type: policy.ActionDrain}
	DaemonReload  = policy.Action{Type: policy.ActionDaemonReload}
	PackageUpdate = policy.Action{Type: policy.ActionPackageUpdate}
)

// File is a declarative policy, from name.yaml, of one file entry.
func File(name string, priority int32, path string, actions ...policy.Action) policy.Policy {
	return policy.Policy{Name: name, Priority: priority, Origin: name + ".yaml", Files: []operatorv1.NodeDisruptionPolicySpecFile{{Path: path, Actions: actions}}}
}

// Rego is a policy of one Rego module, name.rego.
func Rego(name string, priority int32, src string) policy.Policy {
	return policy.Policy{Name: name, Priority: priority, Origin: name + ".rego", Modules: []policy.Module{{Filename: name + ".rego", Source: src}}}
}

// Planner compiles the default policy and pols, in the default limits.
func Planner(t testing.TB, pols ...policy.Policy) *planner.Planner {
	t.Helper()
	p, err := planner.New(context.Background(), append([]policy.Policy{policy.DefaultPolicy()}, pols...), engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Plan parses two MachineConfigs, as the controllers' config cache does,
// and plans the move from one to the other with p for pool; any error
// fails the test.
func Plan(t testing.TB, p *planner.Planner, from, to *ndpmcv1.MachineConfig, pool string) *planner.Plan {
	t.Helper()
	fromCfg, err := machineconfig.New(from.Name, from.Spec)
	if err != nil {
		t.Fatal(err)
	}
	toCfg, err := machineconfig.New(to.Name, to.Spec)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := p.Plan(context.Background(), planner.Request{From: fromCfg, To: toCfg, Pool: pool})
	if err != nil {
		t.Fatalf("planning %s -> %s: %v", from.Name, to.Name, err)
	}
	return pl
}
