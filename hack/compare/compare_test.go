package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The corpus, from this package's directory.
var corpusManifest = filepath.Join("..", "..", DefaultManifest)

// mcoDecide is the MCO's reference tool (DefaultMCODecide). Missing, the
// test fails: the "MCO with ndp's entries" column is the MCO's own code.
func mcoDecide(t *testing.T) string {
	t.Helper()
	p := DefaultMCODecide()
	if st, err := os.Stat(p); p == "" || err != nil || st.IsDir() {
		t.Fatalf("mco-decide not found (../shared/mco-ref/mco-decide; $NDP_MCO_DECIDE or $NDP_MCO_REF name it): the \"MCO with ndp's entries\" column runs it")
	}
	return p
}

// TestCorpus plans every change of the corpus with the real planner and the
// shipped policies: each plan must be the one the manifest records.
func TestCorpus(t *testing.T) {
	r, err := Run(context.Background(), corpusManifest, DefaultCosts, mcoDecide(t))
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
	r, err := Run(context.Background(), corpusManifest, costs, mcoDecide(t))
	if err != nil {
		t.Fatal(err)
	}
	var ndp, defaults, mco, rebootAny, saved, savedMCO float64
	var gen Totals
	var entries EntriesTotals
	for _, row := range r.Rows {
		if want := 40 * costs.PerNode(*row.MCO); !near(row.MCONodeMin, want) {
			t.Errorf("%s: MCO today %v node-minutes, want %v", row.Entry.Dir, row.MCONodeMin, want)
		}
		if !near(row.SavedVsMCO, row.MCONodeMin-row.NDP) {
			t.Errorf("%s: saved vs MCO today %v, want %v", row.Entry.Dir, row.SavedVsMCO, row.MCONodeMin-row.NDP)
		}
		mco += row.MCONodeMin
		savedMCO += row.SavedVsMCO
		if row.Entry.Generated() {
			gen.add(row)
		}
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

		w := row.WithEntries
		if want := 40 * costs.PerNode(*w.Plan); !near(w.NodeMin, want) {
			t.Errorf("%s: MCO with ndp's entries %v node-minutes, want %v", row.Entry.Dir, w.NodeMin, want)
		}
		if !near(w.SavedVsMCO, row.MCONodeMin-w.NodeMin) || !near(w.OverNDP, w.NodeMin-row.NDP) {
			t.Errorf("%s: with ndp's entries saved %v, over ndp %v; want %v, %v", row.Entry.Dir, w.SavedVsMCO, w.OverNDP, row.MCONodeMin-w.NodeMin, w.NodeMin-row.NDP)
		}
		entries.add(w)
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"ndp", r.All.NDP, ndp}, {"defaults alone", r.All.Defaults, defaults}, {"reboot on any change", r.All.RebootOnAny, rebootAny}, {"saved", r.All.Saved, saved},
		{"MCO today", r.All.MCONodeMin, mco}, {"saved vs MCO today", r.All.SavedVsMCO, savedMCO},
		{"KubeletConfig/ContainerRuntimeConfig ndp", r.Generated.NDP, gen.NDP}, {"KubeletConfig/ContainerRuntimeConfig MCO today", r.Generated.MCONodeMin, gen.MCONodeMin},
		{"KubeletConfig/ContainerRuntimeConfig saved", r.Generated.Saved, gen.Saved}, {"KubeletConfig/ContainerRuntimeConfig saved vs MCO", r.Generated.SavedVsMCO, gen.SavedVsMCO},
		{"MCO with ndp's entries", r.All.Entries.NodeMin, entries.NodeMin}, {"with ndp's entries saved vs MCO today", r.All.Entries.SavedVsMCO, entries.SavedVsMCO},
		{"with ndp's entries over ndp", r.All.Entries.OverNDP, entries.OverNDP}, {"with ndp's entries as ndp plans", float64(r.All.Entries.SameAsNDP), float64(entries.SameAsNDP)},
		{"KubeletConfig/ContainerRuntimeConfig with ndp's entries", r.Generated.Entries.NodeMin, gen.Entries.NodeMin}} {
		if !near(c.got, c.want) {
			t.Errorf("total %s = %v, the rows sum to %v", c.name, c.got, c.want)
		}
	}
	if gen.Rows < 12 || r.Generated.Rows != gen.Rows {
		t.Errorf("%d KubeletConfig/ContainerRuntimeConfig rows (report: %d), want at least 12", gen.Rows, r.Generated.Rows)
	}
	if r.All.Saved <= 0 || r.All.NDP > r.All.Defaults || r.All.Defaults > r.All.RebootOnAny || r.All.MCONodeMin > r.All.RebootOnAny {
		t.Errorf("totals out of order: ndp %v, defaults alone %v, reboot on any %v", r.All.NDP, r.All.Defaults, r.All.RebootOnAny)
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

// miniCorpus writes a manifest with body (its changes) beside copies of the
// corpus's MCO files and of the pairs dirs, and returns its path.
func miniCorpus(t *testing.T, body string, dirs ...string) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Dir(corpusManifest)
	copyFile := func(from, to string) {
		data, err := os.ReadFile(filepath.Join(src, from))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, to)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, to), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	copyFile("mco-machineconfiguration.yaml", "mco-machineconfiguration.yaml")
	for _, d := range dirs {
		for _, f := range []string{"old.yaml", "new.yaml"} {
			copyFile(filepath.Join(d, f), filepath.Join(d, f))
		}
	}
	manifest := filepath.Join(dir, "corpus.yaml")
	head := "mco:\n  machineConfiguration: mco-machineconfiguration.yaml\n"
	if err := os.WriteFile(manifest, []byte(head+body), 0o644); err != nil {
		t.Fatal(err)
	}
	return manifest
}

// TestDriftIsReported: a manifest whose expectation is wrong (here, a real
// pair of the corpus said to need no drain) makes the command exit 1 naming
// the change.
func TestDriftIsReported(t *testing.T) {
	manifest := miniCorpus(t, `changes:
- dir: 07-idms-remove
  description: an IDMS deleted
  expect: {actions: [Reload crio.service], drain: false, reboot: false}
  expectMCO: {actions: [Reload crio.service], drain: true, reboot: false}
`, "07-idms-remove")
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

// TestMCODriftIsReported: the "MCO today" column is checked too. A wrong
// expectMCO is drift; so is a right one once the MachineConfiguration
// loses the entry it rests on.
func TestMCODriftIsReported(t *testing.T) {
	body := `changes:
- dir: 04-chrony-servers
  description: chrony
  policies: [chrony.yaml]
  expect: {actions: [Restart chronyd.service], drain: false, reboot: false}
  expectDefaultsOnly: {actions: [Reboot], drain: true, reboot: true}
  expectMCO: {actions: [%s], drain: false, reboot: false}
`
	write := func(manifest string) {
		data, err := os.ReadFile(filepath.Join(filepath.Dir(corpusManifest), "..", "policies", "chrony.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(filepath.Dir(manifest), "chrony.yaml"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Right: no drift.
	manifest := miniCorpus(t, fmt.Sprintf(body, "Restart chronyd.service"), "04-chrony-servers")
	write(manifest)
	var out, errOut bytes.Buffer
	if code := run([]string{"-manifest", manifest}, &out, &errOut); code != 0 {
		t.Fatalf("exit code %d, want 0; stderr:\n%s", code, errOut.String())
	}

	// A wrong expectMCO.
	manifest = miniCorpus(t, fmt.Sprintf(body, "None"), "04-chrony-servers")
	write(manifest)
	out.Reset()
	errOut.Reset()
	if code := run([]string{"-manifest", manifest}, &out, &errOut); code != 1 {
		t.Fatalf("exit code %d, want 1; stderr:\n%s", code, errOut.String())
	}
	if want := "04-chrony-servers: MCO today plans [Restart chronyd.service] drain=false reboot=false, the manifest expects [None] drain=false reboot=false"; !strings.Contains(errOut.String(), want) {
		t.Errorf("stderr does not name the drift %q:\n%s", want, errOut.String())
	}

	// The MachineConfiguration without its chrony entry: the MCO reboots.
	manifest = miniCorpus(t, fmt.Sprintf(body, "Restart chronyd.service"), "04-chrony-servers")
	write(manifest)
	mcPath := filepath.Join(filepath.Dir(manifest), "mco-machineconfiguration.yaml")
	data, err := os.ReadFile(mcPath)
	if err != nil {
		t.Fatal(err)
	}
	entry := "    - path: /etc/chrony.conf\n      actions:\n      - type: Restart\n        restart:\n          serviceName: chronyd.service\n"
	if !strings.Contains(string(data), entry) {
		t.Fatalf("%s has no chrony entry to remove", mcPath)
	}
	if err := os.WriteFile(mcPath, []byte(strings.Replace(string(data), entry, "", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errOut.Reset()
	if code := run([]string{"-manifest", manifest}, &out, &errOut); code != 1 {
		t.Fatalf("exit code %d, want 1; stderr:\n%s", code, errOut.String())
	}
	if want := "04-chrony-servers: MCO today plans [Reboot] drain=true reboot=true"; !strings.Contains(errOut.String(), want) {
		t.Errorf("stderr does not name the drift %q:\n%s", want, errOut.String())
	}
}

// TestMCOAnchorUsesNoNDPPolicy: the "MCO today" plan of a change planned
// with an ndp policy does not use it (05: kubelet-live restarts the
// kubelet, the MCO reboots), nor ndp's defaults: the registries check is
// the MCO's (11: ndp drains, the MCO does not) and so is the default list
// (02: ndp's default is None, the reference MCO has none and reboots).
func TestMCOAnchorUsesNoNDPPolicy(t *testing.T) {
	r, err := Run(context.Background(), corpusManifest, DefaultCosts, mcoDecide(t))
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, row := range r.Rows {
		switch row.Entry.Dir {
		case "05-kubelet-max-pods":
			found++
			if row.Plan.Reboot || !row.MCO.Reboot {
				t.Errorf("05: ndp %s, MCO today %s; want a restart and a reboot", describe(*row.Plan), describe(*row.MCO))
			}
		case "11-idms-never-contact-source":
			found++
			if !row.Plan.Drain || row.MCO.Drain {
				t.Errorf("11: ndp %s, MCO today %s; want ndp to drain and the MCO not", describe(*row.Plan), describe(*row.MCO))
			}
		case "02-internal-registry-pull-secret":
			found++
			if row.Plan.Reboot || !row.MCO.Reboot {
				t.Errorf("02: ndp %s, MCO today %s; want None and a reboot", describe(*row.Plan), describe(*row.MCO))
			}
		}
	}
	if found != 3 {
		t.Errorf("found %d of the 3 changes checked", found)
	}
}

// TestMCOTodayIsTheMCOsOwnDecision: every "MCO today" plan the manifest
// records (which TestCorpus holds mcorules to) is what the MCO's own code,
// mco-decide, does with the administrator's MachineConfiguration: the same
// action set, drain and reboot.
func TestMCOTodayIsTheMCOsOwnDecision(t *testing.T) {
	tool := mcoDecide(t)
	m, err := LoadManifest(corpusManifest)
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Dir(corpusManifest)
	admin := filepath.Join(base, m.MCO.MachineConfiguration)
	for _, e := range m.Changes {
		t.Run(e.Dir, func(t *testing.T) {
			t.Parallel() // a process each
			dir := filepath.Join(base, e.Dir)
			d, err := mcoDecides(context.Background(), tool, filepath.Join(dir, "old.yaml"), filepath.Join(dir, "new.yaml"), admin)
			if err != nil {
				t.Fatal(err)
			}
			if got := decisionOutcome(d); !sameSet(got, *e.ExpectMCO) {
				t.Errorf("the MCO (mco-decide) does %s, the manifest's expectMCO is %s", describe(got), describe(*e.ExpectMCO))
			}
		})
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
		"MCO today plan",
		"| all changes ",
		"| KubeletConfig and ContainerRuntimeConfig ",
		"MCO with ndp's entries plan",
		"| changes                                  |  n |   ndp | MCO today | MCO with ndp's entries | as ndp plans | saved vs MCO today |",
		"```mermaid\nxychart-beta\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	for _, e := range m.Changes {
		if n := strings.Count(s, "| "+e.Dir+" "); n != 2 {
			t.Errorf("%d rows for %s, want 2 (the table, MCO with ndp's entries)", n, e.Dir)
		}
	}
	for _, series := range []string{"    bar [", "    line [", "    line [/2"} {
		skip := 0
		if strings.HasSuffix(series, "/2") {
			series, skip = strings.TrimSuffix(series, "/2"), 1
		}
		i := strings.Index(s, series)
		if i >= 0 && skip > 0 {
			j := strings.Index(s[i+1:], series)
			if j < 0 {
				t.Fatalf("chart lacks a second %q", series)
			}
			i += 1 + j
		}
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
		"policies without defaults": "mco: {machineConfiguration: m.yaml}\nchanges:\n- dir: a\n  description: x\n  policies: [p.yaml]\n  expect: {actions: [None]}\n  expectMCO: {actions: [None]}\n",
		"no expectMCO":              "mco: {machineConfiguration: m.yaml}\nchanges:\n- dir: a\n  description: x\n  expect: {actions: [None]}\n",
		"no mco":                    "changes:\n- dir: a\n  description: x\n  expect: {actions: [None]}\n  expectMCO: {actions: [None]}\n",
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

// TestMCOWithEntries: the column is the MCO's own decision with ndp's
// entries. A static entry (04: chrony) and a per-update one (05: kubelet
// maxPods, which no static entry can say) each make the MCO do ndp's
// plan; with the defaults alone (01) ndp writes nothing.
func TestMCOWithEntries(t *testing.T) {
	r, err := Run(context.Background(), corpusManifest, DefaultCosts, mcoDecide(t))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		static, perUpdate []string
		plan              string
	}{
		"01-pull-secret":      {nil, nil, "[None] drain=false reboot=false"},
		"04-chrony-servers":   {[]string{"file:/etc/chrony.conf"}, nil, "[Restart chronyd.service] drain=false reboot=false"},
		"05-kubelet-max-pods": {nil, []string{"file:/etc/kubernetes/kubelet.conf"}, "[Restart kubelet.service] drain=false reboot=false"},
	}
	found := 0
	for _, row := range r.Rows {
		w, ok := want[row.Entry.Dir]
		if !ok {
			continue
		}
		found++
		got := row.WithEntries
		if !slices.Equal(got.Static, w.static) || !slices.Equal(got.PerUpdate, w.perUpdate) || describe(*got.Plan) != w.plan || !got.SameAsNDP || got.OverNDP != 0 {
			t.Errorf("%s: entries %v + %v, the MCO %s (as ndp: %t, over ndp %v); want %v + %v, %s", row.Entry.Dir, got.Static, got.PerUpdate, describe(*got.Plan), got.SameAsNDP, got.OverNDP, w.static, w.perUpdate, w.plan)
		}
	}
	if found != len(want) {
		t.Errorf("found %d of the %d changes checked", found, len(want))
	}
}

// TestMCOWithEntriesDrift: where the MCO's own decision with ndp's entries
// is not the one mcoentries predicts, the command says so and exits 1
// (here a stand-in mco-decide that always reboots); without mco-decide it
// cannot run the column and exits 2.
func TestMCOWithEntriesDrift(t *testing.T) {
	body := `changes:
- dir: 04-chrony-servers
  description: chrony
  policies: [chrony.yaml]
  expect: {actions: [Restart chronyd.service], drain: false, reboot: false}
  expectDefaultsOnly: {actions: [Reboot], drain: true, reboot: true}
  expectMCO: {actions: [Restart chronyd.service], drain: false, reboot: false}
`
	manifest := miniCorpus(t, body, "04-chrony-servers")
	data, err := os.ReadFile(filepath.Join(filepath.Dir(corpusManifest), "..", "policies", "chrony.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(manifest), "chrony.yaml"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	reboots := filepath.Join(t.TempDir(), "mco-decide")
	if err := os.WriteFile(reboots, []byte("#!/bin/sh\necho '{\"reconcilable\":true,\"error\":\"\",\"actions\":[{\"type\":\"Reboot\"}],\"drain\":true,\"reboot\":true}'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"-manifest", manifest, "-mco-decide", reboots}, &out, &errOut); code != 1 {
		t.Fatalf("exit code %d, want 1; stderr:\n%s", code, errOut.String())
	}
	if want := "04-chrony-servers: with ndp's entries the MCO (mco-decide) does drain and reboot, mcoentries predicts Restart chronyd.service"; !strings.Contains(errOut.String(), want) {
		t.Errorf("stderr does not name the drift %q:\n%s", want, errOut.String())
	}

	out.Reset()
	errOut.Reset()
	if code := run([]string{"-manifest", manifest, "-mco-decide", filepath.Join(t.TempDir(), "none")}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "mco-decide not found") {
		t.Errorf("without mco-decide: exit %d, want 2; stderr:\n%s", code, errOut.String())
	}
}
