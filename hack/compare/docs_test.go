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
// "compare" example, its table as the markdown table after it, and its
// summary in a text block. Both are
// made by the same code path here (Run and WriteTable on the corpus, the
// default costs), so a changed plan or cost shows in the page's diff.
func TestPerformancePageShowsTheTable(t *testing.T) {
	r, err := Run(context.Background(), corpusManifest, DefaultCosts, mcoDecide(t))
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

	// The rest of what it prints, the summary, is the page's text block
	// that starts as it does.
	_, summary, ok := strings.Cut(out.String(), "\nSummary, ")
	if !ok {
		t.Fatalf("make compare printed no summary:\n%s", out.String())
	}
	summary = "Summary, " + strings.TrimRight(summary, "\n")
	blocks, err := docexample.Parse(root)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, blk := range blocks {
		if blk.File == b.File && len(blk.Lines) > 0 && strings.HasPrefix(blk.Lines[0], "Summary, ") {
			found = true
			if got := strings.Join(blk.Lines, "\n"); got != summary {
				t.Errorf("%s:%d: the summary differs from make compare's:\n%s", blk.File, blk.Line, summary)
			}
		}
	}
	if !found {
		t.Errorf("%s: no text block with make compare's summary", b.File)
	}
}
