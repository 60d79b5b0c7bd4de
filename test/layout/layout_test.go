// Package layout checks the import rule of docs/design.md#the-import-rule
// with `go list`: the node daemon, render, the parsers (machineconfig,
// registries, nodeconfig) and the MCO's rules link no policy engine, only
// the planner's stages and policyset import OPA, controllers, webhook and
// daemon are siblings that import none of one another, and mcorules stands
// on the first level alone.
package layout

import (
	"os/exec"
	"slices"
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

// standsOn checks that pattern links none of the module's packages but
// allowed (paths in the module, each with the packages below it), why
// saying the rule, and returns every package it links. Fewer than min of
// the module's packages is not a real dependency list.
func standsOn(t *testing.T, pattern, why string, min int, allowed ...string) []string {
	t.Helper()
	all := deps(t, pattern)
	own := 0
	for _, p := range all {
		if !strings.HasPrefix(p, module) {
			continue
		}
		own++
		if !slices.ContainsFunc(allowed, func(a string) bool { return within(p, a) }) {
			t.Errorf("%s imports %s: %s", pattern, p, why)
		}
	}
	if own < min {
		t.Fatalf("go list gave %d of ndp's packages for %s: not a real dependency list", own, pattern)
	}
	return all
}

// allDeps is every package of the module (tests left out) with what it
// links, by import path.
func allDeps(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-test=false", "-f", "{{.ImportPath}} {{join .Deps \" \"}}", "./...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go list: %v\n%s", err, stderr)
	}
	all := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			all[f[0]] = f[1:]
		}
	}
	if len(all) < 40 {
		t.Fatalf("go list gave %d packages: not the module's list", len(all))
	}
	return all
}

func TestDaemonLinksNoPolicyEngine(t *testing.T) {
	all := deps(t, "./cmd/ndp-daemon")
	if len(all) < 50 {
		t.Fatalf("go list gave %d packages: not a real dependency list", len(all))
	}
	for _, p := range all {
		if p == module+"planner" || strings.HasPrefix(p, module+"planner/") || p == module+"policyset" || p == module+"policies" {
			t.Errorf("ndp-daemon links %s", p)
		}
	}
}

// opaFree are the packages that must name a parsed config, render a pool or
// run a node without linking OPA: everything below the policy engine that
// the daemon, render and the controllers' config cache stand on.
var opaFree = []string{
	"./cmd/ndp-daemon", "./daemon/...", "./render/...", "./machineconfig/...", "./registries/...", "./nodeconfig/...",
	"./apis/...", "./planner/changeset", "./webhook/certs", "./mco/mcorules/...",
}

// opaLinkers are the planner's stages and the active policy set: a package
// that links OPA is one of them or stands above one of them.
var opaLinkers = []string{
	"planner", "planner/sandbox", "planner/policy", "planner/engine", "planner/loader",
	"policyset",
}

func TestOnlyThePlannerLinksOPA(t *testing.T) {
	for _, p := range deps(t, opaFree...) {
		if strings.HasPrefix(p, "github.com/open-policy-agent/opa") {
			t.Errorf("%s links %s: render, the daemon and the config parser must not link the policy engine", strings.Join(opaFree, " "), p)
			break
		}
	}
	linkers := map[string]bool{}
	for _, p := range opaLinkers {
		linkers[module+p] = true
	}
	linking := 0
	for pkg, pkgDeps := range allDeps(t) {
		opa, above := false, linkers[pkg]
		for _, d := range pkgDeps {
			opa = opa || strings.HasPrefix(d, "github.com/open-policy-agent/opa")
			above = above || linkers[d]
		}
		if opa {
			linking++
			if !above {
				t.Errorf("%s links OPA without the planner or policyset: only they and what stands above them may", pkg)
			}
		}
	}
	if linking < len(opaLinkers) {
		t.Fatalf("only %d packages link OPA: not a real dependency list", linking)
	}
}

func TestSiblingsImportNoneOfOneAnother(t *testing.T) {
	siblings := []string{"controllers", "webhook", "daemon"}
	for _, s := range siblings {
		for _, p := range deps(t, "./"+s+"/...") {
			for _, other := range siblings {
				if other != s && within(p, other) {
					t.Errorf("%s imports %s (through its dependencies)", s, p)
				}
			}
		}
	}
}

// clusterdiff (ndp diff) stands beside mcoimport, on what the controllers
// and the webhook stand on: never on one of them, so that the CLI's diff
// and the cluster's previews share the render and the rules, not each
// other's wiring.
func TestClusterDiffStandsOnTheSharedParts(t *testing.T) {
	for _, p := range deps(t, "./clusterdiff/...") {
		for _, above := range []string{"controllers", "webhook", "daemon", "cmd"} {
			if within(p, above) {
				t.Errorf("clusterdiff imports %s (through its dependencies)", p)
			}
		}
	}
}

// levelOne are the packages of the import rule's first level: mcorules,
// the MCO's decision, stands on them alone, so the CLI, the webhook and the
// forecast controller can all call it and it can never reach ndp's planner.
var levelOne = []string{"apis", "policies", "manifests/crds", "machineconfig", "registries", "nodeconfig", "mco/mcoguard", "mco/mcorules"}

func TestMCORulesStaysAtLevelOne(t *testing.T) {
	standsOn(t, "./mco/mcorules/...", "above the first level of the import rule", 2, levelOne...)
}

// TestRolloutControlIsPure: the rollout policy's decisions stand on the
// APIs alone (the second level), so that the rollout controller, the
// webhook's preview and `ndp status` can all call them, and hold no client:
// the gates are evaluated by the caller.
func TestRolloutControlIsPure(t *testing.T) {
	for _, p := range standsOn(t, "./rolloutcontrol", "it stands on apis alone", 3, "rolloutcontrol", "apis") {
		if strings.HasPrefix(p, "sigs.k8s.io/controller-runtime") || strings.HasPrefix(p, "k8s.io/client-go") || strings.HasPrefix(p, "github.com/prometheus/client_golang") {
			t.Errorf("rolloutcontrol links %s: it takes evaluated gates, and holds no client", p)
		}
	}
}

// TestRolloutGatesBelowTheControllers: the package that asks Prometheus,
// Alertmanager and the cache for a rollout policy's gates stands at the
// third level, on apis and rolloutcontrol alone (like render), so the
// controllers, the CLI and the preview can share it and it links no OPA.
func TestRolloutGatesBelowTheControllers(t *testing.T) {
	for _, p := range standsOn(t, "./rolloutgates", "it stands on apis and rolloutcontrol alone", 4, "rolloutgates", "rolloutcontrol", "apis") {
		if strings.HasPrefix(p, "github.com/open-policy-agent/opa") {
			t.Errorf("rolloutgates links %s: it evaluates gates, not policies", p)
		}
	}
}

// TestAlertSilenceBelowTheControllers: the node silences' decisions and
// Alertmanager calls stand at the third level, on apis and rolloutgates
// (its HTTP client), so the controllers use them and they use none of the
// controllers; like the gates, they link no OPA.
func TestAlertSilenceBelowTheControllers(t *testing.T) {
	for _, p := range standsOn(t, "./alertsilence", "it stands on apis and rolloutgates alone", 4, "alertsilence", "rolloutgates", "rolloutcontrol", "apis") {
		if strings.HasPrefix(p, "github.com/open-policy-agent/opa") {
			t.Errorf("alertsilence links %s: it silences nodes, it evaluates no policy", p)
		}
	}
}

// TestWebhookModesApart: the webhook's answers of the executor and of the
// advisor import none of each other's, and what both modes' handlers
// stand on (preview, nodedisruptionpolicy) imports neither, so that the
// tree says which code answers in which mode; package webhook, the wiring,
// stands above them all.
func TestWebhookModesApart(t *testing.T) {
	executor, advisor := "webhook/executor", "webhook/advisor"
	for pkgs, banned := range map[string][]string{
		"./" + executor + "/...":             {advisor},
		"./" + advisor + "/...":              {executor},
		"./webhook/preview/...":              {executor, advisor},
		"./webhook/nodedisruptionpolicy/...": {executor, advisor},
	} {
		shared := false
		for _, p := range deps(t, pkgs) {
			shared = shared || p == module+"webhook/preview"
			for _, b := range banned {
				if within(p, b) {
					t.Errorf("%s imports %s (through its dependencies)", pkgs, p)
				}
			}
		}
		if !shared {
			t.Fatalf("go list gave no webhook/preview for %s: not a real dependency list", pkgs)
		}
	}
}

// TestOSUpdatersStandAlone: the OS updaters run on the node for the daemon
// and decide nothing of a plan: they link no policy engine, no Kubernetes
// client and nothing else of ndp, so that what they may do is what their
// own package says.
func TestOSUpdatersStandAlone(t *testing.T) {
	ds := deps(t, "./osupdate")
	if len(ds) < 10 {
		t.Fatalf("osupdate has %d dependencies: not a real dependency list", len(ds))
	}
	for _, p := range ds {
		if strings.HasPrefix(p, "github.com/open-policy-agent/opa") || strings.HasPrefix(p, "k8s.io/") || strings.HasPrefix(p, "sigs.k8s.io/") ||
			(strings.HasPrefix(p, module) && p != module+"osupdate") {
			t.Errorf("osupdate links %s", p)
		}
	}
}
