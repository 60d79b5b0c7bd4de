package rolloutcontrol

import (
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
)

func TestPoliciesFor(t *testing.T) {
	rp := func(name string, sel metav1.LabelSelector) v1alpha1.RolloutPolicy {
		return v1alpha1.RolloutPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.RolloutPolicySpec{PoolSelector: sel}}
	}
	policies := []v1alpha1.RolloutPolicy{
		rp("z-all", metav1.LabelSelector{}),
		rp("workers", metav1.LabelSelector{MatchLabels: map[string]string{"pools.operator.machineconfiguration.openshift.io/worker": ""}}),
		rp("infra", metav1.LabelSelector{MatchLabels: map[string]string{"pools.operator.machineconfiguration.openshift.io/infra": ""}}),
		rp("a-broken", metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "x", Operator: "Near"}}}),
	}
	worker := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "worker", Labels: map[string]string{"pools.operator.machineconfiguration.openshift.io/worker": ""}}}
	var got []string
	for _, p := range PoliciesFor(worker, policies) {
		got = append(got, p.Name)
	}
	// By name; the broken selector is kept, so that Decide holds and says why.
	if s := strings.Join(got, " "); s != "a-broken workers z-all" {
		t.Errorf("policies for worker: %s", s)
	}
	if _, err := Selects(&policies[3], worker); err == nil || !strings.Contains(err.Error(), "rolloutpolicy a-broken: spec.poolSelector") {
		t.Errorf("broken selector: %v", err)
	}
}

func TestSummaryIsBounded(t *testing.T) {
	d := Decision{Held: map[string][]Reason{}}
	for i := 0; i < 30; i++ {
		n := tnode(string(rune('a'+i%26))+strings.Repeat("x", i/26), "", i)
		d.Order = append(d.Order, n)
		d.Held[n.Name] = []Reason{HoldReason(n.Name, "", "")}
	}
	s := Summary(d, v1alpha1.MaxPoolReasons)
	if len(s) != v1alpha1.MaxPoolReasons || s[len(s)-1] != "and 11 more" {
		t.Errorf("summary of %d lines ends %q", len(s), s[len(s)-1])
	}
	if s[0] != "held: node a by annotation ndp.dev/hold" {
		t.Errorf("first line %q", s[0])
	}
}

func TestCompilerMemoizesPerGeneration(t *testing.T) {
	policy := func(uid string, gen int64, tz string) *v1alpha1.RolloutPolicy {
		return &v1alpha1.RolloutPolicy{ObjectMeta: metav1.ObjectMeta{Name: "nights", UID: types.UID(uid), Generation: gen},
			Spec: v1alpha1.RolloutPolicySpec{Windows: []v1alpha1.MaintenanceWindow{{Start: "22:00", End: "04:00", TimeZone: tz}}}}
	}
	var c Compiler
	compile := func(p *v1alpha1.RolloutPolicy) (*Policy, error) {
		t.Helper()
		cp, err := c.Compile(p)
		if want, werr := Compile(p); (err == nil) != (werr == nil) || (cp == nil) != (want == nil) {
			t.Fatalf("Compiler.Compile(%s gen %d) = %v, %v; Compile: %v, %v", p.UID, p.Generation, cp, err, want, werr)
		}
		return cp, err
	}
	first, err := compile(policy("a", 1, "Europe/Berlin"))
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := compile(policy("a", 1, "Europe/Berlin")); again != first {
		t.Error("the same UID and generation was compiled again")
	}
	if next, _ := compile(policy("a", 2, "Asia/Tokyo")); next == first || next.Spec.Windows[0].TimeZone != "Asia/Tokyo" {
		t.Error("a new generation was not compiled afresh")
	}
	recreated, _ := compile(policy("b", 2, "Asia/Tokyo"))
	if again, _ := compile(policy("b", 2, "Asia/Tokyo")); again != recreated {
		t.Error("a recreated policy (new UID) is not kept")
	}
	if _, err := compile(policy("b", 3, "Mars/Olympus")); err == nil || !strings.Contains(err.Error(), "rolloutpolicy nights: spec.windows[0]") {
		t.Errorf("an invalid generation: %v", err)
	}
	if _, err := compile(policy("b", 3, "Mars/Olympus")); err == nil {
		t.Error("the invalid generation's error is not kept")
	}
	if fixed, err := compile(policy("b", 4, "UTC")); err != nil || fixed.Spec.Windows[0].TimeZone != "UTC" {
		t.Errorf("the fixed generation: %v", err)
	}
	// Without a UID (not from an API server) nothing is kept: two such
	// policies of one name may differ.
	p1, _ := compile(policy("", 0, "UTC"))
	if p2, _ := compile(policy("", 0, "UTC")); p1 == p2 {
		t.Error("a policy without a UID was memoized")
	}
}
