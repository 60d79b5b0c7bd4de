package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"

	"github.com/ndp-dev/ndp/apis/scheme"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/mco/mcoguard"
)

const (
	whyFrom = "rendered-worker-aaaa"
	whyTo   = "rendered-worker-bbbb"
)

// at is a time of the test day (UTC) at h:m:s.
func at(h, m, s int) *metav1.Time {
	t := metav1.NewTime(time.Date(2025, 11, 26, h, m, s, 0, time.UTC))
	return &t
}

func step(name, result string, from, to *metav1.Time, detail string) v1alpha1.UpdateStep {
	return v1alpha1.UpdateStep{Name: name, Result: result, Started: from, Finished: to, Detail: detail}
}

// executorUpdate is ndp-daemon's drain and reboot for a file no policy
// claims.
func executorUpdate() v1alpha1.NodeUpdate {
	return v1alpha1.NodeUpdate{
		From: whyFrom, To: whyTo, Pool: "worker", Executor: v1alpha1.ExecutorNDP,
		Started: *at(10, 0, 0), Finished: at(10, 3, 5), Result: v1alpha1.UpdateDone,
		Changes: []v1alpha1.UpdateChange{{Change: "file /etc/ndp-example/app.conf: added", MachineConfigs: []string{"60-worker-app"},
			DecidedBy: "(none)", Actions: []v1alpha1.ForecastAction{{Type: "Reboot"}}, Detail: "no policy claims this change"}},
		Plan: &v1alpha1.UpdatePlan{Source: "MachineConfig " + whyTo + " status", Actions: []v1alpha1.ForecastAction{{Type: "Reboot"}},
			Drain: true, Reboot: true, PolicyRevision: "sha256:abc"},
		Steps: []v1alpha1.UpdateStep{
			step("cordon", "Done", at(10, 0, 0), at(10, 0, 0), ""),
			step("drain", "Done", at(10, 0, 0), at(10, 0, 30), "evicted 1 pod (default/web-0)"),
			step("files", "Done", at(10, 0, 30), at(10, 0, 31), ""),
			step("reboot", "Done", at(10, 0, 31), at(10, 2, 59), ""),
			step("uncordon", "Done", at(10, 3, 0), at(10, 3, 5), ""),
		},
		BootIDs: v1alpha1.BootIDs{Before: "boot-1", After: "boot-2"},
	}
}

// advisorUpdate is the MCO's daemon draining and rebooting where a
// restart of chronyd was foretold.
func advisorUpdate() v1alpha1.NodeUpdate {
	return v1alpha1.NodeUpdate{
		From: whyFrom, To: whyTo, Pool: "worker", Executor: v1alpha1.ExecutorMCO,
		Started: *at(9, 0, 0), Finished: at(9, 5, 0), Result: v1alpha1.UpdateDone,
		Changes: []v1alpha1.UpdateChange{{Change: "file /etc/chrony.conf: contents changed", MachineConfigs: []string{"50-worker-chrony"},
			DecidedBy: "file policy /etc/chrony.conf", Actions: []v1alpha1.ForecastAction{{Type: "Restart", Service: "chronyd.service"}}}},
		ChangesOmitted: 2,
		Plan:           &v1alpha1.UpdatePlan{Source: "UpdateForecast worker-aaaa-bbbb", Actions: []v1alpha1.ForecastAction{{Type: "Restart", Service: "chronyd.service"}}},
		Steps: []v1alpha1.UpdateStep{
			step("drain", "Observed", at(9, 0, 10), at(9, 1, 0), "MachineConfigNode Drained True"),
			step("reboot", "Observed", at(9, 1, 10), nil, "Node bootID changed"),
		},
		BootIDs:  v1alpha1.BootIDs{Before: "boot-1", After: "boot-2"},
		Forecast: "worker-aaaa-bbbb",
		Checks: []v1alpha1.UpdateCheck{
			{What: "drain", Observed: v1alpha1.ObservedYes, Result: v1alpha1.CheckMismatch, Evidence: []string{"09:00:10 Node annotation desiredDrain: drain-" + whyTo}},
			{What: "reboot", Observed: v1alpha1.ObservedYes, Result: v1alpha1.CheckMismatch, Evidence: []string{"09:02:00 Node bootID boot-1 -> boot-2"}},
			{What: "restart chronyd.service", Foretold: true, Observed: v1alpha1.ObservedUnknown, Result: v1alpha1.CheckNotObservable},
		},
		Verdict:  v1alpha1.VerdictMismatch,
		Evidence: []string{"09:00:00 Node annotation state: Done -> Working", "09:05:00 Node annotation state: Working -> Done"},
	}
}

// failedUpdate is ndp-daemon's restart of chronyd that failed.
func failedUpdate() v1alpha1.NodeUpdate {
	msg := "step action 1 (Restart chronyd.service) failed: job failed (result exit-code); the previous files are restored"
	return v1alpha1.NodeUpdate{
		From: whyFrom, To: whyTo, Pool: "worker", Executor: v1alpha1.ExecutorNDP,
		Started: *at(11, 0, 0), Finished: at(11, 0, 4), Result: v1alpha1.UpdateFailed, Message: msg,
		Changes: []v1alpha1.UpdateChange{{Change: "file /etc/chrony.conf: contents changed", MachineConfigs: []string{"50-worker-chrony"},
			DecidedBy: "policy chrony", Actions: []v1alpha1.ForecastAction{{Type: "Restart", Service: "chronyd.service"}}}},
		Plan: &v1alpha1.UpdatePlan{Source: "MachineConfig " + whyTo + " status", Actions: []v1alpha1.ForecastAction{{Type: "Restart", Service: "chronyd.service"}}},
		Steps: []v1alpha1.UpdateStep{
			step("files", "Done", at(11, 0, 0), at(11, 0, 1), ""),
			{Name: "action", Action: &v1alpha1.ForecastAction{Type: "Restart", Service: "chronyd.service"}, Started: at(11, 0, 1), Finished: at(11, 0, 3),
				Result: "Failed", Detail: "job failed (result exit-code)"},
		},
		BootIDs: v1alpha1.BootIDs{Before: "boot-1"},
	}
}

func history(node string, updates ...v1alpha1.NodeUpdate) *v1alpha1.NodeHistory {
	return &v1alpha1.NodeHistory{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.NodeHistoryKind},
		ObjectMeta: metav1.ObjectMeta{Name: node}, Status: v1alpha1.NodeHistoryStatus{Updates: updates}}
}

func whyText(t *testing.T, v whyView) string {
	t.Helper()
	var b strings.Builder
	if err := writeWhyText(&b, v); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestWhyTextExecutorDrainAndReboot(t *testing.T) {
	got := whyText(t, whyView{Node: "w1", History: history("w1", executorUpdate()),
		State: &WhyNodeState{Current: whyTo, Desired: whyTo, State: "Done"}})
	want := `Node w1 now: runs rendered-worker-bbbb, state Done; no update in progress.
Node w1: 1 update recorded (ndp keeps the last 10 updates of each node; the history is deleted with the node).

Update 1 of 1 (newest): rendered-worker-aaaa -> rendered-worker-bbbb
  Pool:     worker
  Run by:   ndp-daemon
  Started:  2025-11-26 10:00:00 UTC
  Finished: 2025-11-26 10:03:05 UTC (took 3m5s)
  Result:   Done
Changed (1):
  file /etc/ndp-example/app.conf: added (MachineConfig 60-worker-app)
    decided by: no policy -> Reboot (no policy claims this change)
Planned: drain, Reboot
  from MachineConfig rendered-worker-bbbb status; policy revision sha256:abc
Ran:
  10:00:00  cordon    Done  took <1s
  10:00:00  drain     Done  took 30s    evicted 1 pod (default/web-0)
  10:00:30  files     Done  took 1s
  10:00:31  reboot    Done  took 2m28s
  10:03:00  uncordon  Done  took 5s
Boot: boot-1 -> boot-2 (rebooted)
`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("text (-want +got):\n%s", diff)
	}
}

func TestWhyTextAdvisorMismatch(t *testing.T) {
	u := advisorUpdate()
	u.MCOEntries = []string{"file /etc/chrony.conf"}
	got := whyText(t, whyView{Node: "w1", History: history("w1", u), Evidence: true})
	want := `Node w1: 1 update recorded (ndp keeps the last 10 updates of each node; the history is deleted with the node).

Update 1 of 1 (newest): rendered-worker-aaaa -> rendered-worker-bbbb
  Pool:     worker
  Run by:   the MCO's machine-config-daemon, observed by ndp's advisor
  Started:  2025-11-26 09:00:00 UTC
  Finished: 2025-11-26 09:05:00 UTC (took 5m0s)
  Result:   Done
  ndp's entries the MCO was foretold to use (MachineConfiguration cluster): file /etc/chrony.conf
Changed (3):
  file /etc/chrony.conf: contents changed (MachineConfig 50-worker-chrony)
    decided by: file policy /etc/chrony.conf -> Restart chronyd.service
  ... and 2 more not recorded (a record lists at most 50)
Foretold: Restart chronyd.service (no drain, no reboot)
  from UpdateForecast worker-aaaa-bbbb
Observed:
  09:00:10  drain   Observed  took 50s  MachineConfigNode Drained True
  09:01:10  reboot  Observed            Node bootID changed
Boot: boot-1 -> boot-2 (rebooted)
Verdict: Mismatch (checked against UpdateForecast worker-aaaa-bbbb)
  drain: foretold no, observed yes -> Mismatch
    09:00:10 Node annotation desiredDrain: drain-rendered-worker-bbbb
  reboot: foretold no, observed yes -> Mismatch
    09:02:00 Node bootID boot-1 -> boot-2
  restart chronyd.service: foretold yes, observed unknown -> NotObservable
Evidence:
  09:00:00 Node annotation state: Done -> Working
  09:05:00 Node annotation state: Working -> Done
`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("text (-want +got):\n%s", diff)
	}
}

// Without --evidence, a check shows its first proofs and the evidence is
// counted.
func TestWhyTextEvidenceIsCountedUnlessAsked(t *testing.T) {
	u := advisorUpdate()
	u.Checks[1].Evidence = []string{"Node bootID boot-1 -> boot-2", "Event Rebooted (kubelet)", "MachineConfigNode RebootedNode=True"}
	short := whyText(t, whyView{Node: "w1", History: history("w1", u)})
	testkit.CheckContains(t, "without --evidence, the text", short, "    Node bootID boot-1 -> boot-2\n    Event Rebooted (kubelet)\n    (and 1 more)\n",
		"Evidence: 2 lines seen while it ran (--evidence lists them)\n")
	if strings.Contains(short, "MachineConfigNode RebootedNode=True") || strings.Contains(short, "Node annotation state: Done -> Working") {
		t.Errorf("without --evidence, every line is shown:\n%s", short)
	}
	full := whyText(t, whyView{Node: "w1", History: history("w1", u), Evidence: true})
	testkit.CheckContains(t, "with --evidence, the text", full, "    MachineConfigNode RebootedNode=True\n", "  09:00:00 Node annotation state: Done -> Working\n")
}

func TestWhyTextFailedUpdate(t *testing.T) {
	got := whyText(t, whyView{Node: "w1", History: history("w1", failedUpdate(), executorUpdate()),
		State: &WhyNodeState{Current: whyFrom, Desired: whyTo, State: "Degraded", Reason: "step action 1 failed", Updating: true}})
	testkit.CheckContains(t, "text", got,
		"Node w1 now: runs rendered-worker-aaaa, sent to rendered-worker-bbbb, state Degraded (step action 1 failed): an update is in progress.\n",
		"Node w1: 2 updates recorded, newest first (ndp keeps the last 10 updates of each node; the history is deleted with the node).\n",
		"\nUpdate 1 of 2 (newest): rendered-worker-aaaa -> rendered-worker-bbbb\n",
		"  Result:   Failed: step action 1 (Restart chronyd.service) failed: job failed (result exit-code); the previous files are restored\n",
		"    decided by: policy chrony -> Restart chronyd.service\n",
		"Planned: Restart chronyd.service (no drain, no reboot)\n",
		"  11:00:01  action Restart chronyd.service  Failed  took 2s  job failed (result exit-code)\n",
		"Boot: before boot-1, after not known yet\n",
		"\nUpdate 2 of 2: rendered-worker-aaaa -> rendered-worker-bbbb\n",
	)
	if i, j := strings.Index(got, "Update 1 of 2"), strings.Index(got, "Update 2 of 2"); i < 0 || j < i {
		t.Errorf("updates not newest first:\n%s", got)
	}
	// Only the second, with --update 2.
	got = whyText(t, whyView{Node: "w1", History: history("w1", failedUpdate(), executorUpdate()), Update: 2})
	if !strings.HasPrefix(got, "Node w1: update 2 of the 2 recorded (") || !strings.Contains(got, "\nUpdate 2 of 2: ") || strings.Contains(got, "Update 1 of 2") {
		t.Errorf("--update 2:\n%s", got)
	}
}

func TestWhyTextNoHistory(t *testing.T) {
	for _, tc := range []struct {
		mode, want string
	}{
		{whyModeExecutor, "(ndp-daemon records each update it runs)"},
		{whyModeAdvisor, "ndp records only the updates its advisor observed"},
		{whyModeUnknown, "ndp-daemon records each update it runs; beside the Machine Config Operator, ndp records only the updates its advisor observed"},
	} {
		got := whyText(t, whyView{Node: "w1", Mode: tc.mode, State: &WhyNodeState{Current: whyTo, Desired: whyTo, State: "Done"}})
		if !strings.Contains(got, "No update of node w1 is recorded: ndp has not seen an update of this node yet") || !strings.Contains(got, tc.want) ||
			!strings.HasSuffix(got, "ndp keeps the last 10 updates of each node; the history is deleted with the node.\n") {
			t.Errorf("mode %q:\n%s", tc.mode, got)
		}
	}
}

func TestWhySelectUpdates(t *testing.T) {
	h := history("w1", failedUpdate(), executorUpdate())
	for _, tc := range []struct {
		n       int
		want    int // updates
		wantErr string
	}{
		{0, 2, ""},
		{1, 1, ""},
		{2, 1, ""},
		{3, 0, "--update 3: node w1 has 2 updates recorded; --update must be 1 (the newest) to 2"},
		{-1, 0, "--update -1: node w1 has 2 updates recorded"},
	} {
		got, err := selectUpdates("w1", h, tc.n)
		switch {
		case tc.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.wantErr)):
			t.Errorf("--update %d: error %v, want %q", tc.n, err, tc.wantErr)
		case tc.wantErr == "" && (err != nil || len(got) != tc.want):
			t.Errorf("--update %d: %d updates, %v; want %d", tc.n, len(got), err, tc.want)
		}
	}
	if got, _ := selectUpdates("w1", h, 2); got[0].Result != v1alpha1.UpdateDone {
		t.Errorf("--update 2 is not the second update: %+v", got[0])
	}
	if _, err := selectUpdates("w1", nil, 1); err == nil || err.Error() != "--update 1: node w1 has no update recorded" {
		t.Errorf("no history: %v", err)
	}
}

// writeHistory saves h as kubectl get -o yaml would, and returns the file.
func writeHistory(t *testing.T, h any) string {
	t.Helper()
	b, err := yaml.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "history.yaml")
	if err := os.WriteFile(f, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestWhyFileJSONAndYAMLAreTheStoredUpdates(t *testing.T) {
	h := history("w1", advisorUpdate(), failedUpdate())
	f := writeHistory(t, h)
	for _, format := range []string{"json", "yaml"} {
		for _, tc := range []struct {
			update string
			want   []v1alpha1.NodeUpdate
		}{
			{"0", h.Status.Updates},
			{"2", h.Status.Updates[1:2]},
		} {
			code, out, errOut := ndp(t, "why", "w1", "--file", f, "-o", format, "--update", tc.update)
			if code != exitOK {
				t.Fatalf("-o %s --update %s: exit %d: %s", format, tc.update, code, errOut)
			}
			var r WhyReport
			var err error
			if format == "json" {
				err = json.Unmarshal([]byte(out), &r)
			} else {
				err = yaml.UnmarshalStrict([]byte(out), &r)
			}
			if err != nil {
				t.Fatalf("-o %s: %v\n%s", format, err, out)
			}
			if diff := cmp.Diff(WhyReport{Node: "w1", Updates: tc.want}, r); diff != "" {
				t.Errorf("-o %s --update %s (-want +got):\n%s", format, tc.update, diff)
			}
		}
	}
	// The document's field names are the API's.
	_, out, _ := ndp(t, "why", "w1", "--file", f, "-o", "json")
	for _, key := range []string{`"node": "w1"`, `"updates": [`, `"verdict": "Mismatch"`, `"bootIDs": {`, `"forecast": "worker-aaaa-bbbb"`} {
		if !strings.Contains(out, key) {
			t.Errorf("-o json lacks %s:\n%s", key, out)
		}
	}
}

func TestWhyFileErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	good := writeHistory(t, history("w1", executorUpdate()))
	list := writeHistory(t, map[string]any{"apiVersion": "v1", "kind": "List", "items": []any{history("w0"), history("w1", executorUpdate())}})
	for _, tc := range []struct {
		name, file, node string
		args             []string
		code             int
		want             string // in stderr
	}{
		{"malformed yaml names the file and line", write("bad.yaml", "apiVersion: ndp.dev/v1alpha1\nkind: NodeHistory\nstatus:\n  updates: [\n  - from: a\n"), "w1", nil, exitInvalid, "bad.yaml: not a NodeHistory in yaml or json: error converting YAML to JSON: yaml: line "},
		{"a field of the wrong type", write("type.yaml", "apiVersion: ndp.dev/v1alpha1\nkind: NodeHistory\nmetadata: {name: w1}\nstatus: {updates: [{started: yesterday}]}\n"), "w1", nil, exitInvalid, "type.yaml: not a valid NodeHistory: "},
		{"another kind", write("pod.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: w1}\n"), "w1", nil, exitInvalid, "pod.yaml holds a Pod, not a NodeHistory"},
		{"no kind", write("empty.yaml", "{}\n"), "w1", nil, exitInvalid, "empty.yaml: no kind: want a NodeHistory"},
		{"another node", good, "w2", nil, exitInvalid, `holds the NodeHistory of node "w1", not "w2"`},
		{"a list without the node", list, "w2", nil, exitInvalid, `holds no NodeHistory of node "w2" (it holds those of: w0, w1)`},
		{"no such file", filepath.Join(dir, "none.yaml"), "w1", nil, exitInvalid, "none.yaml: no such file or directory"},
		{"--update out of range", good, "w1", []string{"--update", "2"}, exitInvalid, "--update 2: node w1 has 1 update recorded; --update must be 1"},
		{"--update below 1", good, "w1", []string{"--update", "-1"}, exitUsage, "--update must be 1 (the newest) or more, not -1"},
		{"no node", good, "", nil, exitUsage, "accepts one NODE, received 0"},
		{"bad output", good, "w1", []string{"-o", "wide"}, exitUsage, `--output must be text, json or yaml, not "wide"`},
	} {
		args := []string{"why"}
		if tc.node != "" {
			args = append(args, tc.node)
		}
		args = append(append(args, "--file", tc.file), tc.args...)
		code, out, errOut := ndp(t, args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d with %q\nstdout: %s", tc.name, code, errOut, tc.code, tc.want, out)
		}
	}
	// A list holding the node is read.
	if code, out, errOut := ndp(t, "why", "w1", "--file", list); code != exitOK || !strings.Contains(out, "Node w1: 1 update recorded") {
		t.Errorf("list: exit %d\n%s%s", code, out, errOut)
	}
}

func withWhyCluster(t *testing.T, objs ...client.Object) {
	t.Helper()
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(objs...).Build()
	old := newStatusClient
	newStatusClient = func(*statusOptions) (client.Reader, error) { return c, nil }
	t.Cleanup(func() { newStatusClient = old })
}

func TestWhyFromACluster(t *testing.T) {
	withWhyCluster(t,
		statusNode("w1", nil, whyTo, whyTo, "Done", ""),
		statusNode("w2", nil, whyFrom, whyTo, "Working", ""),
		history("w1", executorUpdate()),
		history("gone", executorUpdate()))

	code, out, errOut := ndp(t, "why", "w1")
	if code != exitOK || !strings.HasPrefix(out, "Node w1 now: runs rendered-worker-bbbb, state Done; no update in progress.\nNode w1: 1 update recorded") ||
		!strings.Contains(out, "Boot: boot-1 -> boot-2 (rebooted)\n") {
		t.Errorf("w1: exit %d\n%s%s", code, out, errOut)
	}
	// A node without history: said so, exit 0; the MCO is absent, so
	// ndp-daemon would have recorded it.
	code, out, errOut = ndp(t, "why", "w2")
	want := "Node w2 now: runs rendered-worker-aaaa, sent to rendered-worker-bbbb, state Working: an update is in progress.\n" +
		"No update of node w2 is recorded: ndp has not seen an update of this node yet (ndp-daemon records each update it runs).\n" +
		"ndp keeps the last 10 updates of each node; the history is deleted with the node.\n"
	if code != exitOK || out != want {
		t.Errorf("w2: exit %d\n%s%s\nwant:\n%s", code, out, errOut, want)
	}
	code, out, errOut = ndp(t, "why", "w2", "-o", "json")
	if code != exitOK || !strings.Contains(out, `"updates": []`) || !strings.Contains(out, `"updating": true`) || !strings.Contains(errOut, "No update of node w2 is recorded") {
		t.Errorf("w2 -o json: exit %d\n%s%s", code, out, errOut)
	}
	// A deleted node whose history is still there.
	if code, out, errOut := ndp(t, "why", "gone"); code != exitOK || !strings.HasPrefix(out, "Node gone: not found (deleted); its history follows") {
		t.Errorf("gone: exit %d\n%s%s", code, out, errOut)
	}
	// An unknown node.
	if code, out, errOut := ndp(t, "why", "nope"); code != exitInvalid || !strings.Contains(errOut, `node "nope" not found, and no NodeHistory of it`) {
		t.Errorf("nope: exit %d\n%s%s", code, out, errOut)
	}
}

func TestWhyBesideTheMCOSaysTheAdvisorRecordsWhatItObserved(t *testing.T) {
	withWhyCluster(t, statusNode("w1", nil, whyTo, whyTo, "Done", ""),
		&configv1.ClusterOperator{ObjectMeta: metav1.ObjectMeta{Name: mcoguard.ClusterOperatorName}})
	code, out, errOut := ndp(t, "why", "w1")
	if code != exitOK || !strings.Contains(out, "Beside the Machine Config Operator, ndp records only the updates its advisor observed") {
		t.Errorf("exit %d\n%s%s", code, out, errOut)
	}
}

func TestStepDetailShowsTheFirstProofOfAnObservedStep(t *testing.T) {
	for _, tc := range []struct {
		step v1alpha1.UpdateStep
		want string
	}{
		{v1alpha1.UpdateStep{Result: "Observed", Detail: "Node bootID a → b"}, "Node bootID a → b"},
		{v1alpha1.UpdateStep{Result: "Observed", Detail: "Event Reboot; Node bootID a → b; MachineConfigNode RebootedNode=True"},
			"Event Reboot (and 2 more)"},
		// The daemon's own details are shown whole.
		{v1alpha1.UpdateStep{Result: "Failed", Detail: "restart chronyd.service: exit 1; rolled back"}, "restart chronyd.service: exit 1; rolled back"},
	} {
		if got := stepDetail(tc.step); got != tc.want {
			t.Errorf("stepDetail(%+v) = %q, want %q", tc.step, got, tc.want)
		}
	}
}
