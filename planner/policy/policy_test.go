package policy_test

import (
	"testing"

	operatorv1 "github.com/openshift/api/operator/v1"

	"github.com/ndp-dev/ndp/internal/testkit/policytest"
	"github.com/ndp-dev/ndp/planner/policy"
)

func TestRuleCountAndRevision(t *testing.T) {
	def := policy.DefaultPolicy()
	if n := def.RuleCount(); n != 5 {
		t.Errorf("the default policy has %d claims rules, want 5 (files, OS fields, users, LUKS, registries.conf)", n)
	}
	p := policytest.File("f", 100, "/etc/x", policytest.None)
	p.Units = []operatorv1.NodeDisruptionPolicySpecUnit{{Name: "a.service", Actions: []policy.Action{policytest.None}}}
	if n := p.RuleCount(); n != 2 {
		t.Errorf("rule count %d, want 2", n)
	}
	q := p
	q.Priority = 5
	same := policytest.File("f", 100, "/etc/x", policytest.None)
	same.Units = p.Units
	if p.Revision() == q.Revision() || p.Revision() != same.Revision() {
		t.Errorf("a policy's revision must follow its content: %s, %s, %s", p.Revision(), q.Revision(), same.Revision())
	}
}
