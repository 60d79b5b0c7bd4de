package engine_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ndp-dev/ndp/internal/testkit/builder"
	"github.com/ndp-dev/ndp/internal/testkit/policytest"
	"github.com/ndp-dev/ndp/planner/engine"
	"github.com/ndp-dev/ndp/planner/policy"
)

// kubeletPolicy restarts the kubelet when only maxPods changed in
// kubelet.conf, and lets anything else fall to the defaults (a reboot).
const kubeletPolicy = `package ndp.policy.kubelet

import data.ndp.lib

claims contains {"change": c.id, "match": c.path, "actions": [lib.restart("kubelet.service")], "reason": "only maxPods changed"} if {
	some c in lib.file_changes
	c.path == "/etc/kubernetes/kubelet.conf"
	lib.only_keys_changed(c, {"maxPods"})
}

claims contains {"change": c.id, "match": c.path, "actions": lib.none, "reason": "a comment line"} if {
	some c in lib.file_changes
	c.path == "/etc/chrony.conf"
	every l in array.concat(lib.added_lines(c), lib.removed_lines(c)) {
		startswith(l, "#")
	}
}
`

func TestPolicyReadsTheDiff(t *testing.T) {
	e := newEngine(t, policytest.Rego("kubelet", 100, kubeletPolicy))
	if !e.ReadsContent() {
		t.Fatal("a policy calling lib.only_keys_changed must get contents")
	}
	const base = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nmaxPods: 250\nsystemReserved:\n  cpu: 500m\n"
	for _, tc := range []struct {
		name, path, old, new string
		want                 []engine.Claim
	}{
		{"maxPods only, YAML to JSON", "/etc/kubernetes/kubelet.conf", base,
			`{"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration", "maxPods": 500, "systemReserved": {"cpu": "500m"}}`,
			[]engine.Claim{{Policy: "kubelet", Change: "file:/etc/kubernetes/kubelet.conf", Match: "/etc/kubernetes/kubelet.conf", Actions: []policy.Action{policy.RestartAction("kubelet.service")}, Reason: "only maxPods changed"}}},
		{"reformatted only", "/etc/kubernetes/kubelet.conf", base, "kind: KubeletConfiguration\napiVersion: kubelet.config.k8s.io/v1beta1\nsystemReserved: {cpu: 500m}\nmaxPods: 250.0\n",
			[]engine.Claim{{Policy: "kubelet", Change: "file:/etc/kubernetes/kubelet.conf", Match: "/etc/kubernetes/kubelet.conf", Actions: []policy.Action{policy.RestartAction("kubelet.service")}, Reason: "only maxPods changed"}}},
		{"another key too", "/etc/kubernetes/kubelet.conf", base, "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nmaxPods: 500\nsystemReserved:\n  cpu: 1\n", nil},
		{"not parsed", "/etc/kubernetes/kubelet.conf", base, "maxPods 500\n", nil},
		{"text: a comment line", "/etc/chrony.conf", "# servers\nserver a iburst\n", "# our servers\nserver a iburst\n",
			[]engine.Claim{{Policy: "kubelet", Change: "file:/etc/chrony.conf", Match: "/etc/chrony.conf", Actions: []policy.Action{policytest.None}, Reason: "a comment line"}}},
		{"text: a server line", "/etc/chrony.conf", "# servers\nserver a iburst\n", "# servers\nserver b iburst\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := builder.MachineConfig("old").WithFiles(builder.File(tc.path, tc.old)).Config(t)
			new := builder.MachineConfig("new").WithFiles(builder.FileB64(tc.path, tc.new)).Config(t)
			claims, err := evaluate(e, old, new)
			if err != nil {
				t.Fatal(err)
			}
			var got []engine.Claim
			for _, c := range claims {
				if c.Policy == "kubelet" {
					got = append(got, c)
				}
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("claims (-want +got):\n%s", d)
			}
		})
	}
}

func TestContentOnlyWhenNamed(t *testing.T) {
	for _, tc := range []struct {
		name string
		rego string
		want bool
	}{
		{"defaults only", "", false},
		{"path table", "claims := lib.file_claims({\"/etc/x\": lib.none})\n", false},
		{"change.diff", "claims contains {\"change\": c.id, \"actions\": lib.none} if {\n\tsome c in input.changes\n\tcount(c.diff) > 0\n}\n", true},
		{"object.get", "claims contains {\"change\": c.id, \"actions\": lib.none} if {\n\tsome c in input.changes\n\tobject.get(c, [\"new\", \"data\"], null)\n}\n", true},
		{"a library helper", "claims contains {\"change\": c.id, \"actions\": lib.none} if {\n\tsome c in input.changes\n\tlib.key_changed(c, \"x\")\n}\n", true},
		{"a library rule by a computed name", "claims contains {\"change\": c.id, \"actions\": lib.none} if {\n\tsome c in input.changes\n\tsome name in [\"none\"]\n\tdata.ndp.lib[name]\n}\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var pols []policy.Policy
			if tc.rego != "" {
				pols = append(pols, policytest.Rego("p", 100, "package ndp.policy.p\n\nimport data.ndp.lib\n\n"+tc.rego))
			}
			if got := newEngine(t, pols...).ReadsContent(); got != tc.want {
				t.Errorf("ReadsContent = %t, want %t", got, tc.want)
			}
		})
	}
	e, err := engine.New(context.Background(), []policy.Policy{policy.DefaultPolicy()}, engine.Options{AlwaysContent: true})
	if err != nil || !e.ReadsContent() {
		t.Errorf("AlwaysContent: ReadsContent = %t, %v", e != nil && e.ReadsContent(), err)
	}
}
