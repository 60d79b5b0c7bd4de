package advisor

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	operatorv1 "github.com/openshift/api/operator/v1"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/mco/mcoentries"
	"github.com/ndp-dev/ndp/planner/policy"
)

func TestGeneratedFromGuardedKind(t *testing.T) {
	for name, want := range map[string]bool{
		"99-worker-generated-kubelet":            true,
		"99-worker-generated-kubelet-1":          true,
		"99-infra-generated-containerruntime":    true,
		"99-infra-generated-containerruntime-12": true,
		"99-worker-generated-registries":         false,
		"01-worker-kubelet":                      false,
		"99-worker-generated-kubelet-x":          false,
		"99-worker-generated-kubelet-":           false,
		"98-worker-generated-kubelet":            false,
	} {
		if got := generatedFromGuardedKind(name); got != want {
			t.Errorf("generatedFromGuardedKind(%q) = %t, want %t", name, got, want)
		}
	}
}

func TestPolicyMCOStatus(t *testing.T) {
	restart := policy.RestartAction("chronyd.service")
	chrony := policy.Policy{Name: "chrony", Files: []operatorv1.NodeDisruptionPolicySpecFile{{Path: "/etc/chrony.conf", Actions: []policy.Action{restart}}}}
	both := policy.Policy{Name: "both", Files: []operatorv1.NodeDisruptionPolicySpecFile{{Path: "/etc/a", Actions: []policy.Action{restart}}, {Path: "/etc/b", Actions: []policy.Action{restart}}}}
	rego := policy.Policy{Name: "rego", Modules: []policy.Module{{Source: "package ndp.policy.rego"}}}
	static := mcoentries.Entries{Files: []operatorv1.NodeDisruptionPolicySpecFile{{Path: "/etc/chrony.conf", Actions: []policy.Action{restart}}, {Path: "/etc/a", Actions: []policy.Action{restart}}}}
	st := &mcoentries.StaticResult{
		From:        map[string][]string{"file:/etc/chrony.conf": {"chrony"}, "file:/etc/a": {"both"}, "file:/etc/b": {"both"}},
		Unexpressed: []mcoentries.Unexpressed{{Policy: "both", Subject: "file /etc/b", Reason: "policy x's Rego names /etc/b"}},
	}
	tests := []struct {
		pol       policy.Policy
		conflicts map[string]mcoentries.Conflict
		want      v1alpha1.PolicyMCOStatus
	}{
		{chrony, nil, v1alpha1.PolicyMCOStatus{State: v1alpha1.MCOEntriesWritten, Entries: []string{"file /etc/chrony.conf: Restart chronyd.service"}}},
		{both, nil, v1alpha1.PolicyMCOStatus{State: v1alpha1.MCOEntriesPartial, Entries: []string{"file /etc/a: Restart chronyd.service"},
			NotExpressed: []string{"file /etc/b: policy x's Rego names /etc/b"}}},
		{chrony, map[string]mcoentries.Conflict{"file:/etc/chrony.conf": {Subject: "file:/etc/chrony.conf", Managers: []string{"admin"}}},
			// A conflicting entry is not written: no entry is listed for it.
			v1alpha1.PolicyMCOStatus{State: v1alpha1.MCOEntriesNotWritten,
				Conflicts: []string{"file /etc/chrony.conf: MachineConfiguration cluster has another entry for it (field manager admin); ndp does not overwrite it"}}},
		{rego, nil, v1alpha1.PolicyMCOStatus{State: v1alpha1.MCOEntriesNone}},
	}
	for i, tt := range tests {
		t.Run(fmt.Sprint(i, tt.pol.Name), func(t *testing.T) {
			s := static
			if len(tt.conflicts) > 0 {
				s = mcoentries.Without(static, []string{"file:/etc/chrony.conf"})
			}
			got := policyMCOStatus(tt.pol, st, s, tt.conflicts, mcoentries.Entries{})
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}
