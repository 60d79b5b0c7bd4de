package layout

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The layout table of docs/design.md is the one a reader finds the code by:
// it names every package `go list ./...` lists (by its own row, not a
// parent's), and every path it names exists.
func TestDesignLayoutNamesEveryPackage(t *testing.T) {
	doc, err := os.ReadFile("../../docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(doc)
	start := strings.Index(section, "\n## Layout\n")
	if start < 0 {
		t.Fatal("docs/design.md has no ## Layout section")
	}
	section = section[start+1:]
	if end := strings.Index(section, "\n### "); end >= 0 {
		section = section[:end]
	}
	named := map[string]bool{}
	path := regexp.MustCompile("`([^`]+)`")
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || !strings.HasPrefix(line, "| `") {
			continue
		}
		for _, m := range path.FindAllStringSubmatch(cells[1], -1) {
			p := strings.TrimSuffix(m[1], "/")
			named[p] = true
			if st, err := os.Stat(filepath.Join("../..", p)); err != nil || !st.IsDir() {
				t.Errorf("docs/design.md's layout names %s, which is not a directory", p)
			}
		}
	}
	var missing []string
	for pkg := range allDeps(t) {
		if rel := strings.TrimPrefix(pkg, module); !named[rel] {
			missing = append(missing, rel)
		}
	}
	slices.Sort(missing)
	for _, p := range missing {
		t.Errorf("docs/design.md's layout has no row for %s", p)
	}
	if len(named) < 40 {
		t.Fatalf("docs/design.md's layout names %d paths: not the table", len(named))
	}
}
