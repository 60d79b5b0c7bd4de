package main

import (
	"os"
	"strings"
	"testing"

	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/mco/mcoimport"
)

const mcExample = "../../examples/machineconfiguration.yaml"

// The example imports: a NodeDisruptionPolicy on stdout, the report (on
// stderr, stdout being no terminal, and as comments) naming the file.
func TestImportMachineConfigurationExample(t *testing.T) {
	code, out, errOut := ndp(t, "import", "machineconfiguration", mcExample)
	if code != exitOK {
		t.Fatalf("exit %d, want 0\nstderr: %s", code, errOut)
	}
	j, err := yaml.YAMLToJSONStrict([]byte(out))
	if err != nil {
		t.Fatalf("stdout is not YAML: %v\n%s", err, out)
	}
	var p v1alpha1.NodeDisruptionPolicy
	if strict, err := kjson.UnmarshalStrict(j, &p, kjson.DisallowUnknownFields); err != nil || len(strict) > 0 {
		t.Fatalf("stdout is not strictly a NodeDisruptionPolicy: %v %v\n%s", err, strict, out)
	}
	if p.APIVersion != v1alpha1.GroupVersion.String() || p.Kind != v1alpha1.Kind || p.Name != mcoimport.DefaultName || p.EffectivePriority() != v1alpha1.UserDefaultPriority ||
		len(p.Spec.Files) != 9 || len(p.Spec.Units) != 2 || p.Spec.SSHKey != nil {
		t.Errorf("the policy imported:\n%s", out)
	}
	if !strings.HasPrefix(errOut, `MachineConfiguration "cluster" (../../examples/machineconfiguration.yaml): 11 of 16 entries imported
into NodeDisruptionPolicy "imported-machineconfiguration", priority 100: they override ndp's defaults (priority 0) for the same paths, as in the MCO.
Not imported, ndp's built-in defaults already do the same:
  files[0] (line 18): file /var/lib/kubelet/config.json: None, as the default for /var/lib/kubelet/config.json`) ||
		!strings.Contains(errOut, "\nImported, overriding a default (the actions differ):\n  files[2] (line 28): file /etc/containers/policy.json: Drain, Reload crio.service instead of the default") {
		t.Errorf("stderr is not the report:\n%s", errOut)
	}
	comments := "# Written by `ndp import machineconfiguration`.\n"
	for _, l := range strings.Split(strings.TrimSuffix(errOut, "\n"), "\n") {
		comments += strings.TrimRight("# "+l, " ") + "\n"
	}
	if !strings.HasPrefix(out, comments+"apiVersion: ") {
		t.Errorf("the YAML does not begin with the report as comments:\n%s", out)
	}

	// --name names the policy.
	if code, out, _ := ndp(t, "import", "machineconfiguration", "--name", "from-mco", mcExample); code != exitOK || !strings.Contains(out, "\nmetadata:\n  name: from-mco\n") {
		t.Errorf("--name from-mco: exit %d\n%s", code, out)
	}
}

// "-" reads stdin, named so in the report.
func TestImportMachineConfigurationFromStdin(t *testing.T) {
	f, err := os.Open(mcExample)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	stdin := os.Stdin
	os.Stdin = f
	defer func() { os.Stdin = stdin }()
	code, out, errOut := ndp(t, "import", "machineconfiguration", "-")
	if code != exitOK || !strings.HasPrefix(errOut, `MachineConfiguration "cluster" (stdin): 11 of 16 entries imported`) {
		t.Fatalf("exit %d, want 0\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if _, fromFile, _ := ndp(t, "import", "machineconfiguration", mcExample); testkit.WithoutCommentLines(out) != testkit.WithoutCommentLines(fromFile) {
		t.Errorf("from stdin:\n%s\nfrom the file:\n%s", out, fromFile)
	}
}

func TestImportMachineConfigurationErrors(t *testing.T) {
	const head = "apiVersion: operator.openshift.io/v1\nkind: MachineConfiguration\nmetadata:\n  name: cluster\nspec:\n"
	const unit = head + "  nodeDisruptionPolicy:\n    units:\n    - name: app.service\n      actions:\n"
	runFailCases(t, nil, []failCase{
		{"no argument", []string{"import", "machineconfiguration"}, "", exitUsage,
			[]string{"Error: want one FILE, - (stdin) or cluster, got 0 arguments\n"}},
		{"two arguments", []string{"import", "machineconfiguration", "a", "b"}, "", exitUsage, []string{"got 2 arguments"}},
		{"nothing to import", []string{"import"}, "", exitUsage,
			[]string{"Error: what to import? ndp import machineconfiguration FILE|-|cluster\n"}},
		{"another resource", []string{"import", "foo"}, "", exitUsage,
			[]string{`Error: unknown resource "foo": ndp imports a machineconfiguration`}},
		{"bad --name", []string{"import", "machineconfiguration", "--name", "Bad_Name", mcExample}, "", exitUsage,
			[]string{`Error: --name: "Bad_Name" is not a valid object name: a lowercase RFC 1123 subdomain`}},
		{"missing file", []string{"import", "machineconfiguration", "$F"}, "", exitInvalid,
			[]string{"Error: $F: no such file or directory\n"}},
		// Line 8 of the file: line 6 of its second document.
		{"malformed YAML", []string{"import", "machineconfiguration", "$F"}, "# saved\n---\n" + head + "  logLevel: @Normal\n", exitInvalid,
			[]string{"Error: $F: document 2: line 8: malformed YAML: found character that cannot start any token\n"}},
		{"duplicate key", []string{"import", "machineconfiguration", "$F"}, head + "  logLevel: Normal\n  logLevel: Debug\n", exitInvalid,
			[]string{"Error: $F: line 7: malformed YAML:", `key "logLevel" already set in map`}},
		{"Restart without serviceName", []string{"import", "machineconfiguration", "$F"}, unit + "      - type: Restart\n", exitInvalid,
			[]string{`Error: $F: MachineConfiguration "cluster": spec.nodeDisruptionPolicy.units[0].actions[0].restart: line 10: Required value`}},
		{"Special on a unit", []string{"import", "machineconfiguration", "$F"}, unit + "      - type: Special\n", exitInvalid,
			[]string{`Error: $F: MachineConfiguration "cluster": spec.nodeDisruptionPolicy.units[0].actions[0].type: line 10: Special is the MCO's internal action`,
				"it has no meaning for unit app.service\n"}},
	})
}
