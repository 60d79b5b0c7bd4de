// Package docexample finds the example sessions in the README and the user
// guide (docs/*.md) and checks them against what their commands print, so
// that an example output cannot go stale.
//
// An example session is a fenced code block with a "$ " command line
// followed by output lines. Each one is checked by a test: a block whose
// first line is "$ bin/ndp …" by cmd/ndp's TestReadmeExamples; any other by
// the test that names it, from the marker comment on the line before the
// block:
//
//	<!-- example: previews-chrony -->
//	```
//	$ kubectl apply --dry-run=server -f examples/cluster/50-worker-chrony-v2.yaml
//	Warning: …
//	```
//
// The test brings up what the commands need and calls Check with the
// example's name; Problems (run by TestEveryExampleIsChecked) reports a
// session with neither.
package docexample

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Block is one fenced code block of a markdown file.
type Block struct {
	File string // relative to the repository root
	Line int    // of the opening fence, 1-based
	// Name is the example's, from a "<!-- example: NAME -->" line right
	// before the fence; empty without one.
	Name string
	// Lines are the block's lines without the fences, with the fence's
	// indentation (a block inside a list item) removed.
	Lines []string
}

// Step is one command of a session and the lines it printed.
type Step struct {
	Command string // without the "$ ", continuation lines joined
	Output  []string
	// lines are the command's lines as the block has them.
	lines []string
}

var markerRE = regexp.MustCompile(`^\s*<!--\s*example:\s*(\S+)\s*-->\s*$`)

// Files are the markdown files with examples: the README and the guide.
func Files(root string) ([]string, error) {
	guide, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	files := []string{"README.md"}
	for _, g := range guide {
		rel, err := filepath.Rel(root, g)
		if err != nil {
			return nil, err
		}
		files = append(files, rel)
	}
	return files, nil
}

// Parse reads every fenced block of the README and the guide.
func Parse(root string) ([]Block, error) {
	files, err := Files(root)
	if err != nil {
		return nil, err
	}
	var blocks []Block
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			return nil, err
		}
		bs, err := parseFile(f, string(data))
		if err != nil {
			return nil, err
		}
		blocks = append(blocks, bs...)
	}
	return blocks, nil
}

func parseFile(file, data string) ([]Block, error) {
	lines := strings.Split(data, "\n")
	var blocks []Block
	for i := 0; i < len(lines); i++ {
		trimmed := strings.TrimLeft(lines[i], " ")
		if !strings.HasPrefix(trimmed, "```") {
			continue
		}
		indent := lines[i][:len(lines[i])-len(trimmed)]
		b := Block{File: file, Line: i + 1}
		if i > 0 {
			if m := markerRE.FindStringSubmatch(lines[i-1]); m != nil {
				b.Name = m[1]
			}
		}
		j := i + 1
		for ; j < len(lines) && !strings.HasPrefix(strings.TrimLeft(lines[j], " "), "```"); j++ {
			b.Lines = append(b.Lines, strings.TrimPrefix(lines[j], indent))
		}
		if j == len(lines) {
			return nil, fmt.Errorf("%s:%d: the code block is not closed", file, i+1)
		}
		blocks = append(blocks, b)
		i = j
	}
	return blocks, nil
}

// Steps splits a block into its commands and their output. Lines before
// the first command (a usage synopsis, a heading) are no step's.
func (b Block) Steps() []Step {
	var steps []Step
	for i := 0; i < len(b.Lines); i++ {
		l := b.Lines[i]
		if !strings.HasPrefix(l, "$ ") {
			if len(steps) > 0 {
				steps[len(steps)-1].Output = append(steps[len(steps)-1].Output, l)
			}
			continue
		}
		cmd := strings.TrimPrefix(l, "$ ")
		lines := []string{l}
		for strings.HasSuffix(cmd, "\\") && i+1 < len(b.Lines) {
			i++
			cmd = strings.TrimSuffix(cmd, "\\") + " " + strings.TrimSpace(b.Lines[i])
			lines = append(lines, b.Lines[i])
		}
		steps = append(steps, Step{Command: cmd, lines: lines})
	}
	for k := range steps {
		// A blank line ends a session's output: kubectl prints none last.
		for n := len(steps[k].Output); n > 0 && strings.TrimSpace(steps[k].Output[n-1]) == ""; n-- {
			steps[k].Output = steps[k].Output[:n-1]
		}
	}
	return steps
}

// HasOutput says whether a block shows what a command printed.
func (b Block) HasOutput() bool {
	for _, s := range b.Steps() {
		if len(s.Output) > 0 {
			return true
		}
	}
	return false
}

func (b Block) String() string {
	if len(b.Lines) == 0 {
		return fmt.Sprintf("%s:%d", b.File, b.Line)
	}
	return fmt.Sprintf("%s:%d (%q)", b.File, b.Line, b.Lines[0])
}

// Problems are the blocks no test checks: a session (a "$ " command
// followed by output) with no marker and not a "$ bin/ndp" block (those
// TestReadmeExamples runs); a marker that checked (the names tests pass to
// Check) lacks; a marker on a block without a command; one name on two
// different blocks. A block of commands alone (an input listing) is none.
func Problems(blocks []Block, checked map[string]bool) []string {
	var problems []string
	seen := map[string]Block{}
	for _, b := range blocks {
		if b.Name == "" {
			if b.HasOutput() && !strings.HasPrefix(b.Lines[0], "$ bin/ndp ") {
				problems = append(problems, fmt.Sprintf("%s: a command's output that no test checks: run it in a test "+
					"(docexample.Check) and put an <!-- example: NAME --> marker before the block, or show commands only", b))
			}
			continue
		}
		// The same session twice (the README repeats one of the guide's)
		// shares a marker; different ones may not.
		if prev, ok := seen[b.Name]; ok && strings.Join(prev.Lines, "\n") != strings.Join(b.Lines, "\n") {
			problems = append(problems, fmt.Sprintf("%s: example %q is also the marker of %s, which differs", b, b.Name, prev))
		}
		seen[b.Name] = b
		if !checked[b.Name] {
			problems = append(problems, fmt.Sprintf("%s: no test calls docexample.Check with %q", b, b.Name))
		}
		if len(b.Steps()) == 0 {
			problems = append(problems, fmt.Sprintf("%s: example %q has no \"$ \" command", b, b.Name))
		}
	}
	return problems
}

// Find is the example named name; the test fails unless a block has that
// marker. Several blocks may carry it when they are the same session (the
// README repeats one of the guide's): they must be identical.
func Find(t testing.TB, root, name string) Block {
	t.Helper()
	blocks, err := Parse(root)
	if err != nil {
		t.Fatal(err)
	}
	var found []Block
	for _, b := range blocks {
		if b.Name == name {
			found = append(found, b)
		}
	}
	if len(found) == 0 {
		t.Fatalf("example %q: no block carries its marker", name)
	}
	for _, b := range found[1:] {
		if strings.Join(b.Lines, "\n") != strings.Join(found[0].Lines, "\n") {
			t.Fatalf("example %q: %s and %s carry its marker but differ", name, found[0], b)
		}
	}
	return found[0]
}

// UpdateEnv names the environment variable that makes Check write what
// the commands printed into the block instead of comparing
// (NDP_UPDATE_EXAMPLES=1 go test ./test/docs): review the diff.
const UpdateEnv = "NDP_UPDATE_EXAMPLES"

// Check runs each command of the example named name with run (what the
// command printed, stdout and stderr as a terminal shows them) and compares
// it with the block's output after Normalise. A step whose command is
// followed by no output must print nothing either.
func Check(t testing.TB, root, name string, run func(command string) string) {
	t.Helper()
	b := Find(t, root, name)
	steps := b.Steps()
	if len(steps) == 0 {
		t.Fatalf("example %q (%s): no \"$ \" command", name, b)
	}
	update := os.Getenv(UpdateEnv) != ""
	var printed []string
	for _, s := range steps {
		out := run(s.Command)
		printed = append(printed, out)
		got := Normalise(out)
		want := Normalise(strings.Join(s.Output, "\n"))
		if got == want {
			// Unchanged but for what varies: the block keeps its text.
			printed[len(printed)-1] = strings.Join(s.Output, "\n")
		} else if !update {
			t.Errorf("example %q (%s): %q prints (normalised):\n%s\n%s:%d says (normalised):\n%s\n(%s=1 writes what it printed into the block)",
				name, b.File, s.Command, got, b.File, b.Line, want, UpdateEnv)
		}
	}
	if update {
		if err := rewrite(root, b, steps, printed); err != nil {
			t.Fatal(err)
		}
	}
}

// rewrite replaces the outputs of b's steps with printed.
func rewrite(root string, b Block, steps []Step, printed []string) error {
	path := filepath.Join(root, b.File)
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	lines := strings.Split(string(data), "\n")
	fence := lines[b.Line-1]
	indent := fence[:len(fence)-len(strings.TrimLeft(fence, " "))]
	var body []string
	for _, l := range b.Lines {
		if strings.HasPrefix(l, "$ ") {
			break
		}
		body = append(body, indent+l)
	}
	for i, s := range steps {
		for _, l := range s.lines {
			body = append(body, indent+l)
		}
		if out := strings.TrimRight(printed[i], "\n"); out != "" {
			for _, l := range strings.Split(out, "\n") {
				body = append(body, strings.TrimRight(indent+l, " "))
			}
		}
	}
	end := b.Line + len(b.Lines) // the closing fence's index
	lines = append(lines[:b.Line], append(body, lines[end:]...)...)
	return os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644)
}

// A generated config hash: a rendered config's name ends in 32 hex digits
// (a hash of its content, which holds the test's object names and the
// generated registries config), and kubectl ndp status shows their first 8.
var hashRE = regexp.MustCompile(`\b[0-9a-f]{8}(?:[0-9a-f]{24})?\b`)

// What else varies between two runs of the same commands, and only that:
var normalisers = []struct {
	re   *regexp.Regexp
	with string
}{
	// Timestamps.
	{regexp.MustCompile(`\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\b`), "<time>"},
	// kubectl's AGE or SINCE column, the last of a table row.
	{regexp.MustCompile(`(?m) +\d+(s|m|h|d)(\d+[smh])?$`), " <age>"},
	// Columns are padded to their widest cell, which the above change.
	{regexp.MustCompile(`(?m)  +`), " "},
	{regexp.MustCompile(`(?m) +$`), ""},
}

// Normalise replaces what legitimately differs from run to run, and only
// that: each generated config hash by <hash N>, numbered in order of first
// appearance by its first 8 digits (so a node's current and desired config
// still read as the same or different, and a short hash as its rendered
// config's), timestamps, kubectl's AGE column; and, since those change
// column widths, collapses runs of spaces. It ends the text with no
// trailing blank lines.
func Normalise(s string) string {
	ids := map[string]int{}
	s = hashRE.ReplaceAllStringFunc(s, func(h string) string {
		id, ok := ids[h[:8]]
		if !ok {
			id = len(ids) + 1
			ids[h[:8]] = id
		}
		return fmt.Sprintf("<hash %d>", id)
	})
	for _, n := range normalisers {
		s = n.re.ReplaceAllString(s, n.with)
	}
	return strings.TrimRight(s, "\n")
}
