package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/internal/testkit/builder"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/policy"
)

const examples = "../../examples/machineconfigs/"

// ndp runs the CLI in-process and returns its exit code and output.
func ndp(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), append([]string{"ndp"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

func planJSON(t *testing.T, wantCode int, args ...string) planner.Plan {
	t.Helper()
	code, out, errOut := ndp(t, append([]string{"plan", "-o", "json"}, args...)...)
	if code != wantCode {
		t.Fatalf("ndp plan %v: exit %d, want %d\nstdout: %s\nstderr: %s", args, code, wantCode, out, errOut)
	}
	var p planner.Plan
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("ndp plan %v: output is not a plan: %v\n%s", args, err, out)
	}
	return p
}

func example(name string) []string {
	return []string{"--from", examples + name + "/old.yaml", "--to", examples + name + "/new.yaml"}
}

func actionsJSON(t *testing.T, p planner.Plan) string {
	t.Helper()
	b, err := json.Marshal(p.Actions)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestPlanExamples(t *testing.T) {
	for _, tc := range []struct {
		name        string
		args        []string
		wantActions string
		wantDrain   bool
		wantReboot  bool
	}{
		{"pull secret needs nothing", example("pull-secret"), `[{"type":"None"}]`, false, false},
		{"chrony added needs a reboot", example("chrony"), `[{"type":"Reboot"}]`, true, true},
		{"chrony with its policy restarts chronyd", append(example("chrony"), "--policy", "../../examples/policies/chrony.yaml"),
			`[{"type":"Restart","restart":{"serviceName":"chronyd.service"}}]`, false, false},
		{"digest-only IDMS mirror reloads crio", example("idms-mirror-added"), `[{"type":"Reload","reload":{"serviceName":"crio.service"}}]`, false, false},
		{"removed mirror reloads crio after a drain", example("mirror-removed"), `[{"type":"Reload","reload":{"serviceName":"crio.service"}}]`, true, false},
		{"tag-only ITMS mirror drains", example("itms-mirror-added"), `[{"type":"Reload","reload":{"serviceName":"crio.service"}}]`, true, false},
		{"OS image bump reboots", example("os-image-bump"), `[{"type":"Reboot"}]`, true, true},
		// The shipped kubelet-live policy reads inside kubelet.conf (issue: content-aware plans).
		{"kubelet maxPods reboots by default", example("kubelet-maxpods"), `[{"type":"Reboot"}]`, true, true},
		{"kubelet maxPods with kubelet-live restarts the kubelet", append(example("kubelet-maxpods"), "--policy", "../../examples/policies/kubelet-live.yaml"),
			`[{"type":"Restart","restart":{"serviceName":"kubelet.service"}}]`, false, false},
		{"kubelet cpuManagerPolicy with kubelet-live drains and reboots", append(example("kubelet-cpumanager"), "--policy", "../../examples/policies/kubelet-live.yaml"),
			`[{"type":"Reboot"}]`, true, true},
		{"single node never drains a reboot", append(example("chrony"), "--single-node"), `[{"type":"Reboot"}]`, false, true},
		{"single node never drains a mirror removal", append(example("mirror-removed"), "--single-node"), `[{"type":"Reload","reload":{"serviceName":"crio.service"}}]`, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := planJSON(t, exitOK, tc.args...)
			if got := actionsJSON(t, p); got != tc.wantActions {
				t.Errorf("actions = %s, want %s", got, tc.wantActions)
			}
			if p.Drain != tc.wantDrain || p.Reboot != tc.wantReboot {
				t.Errorf("drain, reboot = %t, %t; want %t, %t", p.Drain, p.Reboot, tc.wantDrain, tc.wantReboot)
			}
			if len(p.Reasons) == 0 || p.PolicyRevision == "" || p.PlanHash == "" || len(p.Unreconcilable) != 0 {
				t.Errorf("plan lacks reasons, revision or hash, or is unreconcilable: %+v", p)
			}
		})
	}
}

func TestPlanNamesDecidingPolicy(t *testing.T) {
	p := planJSON(t, exitOK, append(example("chrony"), "--policy", "../../examples/policies/chrony.yaml")...)
	want := []planner.Reason{{
		Change:  "file /etc/chrony.conf: added",
		Policy:  "chrony",
		Match:   "/etc/chrony.conf",
		Actions: []policy.Action{policy.RestartAction("chronyd.service")},
	}}
	if diff := cmp.Diff(want, p.Reasons); diff != "" {
		t.Errorf("reasons (-want +got):\n%s", diff)
	}
	def := planJSON(t, exitOK, example("chrony")...)
	if def.PolicyRevision == p.PolicyRevision {
		t.Errorf("adding a policy did not change the policy revision %s", p.PolicyRevision)
	}
}

func TestPlanUnreconcilable(t *testing.T) {
	p := planJSON(t, exitUnreconcilable, example("unreconcilable-disk")...)
	if len(p.Unreconcilable) != 1 || p.Unreconcilable[0].Field != "spec.config.storage.disks" {
		t.Errorf("unreconcilable = %+v, want spec.config.storage.disks", p.Unreconcilable)
	}
	if len(p.Actions) != 0 {
		t.Errorf("an unreconcilable change has no plan, got actions %+v", p.Actions)
	}
}

func TestPlanOutputs(t *testing.T) {
	code, out, _ := ndp(t, append([]string{"plan", "-o", "text", "--policy", "../../examples/policies/chrony.yaml"}, example("chrony")...)...)
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	testkit.CheckContains(t, "text output", out, "actions: Restart chronyd.service", "drain:   no", "file /etc/chrony.conf: added  policy chrony: Restart chronyd.service")
	code, out, _ = ndp(t, append([]string{"plan", "-o", "yaml"}, example("mirror-removed")...)...)
	var p planner.Plan
	if err := yaml.Unmarshal([]byte(out), &p); code != exitOK || err != nil || !p.Drain {
		t.Errorf("yaml output: exit %d, err %v, plan %+v", code, err, p)
	}
	code, out, _ = ndp(t, append([]string{"explain"}, example("idms-mirror-added")...)...)
	if code != exitOK || !strings.Contains(out, "policy default: Reload crio.service") {
		t.Errorf("explain: exit %d\n%s", code, out)
	}
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// failCase is a command line that fails: its exit code and what stderr
// says. $F in args and want is a file of the case's own, holding file
// (absent when file is empty).
type failCase struct {
	name string
	args []string
	file string
	code int
	want []string // in stderr
}

// runFailCases runs each case as ndp prefix... args..., a subtest each:
// nothing on stdout, the case's exit code and stderr with each want.
func runFailCases(t *testing.T, prefix []string, cases []failCase) {
	dir := t.TempDir()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".yaml")
			if tc.file != "" {
				writeFile(t, dir, filepath.Base(file), tc.file)
			}
			args := slices.Clone(prefix)
			for _, a := range tc.args {
				args = append(args, strings.ReplaceAll(a, "$F", file))
			}
			code, out, errOut := ndp(t, args...)
			if code != tc.code || out != "" {
				t.Errorf("ndp %v: exit %d, want %d\nstdout: %s\nstderr: %s", args, code, tc.code, out, errOut)
			}
			var want []string
			for _, w := range tc.want {
				want = append(want, strings.ReplaceAll(w, "$F", file))
			}
			testkit.CheckContains(t, "stderr", errOut, want...)
		})
	}
}

const chronyPolicyTemplate = `apiVersion: ndp.dev/v1alpha1
kind: NodeDisruptionPolicy
metadata:
  name: bad
spec:
  files:
  - path: /etc/chrony.conf
    actions:
%s`

func TestBadInputExitsOne(t *testing.T) {
	dir := t.TempDir()
	old := examples + "chrony/old.yaml"
	newMC := examples + "chrony/new.yaml"
	malformed := writeFile(t, dir, "malformed.yaml", "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  name: x\n\tspec: {}\n")
	ign2 := writeFile(t, dir, "ign2.yaml", string(builder.MachineConfig("old-spec").WithIgnitionVersion("2.2.0").Document()))
	regoSyntax := writeFile(t, dir, "syntax.yaml", `apiVersion: ndp.dev/v1alpha1
kind: NodeDisruptionPolicy
metadata:
  name: broken
spec:
  rego: |
    package ndp.policy.broken

    claims contains {"change": c.id if {
`)
	httpSend := writeFile(t, dir, "exfil.rego", `package ndp.policy.exfil

claims contains {"change": c.id, "actions": [{"type": "None"}]} if {
	some c in input.changes
	http.send({"method": "GET", "url": "http://example.com"})
}
`)
	rebootPlus := writeFile(t, dir, "reboot.yaml", strings.ReplaceAll(chronyPolicyTemplate, "%s", "    - type: Reboot\n    - type: Drain\n"))
	noSuffix := writeFile(t, dir, "nosuffix.yaml", strings.ReplaceAll(chronyPolicyTemplate, "%s", "    - type: Restart\n      restart: {serviceName: chronyd}\n"))
	typo := writeFile(t, dir, "typo.yaml", strings.ReplaceAll(chronyPolicyTemplate, "%s", "    - type: Restart\n      restrat: {serviceName: chronyd.service}\n"))
	for _, tc := range []struct {
		name string
		args []string
		want []string // all must appear in stderr
	}{
		{"malformed YAML", []string{"--from", malformed, "--to", newMC}, []string{"malformed.yaml", "line 5", "malformed YAML"}},
		{"unsupported Ignition version", []string{"--from", ign2, "--to", newMC}, []string{"ign2.yaml", `MachineConfig "old-spec"`, "spec.config", "unsupported config version"}},
		{"Rego syntax error", []string{"--from", old, "--to", newMC, "--policy", regoSyntax}, []string{"syntax.yaml:9:", `NodeDisruptionPolicy "broken" spec.rego line 3`, "rego_parse_error"}},
		{"http.send", []string{"--from", old, "--to", newMC, "--policy", httpSend}, []string{"exfil.rego:5:", "builtin http.send is not allowed"}},
		{"Reboot with another action", []string{"--from", old, "--to", newMC, "--policy", rebootPlus}, []string{"reboot.yaml", `NodeDisruptionPolicy "bad"`, "spec.files[0].actions[0].type", "standalone"}},
		{"service name without a unit suffix", []string{"--from", old, "--to", newMC, "--policy", noSuffix}, []string{"nosuffix.yaml", "spec.files[0].actions[0].restart.serviceName", `"chronyd"`}},
		{"unknown field in a policy", []string{"--from", old, "--to", newMC, "--policy", typo}, []string{"typo.yaml", "document 1", `unknown field "restrat"`}},
		{"missing file", []string{"--from", filepath.Join(dir, "nope.yaml"), "--to", newMC}, []string{"nope.yaml", "no such file"}},
		{"missing policy", []string{"--from", old, "--to", newMC, "--policy", filepath.Join(dir, "nope.rego")}, []string{"nope.rego", "no such file"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := ndp(t, append([]string{"plan"}, tc.args...)...)
			if code != exitInvalid {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, exitInvalid, out, errOut)
			}
			testkit.CheckContains(t, "stderr", errOut, tc.want...)
			if strings.Contains(errOut, "goroutine") || strings.Contains(errOut, "panic") {
				t.Errorf("stderr shows a panic:\n%s", errOut)
			}
		})
	}
}

func TestUsageExitsTwo(t *testing.T) {
	for _, args := range [][]string{
		{"plan", "--to", examples + "chrony/new.yaml"},
		{"plan", "--from", "a", "--to", "b", "--bogus"},
		{"plan", "-o", "xml", "--from", examples + "chrony/old.yaml", "--to", examples + "chrony/new.yaml"},
		{"plan", "extra", "--from", "a", "--to", "b"},
		{"frobnicate"},
	} {
		if code, _, errOut := ndp(t, args...); code != exitUsage {
			t.Errorf("ndp %v: exit %d, want %d\n%s", args, code, exitUsage, errOut)
		}
	}
}

func TestRunsAsKubectlPlugin(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"/usr/local/bin/kubectl-ndp", "plan", "--help"}, &out, &errOut)
	if code != exitOK || !strings.Contains(out.String(), "kubectl ndp plan") {
		t.Errorf("exit %d, help does not show the plugin invocation:\n%s%s", code, out.String(), errOut.String())
	}
}

func TestRegoTestCommand(t *testing.T) {
	code, out, errOut := ndp(t, "test", "-v", "../../examples/policies")
	if code != exitOK || !strings.Contains(out, "test_new_file_restarts: PASS") || !strings.Contains(out, "test_idms_added_reloads_without_drain: PASS") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	dir := t.TempDir()
	writeFile(t, dir, "p.rego", "package ndp.policy.p\n\nclaims contains {\"change\": \"x\", \"actions\": [{\"type\": \"None\"}]} if false\n")
	writeFile(t, dir, "p_test.rego", "package ndp.policy.p_test\n\nimport data.ndp.policy.p\n\ntest_claims_something if {\n\tcount(p.claims) > 0\n}\n")
	code, out, errOut = ndp(t, "test", dir)
	if code != exitInvalid || !strings.Contains(out, "test_claims_something: FAIL") || !strings.Contains(errOut, "1 of ") {
		t.Errorf("a failing Rego test: exit %d\n%s%s", code, out, errOut)
	}
}

func TestPoolSelector(t *testing.T) {
	dir := t.TempDir()
	pol := writeFile(t, dir, "workers.yaml", `apiVersion: ndp.dev/v1alpha1
kind: NodeDisruptionPolicy
metadata: {name: workers-chrony}
spec:
  poolSelector: {matchLabels: {pools.operator.machineconfiguration.openshift.io/worker: ""}}
  files:
  - path: /etc/chrony.conf
    actions: [{type: Restart, restart: {serviceName: chronyd.service}}]
`)
	args := append(example("chrony"), "--policy", pol)
	for _, tc := range []struct {
		labels []string
		want   string
	}{
		{[]string{"--pool-labels", "pools.operator.machineconfiguration.openshift.io/worker="}, `[{"type":"Restart","restart":{"serviceName":"chronyd.service"}}]`},
		{[]string{"--pool-labels", "pools.operator.machineconfiguration.openshift.io/master="}, `[{"type":"Reboot"}]`},
		{nil, `[{"type":"Reboot"}]`}, // unknown pool: a restricted policy does not apply
	} {
		if got := actionsJSON(t, planJSON(t, exitOK, append(args, tc.labels...)...)); got != tc.want {
			t.Errorf("labels %v: actions %s, want %s", tc.labels, got, tc.want)
		}
	}
}
