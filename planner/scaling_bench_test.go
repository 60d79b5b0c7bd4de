package planner_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/engine"
	"github.com/ndp-dev/ndp/planner/policy"
)

// The policy-scaling benchmarks (issue 11): compile time of a set of 1, 100
// and 1,000 active NodeDisruptionPolicies plus the default policy, and the
// time of one plan with that set, for declarative entries and for Rego
// modules. hack/benchtable prints them with the ratios 100/1 and 1000/1,
// which must stay within 100× and 1000× (no worse than linear).

const (
	scalingFiles   = 200
	scalingChanged = 20
	// scalingClaimed is a changed file of benchConfig(200 files, 20
	// changed) that the default policy leaves to the unclaimed reboot; one
	// synthetic policy claims it.
	scalingClaimed = "/etc/crio/crio.conf.d/generated-0020.conf"
)

var scalingCounts = []int{1, 100, 1000}

// scalingPolicies builds n active policies of the given kind. Policy i
// claims its own directory /etc/app-NNNN/ (which no change touches, so every
// policy is evaluated and finds nothing), and the last one also claims
// scalingClaimed, a changed file.
func scalingPolicies(tb testing.TB, kind string, n int) []policy.Policy {
	tb.Helper()
	pols := make([]policy.Policy, 0, n)
	for i := range n {
		name := fmt.Sprintf("app-%04d", i)
		dir := "/etc/" + name + "/"
		svc := name + ".service"
		obj := &v1alpha1.NodeDisruptionPolicy{
			TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.Kind},
			ObjectMeta: metav1.ObjectMeta{Name: name},
		}
		prio := int32(100)
		obj.Spec.Priority = &prio
		claimsChanged := i == n-1
		switch kind {
		case "declarative":
			obj.Spec.Files = []operatorv1.NodeDisruptionPolicySpecFile{{
				Path:    dir,
				Actions: []policy.Action{policy.RestartAction(svc)},
			}}
			if claimsChanged {
				obj.Spec.Files = append(obj.Spec.Files, operatorv1.NodeDisruptionPolicySpecFile{
					Path:    scalingClaimed,
					Actions: []policy.Action{policy.ReloadAction("crio.service")},
				})
			}
		case "rego":
			pkg := fmt.Sprintf("app_%04d", i)
			src := fmt.Sprintf(`package ndp.policy.%s

import data.ndp.lib

claims contains {"change": c.id, "match": %q, "actions": [lib.restart(%q)]} if {
	some c in lib.file_changes
	%q in c.dirs
}
`, pkg, dir, svc, dir)
			if claimsChanged {
				src += fmt.Sprintf(`
claims contains {"change": c.id, "match": c.path, "actions": [lib.reload("crio.service")], "reason": "crio drop-in"} if {
	some c in lib.file_changes
	c.path == %q
}
`, scalingClaimed)
			}
			obj.Spec.Rego = src
		default:
			tb.Fatalf("unknown policy kind %q", kind)
		}
		pols = append(pols, policy.FromAPI(name+".yaml", obj, 0, 0))
	}
	return pols
}

func scalingPlanner(tb testing.TB, pols []policy.Policy) *planner.Planner {
	tb.Helper()
	p, err := planner.New(context.Background(), append([]policy.Policy{policy.DefaultPolicy()}, pols...), engine.Options{CompileTimeout: 5 * time.Minute})
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// BenchmarkPolicyScaling times, for kind=declarative|rego and
// policies=1|100|1000, op=compile (planner.New of the set and the default
// policy) and op=plan (one plan of a 200-file config with 20 files changed,
// configs already parsed, so that what is timed is diff and evaluation).
func BenchmarkPolicyScaling(b *testing.B) {
	ctx := context.Background()
	from, to := scalingConfigs(b)
	for _, kind := range []string{"declarative", "rego"} {
		b.Run("kind="+kind, func(b *testing.B) {
			for _, n := range scalingCounts {
				b.Run(fmt.Sprintf("policies=%d", n), func(b *testing.B) {
					pols := scalingPolicies(b, kind, n)
					set := append([]policy.Policy{policy.DefaultPolicy()}, pols...)
					b.Run("op=compile", func(b *testing.B) {
						b.ReportAllocs()
						for b.Loop() {
							if _, err := planner.New(ctx, set, engine.Options{CompileTimeout: 5 * time.Minute}); err != nil {
								b.Fatal(err)
							}
						}
					})
					p := scalingPlanner(b, pols)
					scalingCheck(b, p, from, to, pols[n-1].Name)
					b.Run("op=plan", func(b *testing.B) {
						b.ReportAllocs()
						for b.Loop() {
							if _, err := p.Plan(ctx, planner.Request{From: from, To: to}); err != nil {
								b.Fatal(err)
							}
						}
					})
				})
			}
		})
	}
}

// scalingCheck checks, untimed, that the plan is the one the benchmark
// claims: 20 changes, scalingClaimed decided by the synthetic policy owner,
// no synthetic policy deciding anything else.
func scalingCheck(tb testing.TB, p *planner.Planner, from, to *machineconfig.Config, owner string) {
	tb.Helper()
	pl, err := p.Plan(context.Background(), planner.Request{From: from, To: to})
	if err != nil {
		tb.Fatal(err)
	}
	if len(pl.Reasons) != scalingChanged {
		tb.Fatalf("%d reasons, want %d", len(pl.Reasons), scalingChanged)
	}
	decided := 0
	for _, r := range pl.Reasons {
		if r.Policy == owner {
			decided++
			if r.Match != scalingClaimed || actionsString(r.Actions) != `[{"type":"Reload","reload":{"serviceName":"crio.service"}}]` {
				tb.Fatalf("%s decided %+v, want a crio reload on %s", owner, r, scalingClaimed)
			}
		} else if r.Policy != planner.NoPolicy && r.Policy != policy.DefaultPolicy().Name {
			tb.Fatalf("policy %s decided %+v, want only %s among the synthetic policies", r.Policy, r, owner)
		}
	}
	if decided != 1 {
		tb.Fatalf("%s decided %d changes, want 1", owner, decided)
	}
}

// TestPolicyScalingSet checks the synthetic sets compile and plan as
// BenchmarkPolicyScaling expects (with 3 policies, to stay fast).
func TestPolicyScalingSet(t *testing.T) {
	from, to := scalingConfigs(t)
	for _, kind := range []string{"declarative", "rego"} {
		t.Run(kind, func(t *testing.T) {
			pols := scalingPolicies(t, kind, 3)
			scalingCheck(t, scalingPlanner(t, pols), from, to, pols[2].Name)
		})
	}
}

// scalingConfigs are the parsed old and new rendered configs: 200 files, 20
// of them changed.
func scalingConfigs(tb testing.TB) (from, to *machineconfig.Config) {
	tb.Helper()
	return benchParse(tb, benchConfig(tb, "rendered-worker-old", scalingFiles, scalingChanged, false), benchConfig(tb, "rendered-worker-new", scalingFiles, scalingChanged, true))
}
