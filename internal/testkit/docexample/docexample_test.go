package docexample

import (
	"strings"
	"testing"
)

func TestNormalise(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		// Another run's hashes, ages and column widths.
		{"worker  4de5d783  c611721d  9s\nrendered-worker-4de5d78316568cf4c2059b89af749054",
			"worker 904f2882 19c3b1cd 2m\nrendered-worker-904f2882d0cf44561308cec24c9b8f31", true},
		// A node on its target is not one on another config.
		{"worker-0  c611721d  4de5d783", "worker-0  4de5d783  4de5d783", false},
		// A short hash is its rendered config's.
		{"rendered-worker-4de5d78316568cf4c2059b89af749054 4de5d783", "rendered-worker-4de5d78316568cf4c2059b89af749054 c611721d", false},
		// Anything else is compared as it is.
		{"Restart chronyd.service (2 nodes)", "Restart chronyd.service (3 nodes)", false},
		{"sha256:c780a0e866b1742437f98b80e6f51a32f54eb31e80f696d7691b1d3dbc288b06", "sha256:1457116ac6836b408f2a7f58cb30110f79b9cef0e6716f49f5dbc5bdb424144c", false},
		{"NAME AGE\nchrony 5s", "NAME AGE\nchrony 5", false},
	} {
		if got := Normalise(tc.a) == Normalise(tc.b); got != tc.same {
			t.Errorf("Normalise(%q) == Normalise(%q): %v, want %v (%q, %q)", tc.a, tc.b, got, tc.same, Normalise(tc.a), Normalise(tc.b))
		}
	}
}

func TestSteps(t *testing.T) {
	b := Block{Lines: []string{"usage: x", "$ kubectl apply -f a \\", "    -f b", "created", "", "$ kubectl get x", "$ ndp y", "out"}}
	steps := b.Steps()
	if len(steps) != 3 || steps[0].Command != "kubectl apply -f a  -f b" || len(steps[0].Output) != 1 || len(steps[1].Output) != 0 || steps[2].Output[0] != "out" {
		t.Errorf("steps: %+v", steps)
	}
	if !b.HasOutput() || (Block{Lines: []string{"$ a", "$ b"}}).HasOutput() {
		t.Error("HasOutput")
	}
}

func TestProblems(t *testing.T) {
	md := "```\n$ kubectl get ndp\nNAME AGE\n```\n" + // a session, unmarked
		"```sh\nmake cluster\n$ kubectl apply -f x.yaml\n$ kubectl get x\n```\n" + // commands only
		"```\n$ bin/ndp plan\nPlan\n```\n" + // TestReadmeExamples's
		"<!-- example: checked -->\n```\n$ a\nout\n```\n" +
		"<!-- example: checked -->\n```\n$ a\nout\n```\n" + // the same again
		"<!-- example: unknown -->\n```\n$ b\nout\n```\n" +
		"  <!-- example: listing -->\n  ```\n  just text\n  ```\n"
	blocks, err := parseFile("x.md", md)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(Problems(blocks, map[string]bool{"checked": true, "listing": true}), "\n")
	for _, want := range []string{`x.md:1 ("$ kubectl get ndp"): a command's output that no test checks`,
		`no test calls docexample.Check with "unknown"`, `example "listing" has no "$ " command`} {
		if !strings.Contains(got, want) {
			t.Errorf("problems do not say %q:\n%s", want, got)
		}
	}
	if n := len(strings.Split(got, "\n")); n != 3 {
		t.Errorf("%d problems, want 3:\n%s", n, got)
	}
}
