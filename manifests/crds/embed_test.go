package crds

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// openshiftAPIDir is the pinned openshift/api module's directory, found as
// the Makefile's generate target finds it.
func openshiftAPIDir(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/openshift/api")
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go list -m github.com/openshift/api: %v\n%s", err, stderr)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		t.Fatal("go list -m github.com/openshift/api gave no directory: the module is not downloaded (go mod download)")
	}
	return dir
}

// Each embedded CRD is the pinned module's, byte for byte: the copies are
// what ndp validates with, and `make generate` refreshes them.
func TestEmbeddedCRDsAreTheModules(t *testing.T) {
	dir := openshiftAPIDir(t)
	entries, err := fs.ReadDir(openshift, "openshift")
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) < 9 {
		t.Fatalf("%d embedded CRDs: the Makefile copies 9", len(entries))
	}
	for _, e := range entries {
		matches, err := filepath.Glob(filepath.Join(dir, "*", "*", "zz_generated.crd-manifests", e.Name()))
		if err != nil || len(matches) != 1 {
			t.Errorf("%s: %d files of that name in %s (%v), want 1", e.Name(), len(matches), dir, err)
			continue
		}
		want, err := os.ReadFile(matches[0])
		if err != nil {
			t.Fatal(err)
		}
		got, err := File(e.Name())
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from %s: run make generate", e.Name(), matches[0])
		}
	}
	// The one mcorules validates MachineConfiguration with, where the
	// Makefile takes it from.
	mc := "0000_80_machine-config_01_machineconfigurations-Default.crd.yaml"
	want, err := os.ReadFile(filepath.Join(dir, "operator", "v1", "zz_generated.crd-manifests", mc))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := File(mc); err != nil || !bytes.Equal(got, want) {
		t.Errorf("%s: %v, or not the module's", mc, err)
	}
}

func TestByName(t *testing.T) {
	data, file, err := ByName("machineconfigurations.operator.openshift.io")
	if err != nil || file != "0000_80_machine-config_01_machineconfigurations-Default.crd.yaml" || !bytes.Contains(data, []byte("kind: MachineConfiguration\n")) {
		t.Errorf("got %s, %d bytes, %v", file, len(data), err)
	}
	if _, _, err := ByName("machineconfigs.machineconfiguration.openshift.io"); err == nil {
		t.Error("a CRD that is not embedded was found") // ndp's own copy lives beside, not here
	}
	if _, err := File("nope.yaml"); err == nil {
		t.Error("a missing file was found")
	}
	if _, err := File("../embed.go"); err == nil {
		t.Error("a file outside openshift/ was read")
	}
}
