package policyset

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/ndp-dev/ndp/apis/scheme"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/planner"
)

func changed(a *ActivePolicies) bool {
	select {
	case <-a.Changes():
		return true
	default:
		return false
	}
}

func TestActivePolicies(t *testing.T) {
	ctx := context.Background()
	a := NewActivePolicies(planner.EngineOptions{})
	if a.Planner() != nil {
		t.Fatal("an empty set has a planner")
	}
	def := planner.DefaultPolicy()
	if err := a.Put(ctx, def); err != nil {
		t.Fatal(err)
	}
	if a.Planner() == nil || !changed(a) {
		t.Fatal("putting the default policy made no planner or no change event")
	}
	if err := a.Put(ctx, def); err != nil {
		t.Fatal(err)
	}
	if changed(a) {
		t.Error("putting the same revision again sent a change event")
	}
	if got, ok := a.Get(def.Name); !ok || got.Revision() != def.Revision() {
		t.Errorf("Get(%q) = %v, %t", def.Name, got.Revision(), ok)
	}
	if others := a.Others(def.Name); len(others) != 0 {
		t.Errorf("Others: %d policies", len(others))
	}
	bad := planner.Policy{Name: "bad", Modules: []planner.Module{{Filename: "bad.rego", Source: "package ndp.policy.bad\nnot rego ("}}}
	if err := a.Put(ctx, bad); err == nil || !strings.Contains(err.Error(), "would not compile") {
		t.Errorf("a policy that does not compile: %v", err)
	}
	if _, ok := a.Get("bad"); ok {
		t.Error("a policy that does not compile joined the set")
	}
	if err := a.Remove(ctx, def.Name); err != nil || a.Planner() != nil || !changed(a) {
		t.Errorf("removing the only policy: %v, planner %v", err, a.Planner())
	}
}

func TestPolicyChecker(t *testing.T) {
	ctx := context.Background()
	active := NewActivePolicies(planner.EngineOptions{})
	if err := active.Put(ctx, planner.DefaultPolicy()); err != nil {
		t.Fatal(err)
	}
	c := &PolicyChecker{Client: fake.NewClientBuilder().WithScheme(scheme.New()).Build(), Active: active}
	policy := func(rego, tests string) *v1alpha1.NodeDisruptionPolicy {
		return &v1alpha1.NodeDisruptionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p", Generation: 1},
			Spec: v1alpha1.NodeDisruptionPolicySpec{Rego: rego, RegoTests: tests}}
	}
	if _, reason, err := c.Check(ctx, policy("package ndp.policy.p\nnot rego (", "")); reason != ReasonCompileError || err == nil {
		t.Errorf("a syntax error: %q %v", reason, err)
	}
	if _, reason, err := c.Check(ctx, policy("package ndp.policy.p\n", "package ndp.policy.p_test\ntest_fails if { false }\n")); reason != ReasonTestsFailed || err == nil {
		t.Errorf("a failing test: %q %v", reason, err)
	}
	p := policy("package ndp.policy.p\n", "")
	p.Spec.BundleRef = &v1alpha1.BundleReference{Namespace: "ns", Name: "missing"}
	if _, reason, err := c.Check(ctx, p); reason != ReasonBundleError || err == nil {
		t.Errorf("a missing bundle: %q %v", reason, err)
	}
}
