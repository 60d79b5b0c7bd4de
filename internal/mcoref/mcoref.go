// Package mcoref finds the Machine Config Operator's reference tools
// (mco-decide, mcc-ref, realconfigs: built from the MCO's own source), for
// the tests (internal/testkit) and hack/compare alike. It links nothing
// but the standard library, so a command may use it without the test kit.
package mcoref

import (
	"os"
	"path/filepath"
)

// Dir is the directory $NDP_MCO_REF names, else shared/mco-ref beside the
// repository (../shared/mco-ref from its root, as CI has it); "" when there
// is none.
func Dir() string {
	if d := os.Getenv("NDP_MCO_REF"); d != "" {
		if abs, err := filepath.Abs(d); err == nil {
			return abs
		}
		return d
	}
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	// The repository's root is the nearest directory up with go.mod.
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
	ref := filepath.Join(filepath.Dir(dir), "shared", "mco-ref")
	if st, err := os.Stat(ref); err != nil || !st.IsDir() {
		return ""
	}
	return ref
}
