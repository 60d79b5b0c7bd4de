package rolloutcontrol

import (
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
