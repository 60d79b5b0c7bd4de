package mcoimport_test

import (
	"context"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/ndp-dev/ndp/internal/testkit/policytest"
	"github.com/ndp-dev/ndp/mco/mcoimport"
	"github.com/ndp-dev/ndp/mco/mcorules"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/changeset"
	"github.com/ndp-dev/ndp/policies"
)

// TestNDPDefaultsAreTheDefaultPolicy checks the importer's table of ndp's
// defaults against the embedded default policy itself: a change of each
// path and of a file beneath it is planned with the defaults alone, and
// gets the table's actions (Special is the registries rule: a reload,
// after a drain when the change is unsafe); and every path of the default
// policy's table is in the importer's.
func TestNDPDefaultsAreTheDefaultPolicy(t *testing.T) {
	p := policytest.Planner(t)
	var keys []string
	for _, d := range mcoimport.DefaultFiles() {
		keys = append(keys, changeset.PathKey(d.Path))
		if d.Path == mcoimport.RegistriesConf {
			if len(d.Actions) != 1 || d.Actions[0].Type != mcoimport.SpecialAction {
				t.Errorf("registries.conf: the table says %s, want Special", planner.FormatActions(d.Actions))
			}
			for _, c := range []struct {
				to    string
				drain bool
			}{{registriesMirrorAdded, false}, {registriesMirrorRemoved, true}} {
				pl := planOf(t, p, change{file: d.Path, from: registriesBase, to: c.to})
				if got := planner.FormatActions(pl.Actions); got != "Reload crio.service" || pl.Drain != c.drain {
					t.Errorf("registries.conf change: %s, drain %t; want Reload crio.service, drain %t", got, pl.Drain, c.drain)
				}
			}
			continue
		}
		want, wantDrain, wantReboot := planner.Normalize(d.Actions, false)
		// A path covers itself and everything beneath it (changeset.Covers),
		// as the importer assumes.
		for _, path := range []string{d.Path, d.Path + "/x.conf", d.Path + "/sub/dir/y.json"} {
			pl := planOf(t, p, change{file: path})
			if planner.FormatActions(pl.Actions) != planner.FormatActions(want) || pl.Drain != wantDrain || pl.Reboot != wantReboot {
				t.Errorf("%s: the default policy plans %s (drain %t), the table says %s", path, planner.FormatActions(pl.Actions), pl.Drain, planner.FormatActions(d.Actions))
			}
		}
	}
	for _, path := range defaultPolicyPaths(t) {
		if !slices.Contains(keys, changeset.PathKey(path)) {
			t.Errorf("the default policy has a rule for %s, the importer's table of ndp's defaults has none", path)
		}
	}
	for _, c := range []struct {
		change change
		want   string
	}{
		{change{file: "/etc/not-a-default.conf"}, "Reboot"},
		{change{unit: "foo.service"}, "Reboot"},
		{change{sshkey: true}, "None"},
		{change{password: true}, "None"},
	} {
		if got := planner.FormatActions(planOf(t, p, c.change).Actions); got != c.want {
			t.Errorf("%s: the default policy plans %s, the importer assumes %s", c.change, got, c.want)
		}
	}
	if u := mcoimport.NDPDefaults().Units; len(u) != 0 {
		t.Errorf("ndp's defaults have unit rules %v: ndp's default policy has none", u)
	}
}

// TestNDPDefaultsDiffer: ndp's defaults are the reference MCO's
// (mcorules.Defaults) but for the differences they name, each of which is
// real on both sides: the MCO-only defaults are the MCO's and reboot under
// ndp's default policy; the ndp-only ones are not the MCO's.
func TestNDPDefaultsDiffer(t *testing.T) {
	mco, ndp := mcorules.Defaults(), mcoimport.NDPDefaults()
	paths := func(p mcorules.Policies) []string {
		var out []string
		for _, f := range p.Files {
			out = append(out, f.Path)
		}
		return out
	}
	p := policytest.Planner(t)
	for _, path := range mcoimport.MCOOnlyFiles {
		if !slices.Contains(paths(mco), path) || slices.Contains(paths(ndp), path) {
			t.Errorf("%s: named as the MCO's default only, but the MCO's list has it %t, ndp's %t", path, slices.Contains(paths(mco), path), slices.Contains(paths(ndp), path))
		}
		if got := planOf(t, p, change{file: path}); !got.Reboot {
			t.Errorf("%s: named as not in ndp's default policy, which plans %s for it", path, planner.FormatActions(got.Actions))
		}
	}
	for _, u := range mcoimport.MCOOnlyUnits {
		if _, ok := mcorules.UnitPolicy(u, mco); !ok {
			t.Errorf("unit %s: named as the MCO's default only, but the MCO has no default for it", u)
		}
		if got := planOf(t, p, change{unit: u}); !got.Reboot {
			t.Errorf("unit %s: named as not in ndp's default policy, which plans %s for it", u, planner.FormatActions(got.Actions))
		}
	}
	for _, path := range mcoimport.NDPOnlyFiles() {
		if slices.Contains(paths(mco), path) || !slices.Contains(paths(ndp), path) {
			t.Errorf("%s: named as ndp's default only, but the MCO's list has it %t, ndp's %t", path, slices.Contains(paths(mco), path), slices.Contains(paths(ndp), path))
		}
	}
	// Nothing else differs.
	rest := slices.DeleteFunc(paths(mco), func(p string) bool { return slices.Contains(mcoimport.MCOOnlyFiles, p) })
	if got := slices.DeleteFunc(paths(ndp), func(p string) bool { return slices.Contains(mcoimport.NDPOnlyFiles(), p) }); !slices.Equal(got, rest) {
		t.Errorf("beyond the named differences, ndp's defaults have %q, the MCO's %q", got, rest)
	}
}

// defaultPolicyPaths are the paths of the default policy's files table
// (data.ndp.policy.defaults.files), read from the embedded Rego.
func defaultPolicyPaths(t *testing.T) []string {
	t.Helper()
	opts := []func(*rego.Rego){rego.Query("data.ndp.policy.defaults.files")}
	for _, dir := range []string{policies.LibraryDir, policies.DefaultDir} {
		names, err := fs.Glob(policies.FS, dir+"/*.rego")
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if strings.HasSuffix(n, "_test.rego") {
				continue
			}
			src, err := fs.ReadFile(policies.FS, n)
			if err != nil {
				t.Fatal(err)
			}
			opts = append(opts, rego.Module(n, string(src)))
		}
	}
	rs, err := rego.New(opts...).Eval(context.Background())
	if err != nil || len(rs) != 1 || len(rs[0].Expressions) != 1 {
		t.Fatalf("evaluating the default policy's files: %v %v", rs, err)
	}
	table, ok := rs[0].Expressions[0].Value.(map[string]any)
	if !ok || len(table) == 0 {
		t.Fatalf("the default policy's files are %v, want a table of paths", rs[0].Expressions[0].Value)
	}
	var out []string
	for path := range table {
		out = append(out, path)
	}
	slices.Sort(out)
	return out
}
