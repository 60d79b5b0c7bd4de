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
	for _, p := range docexample.Problems(blocks, exampleCheckers(t, root)) {
		t.Error(p)
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
