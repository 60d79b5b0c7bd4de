package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/ndp-dev/ndp/clusterdiff"
	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/internal/testkit/builder"
)

// diffReport is a report as the engine makes it: on OpenShift, the
// master pool unchanged and the worker pool moving to a new config,
// its three nodes drained and rebooted by the MCO where ndp would restart
// chronyd.
func diffReport() *clusterdiff.Report {
	ndpPlan := clusterdiff.Plan{
		By: "ndp", Effect: clusterdiff.EffectRestart, Actions: []string{"Restart chronyd.service"},
		Changes: []clusterdiff.Change{{
			Change: "file /etc/chrony.conf: added", Rule: "policy chrony", Actions: []string{"Restart chronyd.service"},
			Objects: []string{"MachineConfig 50-worker-chrony"},
		}},
	}
	return &clusterdiff.Report{
		APIVersion: clusterdiff.ReportAPIVersion, Kind: clusterdiff.ReportKind,
		Mode:  clusterdiff.ModeMCO,
		State: "snapshot cluster-snapshot/",
		Objects: []clusterdiff.ObjectChange{
			{Kind: "MachineConfig", Name: "50-worker-chrony", Operation: clusterdiff.OpCreate, Source: "manifests/50-worker-chrony.yaml:2"},
			{Kind: "KubeletConfig", Name: "set-max-pods", Operation: clusterdiff.OpUnchanged, Source: "manifests/kubelet.yaml:1"},
		},
		Generated: []clusterdiff.GeneratedChange{
			{Name: "99-worker-generated-kubelet", Pool: "worker", Operation: clusterdiff.OpUnchanged, Owners: []string{"KubeletConfig set-max-pods"}},
		},
		Pools: []clusterdiff.PoolDiff{
			{
				Pool: "master", From: "rendered-master-f898aa7d05f995ca972f6930b43c6b5b", To: "rendered-master-f898aa7d05f995ca972f6930b43c6b5b",
				Nodes: 3, NodesKnown: true, Effect: clusterdiff.EffectNone,
			},
			{
				Pool: "worker", From: "rendered-worker-2a854b4a0c86cb8484ee1697c7d0686c", To: "rendered-worker-5c1e0f3d9a8b7c6d5e4f3a2b1c0d9e8f",
				Changed: true, ToExact: true, Causes: []string{"MachineConfig 50-worker-chrony"},
				Nodes: 3, NodesKnown: true,
				Groups: []clusterdiff.Group{{
					From: "rendered-worker-2a854b4a0c86cb8484ee1697c7d0686c", Nodes: 3, Names: []string{"worker-0", "worker-1", "worker-2"},
					Plan: clusterdiff.Plan{
						By: "MCO", Effect: clusterdiff.EffectReboot, Actions: []string{"Reboot"}, Drain: true, Reboot: true,
						Changes: []clusterdiff.Change{{
							Change: "file /etc/chrony.conf", Rule: "no nodeDisruptionPolicy entry | default", Actions: []string{"Reboot"},
							Objects: []string{"MachineConfig 50-worker-chrony"},
						}},
					},
					NDP:          &ndpPlan,
					Entries:      []clusterdiff.MCOEntry{{Subject: "/etc/chrony.conf", Actions: []string{"Restart chronyd.service"}}},
					EntriesExact: true,
				}},
				Effect:  clusterdiff.EffectReboot,
				Rollout: &clusterdiff.Rollout{Policies: []string{"workers"}, Held: "waiting: outside the maintenance window, opens Sat 02:00 UTC", Gates: []string{"no firing alerts"}},
			},
		},
		Changed: true,
		Effect:  clusterdiff.EffectReboot,
		Notes:   []string{"the snapshot has no `Nodes` | counts from status", "MachineConfiguration cluster: <none>"},
	}
}

// restartReport is a report whose one changed pool only restarts a
// service, as the MCO decides; ndp's plan beside it reboots.
func restartReport() *clusterdiff.Report {
	r := diffReport()
	g := &r.Pools[1].Groups[0]
	g.Plan = clusterdiff.Plan{By: "MCO", Effect: clusterdiff.EffectRestart, Actions: []string{"Restart chronyd.service"}}
	g.NDP = &clusterdiff.Plan{By: "ndp", Effect: clusterdiff.EffectReboot, Actions: []string{"Reboot"}, Drain: true, Reboot: true}
	g.Entries = nil
	r.Pools[1].Effect, r.Effect = clusterdiff.EffectRestart, clusterdiff.EffectRestart
	return r
}

// unchangedReport is a report of a change set that changes no pool.
func unchangedReport() *clusterdiff.Report {
	r := diffReport()
	w := &r.Pools[1]
	w.To, w.Changed, w.Groups, w.Effect, w.Rollout, w.Causes = w.From, false, nil, clusterdiff.EffectNone, nil, nil
	r.Changed, r.Effect = false, clusterdiff.EffectNone
	return r
}

// fakeDiff replaces the engine by one returning report (or err), and
// records what it was given.
type fakeDiff struct {
	report func() *clusterdiff.Report
	err    error
	panic  bool
	calls  int
	state  *clusterdiff.Objects
	cs     clusterdiff.ChangeSet
	opts   clusterdiff.Options
}

func useFakeDiff(t *testing.T, f *fakeDiff) *fakeDiff {
	t.Helper()
	old := diffEngine
	diffEngine = func(_ context.Context, state *clusterdiff.Objects, cs clusterdiff.ChangeSet, opts clusterdiff.Options) (*clusterdiff.Report, error) {
		f.calls++
		f.state, f.cs, f.opts = state, cs, opts
		if f.panic {
			panic("boom")
		}
		if f.err != nil {
			return nil, f.err
		}
		return f.report(), nil
	}
	t.Cleanup(func() { diffEngine = old })
	return f
}

// diffManifest adds chrony.conf to the worker pool.
var diffManifest = string(builder.MachineConfig("50-worker-chrony").WithRole("worker").
	WithFiles(builder.File("/etc/chrony.conf", "pool 0.rhel.pool.ntp.org iburst\n").With("mode", 0o644)).Document())

// diffFiles writes a manifest and a small snapshot (the worker pool and
// the ControllerConfig) and returns their paths.
func diffFiles(t *testing.T) (manifest, snapshot string) {
	t.Helper()
	dir := t.TempDir()
	manifest = writeFile(t, dir, "50-worker-chrony.yaml", diffManifest)
	snap := filepath.Join(dir, "snapshot")
	if err := os.Mkdir(snap, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, snap, "worker-pool.yaml", snapshotWorkerPool)
	writeFile(t, snap, "controllerconfig.yaml", snapshotControllerConfig)
	return manifest, snap
}

func TestDiffUsageAndErrorsExitTwo(t *testing.T) {
	manifest, snapshot := diffFiles(t)
	missing := filepath.Join(t.TempDir(), "nope.yaml")
	notAKind := writeFile(t, t.TempDir(), "deploy.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n")
	for _, tc := range []struct {
		name   string
		args   []string
		engine *fakeDiff
		want   string // in stderr
	}{
		{"nothing to diff", []string{"--state", snapshot}, nil, "nothing to diff"},
		{"an argument", []string{"--state", snapshot, "-f", manifest, "extra"}, nil, "takes no arguments"},
		{"an unknown flag", []string{"--state", snapshot, "-f", manifest, "--bogus"}, nil, "unknown flag: --bogus"},
		{"-f without a value", []string{"--state", snapshot, "-f"}, nil, "flag needs an argument"},
		{"bad output", []string{"--state", snapshot, "-f", manifest, "-o", "html"}, nil, `--output must be text, markdown, json or yaml, not "html"`},
		{"bad fail-on", []string{"--state", snapshot, "-f", manifest, "--fail-on", "restart"}, nil, `--fail-on must be reboot, drain or any, not "restart"`},
		{"bad mode", []string{"--state", snapshot, "-f", manifest, "--mode", "mcd"}, nil, `--mode must be auto, mco or ndp, not "mcd"`},
		{"state and kubeconfig", []string{"--state", snapshot, "--kubeconfig", "k", "-f", manifest}, nil, "give one or the other"},
		{"stdin twice", []string{"--state", "-", "-f", "-"}, nil, "stdin (-) can be read once"},
		{"bad deletion", []string{"--state", snapshot, "--delete", "MachineConfig"}, nil, `--delete "MachineConfig"`},
		{"unknown deletion kind", []string{"--state", snapshot, "--delete", "deploy/web"}, nil, "unknown kind"},
		{"missing manifest", []string{"--state", snapshot, "-f", missing}, nil, "nope.yaml"},
		{"a kind no change set holds", []string{"--state", snapshot, "-f", notAKind}, nil, "Deployment"},
		{"missing snapshot", []string{"--state", missing, "-f", manifest}, nil, "nope.yaml"},
		{"no cluster", []string{"--kubeconfig", missing, "-f", manifest}, nil, "nope.yaml"},
		{"engine error", []string{"--state", snapshot, "-f", manifest}, &fakeDiff{err: errors.New("pool worker: cannot render")}, "Error: pool worker: cannot render"},
		{"engine panic", []string{"--state", snapshot, "-f", manifest}, &fakeDiff{panic: true}, "Error: internal error: boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.engine
			if f == nil {
				f = &fakeDiff{report: diffReport}
			}
			useFakeDiff(t, f)
			code, out, errOut := ndp(t, append([]string{"diff"}, tc.args...)...)
			if code != exitDiffError {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, exitDiffError, out, errOut)
			}
			if out != "" {
				t.Errorf("an error printed on stdout:\n%s", out)
			}
			if !strings.HasPrefix(errOut, "Error: ") || !strings.Contains(errOut, tc.want) {
				t.Errorf("stderr does not start with Error: or lacks %q:\n%s", tc.want, errOut)
			}
			if tc.engine == nil && f.calls != 0 {
				t.Errorf("the engine ran on a bad command line")
			}
		})
	}
}

func TestDiffOutputs(t *testing.T) {
	manifest, snapshot := diffFiles(t)
	for _, tc := range []struct {
		format string
		wants  []string // in the output
		check  func(t *testing.T, out string)
	}{
		{"text", []string{
			"Diff of 2 objects against snapshot cluster-snapshot/ (MCO mode: the MCO's plans, ndp's beside them)\n",
			"  create     MachineConfig 50-worker-chrony  manifests/50-worker-chrony.yaml:2\n",
			"  unchanged  MachineConfig 99-worker-generated-kubelet  pool worker, from KubeletConfig set-max-pods\n",
			"pool master: rendered-master-f898aa7d05f995ca972f6930b43c6b5b unchanged, 3 nodes\n",
			"pool worker: rendered-worker-2a854b4a0c86cb8484ee1697c7d0686c → rendered-worker-5c1e0f3d9a8b7c6d5e4f3a2b1c0d9e8f, 3 nodes\n" +
				"  causes: MachineConfig 50-worker-chrony\n" +
				"  3 nodes on 2a854b4a (worker-0, worker-1, worker-2):\n" +
				"    MCO: drain, Reboot\n" +
				"      file /etc/chrony.conf  Reboot  no nodeDisruptionPolicy entry | default  MachineConfig 50-worker-chrony\n" +
				"    ndp: Restart chronyd.service\n" +
				"      file /etc/chrony.conf: added  Restart chronyd.service  policy chrony  MachineConfig 50-worker-chrony\n" +
				"    MachineConfiguration entries that make the MCO do ndp's plan:\n" +
				"      /etc/chrony.conf: Restart chronyd.service\n" +
				"  rollout: RolloutPolicy workers; waiting: outside the maintenance window, opens Sat 02:00 UTC; gates: no firing alerts\n",
			"\n1 of 2 pools changes; most disruptive plan: reboot.\nNotes:\n  - the snapshot has no `Nodes` | counts from status\n",
		}, nil},
		{"markdown", []string{
			"### kubectl ndp diff: 1 of 2 MachineConfigPools change, the most disruptive plan: nodes reboot\n",
			"| pool | nodes | from → to | plan (MCO) | ndp | rollout |\n| --- | ---: | --- | --- | --- | --- |\n",
			"| master | 3 | `f898aa7d` (unchanged) | – | – | – |\n",
			"| worker | 3 | `2a854b4a` → `5c1e0f3d` | **drain, Reboot** | Restart chronyd.service | **held**: waiting: outside the maintenance window, opens Sat 02:00 UTC |\n",
			"<details><summary>worker: reboot, 3 nodes</summary>\n\n",
			"| change | rule | actions | from objects |\n| --- | --- | --- | --- |\n",
			// The rule's pipe must not split the cell.
			"| `file /etc/chrony.conf` | no nodeDisruptionPolicy entry \\| default | Reboot | MachineConfig 50-worker-chrony |\n",
			"| `file /etc/chrony.conf: added` | policy chrony | Restart chronyd.service | MachineConfig 50-worker-chrony |\n",
			"- `/etc/chrony.conf`: Restart chronyd.service\n",
			"</details>\n",
			"| create | MachineConfig `50-worker-chrony` | `manifests/50-worker-chrony.yaml:2` |\n",
			// Backticks, pipes and HTML in prose are escaped.
			"- the snapshot has no \\`Nodes\\` \\| counts from status\n- MachineConfiguration cluster: \\<none\\>\n",
		}, func(t *testing.T, out string) {
			if n, m := strings.Count(out, "<details>"), strings.Count(out, "</details>"); n != 2 || m != 2 {
				t.Errorf("markdown has %d <details> and %d </details>, want 2 each (the worker pool, the objects)", n, m)
			}
			// Every table row has as many cells as its header.
			for _, l := range strings.Split(out, "\n") {
				if strings.HasPrefix(l, "| ") && strings.Count(strings.ReplaceAll(l, `\|`, ""), "|") < 4 {
					t.Errorf("a table row with too few cells: %q", l)
				}
			}
		}},
		{"json", nil, func(t *testing.T, out string) {
			if !strings.HasPrefix(out, "{\n  \"apiVersion\": \"ndp.dev/v1alpha1\",\n  \"kind\": \"DiffReport\",\n  \"mode\": \"mco\",\n") {
				t.Errorf("json does not start with apiVersion, kind, mode in the struct's order:\n%s", out)
			}
			var got clusterdiff.Report
			dec := json.NewDecoder(strings.NewReader(out))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&got); err != nil {
				t.Fatalf("json does not decode into a clusterdiff.Report: %v\n%s", err, out)
			}
			if d := cmp.Diff(diffReport(), &got); d != "" {
				t.Errorf("json round trip (-want +got):\n%s", d)
			}
		}},
		{"yaml", nil, func(t *testing.T, out string) {
			var got clusterdiff.Report
			if err := yaml.UnmarshalStrict([]byte(out), &got); err != nil {
				t.Fatalf("yaml does not decode into a clusterdiff.Report: %v\n%s", err, out)
			}
			if d := cmp.Diff(diffReport(), &got); d != "" {
				t.Errorf("yaml round trip (-want +got):\n%s", d)
			}
		}},
	} {
		t.Run(tc.format, func(t *testing.T) {
			f := useFakeDiff(t, &fakeDiff{report: diffReport})
			code, out, errOut := ndp(t, "diff", "--state", snapshot, "-f", manifest, "-o", tc.format)
			if code != exitDiffChanged {
				t.Fatalf("exit %d, want %d (a pool changes)\nstdout: %s\nstderr: %s", code, exitDiffChanged, out, errOut)
			}
			if errOut != "" {
				t.Errorf("stderr: %s", errOut)
			}
			testkit.CheckContains(t, tc.format, out, tc.wants...)
			if tc.check != nil {
				tc.check(t, out)
			}
			if len(f.cs.Apply) != 1 || f.cs.Apply[0].Object.GetName() != "50-worker-chrony" || f.opts.Mode != "" {
				t.Errorf("the engine got apply %v, mode %q", f.cs.Apply, f.opts.Mode)
			}
			if f.state == nil || f.state.Len() != 2 || f.opts.StateName != "snapshot "+snapshot {
				t.Errorf("the engine got a state of %v objects named %q", f.state, f.opts.StateName)
			}
		})
	}
}

func TestDiffMarkdownEscapes(t *testing.T) {
	for _, tc := range []struct {
		got, want string
	}{
		{mdText("a|b `c` <d> *e* _f_ [g](h) \\ ~i~ #j &k\nl"), "a\\|b \\`c\\` \\<d\\> \\*e\\* \\_f\\_ \\[g\\](h) \\\\ \\~i\\~ \\#j \\&k l"},
		{mdCode("file /etc/x", false), "`file /etc/x`"},
		{mdCode("a|b", true), "`a\\|b`"},
		{mdCode("a|b", false), "`a|b`"},
		{mdCode("x`y", true), "`` x`y ``"},
		{mdCode("``", false), "``` `` ```"},
		{mdCode("a\nb", false), "`a b`"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	// A pool the MCO would refuse to render, and a pool of two groups.
	r := diffReport()
	r.Pools[0].Error = "MachineConfig 50-master-disk: spec.config.storage.disks | refused"
	w := &r.Pools[1]
	w.Groups = append(w.Groups, clusterdiff.Group{From: "rendered-worker-0000000000000000000000000000aaaa", Nodes: 1,
		Plan: clusterdiff.Plan{By: "MCO", Effect: clusterdiff.EffectRestart, Actions: []string{"Restart chronyd.service"}}})
	w.Groups[0].Nodes = 2
	requireOutput(t, r, "markdown",
		"### kubectl ndp diff: 1 pool cannot be rendered, 1 of 2 MachineConfigPools change",
		"| master | 3 | `f898aa7d` → cannot be rendered | **refused** | – | – |\n",
		"| **drain, Reboot** (2 nodes)<br>Restart chronyd.service (1 node) | Restart chronyd.service (2 nodes)<br>– |",
		"<details><summary>master: cannot be rendered</summary>",
		"**Error:** MachineConfig 50-master-disk: spec.config.storage.disks \\| refused (the MCO would refuse the change: the pool goes Degraded)",
	)
	requireOutput(t, r, "text",
		"pool master: rendered-master-f898aa7d05f995ca972f6930b43c6b5b, 3 nodes: cannot be rendered (the MCO would refuse the change: the pool goes Degraded)\n  error: MachineConfig 50-master-disk",
		"  1 node on 00000000:\n    MCO: Restart chronyd.service\n",
		"1 of 2 pools changes, 1 pool cannot be rendered; most disruptive plan: reboot.",
	)
}

// requireOutput writes r in format and checks it holds every want.
func requireOutput(t *testing.T, r *clusterdiff.Report, format string, wants ...string) {
	t.Helper()
	var b bytes.Buffer
	if err := writeDiff(&b, r, format); err != nil {
		t.Fatal(err)
	}
	testkit.CheckContains(t, format, b.String(), wants...)
}

func TestDiffEmptyReportIsStable(t *testing.T) {
	var b bytes.Buffer
	if err := writeDiff(&b, &clusterdiff.Report{Pools: []clusterdiff.PoolDiff{{Pool: "worker", Groups: []clusterdiff.Group{{}}}}}, "json"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"objects": []`, `"effect": "none"`, `"actions": []`, `"changes": []`, `"kind": "DiffReport"`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("json lacks %s:\n%s", want, b.String())
		}
	}
	for _, format := range []string{"text", "markdown", "yaml"} {
		if err := writeDiff(&b, &clusterdiff.Report{}, format); err != nil {
			t.Errorf("%s: %v", format, err)
		}
	}
}

func TestDiffExitCodeFor(t *testing.T) {
	withError := unchangedReport()
	withError.Pools[1].Error = "MachineConfig 50-worker-disk: spec.config.storage.disks: the MCO refuses it"
	unreconcilable := restartReport()
	unreconcilable.Pools[1].Groups[0].Plan = clusterdiff.Plan{By: "MCO", Effect: clusterdiff.EffectUnreconcilable, Refused: []string{"disks"}}
	unreconcilable.Pools[1].Effect = clusterdiff.EffectUnreconcilable
	drainOnly := restartReport()
	drainOnly.Pools[1].Groups[0].Plan = clusterdiff.Plan{By: "MCO", Effect: clusterdiff.EffectReload, Actions: []string{"Reload crio.service"}, Drain: true}
	noNodes := diffReport()
	noNodes.Pools[1].Groups, noNodes.Pools[1].Nodes = nil, 0
	singleNode := restartReport()
	singleNode.Pools[1].Groups[0].Plan = clusterdiff.Plan{By: "MCO", Effect: clusterdiff.EffectReboot, Actions: []string{"Reboot"}, Reboot: true}
	for _, tc := range []struct {
		name   string
		report *clusterdiff.Report
		// codes under --fail-on "", any, drain, reboot
		want [4]int
	}{
		{"nothing changes", unchangedReport(), [4]int{0, 0, 0, 0}},
		{"the MCO reboots", diffReport(), [4]int{1, 1, 1, 1}},
		// A CI gate that fails only on a reboot passes a restart, whatever ndp's plan.
		{"the MCO restarts a service", restartReport(), [4]int{1, 1, 0, 0}},
		{"the MCO drains and reloads", drainOnly, [4]int{1, 1, 1, 0}},
		{"a single node reboots without a drain", singleNode, [4]int{1, 1, 1, 1}},
		{"a changed pool without nodes", noNodes, [4]int{1, 1, 0, 0}},
		{"a pool the MCO would refuse to render", withError, [4]int{1, 1, 1, 1}},
		{"an unreconcilable change", unreconcilable, [4]int{1, 1, 1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i, failOn := range []string{"", failOnAny, failOnDrain, failOnReboot} {
				if got := exitCodeFor(tc.report, failOn); got != tc.want[i] {
					t.Errorf("--fail-on %q: exit %d, want %d", failOn, got, tc.want[i])
				}
			}
		})
	}
}

func TestDiffFailOnThroughTheCommand(t *testing.T) {
	manifest, snapshot := diffFiles(t)
	for _, tc := range []struct {
		report func() *clusterdiff.Report
		args   []string
		want   int
	}{
		{restartReport, nil, exitDiffChanged},
		{restartReport, []string{"--fail-on", "any"}, exitDiffChanged},
		{restartReport, []string{"--fail-on", "reboot"}, exitOK},
		{diffReport, []string{"--fail-on", "reboot"}, exitDiffChanged},
		{unchangedReport, nil, exitOK},
		{unchangedReport, []string{"--fail-on", "any", "-o", "markdown"}, exitOK},
	} {
		useFakeDiff(t, &fakeDiff{report: tc.report})
		code, out, errOut := ndp(t, append([]string{"diff", "--state", snapshot, "-f", manifest}, tc.args...)...)
		if code != tc.want || out == "" || errOut != "" {
			t.Errorf("%v: exit %d, want %d; stdout %d bytes; stderr: %s", tc.args, code, tc.want, len(out), errOut)
		}
	}
}

func TestDiffModeAndDeletions(t *testing.T) {
	_, snapshot := diffFiles(t)
	f := useFakeDiff(t, &fakeDiff{report: unchangedReport})
	code, _, errOut := ndp(t, "diff", "--state", snapshot, "--delete", "mc/50-worker-chrony", "--mode", "ndp")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := []clusterdiff.Key{{Group: "machineconfiguration.openshift.io", Kind: "MachineConfig", Name: "50-worker-chrony"}}
	if d := cmp.Diff(want, f.cs.Delete); d != "" || len(f.cs.Apply) != 0 || f.opts.Mode != clusterdiff.ModeNDP || f.opts.Now.IsZero() {
		t.Errorf("the engine got deletions (-want +got) %s, apply %v, mode %q, now %v", d, f.cs.Apply, f.opts.Mode, f.opts.Now)
	}
}

// The live cluster is read through a client.Reader only: the fake cluster
// here is a clusterdiff.Objects.
func TestDiffReadsTheLiveCluster(t *testing.T) {
	manifest, _ := diffFiles(t)
	pool, _, err := clusterdiff.LoadSnapshot(writeFile(t, t.TempDir(), "pool.yaml", snapshotWorkerPool))
	if err != nil {
		t.Fatal(err)
	}
	old := newDiffReader
	var got *statusOptions
	newDiffReader = func(o *statusOptions) (client.Reader, string, error) {
		got = o
		return readOnly{pool}, "https://api.example.com:6443", nil
	}
	t.Cleanup(func() { newDiffReader = old })
	f := useFakeDiff(t, &fakeDiff{report: func() *clusterdiff.Report {
		r := unchangedReport()
		r.State = "" // the command names it
		return r
	}})
	code, out, errOut := ndp(t, "diff", "-f", manifest, "--context", "prod", "-o", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if got == nil || got.context != "prod" {
		t.Errorf("the reader got options %+v", got)
	}
	if f.state == nil || f.state.Len() != 1 || f.opts.StateName != "live cluster https://api.example.com:6443 (context prod)" {
		t.Errorf("the engine got a state of %v objects named %q", f.state, f.opts.StateName)
	}
	if !strings.Contains(out, `"state": "live cluster https://api.example.com:6443 (context prod)"`) {
		t.Errorf("the report does not name the cluster:\n%s", out)
	}
	var _ client.Reader = readOnly{}
	if _, ok := any(readOnly{}).(client.Writer); ok {
		t.Error("the live reader can write")
	}
}

// The worker pool and ControllerConfig of the 4.16.0-compact cluster whose
// MachineConfigs are ../shared/mco-ref/realconfigs/4.16.0-compact: the
// realconfigs hold neither. No Nodes: the pool's status counts them.
const snapshotWorkerPool = `apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfigPool
metadata:
  name: worker
  labels:
    machineconfiguration.openshift.io/mco-built-in: ""
    pools.operator.machineconfiguration.openshift.io/worker: ""
spec:
  machineConfigSelector:
    matchLabels:
      machineconfiguration.openshift.io/role: worker
  nodeSelector:
    matchLabels:
      node-role.kubernetes.io/worker: ""
  maxUnavailable: 1
  configuration:
    name: rendered-worker-2a854b4a0c86cb8484ee1697c7d0686c
status:
  configuration:
    name: rendered-worker-2a854b4a0c86cb8484ee1697c7d0686c
  machineCount: 2
  updatedMachineCount: 2
  readyMachineCount: 2
  unavailableMachineCount: 0
  degradedMachineCount: 0
`

// The images are rendered-worker-2a854b4a's: its sources, all generated
// by the MCO's controllers, do not override the ControllerConfig's.
const snapshotControllerConfig = `apiVersion: machineconfiguration.openshift.io/v1
kind: ControllerConfig
metadata:
  name: machine-config-controller
spec:
  clusterDNSIP: 172.30.0.10
  baseOSContainerImage: quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:d0b8a6779d0de1cdd4fa8497ac1b900c7314fa5288928eb115a5e81c5b80434e
  baseOSExtensionsContainerImage: quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:ec38b0c2b735998ecc2ec7bcebf2d71c6e5b805d96cefd37fa44945c467d0572
  osImageURL: quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:d0b8a6779d0de1cdd4fa8497ac1b900c7314fa5288928eb115a5e81c5b80434e
  images: {}
  infra:
    apiVersion: config.openshift.io/v1
    kind: Infrastructure
    metadata:
      name: cluster
    spec:
      cloudConfig:
        name: ""
    status:
      apiServerInternalURI: https://api-int.example.com:6443
      apiServerURL: https://api.example.com:6443
      infrastructureName: compact-0aaaa
      infrastructureTopology: HighlyAvailable
      controlPlaneTopology: HighlyAvailable
      platformStatus:
        type: None
`

// gitRepo is a git repository in a temporary directory, with the
// environment its commands (and hooks) run in.
type gitRepo struct {
	t   *testing.T
	dir string
	env []string
}

func newGitRepo(t *testing.T, extraEnv ...string) *gitRepo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not on PATH")
	}
	r := &gitRepo{t: t, dir: t.TempDir()}
	r.env = append(os.Environ(),
		"GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=ci", "GIT_AUTHOR_EMAIL=ci@example.com", "GIT_COMMITTER_NAME=ci", "GIT_COMMITTER_EMAIL=ci@example.com",
		"NDP_ALLOW_REBOOT=", "NDP_MANIFESTS_DIR=", "NDP_SNAPSHOT=", "NDP_FAIL_ON=", "NDP=", "NDP_DIFF_ARGS=", "NDP_VERBOSE=",
	)
	r.env = append(r.env, extraEnv...)
	r.git("init", "-q", "-b", "main")
	return r
}

// run runs a command in the repository and returns its exit code and
// output (stdout and stderr).
func (r *gitRepo) run(extraEnv []string, name string, args ...string) (int, string) {
	r.t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = r.dir
	cmd.Env = append(append([]string(nil), r.env...), extraEnv...)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case errors.As(err, &ee):
		return ee.ExitCode(), string(out)
	}
	r.t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	return 0, ""
}

func (r *gitRepo) git(args ...string) string {
	r.t.Helper()
	code, out := r.run(nil, "git", args...)
	if code != 0 {
		r.t.Fatalf("git %v: exit %d\n%s", args, code, out)
	}
	return out
}

func (r *gitRepo) write(name, content string) {
	r.t.Helper()
	if err := os.MkdirAll(filepath.Join(r.dir, filepath.Dir(name)), 0o755); err != nil {
		r.t.Fatal(err)
	}
	writeFile(r.t, r.dir, name, content)
}

func hookPath(t *testing.T) string {
	t.Helper()
	hook, err := filepath.Abs("../../examples/ci/pre-commit-hook")
	if err != nil {
		t.Fatal(err)
	}
	return hook
}

func mcNamed(name string) string {
	return "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  labels:\n    machineconfiguration.openshift.io/role: worker\n  name: " + name + " # a comment\nspec: {}\n"
}

// The pre-commit hook's own work, with a stand-in for kubectl-ndp that
// records how it is called: what it diffs (the staged versions, in a tree
// of their own; deleted files' objects as --delete; a renamed file's
// object not deleted) and how it reads the diff's exit code.
func TestPreCommitHookArguments(t *testing.T) {
	bin := t.TempDir()
	logFile := filepath.Join(bin, "log")
	fake := writeFile(t, bin, "fake-ndp", `#!/bin/sh
{ echo "dir: ${PWD##*/}"; echo "args: $*"; find . -type f | sort; echo "a.yaml: $(grep name: manifests/a.yaml)"; } > "$FAKE_LOG"
echo "the diff"
echo "the diff's error" >&2
exit "${FAKE_RC:-0}"
`)
	if err := os.Chmod(fake, 0o755); err != nil {
		t.Fatal(err)
	}
	r := newGitRepo(t, "NDP="+fake, "FAKE_LOG="+logFile)
	hook := hookPath(t)
	r.write("cluster-snapshot/state.yaml", "apiVersion: v1\nkind: List\nitems: []\n")
	r.write("manifests/a.yaml", mcNamed("a"))
	r.write("manifests/b.yaml", mcNamed("b"))
	r.write("manifests/d.yaml", mcNamed("d")+"---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: 'bundle'\n  namespace: \"ndp-system\"\ndata: {}\n")
	r.write("docs/notes.yaml", mcNamed("not-a-manifest"))
	r.git("add", ".")
	r.git("commit", "-q", "-m", "first")

	// Outside the manifests directory: nothing to say.
	r.write("docs/notes.yaml", mcNamed("still-not"))
	r.git("add", "docs/notes.yaml")
	if code, out := r.run(nil, hook); code != 0 || out != "" {
		t.Errorf("a change outside manifests/: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(logFile); err == nil {
		t.Errorf("the diff ran for a change outside manifests/")
	}

	r.write("manifests/a.yaml", mcNamed("a")+"# changed\n")
	r.git("add", "manifests/a.yaml")
	r.write("manifests/a.yaml", mcNamed("a-in-the-working-tree-only"))
	r.git("mv", "manifests/b.yaml", "manifests/c.yaml")
	r.git("rm", "-q", "manifests/d.yaml")

	code, out := r.run(nil, hook)
	log, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatalf("the diff did not run: exit %d\n%s", code, out)
	}
	want := `dir: index
args: diff --state cluster-snapshot -f manifests --delete ConfigMap/ndp-system/bundle --delete MachineConfig/d --fail-on reboot -o text
./cluster-snapshot/state.yaml
./manifests/a.yaml
./manifests/c.yaml
a.yaml:   name: a # a comment
`
	if string(log) != want {
		t.Errorf("the diff ran as (-want +got):\n%s", cmp.Diff(want, string(log)))
	}
	if code != 0 || !strings.Contains(out, "do not reboot nodes") || strings.Contains(out, "the diff") {
		t.Errorf("exit 0 of the diff: hook exit %d\n%s", code, out)
	}
	if code, out := r.run([]string{"NDP_VERBOSE=1", "NDP_FAIL_ON=drain"}, hook); code != 0 || !strings.Contains(out, "the diff\n") || !strings.Contains(out, "do not drain or reboot nodes") {
		t.Errorf("NDP_VERBOSE=1: exit %d\n%s", code, out)
	}
	if log, _ := os.ReadFile(logFile); !strings.Contains(string(log), "--fail-on drain") {
		t.Errorf("NDP_FAIL_ON=drain: the diff ran as\n%s", log)
	}
	if code, out := r.run([]string{"FAKE_RC=1"}, hook); code != 1 || !strings.Contains(out, "the diff\n") || !strings.Contains(out, "blocked") {
		t.Errorf("exit 1 of the diff: hook exit %d\n%s", code, out)
	}
	if code, out := r.run([]string{"FAKE_RC=1", "NDP_ALLOW_REBOOT=1"}, hook); code != 0 || !strings.Contains(out, "NDP_ALLOW_REBOOT=1: committing") {
		t.Errorf("exit 1 with NDP_ALLOW_REBOOT=1: hook exit %d\n%s", code, out)
	}
	if code, out := r.run([]string{"FAKE_RC=2"}, hook); code != 2 || !strings.Contains(out, "the diff's error") || !strings.Contains(out, "--no-verify") {
		t.Errorf("exit 2 of the diff: hook exit %d\n%s", code, out)
	}
	if code, out := r.run([]string{"NDP_FAIL_ON=restart"}, hook); code != 2 || !strings.Contains(out, "NDP_FAIL_ON must be") {
		t.Errorf("a bad NDP_FAIL_ON: hook exit %d\n%s", code, out)
	}
	if code, out := r.run([]string{"NDP_SNAPSHOT=elsewhere"}, hook); code != 2 || !strings.Contains(out, "no snapshot at elsewhere") {
		t.Errorf("no snapshot: hook exit %d\n%s", code, out)
	}

	// The manifests directory is the repository: the snapshot, under it,
	// is not diffed as manifests.
	if code, out := r.run([]string{"NDP_MANIFESTS_DIR=."}, hook); code != 0 {
		t.Errorf("NDP_MANIFESTS_DIR=.: exit %d\n%s", code, out)
	}
	log, _ = os.ReadFile(logFile)
	if !strings.Contains(string(log), "/snapshot/cluster-snapshot -f . --delete ConfigMap/ndp-system/bundle --delete MachineConfig/d --fail-on reboot") ||
		strings.Contains(string(log), "./cluster-snapshot/state.yaml") || !strings.Contains(string(log), "./docs/notes.yaml") {
		t.Errorf("NDP_MANIFESTS_DIR=.: the diff ran as\n%s", log)
	}
}

// An SSH key for core: the MCO's default policy does nothing for it.
var sshKeyManifest = string(builder.MachineConfig("60-worker-ssh-ci").WithRole("worker").
	WithEntries("passwd", "users", builder.Entry{"name": "core", "sshAuthorizedKeys": []string{
		"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeKeyForTheNdpDiffPreCommitHookTest ci@example.com"}}).Document())

// The pre-commit hook of examples/ci, end to end: a repository with a
// committed snapshot (the real MachineConfigs of a 4.16 cluster, its
// worker pool and ControllerConfig) and a committed manifest (the
// cluster's SSH key MachineConfig); a staged
// chrony file (the MCO reboots for it) is blocked unless
// NDP_ALLOW_REBOOT=1, also by git commit with the hook installed; a staged
// SSH key (the MCO does nothing) passes, and so does deleting the
// committed manifest.
func TestPreCommitHookInAGitRepo(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not on PATH")
	}
	realConfigs := testkit.RealConfigs(t) // the snapshot's MachineConfigs
	hook := hookPath(t)
	bin := testkit.KubectlNdp(t)
	r := newGitRepo(t, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	repo := r.dir
	sh := r.run
	git := r.git

	snap := filepath.Join(repo, "cluster-snapshot")
	mcs, err := filepath.Glob(filepath.Join(realConfigs, "4.16.0-compact", "*.yaml"))
	if err != nil || len(mcs) == 0 {
		t.Fatalf("no MachineConfigs in %s/4.16.0-compact: %v", realConfigs, err)
	}
	if err := os.MkdirAll(snap, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range mcs {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, snap, filepath.Base(f), string(data))
	}
	writeFile(t, snap, "mcp-worker.yaml", snapshotWorkerPool)
	writeFile(t, snap, "controllerconfig.yaml", snapshotControllerConfig)
	manifests := filepath.Join(repo, "manifests")
	if err := os.Mkdir(manifests, 0o755); err != nil {
		t.Fatal(err)
	}
	// The repository manages one of the cluster's MachineConfigs.
	sshKey, err := os.ReadFile(filepath.Join(snap, "99-worker-ssh.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, manifests, "99-worker-ssh.yaml", string(sshKey))
	git("add", ".")
	git("commit", "-q", "-m", "the snapshot and the SSH key")

	// Nothing staged: the hook has nothing to say.
	if code, out := sh(nil, hook); code != 0 || out != "" {
		t.Errorf("nothing staged: exit %d\n%s", code, out)
	}

	chrony, err := os.ReadFile("../../examples/cluster/50-worker-chrony.yaml")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, manifests, "50-worker-chrony.yaml", string(chrony))
	git("add", "manifests/50-worker-chrony.yaml")
	// The working tree's version is not what is committed: the hook reads the index.
	writeFile(t, manifests, "50-worker-chrony.yaml", "not: [yaml")

	code, out := sh(nil, hook)
	if code != 1 || !strings.Contains(out, "pool worker: rendered-worker-2a854b4a0c86cb8484ee1697c7d0686c → rendered-worker-") ||
		!strings.Contains(out, "MachineConfig 50-worker-chrony") || !strings.Contains(out, "blocked") || !strings.Contains(out, "NDP_ALLOW_REBOOT=1") {
		t.Errorf("a staged chrony file: exit %d, want 1 with the worker pool's diff and how to commit anyway\n%s", code, out)
	}
	if code, out := sh([]string{"NDP_ALLOW_REBOOT=1"}, hook); code != 0 || !strings.Contains(out, "NDP_ALLOW_REBOOT=1: committing") {
		t.Errorf("NDP_ALLOW_REBOOT=1: exit %d, want 0\n%s", code, out)
	}

	// Installed as .git/hooks/pre-commit, it blocks git commit.
	data, err := os.ReadFile(hook)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, ".git", "hooks", "pre-commit"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	head := git("rev-parse", "HEAD")
	if code, out := sh(nil, "git", "commit", "-q", "-m", "chrony"); code == 0 || !strings.Contains(out, "blocked") {
		t.Errorf("git commit of the chrony file: exit %d, want it blocked\n%s", code, out)
	}
	if got := git("rev-parse", "HEAD"); got != head {
		t.Errorf("git commit went through: HEAD %s, was %s", got, head)
	}

	// An SSH key: the MCO does nothing, the commit goes on. The MCO's
	// plan from the pool's config (rendered by the cluster's 4.16 MCO:
	// Ignition 3.4.0, `compression: ""` on registries.conf and
	// kubelet.conf) must hold the change set's changes only, not what
	// differs because the diff renders as a newer MCO does.
	git("reset", "-q", "--", "manifests/50-worker-chrony.yaml")
	if err := os.Remove(filepath.Join(manifests, "50-worker-chrony.yaml")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, manifests, "60-worker-ssh-ci.yaml", sshKeyManifest)
	git("add", "manifests/60-worker-ssh-ci.yaml")
	if code, out := sh(nil, hook); code != 0 || !strings.Contains(out, "do not reboot nodes") {
		t.Errorf("a staged SSH key: exit %d, want 0\n%s", code, out)
	}
	if code, out := sh(nil, "git", "commit", "-q", "-m", "ssh key"); code != 0 {
		t.Errorf("git commit of the SSH key: exit %d\n%s", code, out)
	}

	// A deleted manifest is diffed as a deletion of its object: the
	// worker pool changes (exit 1 with NDP_FAIL_ON=any), nothing reboots.
	git("rm", "-q", "manifests/99-worker-ssh.yaml")
	if code, out := sh([]string{"NDP_FAIL_ON=any"}, hook); code != 1 || !strings.Contains(out, "delete") || !strings.Contains(out, "MachineConfig 99-worker-ssh") {
		t.Errorf("a deleted manifest, NDP_FAIL_ON=any: exit %d, want 1 naming the deletion of 99-worker-ssh\n%s", code, out)
	}
	if code, out := sh(nil, hook); code != 0 {
		t.Errorf("a deleted manifest: exit %d, want 0 (no reboot)\n%s", code, out)
	}
}
