package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ndp-dev/ndp/internal/testkit/docexample"
)

// notYetChecked are the example sessions no test runs yet, by file and
// first line: each is a known debt (issue 31), not a place for new ones.
// An entry that no longer matches a block fails the test, so the list only
// shrinks.
var notYetChecked = map[string]string{
	"README.md: $ oc apply -f examples/policies/chrony.yaml                      # ndp's own policy: restart chronyd":                         "issue 31",
	"docs/openshift.md: $ oc apply -f examples/policies/chrony.yaml                      # ndp's own policy: restart chronyd":                 "issue 31",
	"docs/openshift.md: $ oc get updateforecasts        # after a chrony MachineConfig, a KubeletConfig, a digest mirror added, then deleted": "issue 31",
	"docs/openshift.md: $ oc get nodehistories -o wide":                                                                                       "issue 31",
	"docs/try-it.md: ==> Before applying: a server-side dry-run previews the plan":                                                            "issue 31",
}

// Every example session of the README and the guide (a "$ " command
// followed by what it printed) is run by a test: "$ bin/ndp" blocks by
// TestReadmeExamples, any other by the test named in its
// "<!-- example: NAME -->" marker (docexample.Check). A session with
// neither would show an output nothing re-runs. Blocks of commands alone
// (input listings) need nothing.
func TestEveryExampleIsChecked(t *testing.T) {
	root := "../.."
	blocks, err := docexample.Parse(root)
	if err != nil {
		t.Fatal(err)
	}
	checkers := exampleCheckers(t, root)
	seen := map[string]docexample.Block{}
	pending := map[string]bool{}
	for _, b := range blocks {
		if b.Name != "" {
			if prev, ok := seen[b.Name]; ok {
				t.Errorf("%s: example %q is also the marker of %s", b, b.Name, prev)
			}
			seen[b.Name] = b
			if !checkers[b.Name] {
				t.Errorf("%s: no test calls docexample.Check with %q", b, b.Name)
			}
			if len(b.Steps()) == 0 {
				t.Errorf("%s: example %q has no \"$ \" command", b, b.Name)
			}
			continue
		}
		if !b.HasOutput() || strings.HasPrefix(b.Lines[0], "$ bin/ndp ") {
			continue
		}
		key := b.File + ": " + b.Lines[0]
		if notYetChecked[key] != "" {
			pending[key] = true
			continue
		}
		t.Errorf("%s: a command's output that no test checks: run it in a test (docexample.Check) and put an <!-- example: NAME --> marker before the block, or show commands only", b)
	}
	for key := range notYetChecked {
		if !pending[key] {
			t.Errorf("notYetChecked %q matches no unchecked block: remove it", key)
		}
	}
}

// exampleCheckers are the example names the repository's tests pass to
// docexample.Check as string literals.
func exampleCheckers(t *testing.T, root string) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "bin" || d.Name() == "dist") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, part := range strings.Split(string(data), "docexample.Check(")[1:] {
			// docexample.Check(t, root, "NAME", …)
			fields := strings.SplitN(part, ",", 4)
			if len(fields) < 3 {
				continue
			}
			if name, err := strconv.Unquote(strings.TrimSpace(fields[2])); err == nil {
				names[name] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}
