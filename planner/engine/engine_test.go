package engine_test

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"

	"github.com/ndp-dev/ndp/internal/testkit/builder"
	"github.com/ndp-dev/ndp/internal/testkit/policytest"
	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/planner/changeset"
	"github.com/ndp-dev/ndp/planner/engine"
	"github.com/ndp-dev/ndp/planner/policy"
)

// newEngine compiles the default policy and pols.
func newEngine(t *testing.T, pols ...policy.Policy) *engine.Engine {
	t.Helper()
	e, err := engine.New(context.Background(), append([]policy.Policy{policy.DefaultPolicy()}, pols...), engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// evaluate is the engine's claims on the change from → to.
func evaluate(e *engine.Engine, from, to *machineconfig.Config) ([]engine.Claim, error) {
	cs, err := changeset.Diff(from, to)
	if err != nil {
		return nil, err
	}
	return e.Evaluate(context.Background(), cs)
}

func compileErr(t *testing.T, pols ...policy.Policy) string {
	t.Helper()
	_, err := engine.New(context.Background(), append([]policy.Policy{policy.DefaultPolicy()}, pols...), engine.Options{})
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
		{"syntax error with line", policytest.Rego("p", 100, "package ndp.policy.p\n\nclaims contains {\"change\": c.id if {\n\tsome c in input.changes\n}\n"), []string{"p.rego:3:", "rego_parse_error"}},
		{"line offset into the YAML file", policy.Policy{Name: "y", Origin: "y.yaml", Modules: []policy.Module{{Filename: "y.yaml", Field: "spec.rego", LineOffset: 10, Source: "package ndp.policy.y\n\nx := := 1\n"}}}, []string{"y.yaml:13:", "spec.rego line 3"}},
		{"http.send", policytest.Rego("p", 100, "package ndp.policy.p\n\n"+claimAll+"\thttp.send({\"method\": \"GET\", \"url\": \"http://x\"})\n}\n"), []string{"p.rego:5:", "builtin http.send is not allowed"}},
		{"net.lookup_ip_addr", policytest.Rego("p", 100, "package ndp.policy.p\n\n"+claimAll+"\tnet.lookup_ip_addr(\"example.com\")\n}\n"), []string{"builtin net.lookup_ip_addr is not allowed"}},
		{"time.now_ns", policytest.Rego("p", 100, "package ndp.policy.p\n\n"+claimAll+"\ttime.now_ns() > 0\n}\n"), []string{"builtin time.now_ns is not allowed"}},
		{"opa.runtime", policytest.Rego("p", 100, "package ndp.policy.p\n\n"+claimAll+"\topa.runtime()\n}\n"), []string{"builtin opa.runtime is not allowed"}},
		{"uuid", policytest.Rego("p", 100, "package ndp.policy.p\n\n"+claimAll+"\tuuid.rfc4122(\"x\")\n}\n"), []string{"builtin uuid.rfc4122 is not allowed"}},
		{"rand", policytest.Rego("p", 100, "package ndp.policy.p\n\n"+claimAll+"\trand.intn(\"x\", 3)\n}\n"), []string{"builtin rand.intn is not allowed"}},
		{"package outside ndp.policy", policytest.Rego("p", 100, "package ndp.lib\n\nx := 1\n"), []string{"p.rego:1:", "not under ndp.policy"}},
		{"package owned by another policy", policytest.Rego("p", 100, "package ndp.policy.defaults\n\nx := 1\n"), []string{"already owned by policy \"default\""}},
		{"invalid declarative action", policytest.File("f", 100, "/etc/x", policytest.Reboot, policytest.None), []string{"f.yaml", "spec.files[0].actions[0].type", "standalone"}},
		{"relative declarative path", policytest.File("f", 100, "etc/x", policytest.None), []string{"spec.files[0].path", "absolute"}},
		{"one path with and without a final /", policy.Policy{Name: "f", Origin: "f.yaml", Files: []operatorv1.NodeDisruptionPolicySpecFile{
			{Path: "/etc/app", Actions: []policy.Action{policytest.None}}, {Path: "/etc/app/", Actions: []policy.Action{policytest.Reboot}}}},
			[]string{"spec.files[1].path", `names the same path as "/etc/app"`}},
		{"too many actions", policytest.File("f", 100, "/etc/x", policytest.DaemonReload, policytest.DaemonReload, policytest.DaemonReload, policytest.DaemonReload, policytest.DaemonReload, policytest.DaemonReload, policytest.DaemonReload, policytest.DaemonReload, policytest.DaemonReload, policytest.DaemonReload, policytest.DaemonReload), []string{"spec.files[0].actions", "must have at most 10"}},
		{"duplicate policy name", policytest.File("default", 100, "/etc/x", policytest.None), []string{"already defined"}},
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
			p := newEngine(t, policytest.Rego("bad", 100, "package ndp.policy.bad\n\nclaims contains {\"change\": c.id, \"actions\": "+tc.rule+"} if {\n\tsome c in input.changes\n}\n"))
			_, err := evaluate(p, old, new)
			var pe *policy.Error
			if !errors.As(err, &pe) || pe.Policy != "bad" || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want a PolicyError of policy bad containing %q", err, tc.want)
			}
		})
	}
	p := newEngine(t, policytest.Rego("bad", 100, "package ndp.policy.bad\n\nclaims contains {\"change\": \"file:/nope\", \"actions\": [{\"type\": \"None\"}]}\n"))
	if _, err := evaluate(p, old, new); err == nil || !strings.Contains(err.Error(), "not in the change set") {
		t.Errorf("claim on an unknown change: %v", err)
	}
	p = newEngine(t, policytest.Rego("bad", 100, "package ndp.policy.bad\n\nclaims contains {\"change\": c.id, \"match\": \"/var/\", \"actions\": [{\"type\": \"None\"}]} if {\n\tsome c in input.changes\n}\n"))
	if _, err := evaluate(p, old, new); err == nil || !strings.Contains(err.Error(), "match") {
		t.Errorf("claim with a foreign match: %v", err)
	}
	// A prefix that is not on a path boundary names no directory of the file.
	for match, ok := range map[string]bool{"/etc/x": true, "/etc/x/": true, "/etc": true, "/etc/": true, "/": true, "/et": false, "/etc/x/y": false} {
		p = newEngine(t, policytest.Rego("m", 100, "package ndp.policy.m\n\nclaims contains {\"change\": c.id, \"match\": \""+match+"\", \"actions\": [{\"type\": \"None\"}]} if {\n\tsome c in input.changes\n}\n"))
		_, err := evaluate(p, old, new)
		if (err == nil) != ok {
			t.Errorf("match %q on /etc/x: error %v, want accepted=%v", match, err, ok)
		}
	}
}

func TestEvaluationErrorsAndDeadline(t *testing.T) {
	old := builder.MachineConfig("old").Config(t)
	new := builder.MachineConfig("new").WithFiles(builder.File("/etc/x", "x")).Config(t)
	p := newEngine(t, policytest.Rego("strict", 100, "package ndp.policy.strict\n\nclaims contains {\"change\": c.id, \"actions\": [{\"type\": \"None\"}]} if {\n\tsome c in input.changes\n\tto_number(c.path) > 0\n}\n"))
	_, err := evaluate(p, old, new)
	if err == nil || !strings.Contains(err.Error(), "strict.rego:5:") {
		t.Errorf("a builtin error must fail the plan and name the line: %v", err)
	}
	slow, err := engine.New(context.Background(), []policy.Policy{policytest.Rego("slow", 100, "package ndp.policy.slow\n\nclaims contains {\"change\": c.id, \"actions\": [{\"type\": \"None\"}]} if {\n\tsome c in input.changes\n\tcount([x | some x in numbers.range(1, 100000000)]) < 0\n}\n")},
		engine.Options{EvalTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = evaluate(slow, old, new)
	if err == nil || !strings.Contains(err.Error(), "longer than 100ms") && !strings.Contains(err.Error(), "cancel") {
		t.Errorf("a runaway policy must hit the deadline: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the deadline did not stop evaluation: %s", d)
	}
}

func TestRevisionAndDeterminism(t *testing.T) {
	a := newEngine(t, policytest.File("chrony", 100, "/etc/chrony.conf", policy.RestartAction("chronyd.service")))
	b := newEngine(t, policytest.File("chrony", 100, "/etc/chrony.conf", policy.RestartAction("chronyd.service")))
	c := newEngine(t, policytest.File("chrony", 101, "/etc/chrony.conf", policy.RestartAction("chronyd.service")))
	if a.Revision() != b.Revision() || a.Revision() == c.Revision() {
		t.Errorf("revisions: same set %s / %s, other priority %s", a.Revision(), b.Revision(), c.Revision())
	}
	var paths []builder.Entry
	for _, p := range []string{"/etc/chrony.conf", "/etc/containers/policy.json", "/etc/a", "/etc/b", "/var/lib/kubelet/config.json", "/etc/crio/policies/x"} {
		paths = append(paths, builder.File(p, p))
	}
	old, new := builder.MachineConfig("old").Config(t), builder.MachineConfig("new").WithFiles(paths...).Config(t)
	first, err := evaluate(a, old, new)
	if err != nil || len(first) == 0 {
		t.Fatalf("claims %+v, %v", first, err)
	}
	for i := 0; i < 20; i++ {
		if again, err := evaluate(a, old, new); err != nil || !reflect.DeepEqual(again, first) {
			t.Fatalf("evaluation %d differs: %+v vs %+v (%v)", i, again, first, err)
		}
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
