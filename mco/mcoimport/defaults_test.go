package mcoimport_test

import (
	"strings"
	"testing"

	"github.com/ndp-dev/ndp/internal/testkit/policytest"
	"github.com/ndp-dev/ndp/mco/mcoimport"
	"github.com/ndp-dev/ndp/planner"
)

// TestDefaultsTableIsTheDefaultPolicy checks the importer's table of ndp's
// defaults against the embedded default policy itself: a change of each
// path (and, for a directory, of a file beneath it) is planned with the
// defaults alone, and gets the table's actions. Special is the registries
// rule: a reload, after a drain when the change is unsafe.
func TestDefaultsTableIsTheDefaultPolicy(t *testing.T) {
	p := policytest.Planner(t)
	for _, d := range mcoimport.DefaultFiles() {
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
		paths := []string{d.Path}
		if strings.HasSuffix(d.Path, "/") {
			paths = []string{d.Path + "x.conf", d.Path + "sub/dir/y.json"}
		}
		for _, path := range paths {
			pl := planOf(t, p, change{file: path})
			if planner.FormatActions(pl.Actions) != planner.FormatActions(want) || pl.Drain != wantDrain || pl.Reboot != wantReboot {
				t.Errorf("%s: the default policy plans %s (drain %t), the table says %s", path, planner.FormatActions(pl.Actions), pl.Drain, planner.FormatActions(d.Actions))
			}
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
}
