package testkit

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	"github.com/ndp-dev/ndp/internal/mcoref"
)

// MCORef is the directory of the Machine Config Operator's reference tools
// (mco-decide, mcc-ref, realconfigs: built from the MCO's own source): the
// directory $NDP_MCO_REF names, else shared/mco-ref beside the repository
// (../shared/mco-ref from its root, as CI has it); "" when there is none.
// Tests that compare ndp with the MCO skip, saying so, without it
// (RequireMCORef).
func MCORef() string { return mcoref.Dir() }

// RequireMCORefEnv, set to 1 (CI sets it), makes a missing MCO reference
// fail the tests that need it instead of skipping them.
const RequireMCORefEnv = "NDP_REQUIRE_MCO_REF"

// MCORefRequired tells whether RequireMCORefEnv says the reference must be
// there.
func MCORefRequired() bool { return os.Getenv(RequireMCORefEnv) == "1" }

// LookupMCORef is MCORef's path joined with elem, or an error that names
// what is missing (for a TestMain; tests use RequireMCORef).
func LookupMCORef(elem ...string) (string, error) {
	if d := MCORef(); d != "" {
		p := filepath.Join(append([]string{d}, elem...)...)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s is absent (../shared/mco-ref or $NDP_MCO_REF)", filepath.Join(append([]string{"mco-ref"}, elem...)...))
}

// RequireMCORef is MCORef's path joined with elem, which must exist: a
// test without it skips, saying what is missing, or fails where
// NDP_REQUIRE_MCO_REF=1 says the reference must be there.
func RequireMCORef(t testing.TB, elem ...string) string {
	t.Helper()
	p, err := LookupMCORef(elem...)
	switch {
	case err == nil:
		return p
	case MCORefRequired():
		t.Fatalf("%v, and %s=1 requires it", err, RequireMCORefEnv)
	default:
		t.Skip(err)
	}
	return ""
}

// RealConfigs is the directory of real clusters' MachineConfigs
// (mco-ref/realconfigs), as RequireMCORef finds it.
func RealConfigs(t testing.TB) string {
	t.Helper()
	return RequireMCORef(t, "realconfigs")
}

// RealMachineConfigs are every real cluster's MachineConfigs
// (mco-ref/realconfigs/*/*.yaml) as openshift/api's type reads them, by
// file. A test without the MCO reference skips, or fails as RequireMCORef
// says.
func RealMachineConfigs(t testing.TB) map[string]*mcfgv1.MachineConfig {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(RealConfigs(t), "*", "*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no MachineConfigs in the real configs (%v)", err)
	}
	out := map[string]*mcfgv1.MachineConfig{}
	for _, p := range paths {
		out[p] = &mcfgv1.MachineConfig{}
		ReadObject(t, p, out[p])
	}
	return out
}

// RealCluster is every MachineConfig of one real cluster's capture
// (mco-ref/realconfigs/<cluster>/*.yaml), read as ReadMachineConfig reads
// it, in file order. A test without the MCO reference skips, or fails as
// RequireMCORef says.
func RealCluster(t testing.TB, cluster string) []*MachineConfigFile {
	t.Helper()
	dir := RequireMCORef(t, "realconfigs", cluster)
	paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no MachineConfigs in %s (%v)", dir, err)
	}
	out := make([]*MachineConfigFile, len(paths))
	for i, p := range paths {
		out[i] = ReadMachineConfig(t, p)
	}
	return out
}
