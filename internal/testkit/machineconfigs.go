package testkit

import (
	"os"
	"testing"

	"sigs.k8s.io/yaml"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/machineconfig"
)

// ReadObject reads the YAML or JSON document at path into obj (a
// MachineConfig of either API type, a MachineConfiguration...). A file
// that cannot be read or decoded fails the test.
func ReadObject(t testing.TB, path string, obj any) {
	t.Helper()
	if err := yaml.Unmarshal(readFile(t, path), obj); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// ReadConfig reads the MachineConfig document at path as the planner reads
// it (machineconfig.Parse). A file that does not parse fails the test.
func ReadConfig(t testing.TB, path string) *machineconfig.Config {
	t.Helper()
	cfg, err := machineconfig.Parse(path, readFile(t, path))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// MachineConfigFile is a MachineConfig document read both ways: as the
// object ndp's controllers read (labels, annotations) and as the planner
// parses it.
type MachineConfigFile struct {
	Path string
	*ndpmcv1.MachineConfig
	Config *machineconfig.Config
}

// ReadMachineConfig reads the MachineConfig document at path as an object
// and as machineconfig parses it; either failing fails the test.
func ReadMachineConfig(t testing.TB, path string) *MachineConfigFile {
	t.Helper()
	data := readFile(t, path)
	mc := &ndpmcv1.MachineConfig{}
	if err := yaml.Unmarshal(data, mc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	cfg, err := machineconfig.Parse(path, data)
	if err != nil {
		t.Fatal(err)
	}
	return &MachineConfigFile{Path: path, MachineConfig: mc, Config: cfg}
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
