package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// Every relative link of the README and of docs/*.md resolves to a file or
// directory of the repository, and every #anchor to a heading of its page:
// pages were cut out of the README, and a link into a section that moved
// must follow it.
func TestDocLinks(t *testing.T) {
	root := "../.."
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append([]string{filepath.Join(root, "README.md")}, pages...)
	anchors := map[string]map[string]bool{}
	for _, p := range pages {
		anchors[filepath.Clean(p)] = headingAnchors(t, p)
	}
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	checked := 0
	for _, p := range pages {
		for _, target := range link.FindAllStringSubmatch(proseOf(t, p), -1) {
			dest := target[1]
			if regexp.MustCompile(`^[a-z]+:`).MatchString(dest) {
				continue // http(s), mailto
			}
			file, anchor, _ := strings.Cut(dest, "#")
			path := filepath.Clean(p)
			if file != "" {
				path = filepath.Clean(filepath.Join(filepath.Dir(p), file))
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s: link %q: no such file", rel(p), dest)
					continue
				}
			}
			if anchor != "" {
				as, ok := anchors[path]
				if !ok {
					as = headingAnchors(t, path)
					anchors[path] = as
				}
				if !as[anchor] {
					t.Errorf("%s: link %q: no heading with anchor #%s in %s", rel(p), dest, anchor, rel(path))
				}
			}
			checked++
		}
	}
	if checked < 100 {
		t.Errorf("checked %d links, want the guide's hundreds", checked)
	}
}

func rel(p string) string { return strings.TrimPrefix(p, "../../") }

// proseOf is a markdown file without its fenced code blocks.
func proseOf(t *testing.T, path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(string(data), "```")
	var b strings.Builder
	for i := 0; i < len(parts); i += 2 {
		b.WriteString(parts[i])
	}
	return b.String()
}

// headingAnchors are the anchors GitHub gives a file's headings: lower case,
// punctuation dropped, spaces as hyphens, a repeated one suffixed -1, -2...
func headingAnchors(t *testing.T, path string) map[string]bool {
	as := map[string]bool{}
	if !strings.HasSuffix(path, ".md") {
		return as
	}
	seen := map[string]int{}
	for _, l := range strings.Split(proseOf(t, path), "\n") {
		if !strings.HasPrefix(l, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(l, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			seen[a]++
			a = a + "-" + string(rune('0'+n))
		} else {
			seen[a] = 1
		}
		as[a] = true
	}
	return as
}
