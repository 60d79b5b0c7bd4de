package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The README's and the user guide's example sessions are what ndp prints
// today: each code block that starts with "$ bin/ndp" is run (from the
// repository root) and its output compared. A command ending in ">/dev/null"
// is compared on what it prints to stderr. A "$ bin/ndp" line anywhere else in
// a block is an error: its output would be shown but never checked.
func TestReadmeExamples(t *testing.T) {
	if err := os.Chdir("../.."); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chdir("cmd/ndp") })
	guide, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	ran := map[string]int{}
	for _, file := range append([]string{"README.md"}, guide...) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		ran[file] = runExamples(t, file, string(data))
	}
	if ran["README.md"] < 2 {
		t.Errorf("found %d README examples, want at least 2", ran["README.md"])
	}
	// The guide's pages with example sessions: each must still have them.
	for _, page := range []string{"docs/plans.md", "docs/reading-files.md", "docs/shipped-policies.md",
		"docs/troubleshooting.md", "docs/from-the-mco.md"} {
		if ran[page] == 0 {
			t.Errorf("%s: no example ran, want at least one", page)
		}
	}
}

// runExamples checks every "$ bin/ndp" code block of one markdown file and
// returns how many it ran.
func runExamples(t *testing.T, file, data string) int {
	t.Helper()
	blocks := strings.Split(data, "```")
	ran := 0
	for i := 1; i < len(blocks); i += 2 {
		// A fenced block may be indented (inside a list item); its info
		// string (sh, yaml) is the rest of the fence's line.
		lines := strings.Split(blocks[i], "\n")
		indent := ""
		if i > 0 {
			before := blocks[i-1]
			indent = before[strings.LastIndex(before, "\n")+1:]
		}
		lines = lines[1:] // the info string
		for k, l := range lines {
			lines[k] = strings.TrimPrefix(l, indent)
		}
		if len(lines) > 0 && lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		first := ""
		if len(lines) > 0 {
			first = lines[0]
		}
		if !strings.HasPrefix(first, "$ bin/ndp ") {
			for _, l := range lines {
				if strings.HasPrefix(strings.TrimSpace(l), "$ bin/ndp ") {
					t.Errorf("%s: %q is not the first line of its block: its output is never checked", file, l)
				}
			}
			continue
		}
		command := ""
		j := 0
		for ; j < len(lines); j++ {
			l := strings.TrimSpace(strings.TrimPrefix(lines[j], "$ "))
			command += " " + strings.TrimSuffix(l, "\\")
			if !strings.HasSuffix(l, "\\") {
				break
			}
		}
		for _, l := range lines[j+1:] {
			if strings.HasPrefix(l, "$ ") {
				t.Errorf("%s: example %q: a second command %q in the block is not run", file, command, l)
			}
		}
		want := strings.Join(lines[j+1:], "\n") + "\n"
		args := strings.Fields(command)[1:] // drop bin/ndp
		stderrOnly := len(args) > 0 && args[len(args)-1] == ">/dev/null"
		if stderrOnly {
			args = args[:len(args)-1]
		}
		_, out, errOut := ndp(t, args...)
		got := out
		if stderrOnly {
			got = errOut
		}
		if got != want {
			t.Errorf("%s: example %q prints:\n%s%s\n%s says:\n%s", file, command, out, errOut, file, want)
		}
		ran++
	}
	return ran
}
