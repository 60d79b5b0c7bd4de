package planner_test

import (
	"strings"
	"testing"

	"github.com/ndp-dev/ndp/internal/testkit/policytest"
	"github.com/ndp-dev/ndp/planner"
)

// The probe's file changes carry contents: a policy whose rules fail only
// on what it reads inside a file is refused before it is active.
func TestProbeReadsContents(t *testing.T) {
	const head = "package ndp.policy.p\n\nimport data.ndp.lib\n\nclaims contains {\"change\": c.id, \"actions\": lib.none} if {\n\tsome c in lib.file_changes\n"
	for _, tc := range []struct {
		name, body string
		fails      bool
	}{
		{"data at a path the policy names", "\tc.path == \"/etc/kubernetes/kubelet.conf\"\n\tto_number(c.new.data.probe) > 0\n}\n", true},
		{"a diff's values", "\tsome d in c.diff\n\tto_number(d.new) > 0\n}\n", true},
		{"added lines", "\tsome l in lib.added_lines(c)\n\tto_number(l) > 0\n}\n", true},
		{"only keys changed", "\tc.path == \"/etc/kubernetes/kubelet.conf\"\n\tlib.only_keys_changed(c, {\"maxPods\"})\n}\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := planner.CheckPolicy(policytest.Rego("p", 100, head+tc.body))
			if (err != nil) != tc.fails {
				t.Errorf("CheckPolicy: %v, want failure %t", err, tc.fails)
			}
			if err != nil && !strings.Contains(err.Error(), "to_number") {
				t.Errorf("error %q does not name the builtin", err)
			}
		})
	}
}
