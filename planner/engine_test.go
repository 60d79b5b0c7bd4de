package planner_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"

	operatorv1 "github.com/openshift/api/operator/v1"

	"github.com/ndp-dev/ndp/internal/testkit/builder"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/engine"
	"github.com/ndp-dev/ndp/planner/policy"
)

func filePolicy(name string, priority int32, path string, actions ...policy.Action) policy.Policy {
	return policy.Policy{Name: name, Priority: priority, Origin: name + ".yaml", Files: []operatorv1.NodeDisruptionPolicySpecFile{{Path: path, Actions: actions}}}
}

func regoPolicy(name string, priority int32, src string) policy.Policy {
	return policy.Policy{Name: name, Priority: priority, Origin: name + ".rego", Modules: []policy.Module{{Filename: name + ".rego", Source: src}}}
}

var (
	none    = policy.Action{Type: policy.ActionNone}
	reboot  = policy.Action{Type: policy.ActionReboot}
	drainA  = policy.Action{Type: policy.ActionDrain}
	dreload = policy.Action{Type: policy.ActionDaemonReload}
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
		{"user exact path beats the unclaimed reboot", []policy.Policy{filePolicy("chrony", 100, "/etc/chrony.conf", policy.RestartAction("chronyd.service"))},
			"/etc/chrony.conf", `[{"type":"Restart","restart":{"serviceName":"chronyd.service"}}]`, []string{"chrony"}},
		{"default exact path beats a user directory at higher priority", []policy.Policy{filePolicy("etc", 500, "/etc/containers/", none)},
			"/etc/containers/policy.json", `[{"type":"Reload","reload":{"serviceName":"crio.service"}}]`, []string{"default"}},
		{"longer directory beats shorter", []policy.Policy{filePolicy("a", 100, "/etc/", reboot), filePolicy("b", 100, "/etc/app/", none)},
			"/etc/app/x.conf", `[{"type":"None"}]`, []string{"b"}},
		{"directory matches only on a path boundary", []policy.Policy{filePolicy("a", 100, "/etc/app/", none)},
			"/etc/application.conf", `[{"type":"Reboot"}]`, []string{planner.NoPolicy}},
		{"higher priority wins an equally specific tie", []policy.Policy{filePolicy("user", 100, "/var/lib/kubelet/config.json", policy.RestartAction("kubelet.service"))},
			"/var/lib/kubelet/config.json", `[{"type":"Restart","restart":{"serviceName":"kubelet.service"}}]`, []string{"user"}},
		{"equal priority ties keep every policy's actions", []policy.Policy{
			filePolicy("b", 100, "/etc/x", policy.RestartAction("b.service")),
			filePolicy("a", 100, "/etc/x", policy.RestartAction("a.service"))},
			"/etc/x", `[{"type":"Restart","restart":{"serviceName":"a.service"}},{"type":"Restart","restart":{"serviceName":"b.service"}}]`, []string{"a", "b"}},
		// The MCO's FindClosestFilePolicyPathMatch: a path covers itself and
		// everything beneath it, with or without a final "/".
		{"a path without a final / claims what is beneath it", []policy.Policy{filePolicy("app", 100, "/etc/app", policy.ReloadAction("app.service"))},
			"/etc/app/conf.d/x.conf", `[{"type":"Reload","reload":{"serviceName":"app.service"}}]`, []string{"app"}},
		{"a path with a final / claims the path itself", []policy.Policy{filePolicy("app", 100, "/etc/app/", policy.ReloadAction("app.service"))},
			"/etc/app", `[{"type":"Reload","reload":{"serviceName":"app.service"}}]`, []string{"app"}},
		{"a path without / never claims a sibling", []policy.Policy{filePolicy("app", 100, "/etc/app", none)},
			"/etc/app2/x", `[{"type":"Reboot"}]`, []string{planner.NoPolicy}},
		{"a nested path is more specific than its parent, whatever the priorities", []policy.Policy{
			filePolicy("app", 900, "/etc/app", reboot), filePolicy("confd", 100, "/etc/app/conf.d", none)},
			"/etc/app/conf.d/x.conf", `[{"type":"None"}]`, []string{"confd"}},
		{"the nested path with / against the parent without", []policy.Policy{
			filePolicy("app", 100, "/etc/app", none), filePolicy("confd", 100, "/etc/app/conf.d/", policy.RestartAction("app.service"))},
			"/etc/app/conf.d/x.conf", `[{"type":"Restart","restart":{"serviceName":"app.service"}}]`, []string{"confd"}},
		{"the parent still claims files beside the nested path", []policy.Policy{
			filePolicy("app", 100, "/etc/app", none), filePolicy("confd", 100, "/etc/app/conf.d", reboot)},
			"/etc/app/main.conf", `[{"type":"None"}]`, []string{"app"}},
		{"with and without / tie, and the tie goes to the higher priority", []policy.Policy{
			filePolicy("slash", 100, "/etc/app/", policy.RestartAction("a.service")), filePolicy("plain", 200, "/etc/app", policy.RestartAction("b.service"))},
			"/etc/app/x", `[{"type":"Restart","restart":{"serviceName":"b.service"}}]`, []string{"plain"}},
		{"with and without / at equal priority both apply", []policy.Policy{
			filePolicy("slash", 100, "/etc/app/", policy.RestartAction("a.service")), filePolicy("plain", 100, "/etc/app", policy.RestartAction("b.service"))},
			"/etc/app/x", `[{"type":"Restart","restart":{"serviceName":"b.service"}},{"type":"Restart","restart":{"serviceName":"a.service"}}]`, []string{"plain", "slash"}},
		{"a default directory written with / also claims its own path", nil,
			"/etc/nmstate/openshift", `[{"type":"None"}]`, []string{"default"}},
		{"a Rego match without / is a directory claim", []policy.Policy{regoPolicy("app", 100, `package ndp.policy.app

import data.ndp.lib

claims contains {"change": c.id, "match": "/etc/app", "actions": [lib.reload("app.service")]} if {
	some c in lib.file_changes
	startswith(c.path, "/etc/app/")
}
`), filePolicy("etc", 100, "/etc", none), filePolicy("confd", 100, "/etc/app/conf.d", reboot)},
			"/etc/app/x.conf", `[{"type":"Reload","reload":{"serviceName":"app.service"}}]`, []string{"app"}},
		{"a Rego claim competes like a declarative one", []policy.Policy{regoPolicy("etc", 300, `package ndp.policy.etc

import data.ndp.lib

claims contains {"change": c.id, "match": "/etc/", "actions": [lib.reload("x.service")]} if {
	some c in lib.file_changes
	"/etc/" in c.dirs
}
`), filePolicy("app", 100, "/etc/app/", none)},
			"/etc/other.conf", `[{"type":"Reload","reload":{"serviceName":"x.service"}}]`, []string{"etc"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := defaultPlanner(t, tc.pols...)
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
	p := defaultPlanner(t, policy.Policy{Name: "units", Priority: 100, Units: []operatorv1.NodeDisruptionPolicySpecUnit{
		{Name: "app.service", Actions: []policy.Action{dreload, policy.RestartAction("app.service")}}}})
	old := builder.MachineConfig("old").WithFiles(builder.File("/etc/containers/policy.json", "{}")).Config(t)
	got := plan(t, p, old, builder.MachineConfig("new").WithFiles(
		builder.File("/etc/containers/policy.json", `{"default":[]}`),
		builder.File("/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt", "cert"),
		builder.File("/var/lib/kubelet/config.json", "{}"),
	).WithUnit("app.service", "[Service]\n").Config(t))
	// Changes in order (files by path, then units); the DaemonReload moves
	// before every Reload and Restart.
	want := `[{"type":"DaemonReload"},{"type":"Reload","reload":{"serviceName":"crio.service"}},{"type":"Restart","restart":{"serviceName":"coreos-update-ca-trust.service"}},{"type":"Restart","restart":{"serviceName":"crio.service"}},{"type":"Restart","restart":{"serviceName":"app.service"}}]`
	if s := actionsString(got.Actions); s != want || got.Drain || got.Reboot {
		t.Errorf("actions = %s drain=%t reboot=%t\nwant %s", s, got.Drain, got.Reboot, want)
	}
	if len(got.Reasons) != 4 {
		t.Errorf("want one reason per change, got %+v", got.Reasons)
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
		{"None dropped beside others", []policy.Action{none, restartA}, false, `[{"type":"Restart","restart":{"serviceName":"a.service"}}]`, false, false},
		{"Reboot absorbs everything", []policy.Action{restartA, reboot, none}, false, `[{"type":"Reboot"}]`, true, true},
		{"Drain becomes the flag", []policy.Action{reloadA, drainA}, false, `[{"type":"Reload","reload":{"serviceName":"a.service"}}]`, true, false},
		{"only a drain", []policy.Action{drainA}, false, `[{"type":"None"}]`, true, false},
		{"duplicates keep the first", []policy.Action{restartA, reloadA, restartA}, false, `[{"type":"Restart","restart":{"serviceName":"a.service"}},{"type":"Reload","reload":{"serviceName":"a.service"}}]`, false, false},
		{"DaemonReload before services", []policy.Action{restartA, dreload}, false, `[{"type":"DaemonReload"},{"type":"Restart","restart":{"serviceName":"a.service"}}]`, false, false},
		{"single node never drains", []policy.Action{reboot}, true, `[{"type":"Reboot"}]`, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, drain, reb := planner.Normalize(tc.in, tc.singleNode)
			if s := actionsString(got); s != tc.want || drain != tc.wantDrain || reb != tc.wantReb {
				t.Errorf("Normalize = %s drain=%t reboot=%t; want %s drain=%t reboot=%t", s, drain, reb, tc.want, tc.wantDrain, tc.wantReb)
			}
		})
	}
}

func compileErr(t *testing.T, pols ...policy.Policy) string {
	t.Helper()
	_, err := planner.New(context.Background(), append([]policy.Policy{policy.DefaultPolicy()}, pols...), engine.Options{})
	if err == nil {
		t.Fatal("compiled, want an error")
	}
	return err.Error()
}

func TestPolicyCompileErrors(t *testing.T) {
	claimAll := "claims contains {\"change\": c.id, \"actions\": [{\"type\": \"None\"}]} if {\n\tsome c in input.changes\n"
	for _, tc := range []struct {
		name string
		pol  policy.Policy
		want []string
	}{
		{"syntax error with line", regoPolicy("p", 100, "package ndp.policy.p\n\nclaims contains {\"change\": c.id if {\n\tsome c in input.changes\n}\n"), []string{"p.rego:3:", "rego_parse_error"}},
		{"line offset into the YAML file", policy.Policy{Name: "y", Origin: "y.yaml", Modules: []policy.Module{{Filename: "y.yaml", Field: "spec.rego", LineOffset: 10, Source: "package ndp.policy.y\n\nx := := 1\n"}}}, []string{"y.yaml:13:", "spec.rego line 3"}},
		{"http.send", regoPolicy("p", 100, "package ndp.policy.p\n\n"+claimAll+"\thttp.send({\"method\": \"GET\", \"url\": \"http://x\"})\n}\n"), []string{"p.rego:5:", "builtin http.send is not allowed"}},
		{"net.lookup_ip_addr", regoPolicy("p", 100, "package ndp.policy.p\n\n"+claimAll+"\tnet.lookup_ip_addr(\"example.com\")\n}\n"), []string{"builtin net.lookup_ip_addr is not allowed"}},
		{"time.now_ns", regoPolicy("p", 100, "package ndp.policy.p\n\n"+claimAll+"\ttime.now_ns() > 0\n}\n"), []string{"builtin time.now_ns is not allowed"}},
		{"opa.runtime", regoPolicy("p", 100, "package ndp.policy.p\n\n"+claimAll+"\topa.runtime()\n}\n"), []string{"builtin opa.runtime is not allowed"}},
		{"uuid", regoPolicy("p", 100, "package ndp.policy.p\n\n"+claimAll+"\tuuid.rfc4122(\"x\")\n}\n"), []string{"builtin uuid.rfc4122 is not allowed"}},
		{"rand", regoPolicy("p", 100, "package ndp.policy.p\n\n"+claimAll+"\trand.intn(\"x\", 3)\n}\n"), []string{"builtin rand.intn is not allowed"}},
		{"package outside ndp.policy", regoPolicy("p", 100, "package ndp.lib\n\nx := 1\n"), []string{"p.rego:1:", "not under ndp.policy"}},
		{"package owned by another policy", regoPolicy("p", 100, "package ndp.policy.defaults\n\nx := 1\n"), []string{"already owned by policy \"default\""}},
		{"invalid declarative action", filePolicy("f", 100, "/etc/x", reboot, none), []string{"f.yaml", "spec.files[0].actions[0].type", "standalone"}},
		{"relative declarative path", filePolicy("f", 100, "etc/x", none), []string{"spec.files[0].path", "absolute"}},
		{"one path with and without a final /", policy.Policy{Name: "f", Origin: "f.yaml", Files: []operatorv1.NodeDisruptionPolicySpecFile{
			{Path: "/etc/app", Actions: []policy.Action{none}}, {Path: "/etc/app/", Actions: []policy.Action{reboot}}}},
			[]string{"spec.files[1].path", `names the same path as "/etc/app"`}},
		{"too many actions", filePolicy("f", 100, "/etc/x", dreload, dreload, dreload, dreload, dreload, dreload, dreload, dreload, dreload, dreload, dreload), []string{"spec.files[0].actions", "must have at most 10"}},
		{"duplicate policy name", filePolicy("default", 100, "/etc/x", none), []string{"already defined"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg := compileErr(t, tc.pol)
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q lacks %q", msg, w)
				}
			}
		})
	}
}

func TestInvalidClaimsAreErrors(t *testing.T) {
	old := builder.MachineConfig("old").Config(t)
	new := builder.MachineConfig("new").WithFiles(builder.File("/etc/x", "x")).Config(t)
	for _, tc := range []struct {
		name, rule, want string
	}{
		{"Reboot with another action", `[{"type": "Reboot"}, {"type": "Drain"}]`, "standalone"},
		{"service without a unit suffix", `[{"type": "Restart", "restart": {"serviceName": "chronyd"}}]`, `"chronyd"`},
		{"unknown action type", `[{"type": "Explode"}]`, "Unsupported value"},
		{"reload without service", `[{"type": "Reload"}]`, "reload is required"},
		{"not a list", `{"type": "None"}`, "actions must be a list"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := defaultPlanner(t, regoPolicy("bad", 100, "package ndp.policy.bad\n\nclaims contains {\"change\": c.id, \"actions\": "+tc.rule+"} if {\n\tsome c in input.changes\n}\n"))
			_, err := p.Plan(context.Background(), planner.Request{From: old, To: new})
			var pe *policy.Error
			if !errors.As(err, &pe) || pe.Policy != "bad" || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want a PolicyError of policy bad containing %q", err, tc.want)
			}
		})
	}
	p := defaultPlanner(t, regoPolicy("bad", 100, "package ndp.policy.bad\n\nclaims contains {\"change\": \"file:/nope\", \"actions\": [{\"type\": \"None\"}]}\n"))
	if _, err := p.Plan(context.Background(), planner.Request{From: old, To: new}); err == nil || !strings.Contains(err.Error(), "not in the change set") {
		t.Errorf("claim on an unknown change: %v", err)
	}
	p = defaultPlanner(t, regoPolicy("bad", 100, "package ndp.policy.bad\n\nclaims contains {\"change\": c.id, \"match\": \"/var/\", \"actions\": [{\"type\": \"None\"}]} if {\n\tsome c in input.changes\n}\n"))
	if _, err := p.Plan(context.Background(), planner.Request{From: old, To: new}); err == nil || !strings.Contains(err.Error(), "match") {
		t.Errorf("claim with a foreign match: %v", err)
	}
	// A prefix that is not on a path boundary names no directory of the file.
	for match, ok := range map[string]bool{"/etc/x": true, "/etc/x/": true, "/etc": true, "/etc/": true, "/": true, "/et": false, "/etc/x/y": false} {
		p = defaultPlanner(t, regoPolicy("m", 100, "package ndp.policy.m\n\nclaims contains {\"change\": c.id, \"match\": \""+match+"\", \"actions\": [{\"type\": \"None\"}]} if {\n\tsome c in input.changes\n}\n"))
		_, err := p.Plan(context.Background(), planner.Request{From: old, To: new})
		if (err == nil) != ok {
			t.Errorf("match %q on /etc/x: error %v, want accepted=%v", match, err, ok)
		}
	}
}

func TestEvaluationErrorsAndDeadline(t *testing.T) {
	old := builder.MachineConfig("old").Config(t)
	new := builder.MachineConfig("new").WithFiles(builder.File("/etc/x", "x")).Config(t)
	p := defaultPlanner(t, regoPolicy("strict", 100, "package ndp.policy.strict\n\nclaims contains {\"change\": c.id, \"actions\": [{\"type\": \"None\"}]} if {\n\tsome c in input.changes\n\tto_number(c.path) > 0\n}\n"))
	_, err := p.Plan(context.Background(), planner.Request{From: old, To: new})
	if err == nil || !strings.Contains(err.Error(), "strict.rego:5:") {
		t.Errorf("a builtin error must fail the plan and name the line: %v", err)
	}
	slow, err := planner.New(context.Background(), []policy.Policy{regoPolicy("slow", 100, "package ndp.policy.slow\n\nclaims contains {\"change\": c.id, \"actions\": [{\"type\": \"None\"}]} if {\n\tsome c in input.changes\n\tcount([x | some x in numbers.range(1, 100000000)]) < 0\n}\n")},
		engine.Options{EvalTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = slow.Plan(context.Background(), planner.Request{From: old, To: new})
	if err == nil || !strings.Contains(err.Error(), "longer than 100ms") && !strings.Contains(err.Error(), "cancel") {
		t.Errorf("a runaway policy must hit the deadline: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the deadline did not stop evaluation: %s", d)
	}
}

func TestRevisionAndDeterminism(t *testing.T) {
	a := defaultPlanner(t, filePolicy("chrony", 100, "/etc/chrony.conf", policy.RestartAction("chronyd.service")))
	b := defaultPlanner(t, filePolicy("chrony", 100, "/etc/chrony.conf", policy.RestartAction("chronyd.service")))
	c := defaultPlanner(t, filePolicy("chrony", 101, "/etc/chrony.conf", policy.RestartAction("chronyd.service")))
	if a.Engine.Revision() != b.Engine.Revision() || a.Engine.Revision() == c.Engine.Revision() {
		t.Errorf("revisions: same set %s / %s, other priority %s", a.Engine.Revision(), b.Engine.Revision(), c.Engine.Revision())
	}
	var paths []builder.Entry
	for _, p := range []string{"/etc/chrony.conf", "/etc/containers/policy.json", "/etc/a", "/etc/b", "/var/lib/kubelet/config.json", "/etc/crio/policies/x"} {
		paths = append(paths, builder.File(p, p))
	}
	old, new := builder.MachineConfig("old").Config(t), builder.MachineConfig("new").WithFiles(paths...).Config(t)
	first := plan(t, a, old, new)
	for i := 0; i < 20; i++ {
		if again := plan(t, a, old, new); again.PlanHash != first.PlanHash || actionsString(again.Actions) != actionsString(first.Actions) {
			t.Fatalf("plan %d differs: %+v vs %+v", i, again, first)
		}
	}
	// What the plan controller stores, a node daemon verifies with the API
	// types alone.
	stored := first.PostConfigActions()
	if err := stored.Verify(first.To); err != nil {
		t.Fatalf("stored plan does not verify: %v", err)
	}
	if got := planner.FormatActions(ndpmcv1.NodeDisruptionPolicyActions(stored.Actions)); got != planner.FormatActions(first.Actions) {
		t.Errorf("stored actions %q, planned %q", got, planner.FormatActions(first.Actions))
	}
}

func TestEmbeddedRegoTests(t *testing.T) {
	var out bytes.Buffer
	sum, err := engine.RunRegoTests(context.Background(), []policy.Policy{policy.DefaultPolicy()}, nil, &out, engine.TestOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Failed+sum.Errored > 0 || sum.Passed < 30 {
		t.Errorf("Rego tests: %+v\n%s", sum, out.String())
	}
}

func TestRuleCountAndRevision(t *testing.T) {
	def := policy.DefaultPolicy()
	if n := def.RuleCount(); n != 5 {
		t.Errorf("the default policy has %d claims rules, want 5 (files, OS fields, users, LUKS, registries.conf)", n)
	}
	p := filePolicy("f", 100, "/etc/x", none)
	p.Units = []operatorv1.NodeDisruptionPolicySpecUnit{{Name: "a.service", Actions: []policy.Action{none}}}
	if n := p.RuleCount(); n != 2 {
		t.Errorf("rule count %d, want 2", n)
	}
	q := p
	q.Priority = 5
	same := filePolicy("f", 100, "/etc/x", none)
	same.Units = p.Units
	if p.Revision() == q.Revision() || p.Revision() != same.Revision() {
		t.Errorf("a policy's revision must follow its content: %s, %s, %s", p.Revision(), q.Revision(), same.Revision())
	}
}
