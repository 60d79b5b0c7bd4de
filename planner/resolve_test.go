package planner_test

import (
	"strings"
	"testing"

	operatorv1 "github.com/openshift/api/operator/v1"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/internal/testkit/builder"
	"github.com/ndp-dev/ndp/internal/testkit/policytest"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/policy"
)

func TestSpecificityAndPriority(t *testing.T) {
	old := builder.MachineConfig("old").Config(t)
	for _, tc := range []struct {
		name     string
		pols     []policy.Policy
		path     string
		want     string
		policies []string
	}{
		{"user exact path beats the unclaimed reboot", []policy.Policy{policytest.File("chrony", 100, "/etc/chrony.conf", policy.RestartAction("chronyd.service"))},
			"/etc/chrony.conf", `[{"type":"Restart","restart":{"serviceName":"chronyd.service"}}]`, []string{"chrony"}},
		{"default exact path beats a user directory at higher priority", []policy.Policy{policytest.File("etc", 500, "/etc/containers/", policytest.None)},
			"/etc/containers/policy.json", `[{"type":"Reload","reload":{"serviceName":"crio.service"}}]`, []string{"default"}},
		{"longer directory beats shorter", []policy.Policy{policytest.File("a", 100, "/etc/", policytest.Reboot), policytest.File("b", 100, "/etc/app/", policytest.None)},
			"/etc/app/x.conf", `[{"type":"None"}]`, []string{"b"}},
		{"directory matches only on a path boundary", []policy.Policy{policytest.File("a", 100, "/etc/app/", policytest.None)},
			"/etc/application.conf", `[{"type":"Reboot"}]`, []string{planner.NoPolicy}},
		{"higher priority wins an equally specific tie", []policy.Policy{policytest.File("user", 100, "/var/lib/kubelet/config.json", policy.RestartAction("kubelet.service"))},
			"/var/lib/kubelet/config.json", `[{"type":"Restart","restart":{"serviceName":"kubelet.service"}}]`, []string{"user"}},
		{"equal priority ties keep every policy's actions", []policy.Policy{
			policytest.File("b", 100, "/etc/x", policy.RestartAction("b.service")),
			policytest.File("a", 100, "/etc/x", policy.RestartAction("a.service"))},
			"/etc/x", `[{"type":"Restart","restart":{"serviceName":"a.service"}},{"type":"Restart","restart":{"serviceName":"b.service"}}]`, []string{"a", "b"}},
		// The MCO's FindClosestFilePolicyPathMatch: a path covers itself and
		// everything beneath it, with or without a final "/".
		{"a path without a final / claims what is beneath it", []policy.Policy{policytest.File("app", 100, "/etc/app", policy.ReloadAction("app.service"))},
			"/etc/app/conf.d/x.conf", `[{"type":"Reload","reload":{"serviceName":"app.service"}}]`, []string{"app"}},
		{"a path with a final / claims the path itself", []policy.Policy{policytest.File("app", 100, "/etc/app/", policy.ReloadAction("app.service"))},
			"/etc/app", `[{"type":"Reload","reload":{"serviceName":"app.service"}}]`, []string{"app"}},
		{"a path without / never claims a sibling", []policy.Policy{policytest.File("app", 100, "/etc/app", policytest.None)},
			"/etc/app2/x", `[{"type":"Reboot"}]`, []string{planner.NoPolicy}},
		{"a nested path is more specific than its parent, whatever the priorities", []policy.Policy{
			policytest.File("app", 900, "/etc/app", policytest.Reboot), policytest.File("confd", 100, "/etc/app/conf.d", policytest.None)},
			"/etc/app/conf.d/x.conf", `[{"type":"None"}]`, []string{"confd"}},
		{"the nested path with / against the parent without", []policy.Policy{
			policytest.File("app", 100, "/etc/app", policytest.None), policytest.File("confd", 100, "/etc/app/conf.d/", policy.RestartAction("app.service"))},
			"/etc/app/conf.d/x.conf", `[{"type":"Restart","restart":{"serviceName":"app.service"}}]`, []string{"confd"}},
		{"the parent still claims files beside the nested path", []policy.Policy{
			policytest.File("app", 100, "/etc/app", policytest.None), policytest.File("confd", 100, "/etc/app/conf.d", policytest.Reboot)},
			"/etc/app/main.conf", `[{"type":"None"}]`, []string{"app"}},
		{"with and without / tie, and the tie goes to the higher priority", []policy.Policy{
			policytest.File("slash", 100, "/etc/app/", policy.RestartAction("a.service")), policytest.File("plain", 200, "/etc/app", policy.RestartAction("b.service"))},
			"/etc/app/x", `[{"type":"Restart","restart":{"serviceName":"b.service"}}]`, []string{"plain"}},
		{"with and without / at equal priority both apply", []policy.Policy{
			policytest.File("slash", 100, "/etc/app/", policy.RestartAction("a.service")), policytest.File("plain", 100, "/etc/app", policy.RestartAction("b.service"))},
			"/etc/app/x", `[{"type":"Restart","restart":{"serviceName":"b.service"}},{"type":"Restart","restart":{"serviceName":"a.service"}}]`, []string{"plain", "slash"}},
		{"a default directory written with / also claims its own path", nil,
			"/etc/nmstate/openshift", `[{"type":"None"}]`, []string{"default"}},
		{"a Rego match without / is a directory claim", []policy.Policy{policytest.Rego("app", 100, `package ndp.policy.app

import data.ndp.lib

claims contains {"change": c.id, "match": "/etc/app", "actions": [lib.reload("app.service")]} if {
	some c in lib.file_changes
	startswith(c.path, "/etc/app/")
}
`), policytest.File("etc", 100, "/etc", policytest.None), policytest.File("confd", 100, "/etc/app/conf.d", policytest.Reboot)},
			"/etc/app/x.conf", `[{"type":"Reload","reload":{"serviceName":"app.service"}}]`, []string{"app"}},
		{"a Rego claim competes like a declarative one", []policy.Policy{policytest.Rego("etc", 300, `package ndp.policy.etc

import data.ndp.lib

claims contains {"change": c.id, "match": "/etc/", "actions": [lib.reload("x.service")]} if {
	some c in lib.file_changes
	"/etc/" in c.dirs
}
`), policytest.File("app", 100, "/etc/app/", policytest.None)},
			"/etc/other.conf", `[{"type":"Reload","reload":{"serviceName":"x.service"}}]`, []string{"etc"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := policytest.Planner(t, tc.pols...)
			got := plan(t, p, old, builder.MachineConfig("new").WithFiles(builder.File(tc.path, "x")).Config(t))
			if s := actionsString(got.Actions); s != tc.want {
				t.Errorf("actions = %s, want %s", s, tc.want)
			}
			var policies []string
			for _, r := range got.Reasons {
				policies = append(policies, r.Policy)
			}
			if strings.Join(policies, ",") != strings.Join(tc.policies, ",") {
				t.Errorf("deciding policies = %v, want %v", policies, tc.policies)
			}
		})
	}
}

func TestPlanCombinesChangesInOrder(t *testing.T) {
	p := policytest.Planner(t, policy.Policy{Name: "units", Priority: 100, Units: []operatorv1.NodeDisruptionPolicySpecUnit{
		{Name: "app.service", Actions: []policy.Action{policytest.DaemonReload, policy.RestartAction("app.service")}}}})
	old := builder.MachineConfig("old").WithFiles(builder.File("/etc/containers/policy.json", "{}")).Config(t)
	new := builder.MachineConfig("new").WithFiles(
		builder.File("/etc/containers/policy.json", `{"default":[]}`),
		builder.File("/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt", "cert"),
		builder.File("/var/lib/kubelet/config.json", "{}"),
	).WithUnit("app.service", "[Service]\n").Config(t)
	got := plan(t, p, old, new)
	// Changes in order (files by path, then units); the DaemonReload moves
	// before every Reload and Restart.
	want := `[{"type":"DaemonReload"},{"type":"Reload","reload":{"serviceName":"crio.service"}},{"type":"Restart","restart":{"serviceName":"coreos-update-ca-trust.service"}},{"type":"Restart","restart":{"serviceName":"crio.service"}},{"type":"Restart","restart":{"serviceName":"app.service"}}]`
	if s := actionsString(got.Actions); s != want || got.Drain || got.Reboot {
		t.Errorf("actions = %s drain=%t reboot=%t\nwant %s", s, got.Drain, got.Reboot, want)
	}
	if len(got.Reasons) != 4 {
		t.Errorf("want one reason per change, got %+v", got.Reasons)
	}
	// The same change plans the same, to the hash; what the plan controller
	// stores, a node daemon verifies with the API types alone.
	for i := 0; i < 20; i++ {
		if again := plan(t, p, old, new); again.PlanHash != got.PlanHash || actionsString(again.Actions) != actionsString(got.Actions) {
			t.Fatalf("plan %d differs: %+v vs %+v", i, again, got)
		}
	}
	stored := got.PostConfigActions()
	if err := stored.Verify(got.To); err != nil {
		t.Fatalf("stored plan does not verify: %v", err)
	}
	if s := planner.FormatActions(ndpmcv1.NodeDisruptionPolicyActions(stored.Actions)); s != planner.FormatActions(got.Actions) {
		t.Errorf("stored actions %q, planned %q", s, planner.FormatActions(got.Actions))
	}
}

func TestNormalize(t *testing.T) {
	restartA, reloadA := policy.RestartAction("a.service"), policy.ReloadAction("a.service")
	for _, tc := range []struct {
		name               string
		in                 []policy.Action
		singleNode         bool
		want               string
		wantDrain, wantReb bool
	}{
		{"nothing", nil, false, `[{"type":"None"}]`, false, false},
		{"None dropped beside others", []policy.Action{policytest.None, restartA}, false, `[{"type":"Restart","restart":{"serviceName":"a.service"}}]`, false, false},
		{"Reboot absorbs everything", []policy.Action{restartA, policytest.Reboot, policytest.None}, false, `[{"type":"Reboot"}]`, true, true},
		{"Drain becomes the flag", []policy.Action{reloadA, policytest.Drain}, false, `[{"type":"Reload","reload":{"serviceName":"a.service"}}]`, true, false},
		{"only a drain", []policy.Action{policytest.Drain}, false, `[{"type":"None"}]`, true, false},
		{"duplicates keep the first", []policy.Action{restartA, reloadA, restartA}, false, `[{"type":"Restart","restart":{"serviceName":"a.service"}},{"type":"Reload","reload":{"serviceName":"a.service"}}]`, false, false},
		{"DaemonReload before services", []policy.Action{restartA, policytest.DaemonReload}, false, `[{"type":"DaemonReload"},{"type":"Restart","restart":{"serviceName":"a.service"}}]`, false, false},
		{"single node never drains", []policy.Action{policytest.Reboot}, true, `[{"type":"Reboot"}]`, false, true},
		{"PackageUpdate first", []policy.Action{restartA, policytest.PackageUpdate, policytest.None}, false, `[{"type":"PackageUpdate"},{"type":"Restart","restart":{"serviceName":"a.service"}}]`, false, false},
		{"PackageUpdate alone", []policy.Action{policytest.PackageUpdate, policytest.PackageUpdate}, false, `[{"type":"PackageUpdate"}]`, false, false},
		{"Reboot keeps the PackageUpdate before it", []policy.Action{restartA, policytest.Reboot, policytest.PackageUpdate}, false, `[{"type":"PackageUpdate"},{"type":"Reboot"}]`, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, drain, reb := planner.Normalize(tc.in, tc.singleNode)
			if s := actionsString(got); s != tc.want || drain != tc.wantDrain || reb != tc.wantReb {
				t.Errorf("Normalize = %s drain=%t reboot=%t; want %s drain=%t reboot=%t", s, drain, reb, tc.want, tc.wantDrain, tc.wantReb)
			}
		})
	}
}
