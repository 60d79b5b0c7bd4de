package testkit

import (
	"os"
	"path/filepath"
	"testing"

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

// RequireMCORef is MCORef's path joined with elem, which must exist: a
// test without it skips, saying what is missing, or fails where
// NDP_REQUIRE_MCO_REF=1 says the reference must be there.
func RequireMCORef(t testing.TB, elem ...string) string {
	t.Helper()
	if d := MCORef(); d != "" {
		p := filepath.Join(append([]string{d}, elem...)...)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	missing := filepath.Join(append([]string{"mco-ref"}, elem...)...)
	if os.Getenv(RequireMCORefEnv) == "1" {
		t.Fatalf("%s is absent (../shared/mco-ref or $NDP_MCO_REF), and %s=1 requires it", missing, RequireMCORefEnv)
	}
	t.Skipf("%s is absent (../shared/mco-ref or $NDP_MCO_REF)", missing)
	return ""
}

// RealConfigs is the directory of real clusters' MachineConfigs
// (mco-ref/realconfigs), as RequireMCORef finds it.
func RealConfigs(t testing.TB) string {
	t.Helper()
	return RequireMCORef(t, "realconfigs")
}
