package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	operatorv1 "github.com/openshift/api/operator/v1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/policy"
)

const policiesDir = "../../examples/policies/"

// mcoDecide is ../shared/mco-ref/mco-decide (testkit.MCORef). Missing, the
// test fails: the export's one real judge is the MCO's own code.
func mcoDecide(t *testing.T) string {
	t.Helper()
	ref := testkit.MCORef()
	tool := filepath.Join(ref, "mco-decide")
	if st, err := os.Stat(tool); ref == "" || err != nil || st.IsDir() {
		t.Fatalf("mco-decide not found (../shared/mco-ref/mco-decide; NDP_MCO_REF names the directory): the export is judged by the MCO's own code")
	}
	return tool
}

// verdict is a decision in the terms ndp and the MCO share: the action set
// (Drain as the flag only, Special as the CRI-O reload it runs, None only
// when alone), drain and reboot.
type verdict struct {
	Actions       []string
	Drain, Reboot bool
}

func verdictOf(actions []string, drain, reboot bool) verdict {
	v := verdict{Drain: drain, Reboot: reboot}
	for _, a := range actions {
		switch a {
		case "Drain", "None":
			continue
		case "Special":
			a = "Reload crio.service"
		}
		if !slices.Contains(v.Actions, a) {
			v.Actions = append(v.Actions, a)
		}
	}
	slices.Sort(v.Actions)
	return v
}

func planVerdict(p planner.Plan) verdict {
	var as []string
	for _, a := range p.Actions {
		as = append(as, planner.FormatActions([]policy.Action{a}))
	}
	return verdictOf(as, p.Drain, p.Reboot)
}

// decide runs mco-decide on a pair with the MachineConfiguration at mc.
func decide(t *testing.T, tool, pair, mc string) verdict {
	t.Helper()
	d := testkit.MCODecide(t, tool, examples+pair+"/old.yaml", examples+pair+"/new.yaml", mc)
	if !d.Reconcilable || d.Error != "" {
		t.Fatalf("mco-decide on %s: reconcilable %t, error %q", pair, d.Reconcilable, d.Error)
	}
	var as []string
	for _, a := range d.Actions {
		as = append(as, strings.TrimSpace(a.Type+" "+a.Service))
	}
	return verdictOf(as, d.Drain, d.Reboot)
}

// entriesOf lists a spec's file entries as "PATH: ACTIONS".
func entriesOf(spec operatorv1.NodeDisruptionPolicyConfig) []string {
	var out []string
	for _, f := range spec.Files {
		out = append(out, f.Path+": "+planner.FormatActions(f.Actions))
	}
	for _, u := range spec.Units {
		out = append(out, "unit "+string(u.Name)+": "+planner.FormatActions(u.Actions))
	}
	if len(spec.SSHKey.Actions) > 0 {
		out = append(out, "sshkey: "+planner.FormatActions(spec.SSHKey.Actions))
	}
	return out
}

func TestExportMachineConfiguration(t *testing.T) {
	tool := mcoDecide(t)
	// An OPA bundle of the template owner's haproxy policy, for --bundle.
	bundle := filepath.Join(t.TempDir(), "haproxy.tar.gz")
	if code, _, errOut := ndp(t, "bundle", "build", "../../examples/bundles/haproxy", "-o", bundle); code != exitOK {
		t.Fatalf("ndp bundle build: exit %d\n%s", code, errOut)
	}
	const corpus = "../corpus/" // from examples/machineconfigs
	for _, tc := range []struct {
		name     string
		args     []string
		policies []string // as ndp plan takes them, for the decisive check
		entries  []string
		stderr   []string
		// pair is the update mco-decide judges the export on; sameAsNDP:
		// the MCO then does ndp's plan.
		pair      string
		sameAsNDP bool
	}{{
		name:      "chrony: a static entry",
		args:      []string{"--policy", policiesDir + "chrony.yaml"},
		policies:  []string{policiesDir + "chrony.yaml"},
		entries:   []string{"/etc/chrony.conf: Restart chronyd.service"},
		pair:      "chrony",
		sameAsNDP: true,
	}, {
		name:     "kubelet-live: Rego, no static entry, and why",
		args:     []string{"--policy", policiesDir + "kubelet-live.yaml"},
		policies: []string{policiesDir + "kubelet-live.yaml"},
		stderr: []string{"not expressed: policy kubelet-live, its Rego: a Rego policy decides changes by what changed in them (it names /etc/kubernetes/kubelet.conf, " +
			"/etc/systemd/system/kubelet.service.d/20-logging.conf, kubelet.service), which the MCO's API cannot say: no static entry; per-update entries only, for the updates ndp plans\n"},
		// Without a per-update entry the MCO reboots where ndp restarts.
		pair:      "kubelet-maxpods",
		sameAsNDP: false,
	}, {
		name:     "kubelet-live, maxPods update: a per-update entry",
		args:     append([]string{"--policy", policiesDir + "kubelet-live.yaml"}, example("kubelet-maxpods")...),
		policies: []string{policiesDir + "kubelet-live.yaml"},
		entries:  []string{"/etc/kubernetes/kubelet.conf: Restart kubelet.service"},
		stderr: []string{"not expressed: policy kubelet-live, its Rego:",
			"\nupdate rendered-worker-7a8b9c -> rendered-worker-9d0e1f: the MCO would drain and reboot; with these entries Restart kubelet.service; ndp plans Restart kubelet.service\n"},
		pair:      "kubelet-maxpods",
		sameAsNDP: true,
	}, {
		name:      "chrony and kubelet-live, -o json, the chrony update: the static entry is enough",
		args:      append([]string{"--policy", policiesDir + "chrony.yaml", "--policy", policiesDir + "kubelet-live.yaml", "-o", "json"}, example("chrony")...),
		policies:  []string{policiesDir + "chrony.yaml", policiesDir + "kubelet-live.yaml"},
		entries:   []string{"/etc/chrony.conf: Restart chronyd.service"},
		stderr:    []string{"the MCO would drain and reboot; with these entries Restart chronyd.service; ndp plans Restart chronyd.service\n"},
		pair:      "chrony",
		sameAsNDP: true,
	}, {
		name:     "over the administrator's entries: both printed",
		args:     append([]string{"--policy", policiesDir + "kubelet-live.yaml", "--machineconfiguration", mcExample}, example("kubelet-maxpods")...),
		policies: []string{policiesDir + "kubelet-live.yaml"},
		entries: []string{"/etc/app: DaemonReload, Restart app.service", "/etc/app/certs/: Restart app.service", "/etc/app/feature-flags.json: None",
			"/etc/app/kernel-tuning.conf: Reboot", "/etc/chrony.conf: Restart chronyd.service", "/etc/containers/policy.json: Drain, Reload crio.service",
			"/etc/containers/registries.d/: Restart crio.service", "/etc/crio/policies: Reload crio.service", "/etc/kubernetes/kubelet.conf: Restart kubelet.service",
			"/etc/modprobe.d: Reboot", "/etc/nginx/: Reload nginx.service", "/etc/security/limits.d/: Drain", "/var/lib/kubelet/config.json: None",
			"unit app.service: DaemonReload, Restart app.service", "unit chronyd.service: Reboot", "unit logrotate.timer: None", "sshkey: None"},
		pair:      "kubelet-maxpods",
		sameAsNDP: true,
	}, {
		name:      "--bundle: the haproxy bundle, a haproxy.cfg update",
		args:      []string{"--bundle", bundle, "--from", examples + corpus + "35-haproxy-config/old.yaml", "--to", examples + corpus + "35-haproxy-config/new.yaml"},
		policies:  []string{bundle},
		entries:   []string{"/etc/haproxy/haproxy.cfg: Reload haproxy.service"},
		stderr:    []string{"not expressed: policy haproxy, its Rego: a Rego policy decides changes by what changed in them (it names /etc/haproxy/, "},
		pair:      corpus + "35-haproxy-config",
		sameAsNDP: true,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"export", "machineconfiguration"}, tc.args...)
			code, out, errOut := ndp(t, args...)
			if code != exitOK {
				t.Fatalf("ndp %v: exit %d\nstderr: %s", args, code, errOut)
			}
			j, err := yaml.YAMLToJSONStrict([]byte(out))
			if slices.Contains(tc.args, "json") {
				j, err = []byte(out), nil
				if !json.Valid(j) {
					t.Fatalf("-o json: stdout is not JSON:\n%s", out)
				}
			}
			if err != nil {
				t.Fatalf("stdout is not YAML: %v\n%s", err, out)
			}
			var mc operatorv1.MachineConfiguration
			if strict, err := kjson.UnmarshalStrict(j, &mc, kjson.DisallowUnknownFields); err != nil || len(strict) > 0 {
				t.Fatalf("stdout is not strictly a MachineConfiguration: %v %v\n%s", err, strict, out)
			}
			if mc.APIVersion != "operator.openshift.io/v1" || mc.Kind != "MachineConfiguration" || mc.Name != "cluster" {
				t.Errorf("not MachineConfiguration cluster:\n%s", out)
			}
			var top map[string]any
			if err := json.Unmarshal(j, &top); err != nil {
				t.Fatal(err)
			}
			if spec, _ := top["spec"].(map[string]any); len(spec) > 1 || len(top) > 4 {
				t.Errorf("fields beyond spec.nodeDisruptionPolicy:\n%s", out)
			}
			if diff := cmp.Diff(tc.entries, entriesOf(mc.Spec.NodeDisruptionPolicy)); diff != "" {
				t.Errorf("entries (-want +got):\n%s\nstderr: %s", diff, errOut)
			}
			testkit.CheckContains(t, "stderr", errOut, tc.stderr...)
			// The same again: the output does not move.
			if _, again, _ := ndp(t, args...); again != out {
				t.Errorf("a second run printed otherwise:\n%s\n%s", out, again)
			}

			// The decisive check: the MCO's own code, given the export,
			// does ndp's plan (or, where the stderr says it cannot, not).
			file := filepath.Join(t.TempDir(), "mc.yaml")
			if err := os.WriteFile(file, []byte(out), 0o600); err != nil {
				t.Fatal(err)
			}
			planArgs := example(tc.pair)
			for _, p := range tc.policies {
				planArgs = append(planArgs, "--policy", p)
			}
			want := planVerdict(planJSON(t, exitOK, planArgs...))
			got := decide(t, tool, tc.pair, file)
			if same := cmp.Equal(want, got); same != tc.sameAsNDP {
				t.Errorf("mco-decide with the export: %+v; ndp plans %+v; want the same: %t", got, want, tc.sameAsNDP)
			}
		})
	}
}

func TestExportMachineConfigurationErrors(t *testing.T) {
	badRego := "apiVersion: ndp.dev/v1alpha1\nkind: NodeDisruptionPolicy\nmetadata:\n  name: bad\nspec:\n  rego: |\n    package ndp.policy.bad\n\n    claims contains x if {\n      x :=\n    }\n"
	var full strings.Builder
	full.WriteString("apiVersion: operator.openshift.io/v1\nkind: MachineConfiguration\nmetadata:\n  name: cluster\nspec:\n  nodeDisruptionPolicy:\n    files:\n")
	for i := range 50 {
		full.WriteString("    - path: /etc/app" + string(rune('a'+i/26)) + string(rune('a'+i%26)) + ".conf\n      actions:\n      - type: None\n")
	}
	const restart = "apiVersion: operator.openshift.io/v1\nkind: MachineConfiguration\nmetadata:\n  name: cluster\nspec:\n  nodeDisruptionPolicy:\n    units:\n    - name: app.service\n      actions:\n      - type: Restart\n"
	chrony := policiesDir + "chrony.yaml"
	runFailCases(t, []string{"export", "machineconfiguration"}, []failCase{
		{"a Rego syntax error", []string{"--policy", "$F"}, badRego, exitInvalid,
			[]string{`Error: $F: NodeDisruptionPolicy "bad": `, `spec.rego line 5: rego_parse_error: unexpected } token`}},
		{"a missing policy", []string{"--policy", "$F"}, "", exitInvalid, []string{"Error: policy $F: no such file or directory\n"}},
		{"a missing config", []string{"--policy", chrony, "--from", "$F", "--to", "$F"}, "", exitInvalid, []string{"Error: $F: no such file or directory\n"}},
		{"a missing MachineConfiguration", []string{"--policy", chrony, "--machineconfiguration", "$F"}, "", exitInvalid, []string{"Error: $F: no such file or directory\n"}},
		{"an invalid MachineConfiguration", []string{"--policy", chrony, "--machineconfiguration", "$F"}, restart, exitInvalid,
			[]string{`Error: $F: MachineConfiguration "cluster": spec.nodeDisruptionPolicy.units[0].actions[0]`, ": line 10: "}},
		{"more entries than the MCO's API takes", []string{"--policy", chrony, "--machineconfiguration", "$F"}, full.String(), exitInvalid,
			[]string{`Error: the exported MachineConfiguration "cluster" (the MCO's API would refuse it): spec.nodeDisruptionPolicy.files: Too many: 51`}},
		{"--from without --to", []string{"--policy", chrony, "--from", "x"}, "", exitUsage, []string{"Error: --from and --to go together"}},
		{"--single-node without an update", []string{"--policy", chrony, "--single-node"}, "", exitUsage, []string{"Error: --single-node goes with --from and --to"}},
		{"-o text", []string{"--policy", chrony, "-o", "text"}, "", exitUsage, []string{`Error: --output must be yaml or json, not "text"`}},
		{"--bundle not a bundle", []string{"--bundle", chrony}, "", exitUsage, []string{"expected an OPA bundle .tar.gz"}},
		{"an argument", []string{"--policy", chrony, "extra"}, "", exitUsage, []string{`unexpected arguments ["extra"]`}},
	})
	for _, args := range [][]string{{"export"}, {"export", "foo"}} {
		if code, _, errOut := ndp(t, args...); code != exitUsage {
			t.Errorf("ndp %v: exit %d, want 2\n%s", args, code, errOut)
		}
	}
}
