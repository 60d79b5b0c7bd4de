package policyset

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/ndp-dev/ndp/apis/scheme"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/changeset"
	"github.com/ndp-dev/ndp/planner/engine"
	"github.com/ndp-dev/ndp/planner/policy"
	"github.com/ndp-dev/ndp/planner/sandbox"
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
	a := NewActivePolicies(engine.Options{})
	if a.Planner() != nil {
		t.Fatal("an empty set has a planner")
	}
	def := policy.DefaultPolicy()
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
	bad := policy.Policy{Name: "bad", Modules: []policy.Module{{Filename: "bad.rego", Source: "package ndp.policy.bad\nnot rego ("}}}
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
	active := NewActivePolicies(engine.Options{})
	if err := active.Put(ctx, policy.DefaultPolicy()); err != nil {
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

// A revision whose Rego tests pass but whose rules blow up on a change
// (here, only on a change of the path it names) is refused by the probe,
// under the sandbox's limits, with an error naming the policy; the last good
// revision stays active and plans as before.
func TestHostileRevisionKeepsTheLastGood(t *testing.T) {
	if raceDetector {
		t.Skip("under -race the time limit trips before the limits this test checks: make test runs it without -race")
	}
	ctx := context.Background()
	active := NewActivePolicies(engine.Options{})
	if err := active.Put(ctx, policy.DefaultPolicy()); err != nil {
		t.Fatal(err)
	}
	const tests = "package ndp.policy.chrony_test\n\ntest_nothing_else if { count(data.ndp.policy.chrony.claims) == 0 with input as {\"changes\": []} }\n"
	spec := func(body string) *v1alpha1.NodeDisruptionPolicy {
		return &v1alpha1.NodeDisruptionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "chrony", Generation: 2},
			Spec: v1alpha1.NodeDisruptionPolicySpec{RegoTests: tests, Rego: "package ndp.policy.chrony\n\nclaims contains {\"change\": c.id, \"actions\": [{\"type\": \"Restart\", \"restart\": {\"serviceName\": \"chronyd.service\"}}]} if {\n\tsome c in input.changes\n\tc.path == \"/etc/chrony.conf\"\n" + body + "}\n"}}
	}
	good := policy.FromAPI("", spec(""), 0, 0)
	if err := active.Put(ctx, good); err != nil {
		t.Fatalf("the good revision: %v", err)
	}
	hostileNDP := spec("\tcount([i | some i in numbers.range(1, 200000000)]) > 0\n")
	hostile := policy.FromAPI("", hostileNDP, 0, 0)
	var out bytes.Buffer
	if sum, err := engine.RunRegoTests(ctx, []policy.Policy{hostile}, nil, &out, engine.TestOptions{}); err != nil || sum.Failed+sum.Errored > 0 {
		t.Fatalf("the hostile revision's own tests must pass: %+v %v\n%s", sum, err, out.String())
	}

	checkRefusal := func(what string, err error) {
		t.Helper()
		var pe *policy.Error
		var ee *EvaluationError
		switch {
		case err == nil:
			t.Fatalf("%s: the hostile revision is accepted", what)
		case !errors.Is(err, sandbox.ErrEvalMemory) || !errors.As(err, &ee) || !errors.As(err, &pe) || pe.Policy != "chrony":
			t.Errorf("%s: want an EvaluationError naming policy chrony, over the memory limit: %#v", what, err)
		case !strings.Contains(err.Error(), `evaluating policies used more than 256 MiB of memory (policy "chrony"`):
			t.Errorf("%s: unclear error: %v", what, err)
		}
		t.Logf("%s: %v", what, err)
	}
	// What the webhook and the policy controller run first.
	c := &PolicyChecker{Client: fake.NewClientBuilder().WithScheme(scheme.New()).Build(), Active: active}
	_, reason, err := c.Check(ctx, hostileNDP)
	if reason != ReasonEvaluationError {
		t.Errorf("Check's reason: %q", reason)
	}
	checkRefusal("Check", err)
	// And the set itself refuses it.
	checkRefusal("Put", active.Put(ctx, hostile))

	if got, ok := active.Get("chrony"); !ok || got.Revision() != good.Revision() {
		t.Fatalf("the active revision is %v, want the good one %s", got.Revision(), good.Revision())
	}
	cs := &changeset.ChangeSet{From: "a", To: "b", Changes: []changeset.Change{{ID: "file:/etc/chrony.conf", Kind: changeset.KindFile, Op: changeset.OpChanged, Path: "/etc/chrony.conf", Dirs: []string{"/etc/", "/"}, Fields: []string{"contents"}}}}
	plan, err := active.Planner().PlanChanges(ctx, cs, nil)
	if err != nil {
		t.Fatalf("the active set no longer plans: %v", err)
	}
	if got := planner.FormatActions(plan.Actions); got != "Restart chronyd.service" || plan.Reasons[0].Policy != "chrony" {
		t.Errorf("the active set plans %q by %q, want the good revision's Restart chronyd.service", got, plan.Reasons[0].Policy)
	}
}

// Ready is the one check every plan and preview starts with.
func TestReady(t *testing.T) {
	ctx := context.Background()
	obj := func(name string, gen int64) *v1alpha1.NodeDisruptionPolicy {
		return &v1alpha1.NodeDisruptionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name, Generation: gen}}
	}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(obj("default", 1), obj("chrony", 2)).Build()
	a := NewActivePolicies(engine.Options{})

	var nr *NotReadyError
	if _, err := a.Ready(ctx, c); !errors.As(err, &nr) || len(nr.Pending) != 0 || err.Error() != "no NodeDisruptionPolicy is active yet" {
		t.Fatalf("empty set: %v", err)
	}
	if err := a.Put(ctx, policy.DefaultPolicy()); err != nil {
		t.Fatal(err)
	}
	a.Seen("default", 1)
	a.Seen("chrony", 1) // an older generation than the cluster's
	if _, err := a.Ready(ctx, c); !errors.As(err, &nr) || len(nr.Pending) != 1 || nr.Pending[0] != "chrony" ||
		!strings.Contains(err.Error(), "NodeDisruptionPolicies chrony are still being loaded") {
		t.Fatalf("chrony's generation 2 not loaded: %v", err)
	}
	a.Seen("chrony", 2)
	p, err := a.Ready(ctx, c)
	if err != nil || p == nil || p != a.Planner() {
		t.Fatalf("every policy loaded: %v, %v", p, err)
	}
}
