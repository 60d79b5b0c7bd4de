package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ndp-dev/ndp/internal/testkit/builder"
	"github.com/ndp-dev/ndp/mco/mcorules"
)

// mcoConfigs writes an old and a new rendered config: the new one changes
// /etc/chrony.conf and policy.json, and adds an SSH key.
func mcoConfigs(t *testing.T, dir string, edit func(*builder.MachineConfigBuilder) *builder.MachineConfigBuilder) (from, to string) {
	t.Helper()
	write := func(name string, mc *builder.MachineConfigBuilder) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, mc.Document(), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	users := func(keys ...string) map[string]any {
		return map[string]any{"users": []any{map[string]any{"name": "core", "sshAuthorizedKeys": keys}}}
	}
	old := builder.MachineConfig("rendered-worker-old").WithIgnition(builder.Ignition().WithFiles(
		builder.File("/etc/chrony.conf", "server a iburst\n"),
		builder.File("/etc/containers/policy.json", `{"default":[{"type":"insecureAcceptAnything"}]}`),
	).Merge(map[string]any{"passwd": users("ssh-ed25519 AAAA one")}))
	cur := builder.MachineConfig("rendered-worker-new").WithIgnition(builder.Ignition().WithFiles(
		builder.File("/etc/chrony.conf", "server b iburst\n"),
		builder.File("/etc/containers/policy.json", `{"default":[{"type":"reject"}]}`),
	).Merge(map[string]any{"passwd": users("ssh-ed25519 AAAA one", "ssh-ed25519 AAAA two")}))
	if edit != nil {
		cur = edit(cur)
	}
	return write("old.yaml", old), write("new.yaml", cur)
}

const mcoChronyPolicy = `apiVersion: operator.openshift.io/v1
kind: MachineConfiguration
metadata:
  name: cluster
spec:
  nodeDisruptionPolicy:
    files:
    - path: /etc/chrony.conf
      actions:
      - type: Restart
        restart:
          serviceName: chronyd.service
`

// The text output: the verdict, then each change with the MCO rule that
// decided it, under the MCO's defaults and under a MachineConfiguration.
func TestPlanMCOText(t *testing.T) {
	dir := t.TempDir()
	from, to := mcoConfigs(t, dir, nil)
	mcop := writeFile(t, dir, "mcop.yaml", mcoChronyPolicy)
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"defaults", nil, []string{
			"MCO plan rendered-worker-old -> rendered-worker-new",
			"policies: the MCO's defaults (no MachineConfiguration given)",
			"actions: Reboot",
			"drain: yes",
			"reboot: yes",
			"Changes (3):",
			"file /etc/chrony.conf no node disruption policy → Reboot",
			"file /etc/containers/policy.json file policy /etc/containers/policy.json → Reload crio.service",
			"ssh keys ssh key policy → None",
		}},
		{"a MachineConfiguration", []string{"--machineconfiguration", mcop}, []string{
			"MCO plan rendered-worker-old -> rendered-worker-new",
			"policies: MachineConfiguration cluster's spec merged with the MCO's defaults",
			"actions: Restart chronyd.service, Reload crio.service",
			"drain: no",
			"reboot: no",
			"Changes (3):",
			"file /etc/chrony.conf file policy /etc/chrony.conf → Restart chronyd.service",
			"file /etc/containers/policy.json file policy /etc/containers/policy.json → Reload crio.service",
			"ssh keys ssh key policy → None",
		}},
		{"single node", []string{"--single-node"}, []string{
			"MCO plan rendered-worker-old -> rendered-worker-new",
			"policies: the MCO's defaults (no MachineConfiguration given)",
			"actions: Reboot",
			"drain: no (single node: the MCO never drains)",
			"reboot: yes",
			"Changes (3):",
			"file /etc/chrony.conf no node disruption policy → Reboot",
			"file /etc/containers/policy.json file policy /etc/containers/policy.json → Reload crio.service",
			"ssh keys ssh key policy → None",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := ndp(t, append([]string{"plan", "--mco", "-o", "text", "--from", from, "--to", to}, tc.args...)...)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var got []string
			for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
				got = append(got, strings.Join(strings.Fields(l), " ")) // the padding aside
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("text output (-want +got):\n%s\n%s", d, out)
			}
		})
	}
}

// -o json is the Decision with the policy source; explain --mco is text.
func TestPlanMCOJSON(t *testing.T) {
	dir := t.TempDir()
	from, to := mcoConfigs(t, dir, nil)
	mcop := writeFile(t, dir, "mcop.yaml", mcoChronyPolicy)
	code, out, errOut := ndp(t, "plan", "--mco", "--machineconfiguration", mcop, "--from", from, "--to", to)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got struct {
		mcorules.Decision
		PolicySource mcorules.PolicySource `json:"policySource"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if mcorules.FormatActions(got.Actions) != "Restart chronyd.service, Reload crio.service" || got.Drain || got.Reboot ||
		got.PolicySource.From != "spec" || len(got.Rules) != 3 || got.Rules[0].Rule != "file policy /etc/chrony.conf" ||
		!cmp.Equal(got.ChangedFiles, []string{"/etc/chrony.conf", "/etc/containers/policy.json"}) || !got.SSHChanged {
		t.Errorf("got %+v\n%s", got, out)
	}
	code, out, _ = ndp(t, "plan", "--mco", "-o", "yaml", "--from", from, "--to", to)
	if code != exitOK || !strings.Contains(out, "policySource:\n  from: defaults\n") || !strings.Contains(out, "reboot: true\n") {
		t.Errorf("yaml: exit %d\n%s", code, out)
	}
	code, out, _ = ndp(t, "explain", "--mco", "--from", from, "--to", to)
	if code != exitOK || !strings.HasPrefix(out, "MCO plan rendered-worker-old -> rendered-worker-new\n") {
		t.Errorf("explain --mco: exit %d\n%s", code, out)
	}
}

// A MachineConfiguration read with `oc get -o yaml`: its status decides
// when current, its spec (with a warning) when the status is stale.
func TestPlanMCOPolicySource(t *testing.T) {
	dir := t.TempDir()
	from, to := mcoConfigs(t, dir, nil)
	withStatus := func(gen, observed string) string {
		return strings.Replace(mcoChronyPolicy, "  name: cluster\n", "  name: cluster\n  generation: "+gen+"\n", 1) + `status:
  observedGeneration: ` + observed + `
  nodeDisruptionPolicyStatus:
    clusterPolicies:
      files:
      - path: /etc/
        actions:
        - type: Drain
      sshkey:
        actions:
        - type: None
`
	}
	for _, tc := range []struct {
		name, gen, observed string
		want                []string
	}{
		{"current", "3", "3", []string{"policies: MachineConfiguration cluster's status (generation 3, current)", "actions: Drain, Drain", "drain: yes"}},
		{"stale", "4", "3", []string{"policies: MachineConfiguration cluster's spec merged with the MCO's defaults (its status is stale)", "STALE: MachineConfiguration cluster's status is behind its spec (generation 4, observed 3)", "actions: Restart chronyd.service, Reload crio.service"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, dir, tc.name+".yaml", withStatus(tc.gen, tc.observed))
			code, out, errOut := ndp(t, "plan", "--mco", "-o", "text", "--machineconfiguration", p, "--from", from, "--to", to)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			flat := strings.Join(strings.Fields(out), " ") // the padding aside
			for _, w := range tc.want {
				if !strings.Contains(flat, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// A refused update prints why, naming the fields, and exits 3.
func TestPlanMCORefused(t *testing.T) {
	dir := t.TempDir()
	from, to := mcoConfigs(t, dir, func(b *builder.MachineConfigBuilder) *builder.MachineConfigBuilder {
		return b.WithSpec("fips", true)
	})
	code, out, errOut := ndp(t, "plan", "--mco", "-o", "text", "--from", from, "--to", to)
	if code != exitUnreconcilable {
		t.Fatalf("exit %d, want %d\n%s%s", code, exitUnreconcilable, out, errOut)
	}
	if !strings.Contains(out, "REFUSED") || !strings.Contains(out, "    spec.fips: false → true;") || strings.Contains(out, "actions:") {
		t.Errorf("output:\n%s", out)
	}
	code, out, _ = ndp(t, "plan", "--mco", "-o", "json", "--from", from, "--to", to)
	if code != exitUnreconcilable || !strings.Contains(out, `"refused": [`) {
		t.Errorf("json: exit %d\n%s", code, out)
	}
}

func TestPlanMCOBadMachineConfiguration(t *testing.T) {
	dir := t.TempDir()
	from, to := mcoConfigs(t, dir, nil)
	noService := writeFile(t, dir, "noservice.yaml", strings.Replace(mcoChronyPolicy, "        restart:\n          serviceName: chronyd.service\n", "", 1))
	typo := writeFile(t, dir, "typo.yaml", strings.Replace(mcoChronyPolicy, "    files:", "    filez:", 1))
	notUnit := writeFile(t, dir, "notaunit.yaml", strings.Replace(mcoChronyPolicy, "serviceName: chronyd.service", `serviceName: "not a unit"`, 1))
	dup := writeFile(t, dir, "dup.yaml", mcoChronyPolicy+mcoChronyPolicy[strings.Index(mcoChronyPolicy, "    - path:"):])
	kind := writeFile(t, dir, "kind.yaml", strings.Replace(mcoChronyPolicy, "kind: MachineConfiguration", "kind: MachineConfig", 1))
	for _, tc := range []struct {
		name, path string
		want       []string
	}{
		// The CRD's rules, as the API server words them.
		{"Restart without a service", noService, []string{"noservice.yaml", `MachineConfiguration "cluster"`, "spec.nodeDisruptionPolicy.files[0].actions[0]: line 10: ", "restart is required when type is Restart"}},
		{"service name not a unit", notUnit, []string{"notaunit.yaml", `MachineConfiguration "cluster"`, "spec.nodeDisruptionPolicy.files[0].actions[0].restart.serviceName: line 12: ", `Invalid value: "not a unit": Invalid ${SERVICETYPE} in service name`}},
		{"path given twice", dup, []string{"dup.yaml", `MachineConfiguration "cluster"`, "spec.nodeDisruptionPolicy.files[1]: line 13: ", `Duplicate value: {"path":"/etc/chrony.conf"}`}},
		{"unknown field", typo, []string{"typo.yaml", `MachineConfiguration "cluster"`, "spec.nodeDisruptionPolicy.filez", "line 7", "unknown field"}},
		{"not a MachineConfiguration", kind, []string{"kind.yaml", "kind", "expected operator.openshift.io/v1 MachineConfiguration"}},
		{"missing file", filepath.Join(dir, "nope.yaml"), []string{"nope.yaml", "no such file"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := ndp(t, "plan", "--mco", "--machineconfiguration", tc.path, "--from", from, "--to", to)
			if code != exitInvalid || out != "" {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, exitInvalid, out, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
		})
	}
}

func TestPlanMCOUsage(t *testing.T) {
	dir := t.TempDir()
	from, to := mcoConfigs(t, dir, nil)
	for _, args := range [][]string{
		{"--mco", "--policy", "x.yaml"},
		{"--mco", "--no-defaults"},
		{"--mco", "--compare-policy", "x.yaml"},
		{"--machineconfiguration", "mc.yaml"},
	} {
		if code, _, errOut := ndp(t, append([]string{"plan", "--from", from, "--to", to}, args...)...); code != exitUsage {
			t.Errorf("ndp plan %v: exit %d, want %d\n%s", args, code, exitUsage, errOut)
		}
	}
}
