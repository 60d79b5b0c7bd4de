// Package controlplane finds the test control-plane binaries that
// hack/build-control-plane.sh builds into bin/, for the packages that start
// a real kube-apiserver and etcd with envtest.
package controlplane

import (
	"fmt"
	"os"
	"path/filepath"
)

// Assets is the directory holding the named binaries: KUBEBUILDER_ASSETS,
// or bin/ under the repository root (repoRoot, relative to the test's
// package directory). A missing binary is an error that says how to build it.
func Assets(repoRoot string, binaries ...string) (string, error) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		var err error
		if dir, err = filepath.Abs(filepath.Join(repoRoot, "bin")); err != nil {
			return "", err
		}
	}
	for _, b := range binaries {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			return "", fmt.Errorf("these tests need %s in %s: run `make control-plane` (make test does), or set KUBEBUILDER_ASSETS", b, dir)
		}
	}
	return dir, nil
}
