package main

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The corpus, from this package's directory.
var corpusManifest = filepath.Join("..", "..", DefaultManifest)

// TestCorpus plans every change of the corpus with the real planner and the
// shipped policies: each plan must be the one the manifest records.
func TestCorpus(t *testing.T) {
	r, err := Run(context.Background(), corpusManifest, DefaultCosts)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Rows) < 25 {
		t.Errorf("the corpus has %d changes, want at least 25", len(r.Rows))
	}
	for _, d := range r.Drift {
		t.Errorf("drift: %s", d)
	}
	if len(r.Drift) > 0 {
		t.Log("if the planner or the default policy changed on purpose, record the new plans in " + DefaultManifest + " and the table in docs/performance.md (make compare)")
	}
}

// TestCorpusDirectories: every directory the manifest lists holds a pair,
// and every directory of the corpus is listed.
func TestCorpusDirectories(t *testing.T) {
	m, err := LoadManifest(corpusManifest)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(corpusManifest)
	var listed []string
	for _, e := range m.Changes {
		listed = append(listed, e.Dir)
		for _, f := range []string{"old.yaml", "new.yaml"} {
			if _, err := os.Stat(filepath.Join(dir, e.Dir, f)); err != nil {
				t.Errorf("%s lists %s: %v", DefaultManifest, e.Dir, err)
			}
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var onDisk []string
	for _, e := range entries {
		if e.IsDir() {
			onDisk = append(onDisk, e.Name())
			if !slices.Contains(listed, e.Name()) {
				t.Errorf("%s is not listed in %s", filepath.Join(dir, e.Name()), DefaultManifest)
			}
		}
	}
	for _, l := range listed {
		if !slices.Contains(onDisk, l) {
			t.Errorf("%s lists %s, which is not a directory of %s", DefaultManifest, l, dir)
		}
	}
}

// TestTotals: each row follows from its plan and the cost model, and the
// totals are the sums of the rows.
func TestTotals(t *testing.T) {
	costs := Costs{Nodes: 40, Drain: 5, Reboot: 12, Restart: 1, Reload: 0.25, DaemonReload: 0.05}
	r, err := Run(context.Background(), corpusManifest, costs)
	if err != nil {
		t.Fatal(err)
	}
	var ndp, defaults, rebootAny, saved float64
	for _, row := range r.Rows {
		if want := 40 * costs.PerNode(*row.Plan); !near(row.NDP, want) {
			t.Errorf("%s: ndp %v node-minutes, want %v", row.Entry.Dir, row.NDP, want)
		}
		if !near(row.RebootOnAny, 40*17) {
			t.Errorf("%s: reboot on any change %v node-minutes, want %v", row.Entry.Dir, row.RebootOnAny, 40*17)
		}
		if !near(row.Saved, row.RebootOnAny-row.NDP) {
			t.Errorf("%s: saved %v, want %v", row.Entry.Dir, row.Saved, row.RebootOnAny-row.NDP)
		}
		wantDefaults := row.NDP
		if row.DefaultsOnly != nil {
			wantDefaults = 40 * costs.PerNode(*row.DefaultsOnly)
		}
		if !near(row.Defaults, wantDefaults) {
			t.Errorf("%s: defaults alone %v node-minutes, want %v", row.Entry.Dir, row.Defaults, wantDefaults)
		}
		ndp += row.NDP
		defaults += row.Defaults
		rebootAny += row.RebootOnAny
		saved += row.Saved
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"ndp", r.NDP, ndp}, {"defaults alone", r.Defaults, defaults}, {"reboot on any change", r.RebootOnAny, rebootAny}, {"saved", r.Saved, saved}} {
		if !near(c.got, c.want) {
			t.Errorf("total %s = %v, the rows sum to %v", c.name, c.got, c.want)
		}
	}
	if r.Saved <= 0 || r.NDP > r.Defaults || r.Defaults > r.RebootOnAny {
		t.Errorf("totals out of order: ndp %v, defaults alone %v, reboot on any %v", r.NDP, r.Defaults, r.RebootOnAny)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

func TestPerNode(t *testing.T) {
	c := DefaultCosts
	for _, tc := range []struct {
		o    Outcome
		want float64
	}{
		{Outcome{Actions: []string{"None"}}, 0},
		{Outcome{Actions: []string{"Reboot"}, Drain: true, Reboot: true}, 10},
		{Outcome{Actions: []string{"Reboot"}, Reboot: true}, 7}, // single node: no drain
		{Outcome{Actions: []string{"Reload crio.service"}}, 0.1},
		{Outcome{Actions: []string{"Reload crio.service"}, Drain: true}, 3.1},
		{Outcome{Actions: []string{"DaemonReload", "Restart kubelet.service"}}, 0.5},
		{Outcome{Actions: []string{"Restart coreos-update-ca-trust.service", "Restart crio.service"}}, 1},
	} {
		if got := c.PerNode(tc.o); !near(got, tc.want) {
			t.Errorf("PerNode(%s, drain=%t) = %v, want %v", tc.o, tc.o.Drain, got, tc.want)
		}
	}
}

// TestDriftIsReported: a manifest whose expectation is wrong (here, a real
// pair of the corpus said to need nothing) makes the command exit 1 naming
// the change.
func TestDriftIsReported(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(filepath.Dir(corpusManifest), "07-idms-remove")
	if err := os.MkdirAll(filepath.Join(dir, "07-idms-remove"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"old.yaml", "new.yaml"} {
		data, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "07-idms-remove", f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	manifest := filepath.Join(dir, "corpus.yaml")
	if err := os.WriteFile(manifest, []byte(`changes:
- dir: 07-idms-remove
  description: an IDMS deleted
  expect: {actions: [Reload crio.service], drain: false, reboot: false}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"-manifest", manifest}, &out, &errOut); code != 1 {
		t.Fatalf("exit code %d, want 1; stderr:\n%s", code, errOut.String())
	}
	if want := "07-idms-remove: ndp plans [Reload crio.service] drain=true reboot=false, the manifest expects [Reload crio.service] drain=false reboot=false"; !strings.Contains(errOut.String(), want) {
		t.Errorf("stderr does not name the drift %q:\n%s", want, errOut.String())
	}
	if !strings.Contains(out.String(), "DRIFT: 1 plan(s)") {
		t.Errorf("the table does not report the drift:\n%s", out.String())
	}
}

// TestOutput: the command prints the cost model, a row per change, the
// totals and, with -chart, a Mermaid chart with a value per change.
func TestOutput(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"-manifest", corpusManifest, "-chart"}, &out, &errOut); code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, errOut.String())
	}
	m, err := LoadManifest(corpusManifest)
	if err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{
		"Cost model, minutes per node: drain 3, reboot 7, restart 0.5, reload 0.1, daemon-reload 0, none 0.",
		"| total ",
		"```mermaid\nxychart-beta\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	for _, e := range m.Changes {
		if !strings.Contains(s, "| "+e.Dir+" ") {
			t.Errorf("no row for %s", e.Dir)
		}
	}
	for _, series := range []string{"    bar [", "    line ["} {
		i := strings.Index(s, series)
		if i < 0 {
			t.Fatalf("chart lacks %q", series)
		}
		values := strings.TrimSuffix(strings.SplitN(s[i+len(series):], "\n", 2)[0], "]")
		if n := len(strings.Split(values, ", ")); n != len(m.Changes) {
			t.Errorf("chart series %q has %d values, want %d", strings.TrimSpace(series), n, len(m.Changes))
		}
	}
}

func TestLoadManifestRejects(t *testing.T) {
	for name, body := range map[string]string{
		"unknown field":             "changes:\n- dir: a\n  description: x\n  expect: {actions: [None]}\n  expected: {}\n",
		"empty":                     "changes: []\n",
		"path as dir":               "changes:\n- dir: a/b\n  description: x\n  expect: {actions: [None]}\n",
		"listed twice":              "changes:\n- dir: a\n  description: x\n  expect: {actions: [None]}\n- dir: a\n  description: y\n  expect: {actions: [None]}\n",
		"no expectation":            "changes:\n- dir: a\n  description: x\n",
		"policies without defaults": "changes:\n- dir: a\n  description: x\n  policies: [p.yaml]\n  expect: {actions: [None]}\n",
	} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "corpus.yaml")
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := LoadManifest(p); err == nil {
				t.Errorf("accepted:\n%s", body)
			}
		})
	}
}
