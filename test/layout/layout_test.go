// Package layout checks the import rule of docs/design.md#the-import-rule with `go list -deps`:
// the node daemon links no policy engine, and controllers, webhook and
// daemon are siblings that import none of one another.
package layout

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/ndp-dev/ndp/"

func deps(t *testing.T, pkgs ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-deps"}, pkgs...)...)
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", strings.Join(pkgs, " "), err)
	}
	return strings.Fields(string(out))
}

func TestDaemonLinksNoPolicyEngine(t *testing.T) {
	all := deps(t, "./cmd/ndp-daemon")
	if len(all) < 50 {
		t.Fatalf("go list gave %d packages: not a real dependency list", len(all))
	}
	for _, p := range all {
		if strings.HasPrefix(p, "github.com/open-policy-agent/opa") {
			t.Errorf("ndp-daemon links %s: the daemon must never evaluate a policy", p)
		}
		if p == module+"planner" || p == module+"policyset" || p == module+"policies" {
			t.Errorf("ndp-daemon links %s", p)
		}
	}
}

func TestSiblingsImportNoneOfOneAnother(t *testing.T) {
	siblings := []string{"controllers", "webhook", "daemon"}
	for _, s := range siblings {
		for _, p := range deps(t, "./"+s+"/...") {
			for _, other := range siblings {
				if other != s && (p == module+other || strings.HasPrefix(p, module+other+"/")) {
					t.Errorf("%s imports %s (through its dependencies)", s, p)
				}
			}
		}
	}
}
