package mcoimport_test

import (
	"strings"
	"testing"

	"github.com/ndp-dev/ndp/mco/mcoimport"
)

// Special is the MCO's own action for registries.conf. Its API refuses it in
// spec, but it is what status.nodeDisruptionPolicyStatus shows for that
// file, so an object pieced together from the status may carry it: on
// registries.conf alone it is ndp's default registries rule (covered, never
// imported); anywhere else, or with other actions, it is refused, naming the
// field and the line.
func TestSpecial(t *testing.T) {
	const head = "apiVersion: operator.openshift.io/v1\nkind: MachineConfiguration\nmetadata: {name: cluster}\nspec:\n  nodeDisruptionPolicy:\n"
	for _, tc := range []struct {
		name, policy string
		covered      string // the covered entry's note, when accepted
		err          string // the error, when refused
	}{
		{"on registries.conf", "    files:\n    - path: /etc/containers/registries.conf\n      actions: [{type: Special}]\n",
			"Special is the MCO's own registries.conf logic, which ndp's default registries rule reproduces", ""},
		{"on another file", "    files:\n    - path: /etc/chrony.conf\n      actions: [{type: Special}]\n",
			"", `spec.nodeDisruptionPolicy.files[0].actions[0].type: line 8: Special is the MCO's internal action`},
		{"with other actions", "    files:\n    - path: /etc/containers/registries.conf\n      actions: [{type: Drain}, {type: Special}]\n",
			"", `spec.nodeDisruptionPolicy.files[0].actions[1].type: line 8: Special cannot be combined with other actions`},
		{"on a unit", "    units:\n    - name: crio.service\n      actions: [{type: Special}]\n",
			"", `spec.nodeDisruptionPolicy.units[0].actions[0].type: line 8: Special is the MCO's internal action`},
		{"on sshkey", "    sshkey:\n      actions: [{type: Special}]\n",
			"", `spec.nodeDisruptionPolicy.sshkey.actions[0].type: line 7: Special is the MCO's internal action`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, _, err := mcoimport.Read("mc.yaml", []byte(head+tc.policy))
			if err != nil {
				t.Fatal(err)
			}
			res, err := mcoimport.Convert(src, mcoimport.Options{})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Policy != nil || len(res.Imported) != 0 || len(res.Covered) != 1 || res.Covered[0].Note != tc.covered {
				t.Errorf("policy %v, imported %v, covered %+v", res.Policy, res.Imported, res.Covered)
			}
		})
	}
}
