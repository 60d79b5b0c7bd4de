package layout

import (
	"slices"
	"strings"
	"testing"
)

// within: pkg is the module's path rel or a package below it.
func within(pkg, rel string) bool {
	return pkg == module+rel || strings.HasPrefix(pkg, module+rel+"/")
}

// The executor's controllers and the advisor's stand apart: neither links
// the other, what both use (the policy controller, the pool event helpers)
// links neither, and only the wiring (controllers), the commands and the
// tests link a mode's package.
func TestModesStandApart(t *testing.T) {
	modes := []string{"controllers/executor", "controllers/advisor"}
	shared := []string{"controllers/nodedisruptionpolicy", "controllers/poolevents"}
	seen := 0
	for pkg, pkgDeps := range allDeps(t) {
		for _, mode := range modes {
			if !slices.ContainsFunc(pkgDeps, func(d string) bool { return within(d, mode) }) {
				continue
			}
			seen++
			switch {
			case within(pkg, "controllers/executor") || within(pkg, "controllers/advisor"):
				t.Errorf("%s links %s: the two modes' controllers stand apart", pkg, mode)
			case slices.ContainsFunc(shared, func(s string) bool { return within(pkg, s) }):
				t.Errorf("%s links %s: what both modes share stands below both", pkg, mode)
			case pkg != module+"controllers" && !within(pkg, "cmd") && !within(pkg, "test"):
				t.Errorf("%s links %s: only the wiring (controllers), the commands and the tests may", pkg, mode)
			}
		}
	}
	if seen < 2 {
		t.Fatalf("%d packages link a mode's controllers: not a real dependency list", seen)
	}
}

// The Machine Config Operator's knowledge has one home: every package named
// for the MCO is under mco/, and what is under mco/ stands below the
// controllers, the webhook, the daemon, ndp diff and the commands, so that
// all of them can use it.
func TestMCOKnowledgeHasOneHome(t *testing.T) {
	above := []string{"controllers", "webhook", "daemon", "clusterdiff", "cmd"}
	home := 0
	for pkg, pkgDeps := range allDeps(t) {
		rel := strings.TrimPrefix(pkg, module)
		last := rel[strings.LastIndex(rel, "/")+1:]
		// internal/mcoref only finds the MCO's reference tools for tests.
		if strings.HasPrefix(last, "mco") && !within(pkg, "mco") && !within(pkg, "test") && !within(pkg, "internal") {
			t.Errorf("%s is named for the MCO but lives outside mco/", pkg)
		}
		if !within(pkg, "mco") {
			continue
		}
		home++
		for _, d := range pkgDeps {
			for _, a := range above {
				if within(d, a) {
					t.Errorf("%s links %s: the MCO's home stands below %s", pkg, d, a)
				}
			}
		}
	}
	if home < 5 {
		t.Fatalf("%d packages under mco/: not the MCO's home", home)
	}
}
