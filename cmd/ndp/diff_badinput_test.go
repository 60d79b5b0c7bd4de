package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/internal/testkit/builder"
)

// TestDiffBadInputNamesFileAndObject runs the real engine on bad input
// against the example snapshot: each is refused with exit 2, stderr naming
// the file (and line) and the object, nothing on stdout, and no file
// written.
func TestDiffBadInputNamesFileAndObject(t *testing.T) {
	snapshot := "../../examples/diff/cluster.yaml"
	data, err := os.ReadFile(snapshot)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// The snapshot without a template MachineConfig its worker pool was
	// rendered from.
	start := strings.Index(string(data), "\n    name: 01-worker-kubelet\n") // the object's own name, not a reference
	if start < 0 {
		t.Fatal("the example snapshot has no 01-worker-kubelet")
	}
	docStart := strings.LastIndex(string(data[:start]), "\n- ") + 1
	docEnd := strings.Index(string(data[start:]), "\n- ") + start + 1
	noTemplate := writeFile(t, dir, "no-template.yaml", string(data[:docStart])+string(data[docEnd:]))
	syntax := writeFile(t, dir, "syntax.yaml", "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  name: 50-worker-x\n  labels: [unclosed\n")
	unknown := writeFile(t, dir, "deploy.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n")
	// A relative path: the MCO's render refuses it.
	refused := writeFile(t, dir, "refused.yaml", string(builder.MachineConfig("50-worker-relative").WithRole("worker").WithFile("etc/relative.conf", "x").Document()))
	chrony := "../../examples/diff/pull-request/50-worker-chrony.yaml"
	before := listDir(t, dir)
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"a manifest that does not parse", []string{"--state", snapshot, "-f", syntax}, []string{"syntax.yaml:5", "YAML syntax error"}},
		{"an unknown kind", []string{"--state", snapshot, "-f", unknown}, []string{"deploy.yaml:1", "Deployment web"}},
		{"a MachineConfig the MCO refuses", []string{"--state", snapshot, "-f", refused}, []string{"refused.yaml:1", `MachineConfig "50-worker-relative"`, "storage.files.0.path: path not absolute"}},
		{"a snapshot without a template", []string{"--state", noTemplate, "-f", chrony}, []string{"no-template.yaml lacks MachineConfig 01-worker-kubelet", "pool worker"}},
		{"a deletion of what is not there", []string{"--state", snapshot, "--delete", "kubeletconfig/max-pods"}, []string{"--delete", "KubeletConfig", "max-pods"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := ndp(t, append([]string{"diff"}, tc.args...)...)
			if code != exitDiffError || out != "" {
				t.Fatalf("exit %d, stdout %q; want exit %d and nothing on stdout\nstderr: %s", code, out, exitDiffError, errOut)
			}
			testkit.CheckContains(t, "stderr", errOut, tc.want...)
		})
	}
	if after := listDir(t, dir); strings.Join(after, ",") != strings.Join(before, ",") {
		t.Errorf("the diff wrote files: %v, then %v", before, after)
	}
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		out = append(out, p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
