package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/internal/testkit/docexample"
)

// TestDiffExampleThroughKubectl runs the README's diff session as a reader
// would: the real kubectl, with ndp as its plugin, against the example
// snapshot.
func TestDiffExampleThroughKubectl(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	kubectl := filepath.Join(root, "bin", "kubectl")
	if _, err := os.Stat(kubectl); err != nil {
		t.Skip("bin/kubectl is not built (make control-plane)")
	}
	plugins := testkit.KubectlNdp(t)
	docexample.Check(t, root, "diff-pull-request", func(command string) string {
		args := strings.Fields(command)
		if args[0] != "kubectl" {
			t.Fatalf("the example runs %q, not kubectl", args[0])
		}
		cmd := exec.Command(kubectl, args[1:]...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "PATH="+plugins+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() != 1) {
			t.Fatalf("%s: %v\n%s", command, err, out)
		}
		return string(out)
	})
}
