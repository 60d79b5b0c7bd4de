package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ndp-dev/ndp/internal/testkit/docexample"
)

// docs/performance.md shows what make compare prints: its header in the
// "compare" example and its table as the markdown table after it. Both are
// made by the same code path here (Run and WriteTable on the corpus, the
// default costs), so a changed plan or cost shows in the page's diff.
func TestPerformancePageShowsTheTable(t *testing.T) {
	r, err := Run(context.Background(), corpusManifest, DefaultCosts)
	if err != nil {
		t.Fatal(err)
	}
	r.Manifest = DefaultManifest // as make compare, from the repository root, names it
	var out strings.Builder
	if err := WriteTable(&out, r); err != nil {
		t.Fatal(err)
	}
	header, table, _ := strings.Cut(out.String(), "\n\n")
	root := filepath.Join("..", "..")
	docexample.Check(t, root, "compare", func(string) string { return header })

	// The page's table: the "|" lines after the example's block.
	b := docexample.Find(t, root, "compare")
	page, err := os.ReadFile(filepath.Join(root, b.File))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(page), "\n")[b.Line+len(b.Lines)+1:]
	var shown []string
	for _, l := range lines {
		if strings.TrimSpace(l) == "" && len(shown) == 0 {
			continue
		}
		if !strings.HasPrefix(l, "|") {
			break
		}
		shown = append(shown, l)
	}
	var printed []string
	for _, l := range strings.Split(table, "\n") {
		if !strings.HasPrefix(l, "|") {
			break
		}
		printed = append(printed, l)
	}
	if strings.Join(shown, "\n") != strings.Join(printed, "\n") {
		t.Errorf("%s: the table after the compare example differs from make compare's:\n%s", b.File, strings.Join(printed, "\n"))
	}
}
