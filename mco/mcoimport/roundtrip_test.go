package mcoimport_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/internal/testkit/policytest"
	"github.com/ndp-dev/ndp/mco/mcoimport"
	"github.com/ndp-dev/ndp/mco/mcorules"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/engine"
	"github.com/ndp-dev/ndp/planner/loader"
	"github.com/ndp-dev/ndp/planner/policy"
	"github.com/ndp-dev/ndp/policyset"
)

const exampleFile = "../../examples/machineconfiguration.yaml"

// importExample runs the import of the example MachineConfiguration and
// returns the YAML it prints.
func importExample(t *testing.T, opts mcoimport.Options) (*mcoimport.Source, *mcoimport.Result, []byte) {
	t.Helper()
	data, err := os.ReadFile(exampleFile)
	if err != nil {
		t.Fatal(err)
	}
	src, warnings, err := mcoimport.Read(exampleFile, data)
	if err != nil || len(warnings) > 0 {
		t.Fatalf("reading the example: %v %v", err, warnings)
	}
	res, err := mcoimport.Convert(src, opts)
	if err != nil {
		t.Fatal(err)
	}
	out, err := res.YAML()
	if err != nil {
		t.Fatal(err)
	}
	return src, res, out
}

// mcoOutcome is what the MCO does for one change, in plan terms: the
// actions it runs (Drain taken out, None when nothing), whether it drains
// and whether it reboots.
type mcoOutcome struct {
	actions       string
	drain, reboot bool
}

// The round trip: the example MachineConfiguration (files with and without
// a final "/", nested and sibling paths, units, sshkey, registries.conf
// left to the defaults, entries equal to and overriding them, every
// action type) is imported; the YAML must decode strictly as a
// NodeDisruptionPolicy that the API's rules and the policy checker accept;
// then, for every entry, the plan ndp computes with its defaults and the
// imported policy for a change the entry decides must be what the MCO does.
// The expectations are the MCO's, worked out from its code
// (MergeClusterPolicies, FindClosestFilePolicyPathMatch, the daemon's
// action and drain logic), not from ndp's output, and mcorules (the MCO's
// rules, which agree with its code) checks each: with the defaults of the
// MCO release ndp's defaults follow (ndp's defaults in the MCO's terms: the
// reference MCO's list with their named differences), so that a row checks
// the import, not the defaults; and with the reference MCO's, which decides
// otherwise only where those differences are (reference).
func TestRoundTripMatchesTheMCO(t *testing.T) {
	src, res, out := importExample(t, mcoimport.Options{})
	user := src.Object.Spec.NodeDisruptionPolicy
	earlier, latest := mcorules.MergePoliciesOver(mcoimport.NDPDefaults(), user), mcorules.MergePolicies(user)

	// Strictly a NodeDisruptionPolicy, valid by the API's rules.
	j, err := yaml.YAMLToJSONStrict(out)
	if err != nil {
		t.Fatalf("the output is not YAML: %v\n%s", err, out)
	}
	var ndp v1alpha1.NodeDisruptionPolicy
	if strict, err := kjson.UnmarshalStrict(j, &ndp, kjson.DisallowUnknownFields); err != nil || len(strict) > 0 {
		t.Fatalf("the output is not strictly a NodeDisruptionPolicy: %v %v", err, strict)
	}
	if ndp.Kind != v1alpha1.Kind || ndp.APIVersion != v1alpha1.GroupVersion.String() || ndp.Name != mcoimport.DefaultName || ndp.EffectivePriority() != v1alpha1.UserDefaultPriority {
		t.Errorf("kind, name or priority: %s %s %q %d", ndp.APIVersion, ndp.Kind, ndp.Name, ndp.EffectivePriority())
	}
	apiPolicy := policy.FromAPI("", &ndp, 0, 0)
	if errs := apiPolicy.Validate(); len(errs) > 0 {
		t.Fatalf("the API's rules refuse the imported policy: %v", errs)
	}
	// The check the policy controller and the admission webhook run.
	ctx := context.Background()
	active := policyset.NewActivePolicies(engine.Options{})
	if err := active.Put(ctx, policy.DefaultPolicy()); err != nil {
		t.Fatal(err)
	}
	// No client: the imported policy has no bundle to read.
	checker := &policyset.PolicyChecker{Active: active}
	if _, reason, err := checker.Check(ctx, &ndp); err != nil {
		t.Fatalf("the policy checker refuses the imported policy: %s %v", reason, err)
	}
	// As `ndp plan --policy imported.yaml` reads it.
	pols, err := loader.ParseNodeDisruptionPolicies("imported.yaml", out)
	if err != nil || len(pols) != 1 {
		t.Fatalf("ndp plan cannot read the imported policy: %v", err)
	}
	p := policytest.Planner(t, pols[0])

	// Differences from the MCO known and accepted: their rows are skipped
	// while ndp differs, and pass once it does not.
	divergences := map[string]string{
		"file /etc/nginx": "ndp's lib.path_keys looks a file up as itself and as itself plus \"/\", so the entry /etc/nginx/ claims " +
			"a file at /etc/nginx; in the MCO it does not (a path cannot be both a file and a directory with files beneath it on one node)",
	}
	// What the reference MCO does where one of its defaults differs from
	// ndp's (the rows of the other changes: as the table says).
	reference := map[string]mcoOutcome{
		"file /etc/mco/internal-registry-pull-secret.json": {"Reboot", true, true}, // no default there
	}
	reload := func(s string) string { return "Reload " + s }
	restart := func(s string) string { return "Restart " + s }
	for _, tc := range []struct {
		entry  string // the entry that decides the change in the MCO
		change change
		want   mcoOutcome
		why    string
	}{
		{"files[0]", change{file: "/var/lib/kubelet/config.json"}, mcoOutcome{"None", false, false}, "equal to the default"},
		{"files[1]", change{file: "/etc/crio/policies/openshift-config.json"}, mcoOutcome{reload("crio.service"), false, false},
			"a file beneath /etc/crio/policies, the same as the default"},
		{"files[2]", change{file: "/etc/containers/policy.json"}, mcoOutcome{reload("crio.service"), true, false},
			"the user's Drain, Reload replaces the default Reload (MergeClusterPolicies)"},
		{"files[3]", change{file: "/etc/containers/registries.d/quay.io.yaml"}, mcoOutcome{restart("crio.service"), false, false},
			"/etc/containers/registries.d/ is longer than the default's /etc/containers/registries.d: the user's entry wins"},
		{"files[4]", change{file: "/etc/app/app.conf"}, mcoOutcome{"DaemonReload, " + restart("app.service"), false, false},
			"a file directly beneath /etc/app (no final /)"},
		{"files[4]", change{file: "/etc/app/conf.d/x.conf"}, mcoOutcome{"DaemonReload, " + restart("app.service"), false, false},
			"a file two levels beneath /etc/app"},
		{"files[4]", change{file: "/etc/app"}, mcoOutcome{"DaemonReload, " + restart("app.service"), false, false},
			"the path itself"},
		{"files[5]", change{file: "/etc/app/certs/tls.crt"}, mcoOutcome{restart("app.service"), false, false},
			"/etc/app/certs/ is longer than /etc/app"},
		{"files[5]", change{file: "/etc/app/certs/ca/root.crt"}, mcoOutcome{restart("app.service"), false, false},
			"deeper beneath /etc/app/certs/"},
		{"files[6]", change{file: "/etc/app/feature-flags.json"}, mcoOutcome{"None", false, false}, "an exact path beneath /etc/app"},
		{"files[7]", change{file: "/etc/app/kernel-tuning.conf"}, mcoOutcome{"Reboot", true, true}, "Reboot beneath a directory that does not reboot"},
		{"files[8]", change{file: "/etc/chrony.conf"}, mcoOutcome{restart("chronyd.service"), false, false}, "an exact path"},
		{"files[9]", change{file: "/etc/nginx/nginx.conf"}, mcoOutcome{reload("nginx.service"), false, false}, "beneath /etc/nginx/"},
		{"files[9]", change{file: "/etc/nginx/conf.d/default.conf"}, mcoOutcome{reload("nginx.service"), false, false}, "deeper beneath /etc/nginx/"},
		{"files[10]", change{file: "/etc/security/limits.d/90-app.conf"}, mcoOutcome{"None", true, false}, "Drain alone: drain, then nothing"},
		{"files[11]", change{file: "/etc/modprobe.d/blacklist.conf"}, mcoOutcome{"Reboot", true, true}, "Reboot, as with no entry"},
		{"units[0]", change{unit: "app.service"}, mcoOutcome{"DaemonReload, " + restart("app.service"), false, false}, "a unit by name"},
		{"units[1]", change{unit: "logrotate.timer"}, mcoOutcome{"None", false, false}, "a unit by name"},
		{"units[2]", change{unit: "chronyd.service"}, mcoOutcome{"Reboot", true, true}, "Reboot, as with no entry"},
		{"sshkey", change{sshkey: true}, mcoOutcome{"None", false, false}, "the sshkey policy"},
		{"sshkey", change{password: true}, mcoOutcome{"None", false, false}, "the sshkey policy covers the whole passwd section (diff.passwd)"},
		// What no entry decides: the defaults, the MCO's and ndp's. The
		// MCO's default for registries.conf is Special: reload CRI-O and
		// drain unless the change is safe (pkg/daemon/drain.go
		// isSafeContainerRegistryConfChanges).
		{"", change{file: "/etc/containers/registries.conf", from: registriesBase, to: registriesMirrorAdded},
			mcoOutcome{reload("crio.service"), false, false}, "the default Special, a digest-only mirror added: safe"},
		{"", change{file: "/etc/containers/registries.conf", from: registriesBase, to: registriesMirrorRemoved},
			mcoOutcome{reload("crio.service"), true, false}, "the default Special, a mirror removed: unsafe, drain"},
		{"", change{file: "/etc/mco/internal-registry-pull-secret.json"}, mcoOutcome{"None", false, false}, "the default for the internal registry's pull secret"},
		{"", change{file: "/etc/app2/x"}, mcoOutcome{"Reboot", true, true}, "a sibling of /etc/app: not beneath it"},
		{"", change{file: "/etc/chrony.conf.bak"}, mcoOutcome{"Reboot", true, true}, "a sibling of /etc/chrony.conf"},
		{"", change{file: "/etc/nginx"}, mcoOutcome{"Reboot", true, true},
			"a file at /etc/nginx: IsSubdirectory(\"/etc/nginx/\", \"/etc/nginx\") is false and the paths differ"},
		{"", change{unit: "other.service"}, mcoOutcome{"Reboot", true, true}, "a unit no entry names"},
	} {
		t.Run(fmt.Sprintf("%s %s", tc.change, tc.why), func(t *testing.T) {
			if got := mcoDoes(t, earlier, tc.change); got != tc.want {
				t.Errorf("the MCO with the defaults ndp follows does %+v, the table says %+v", got, tc.want)
			}
			ref, differs := reference[tc.change.String()]
			if !differs {
				ref = tc.want
			}
			if got := mcoDoes(t, latest, tc.change); got != ref {
				t.Errorf("the reference MCO does %+v, the table says %+v", got, ref)
			}
			pl := planOf(t, p, tc.change)
			got := mcoOutcome{planner.FormatActions(pl.Actions), pl.Drain, pl.Reboot}
			if d := divergences[tc.change.String()]; got != tc.want && d != "" {
				t.Skipf("known divergence from the MCO: ndp plans %+v, the MCO does %+v: %s", got, tc.want, d)
			}
			if got != tc.want {
				t.Errorf("ndp plans %+v (%+v), the MCO does %+v", got, pl.Reasons, tc.want)
			}
		})
	}
	// Every entry has a row above.
	rows := map[string]bool{"files[0]": true, "files[1]": true, "files[2]": true, "files[3]": true, "files[4]": true, "files[5]": true,
		"files[6]": true, "files[7]": true, "files[8]": true, "files[9]": true, "files[10]": true, "files[11]": true,
		"units[0]": true, "units[1]": true, "units[2]": true, "sshkey": true}
	var entries []string
	for _, e := range append(append(append([]mcoimport.Entry(nil), res.Imported...), res.Covered...), res.Skipped...) {
		entries = append(entries, strings.TrimPrefix(e.Field, "spec.nodeDisruptionPolicy."))
	}
	sort.Strings(entries)
	if len(entries) != len(rows) {
		t.Errorf("the example has entries %v, the table covers %d", entries, len(rows))
	}
	for _, e := range entries {
		if !rows[e] {
			t.Errorf("entry %s has no row in the table", e)
		}
	}
}

// mcoDoes is what the MCO decides for the change with these policies
// (mcorules), in plan terms.
func mcoDoes(t *testing.T, pols mcorules.Policies, c change) mcoOutcome {
	t.Helper()
	from, to := c.configs(t)
	d, err := mcorules.Decide(mcorules.Input{From: from, To: to, Policies: pols})
	if err != nil || len(d.Refused) > 0 || d.Error != "" {
		t.Fatalf("%s: the MCO decides %v, %v", c, d, err)
	}
	actions, drain, reboot := mcoimport.DecisionPlan(d)
	return mcoOutcome{planner.FormatActions(actions), drain, reboot}
}
