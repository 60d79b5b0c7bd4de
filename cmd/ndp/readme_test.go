package main

import (
	"os"
	"strings"
	"testing"
)

// The README's example sessions are what ndp prints today: each code block
// that starts with "$ bin/ndp" is run (from the repository root) and its
// output compared.
func TestReadmeExamples(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chdir("../.."); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chdir("cmd/ndp") })
	blocks := strings.Split(string(data), "```")
	ran := 0
	for i := 1; i < len(blocks); i += 2 {
		block := strings.TrimPrefix(blocks[i], "\n")
		if !strings.HasPrefix(block, "$ bin/ndp ") {
			continue
		}
		lines := strings.Split(block, "\n")
		command := ""
		j := 0
		for ; j < len(lines); j++ {
			l := strings.TrimSpace(strings.TrimPrefix(lines[j], "$ "))
			command += " " + strings.TrimSuffix(l, "\\")
			if !strings.HasSuffix(l, "\\") {
				break
			}
		}
		want := strings.Join(lines[j+1:], "\n")
		args := strings.Fields(command)[1:] // drop bin/ndp
		_, out, errOut := ndp(t, args...)
		if out != want {
			t.Errorf("README example %q prints:\n%s%s\nREADME says:\n%s", command, out, errOut, want)
		}
		ran++
	}
	if ran < 2 {
		t.Errorf("found %d README examples, want at least 2", ran)
	}
}
