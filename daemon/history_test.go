package daemon

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
)

func TestChangeID(t *testing.T) {
	for _, tc := range []struct {
		change  string
		sources map[string]string
		want    string
	}{
		{"file /etc/chrony.conf: contents changed", nil, "file:/etc/chrony.conf"},
		{"file /etc/chrony.conf: added", nil, "file:/etc/chrony.conf"},
		{"unit crio.service: enabled, dropins changed (10-x.conf)", nil, "unit:crio.service"},
		{"ssh keys: 1 added, 0 removed", nil, ""},
		{"osImageURL: changed", nil, "os:osImageURL"},
		{"kernelArguments: added", nil, "os:kernelArguments"},
		{"kernelType: changed", nil, "os:kernelType"},
		{"storage.luks: added", nil, ""},
		{"password hash: changed", nil, ""},
		{"file /etc/odd: name: removed", nil, "file:/etc/odd"},
		{"file /etc/odd: name: removed", map[string]string{"file:/etc/odd: name": "99-odd"}, "file:/etc/odd: name"},
		{"file /etc/x", nil, ""},
	} {
		if got := changeID(tc.change, tc.sources); got != tc.want {
			t.Errorf("changeID(%q) = %q, want %q", tc.change, got, tc.want)
		}
	}
}

func TestChangeSources(t *testing.T) {
	to := map[string]string{"file:/etc/chrony.conf": "50-chrony", "unit:foo.service": "60-foo"}
	from := map[string]string{"file:/etc/chrony.conf": "40-old-chrony", "file:/etc/gone.conf": "30-gone", "file:/etc/unowned.conf": "31-x"}
	for _, tc := range []struct {
		name    string
		reasons []string
		want    map[string]string
	}{
		{"in the new config", []string{"file /etc/chrony.conf: contents changed", "unit foo.service: added"},
			map[string]string{"file:/etc/chrony.conf": "50-chrony", "unit:foo.service": "60-foo"}},
		{"removed: the old config's", []string{"file /etc/gone.conf: removed"}, map[string]string{"file:/etc/gone.conf": "30-gone"}},
		{"changed but without a source in the new config: none", []string{"file /etc/unowned.conf: mode changed"}, nil},
		{"no file or unit", []string{"ssh keys: 1 added, 0 removed", "osImageURL: changed"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rs []ndpmcv1.PlanReason
			for _, c := range tc.reasons {
				rs = append(rs, ndpmcv1.PlanReason{Change: c})
			}
			if diff := cmp.Diff(tc.want, changeSources(rs, to, from)); diff != "" {
				t.Errorf("changeSources (-want +got):\n%s", diff)
			}
		})
	}
}

func restartAction(unit string) ndpmcv1.PlanAction {
	return ndpmcv1.PlanAction{Type: "Restart", Restart: &ndpmcv1.PlanService{ServiceName: unit}}
}

func TestPlanSummary(t *testing.T) {
	for _, tc := range []struct {
		plan ndpmcv1.PostConfigActions
		want string
	}{
		{ndpmcv1.PostConfigActions{Actions: []ndpmcv1.PlanAction{{Type: "None"}}}, "None"},
		{ndpmcv1.PostConfigActions{Actions: []ndpmcv1.PlanAction{restartAction("chronyd.service")}}, "Restart chronyd.service"},
		{ndpmcv1.PostConfigActions{Drain: true, Reboot: true, Actions: []ndpmcv1.PlanAction{{Type: "Reboot"}}}, "drain, Reboot"},
		{ndpmcv1.PostConfigActions{Drain: true, Actions: []ndpmcv1.PlanAction{{Type: "DaemonReload"}, restartAction("a.service")}}, "drain, DaemonReload, Restart a.service"},
	} {
		if got := PlanSummary(&tc.plan); got != tc.want {
			t.Errorf("PlanSummary(%+v) = %q, want %q", tc.plan, got, tc.want)
		}
	}
}

var (
	t0 = time.Date(2026, 11, 26, 10, 0, 0, 123456789, time.UTC)
	at = func(s int) *time.Time { x := t0.Add(time.Duration(s) * time.Second); return &x }
	mt = func(s int) *metav1.Time { return timeOf(at(s)) }
)

// journalOf is a journal of the plan laid out by newJournal, with the first
// done steps done and the next started (when running).
func journalOf(plan ndpmcv1.PostConfigActions, done int, running bool) *Journal {
	plan.From = "rendered-a"
	j := newJournal("rendered-b", &plan, "worker", "boot-1", false, false)
	j.Started = t0
	for i := range j.Steps {
		s := &j.Steps[i]
		switch {
		case i < done:
			s.Started, s.Done, s.BootID, s.StartedAt, s.DoneAt = true, true, "boot-1", at(2*i+1), at(2*i+2)
		case i == done && running:
			s.Started, s.BootID, s.StartedAt = true, "boot-1", at(2*i+1)
		}
	}
	return j
}

func TestHistoryEntry(t *testing.T) {
	restartPlan := ndpmcv1.PostConfigActions{
		Actions:        []ndpmcv1.PlanAction{restartAction("chronyd.service")},
		PolicyRevision: "sha256:rev",
		Reasons: []ndpmcv1.PlanReason{
			{Change: "file /etc/chrony.conf: contents changed", Policy: "chrony", Match: "/etc/chrony.conf", Actions: []ndpmcv1.PlanAction{restartAction("chronyd.service")}, Detail: "chrony re-reads its config on restart"},
			{Change: "file /etc/gone.conf: removed", Policy: "default", Actions: []ndpmcv1.PlanAction{{Type: "None"}}},
		},
	}
	rebootPlan := ndpmcv1.PostConfigActions{Drain: true, Reboot: true, Actions: []ndpmcv1.PlanAction{{Type: "Reboot"}}, PolicyRevision: "sha256:rev",
		Reasons: []ndpmcv1.PlanReason{{Change: "osImageURL: changed", Policy: noPolicy, Actions: []ndpmcv1.PlanAction{{Type: "Reboot"}}, Detail: "no policy claims this change"}}}
	sources := map[string]string{"file:/etc/chrony.conf": "50-chrony", "file:/etc/gone.conf": "30-gone"}
	restartChanges := []v1alpha1.UpdateChange{
		{Change: "file /etc/chrony.conf: contents changed", MachineConfigs: []string{"50-chrony"}, DecidedBy: "policy chrony",
			Actions: []v1alpha1.ForecastAction{{Type: "Restart", Service: "chronyd.service"}}, Detail: "matched /etc/chrony.conf; chrony re-reads its config on restart"},
		{Change: "file /etc/gone.conf: removed", MachineConfigs: []string{"30-gone"}, DecidedBy: "policy default", Actions: []v1alpha1.ForecastAction{{Type: "None"}}},
	}
	restartPlanOut := &v1alpha1.UpdatePlan{Source: "MachineConfig rendered-b status", Summary: "Restart chronyd.service",
		Actions: []v1alpha1.ForecastAction{{Type: "Restart", Service: "chronyd.service"}}, PolicyRevision: "sha256:rev"}
	restartStep := &v1alpha1.ForecastAction{Type: "Restart", Service: "chronyd.service"}
	rebootChanges := []v1alpha1.UpdateChange{{Change: "osImageURL: changed", DecidedBy: "(none)", Actions: []v1alpha1.ForecastAction{{Type: "Reboot"}}, Detail: "no policy claims this change"}}
	rebootPlanOut := &v1alpha1.UpdatePlan{Source: "MachineConfig rendered-b status", Summary: "drain, Reboot", Actions: []v1alpha1.ForecastAction{{Type: "Reboot"}}, Drain: true, Reboot: true, PolicyRevision: "sha256:rev"}
	// doneSteps are the steps Done one after the other, as journalOf has
	// them: two seconds each from the update's start.
	doneSteps := func(names ...string) []v1alpha1.UpdateStep {
		var out []v1alpha1.UpdateStep
		for i, n := range names {
			out = append(out, v1alpha1.UpdateStep{Name: n, Started: mt(2*i + 1), Finished: mt(2*i + 2), Result: "Done"})
		}
		return out
	}
	base := func(u v1alpha1.NodeUpdate) v1alpha1.NodeUpdate {
		u.From, u.To, u.Pool, u.Executor, u.Started = "rendered-a", "rendered-b", "worker", v1alpha1.ExecutorNDP, *mt(0)
		u.BootIDs.Before = "boot-1"
		return u
	}

	for _, tc := range []struct {
		name string
		j    func() *Journal
		want v1alpha1.NodeUpdate
	}{
		{"just started: no step yet", func() *Journal {
			j := journalOf(restartPlan, 0, false)
			j.Sources = sources
			return j
		}, base(v1alpha1.NodeUpdate{Result: v1alpha1.UpdateInProgress, Changes: restartChanges, Plan: restartPlanOut})},
		{"running its action", func() *Journal {
			j := journalOf(restartPlan, 3, true)
			j.Sources = sources
			return j
		}, base(v1alpha1.NodeUpdate{Result: v1alpha1.UpdateInProgress, Changes: restartChanges, Plan: restartPlanOut,
			Steps: append(doneSteps("backup", "files", "current-config"), v1alpha1.UpdateStep{Name: "action", Action: restartStep, Started: mt(7), Result: "Running"})})},
		{"done", func() *Journal {
			j := journalOf(restartPlan, 4, false)
			j.Sources = sources
			j.Completed, j.CompletedAt, j.EndBootID = true, at(8), "boot-1"
			return j
		}, base(v1alpha1.NodeUpdate{Result: v1alpha1.UpdateDone, Finished: mt(8), BootIDs: v1alpha1.BootIDs{After: "boot-1"}, Changes: restartChanges, Plan: restartPlanOut,
			Steps: append(doneSteps("backup", "files", "current-config"), v1alpha1.UpdateStep{Name: "action", Action: restartStep, Started: mt(7), Finished: mt(8), Result: "Done"})})},
		{"failed at its action", func() *Journal {
			j := journalOf(restartPlan, 3, true)
			j.Failed = &Failure{Step: j.Steps[3].Title(), Error: "step action 1 (Restart chronyd.service) failed: job failed", At: *at(9)}
			j.EndBootID = "boot-1"
			return j // no sources recorded: no MachineConfigs
		}, func() v1alpha1.NodeUpdate {
			ch := []v1alpha1.UpdateChange{restartChanges[0], restartChanges[1]}
			ch[0].MachineConfigs, ch[1].MachineConfigs = nil, nil
			return base(v1alpha1.NodeUpdate{Result: v1alpha1.UpdateFailed, Finished: mt(9), Message: "step action 1 (Restart chronyd.service) failed: job failed",
				BootIDs: v1alpha1.BootIDs{After: "boot-1"}, Changes: ch, Plan: restartPlanOut,
				Steps: append(doneSteps("backup", "files", "current-config"),
					v1alpha1.UpdateStep{Name: "action", Action: restartStep, Started: mt(7), Finished: mt(9), Result: "Failed", Detail: "step action 1 (Restart chronyd.service) failed: job failed"})})
		}()},
		{"drain and reboot, rebooted and done", func() *Journal {
			j := journalOf(rebootPlan, 6, false) // cordon drain backup files current-config reboot, then uncordon
			j.Steps[6].Started, j.Steps[6].Done, j.Steps[6].BootID, j.Steps[6].StartedAt, j.Steps[6].DoneAt = true, true, "boot-2", at(20), at(21)
			j.Completed, j.CompletedAt, j.EndBootID = true, at(21), "boot-2"
			return j
		}, base(v1alpha1.NodeUpdate{Result: v1alpha1.UpdateDone, Finished: mt(21), BootIDs: v1alpha1.BootIDs{After: "boot-2"}, Changes: rebootChanges, Plan: rebootPlanOut,
			Steps: append(doneSteps("cordon", "drain", "backup", "files", "current-config"),
				v1alpha1.UpdateStep{Name: "reboot", Started: mt(11), Finished: mt(12), Result: "Done", Detail: "requested in boot boot-1"},
				v1alpha1.UpdateStep{Name: "uncordon", Started: mt(20), Finished: mt(21), Result: "Done"})})},
		{"rebooting", func() *Journal { return journalOf(rebootPlan, 5, true) }, base(v1alpha1.NodeUpdate{Result: v1alpha1.UpdateInProgress, Changes: rebootChanges, Plan: rebootPlanOut,
			Steps: append(doneSteps("cordon", "drain", "backup", "files", "current-config"),
				v1alpha1.UpdateStep{Name: "reboot", Started: mt(11), Result: "Running", Detail: "requested in boot boot-1"})})},
		{"drain skipped at its timeout", func() *Journal {
			j := journalOf(rebootPlan, 1, true)
			j.DrainTimeout = "3s;Skip"
			j.Skipped, j.EndBootID = &DrainSkip{At: *at(9), Pods: []string{"web/db-0"}, Message: "the drain ran out of its timeout of 3s"}, "boot-1"
			return j
		}, base(v1alpha1.NodeUpdate{Result: v1alpha1.UpdateSkipped, Finished: mt(9), Message: "the drain ran out of its timeout of 3s",
			BootIDs: v1alpha1.BootIDs{After: "boot-1"}, Changes: rebootChanges, Plan: rebootPlanOut,
			Steps: append(doneSteps("cordon"), v1alpha1.UpdateStep{Name: "drain", Started: mt(3), Finished: mt(9), Result: "Skipped", Detail: "the drain ran out of its timeout of 3s"})})},
		{"cordoned before the update: kept", func() *Journal {
			p := rebootPlan
			p.Reboot, p.Actions, p.Reasons = false, []ndpmcv1.PlanAction{{Type: "None"}}, nil
			j := journalOf(p, 6, false)
			j.NodeWasUnschedulable, j.Completed, j.CompletedAt, j.EndBootID = true, true, at(12), "boot-1"
			return j
		}, base(v1alpha1.NodeUpdate{Result: v1alpha1.UpdateDone, Finished: mt(12), BootIDs: v1alpha1.BootIDs{After: "boot-1"},
			Plan: &v1alpha1.UpdatePlan{Source: "MachineConfig rendered-b status", Summary: "drain", Actions: []v1alpha1.ForecastAction{{Type: "None"}}, Drain: true, PolicyRevision: "sha256:rev"},
			Steps: []v1alpha1.UpdateStep{
				{Name: "cordon", Started: mt(1), Finished: mt(2), Result: "Done", Detail: "already cordoned before the update"},
				{Name: "drain", Started: mt(3), Finished: mt(4), Result: "Done"},
				{Name: "backup", Started: mt(5), Finished: mt(6), Result: "Done"},
				{Name: "files", Started: mt(7), Finished: mt(8), Result: "Done"},
				{Name: "current-config", Started: mt(9), Finished: mt(10), Result: "Done"},
				{Name: "uncordon", Started: mt(11), Finished: mt(12), Result: "Done", Detail: "cordoned before the update: left cordoned"},
			}})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, historyEntry(tc.j())); diff != "" {
				t.Errorf("historyEntry (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHistoryEntryListsAtMostMaxChanges(t *testing.T) {
	p := ndpmcv1.PostConfigActions{Actions: []ndpmcv1.PlanAction{{Type: "None"}}}
	for i := range v1alpha1.MaxUpdateChanges + 7 {
		p.Reasons = append(p.Reasons, ndpmcv1.PlanReason{Change: fmt.Sprintf("file /etc/f%03d: added", i), Policy: "default"})
	}
	u := historyEntry(journalOf(p, 0, false))
	if len(u.Changes) != v1alpha1.MaxUpdateChanges || u.ChangesOmitted != 7 || u.Changes[49].Change != "file /etc/f049: added" {
		t.Errorf("%d changes listed (last %q), %d omitted; want %d and 7", len(u.Changes), u.Changes[len(u.Changes)-1].Change, u.ChangesOmitted, v1alpha1.MaxUpdateChanges)
	}
}

func TestRefusalEntry(t *testing.T) {
	now := t0.Add(time.Minute)
	refused := v1alpha1.NodeUpdate{From: "rendered-a", To: "rendered-b", Pool: "worker", Executor: v1alpha1.ExecutorNDP, Started: *mt(0), Finished: mt(0),
		Result: v1alpha1.UpdateUnreconcilable, Message: "refusing the update to rendered-b: bad plan"}
	for _, tc := range []struct {
		name    string
		updates []v1alpha1.NodeUpdate
		msg     string
		started *metav1.Time
		fin     *metav1.Time
	}{
		{"first refusal", nil, "refusing the update to rendered-b: bad plan", timeOf(&now), timeOf(&now)},
		{"the same refusal again: unchanged", []v1alpha1.NodeUpdate{refused}, "refusing the update to rendered-b: bad plan", mt(0), mt(0)},
		{"refused for another reason: same entry, new end", []v1alpha1.NodeUpdate{refused}, "refusing the update to rendered-b: other", mt(0), timeOf(&now)},
		{"after another update: a new entry", []v1alpha1.NodeUpdate{{From: "rendered-a", To: "rendered-b", Executor: v1alpha1.ExecutorNDP, Started: *mt(0), Result: v1alpha1.UpdateFailed}}, "refusing the update to rendered-b: bad plan", timeOf(&now), timeOf(&now)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := refusalEntry(tc.updates, "rendered-a", "rendered-b", "worker", tc.msg, now)
			want := v1alpha1.NodeUpdate{From: "rendered-a", To: "rendered-b", Pool: "worker", Executor: v1alpha1.ExecutorNDP, Started: *tc.started, Finished: tc.fin,
				Result: v1alpha1.UpdateUnreconcilable, Message: tc.msg}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("refusalEntry (-want +got):\n%s", diff)
			}
			// The same refusal again changes nothing: nothing to write.
			if same := cmp.Equal(tc.updates, mergeHistory(tc.updates, got)); same != (tc.name == "the same refusal again: unchanged") {
				t.Errorf("merged into the history, the refusal changes it: %t", !same)
			}
		})
	}
}

func TestMergeHistory(t *testing.T) {
	entry := func(to string, s int, r v1alpha1.UpdateResult) v1alpha1.NodeUpdate {
		return v1alpha1.NodeUpdate{To: to, Executor: v1alpha1.ExecutorNDP, Started: *mt(s), Result: r}
	}
	var ten []v1alpha1.NodeUpdate
	for i := 10; i > 0; i-- {
		ten = append(ten, entry(fmt.Sprintf("rendered-%d", i), i, v1alpha1.UpdateDone))
	}
	sub := entry("rendered-b", 100, v1alpha1.UpdateDone)
	sub.Started = metav1.NewTime(t0.Add(100*time.Second + 400*time.Millisecond)) // as written, before the API server's rounding
	for _, tc := range []struct {
		name    string
		updates []v1alpha1.NodeUpdate
		entries []v1alpha1.NodeUpdate
		want    []v1alpha1.NodeUpdate
	}{
		{"the first", nil, []v1alpha1.NodeUpdate{entry("rendered-b", 100, v1alpha1.UpdateInProgress)}, []v1alpha1.NodeUpdate{entry("rendered-b", 100, v1alpha1.UpdateInProgress)}},
		{"a new update goes first", []v1alpha1.NodeUpdate{entry("rendered-a", 1, v1alpha1.UpdateDone)}, []v1alpha1.NodeUpdate{entry("rendered-b", 100, v1alpha1.UpdateInProgress)},
			[]v1alpha1.NodeUpdate{entry("rendered-b", 100, v1alpha1.UpdateInProgress), entry("rendered-a", 1, v1alpha1.UpdateDone)}},
		{"the same update (to, started) is replaced in place, to the second", []v1alpha1.NodeUpdate{entry("rendered-b", 100, v1alpha1.UpdateInProgress), entry("rendered-a", 1, v1alpha1.UpdateDone)},
			[]v1alpha1.NodeUpdate{sub}, []v1alpha1.NodeUpdate{sub, entry("rendered-a", 1, v1alpha1.UpdateDone)}},
		{"the same target started again is another update", []v1alpha1.NodeUpdate{entry("rendered-b", 100, v1alpha1.UpdateFailed)}, []v1alpha1.NodeUpdate{entry("rendered-b", 200, v1alpha1.UpdateInProgress)},
			[]v1alpha1.NodeUpdate{entry("rendered-b", 200, v1alpha1.UpdateInProgress), entry("rendered-b", 100, v1alpha1.UpdateFailed)}},
		{"the MCO's entry of the same target is not ndp's", []v1alpha1.NodeUpdate{{To: "rendered-b", Executor: v1alpha1.ExecutorMCO, Started: *mt(100)}}, []v1alpha1.NodeUpdate{entry("rendered-b", 100, v1alpha1.UpdateDone)},
			[]v1alpha1.NodeUpdate{entry("rendered-b", 100, v1alpha1.UpdateDone), {To: "rendered-b", Executor: v1alpha1.ExecutorMCO, Started: *mt(100)}}},
		{"at most ten, the newest", ten, []v1alpha1.NodeUpdate{entry("rendered-b", 100, v1alpha1.UpdateInProgress)},
			append([]v1alpha1.NodeUpdate{entry("rendered-b", 100, v1alpha1.UpdateInProgress)}, ten[:9]...)},
		{"pending entries in order", nil, []v1alpha1.NodeUpdate{entry("rendered-b", 100, v1alpha1.UpdateInProgress), entry("rendered-c", 200, v1alpha1.UpdateInProgress), entry("rendered-b", 100, v1alpha1.UpdateDone)},
			[]v1alpha1.NodeUpdate{entry("rendered-c", 200, v1alpha1.UpdateInProgress), entry("rendered-b", 100, v1alpha1.UpdateDone)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := append([]v1alpha1.NodeUpdate(nil), tc.updates...)
			if diff := cmp.Diff(tc.want, mergeHistory(tc.updates, tc.entries...)); diff != "" {
				t.Errorf("mergeHistory (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.updates); diff != "" {
				t.Errorf("mergeHistory changed its input:\n%s", diff)
			}
		})
	}
}

// The history is a record, not a gate: while the NodeHistory cannot be
// written the update runs to its end all the same, and the entry is
// written at the next Sync once the API server takes it.
func TestHistoryWriteFailuresDoNotStopTheUpdate(t *testing.T) {
	sch, _ := fuzzCodecs()
	chrony := fuzzPlan(fuzzFrom, fuzzTo, false, false, restart("chronyd.service"))
	target := &ndpmcv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: fuzzTo, Labels: map[string]string{ndpmcv1.RenderedForLabel: "worker"},
		Annotations: map[string]string{ndpmcv1.SourcesAnnotation: `{"file:/etc/chrony.conf":"50-chrony"}`}},
		Spec:   mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: []byte(fuzzToIgn)}},
		Status: ndpmcv1.MachineConfigStatus{PostConfigActions: []ndpmcv1.PostConfigActions{chrony}}}
	ctx := context.Background()
	r := newFuzzRig(t, sch, target, fuzzTo, nil)
	// The fake cluster is shared by the package's tests.
	clean := func() {
		_ = r.k8s.Delete(context.Background(), &v1alpha1.NodeHistory{ObjectMeta: metav1.ObjectMeta{Name: fuzzNode}})
	}
	clean()
	t.Cleanup(clean)
	var down atomic.Bool
	down.Store(true)
	refused := 0
	refuse := func(obj client.Object) error {
		if _, ok := obj.(*v1alpha1.NodeHistory); ok && down.Load() {
			refused++
			return apierrors.NewServiceUnavailable("the API server is away")
		}
		return nil
	}
	r.d.Client = interceptor.NewClient(r.k8s.(client.WithWatch), interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if err := refuse(obj); err != nil {
				return err
			}
			return c.Create(ctx, obj, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if err := refuse(obj); err != nil {
				return err
			}
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
	})

	if _, err := r.d.Sync(ctx); err != nil {
		t.Fatalf("Sync with the history refused: %v", err)
	}
	var node corev1.Node
	if err := r.k8s.Get(ctx, client.ObjectKey{Name: fuzzNode}, &node); err != nil {
		t.Fatal(err)
	}
	if node.Annotations[ndpmcv1.StateAnnotation] != ndpmcv1.StateDone || node.Annotations[ndpmcv1.CurrentConfigAnnotation] != fuzzTo ||
		!slices.Contains(r.sd.calls, "Restart chronyd.service") {
		t.Fatalf("with the history refused: node %v, systemd calls %q", node.Annotations, r.sd.calls)
	}
	if refused == 0 || !r.d.historyPending() {
		t.Fatalf("%d history writes refused, pending %t", refused, r.d.historyPending())
	}

	// Settled, with the entry still to write: the daemon looks again.
	after, err := r.d.Sync(ctx)
	if err != nil || after != historyRetry {
		t.Fatalf("settled with the history unwritten: Sync = %s, %v; want %s", after, err, historyRetry)
	}
	down.Store(false)
	if after, err := r.d.Sync(ctx); err != nil || after != 0 {
		t.Fatalf("Sync once the API server takes the history: %s, %v", after, err)
	}
	var nh v1alpha1.NodeHistory
	if err := r.k8s.Get(ctx, client.ObjectKey{Name: fuzzNode}, &nh); err != nil {
		t.Fatal(err)
	}
	if len(nh.Status.Updates) != 1 {
		t.Fatalf("%d entries, want 1: %+v", len(nh.Status.Updates), nh.Status.Updates)
	}
	u := nh.Status.Updates[0]
	if u.From != fuzzFrom || u.To != fuzzTo || u.Result != v1alpha1.UpdateDone || len(u.Steps) != 4 || u.BootIDs != (v1alpha1.BootIDs{Before: fuzzBootID, After: fuzzBootID}) ||
		len(u.Changes) == 0 || !slices.Equal(u.Changes[0].MachineConfigs, []string{"50-chrony"}) {
		t.Errorf("entry %+v", u)
	}
	if r.d.historyPending() {
		t.Error("still pending after the write")
	}
}

// A resume is noted on the step it took up: after a restart of the daemon,
// or after a boot the plan did not ask for; the plan's own reboot is not.
func TestResumesInTheHistory(t *testing.T) {
	plan := ndpmcv1.PostConfigActions{Drain: true, Reboot: true, Actions: []ndpmcv1.PlanAction{{Type: "Reboot"}}, PolicyRevision: "sha256:rev"}
	detail := func(j *Journal, step string) string {
		for _, s := range historyEntry(j).Steps {
			if s.Name == step {
				return s.Detail
			}
		}
		return "(no step " + step + ")"
	}
	// cordon done, drain running (steps: cordon, drain, backup, files,
	// current-config, reboot, uncordon).
	j := journalOf(plan, 1, true)

	// The daemon restarted in the same boot, during the drain.
	if r := j.resumed("boot-1", *at(10)); r.Step != "drain" || r.PrevBoot != "" || r.Planned {
		t.Fatalf("a restart during the drain: %+v", r)
	}
	if got, want := detail(j, "drain"), "resumed after a restart of the daemon"; got != want {
		t.Errorf("drain: %q, want %q", got, want)
	}
	// A power cut during the drain: a boot the plan did not ask for.
	if r := j.resumed("boot-2", *at(20)); r.PrevBoot != "boot-1" || r.Planned {
		t.Fatalf("a power cut during the drain: %+v", r)
	}
	if got, want := detail(j, "drain"), "resumed after a restart of the daemon; resumed after an unplanned reboot (boot boot-1 -> boot-2)"; got != want {
		t.Errorf("drain: %q, want %q", got, want)
	}
	// The drain and the steps up to the reboot done in boot-2; the reboot
	// requested there; the node comes back in boot-3: planned, no note.
	for i := 1; i <= 5; i++ {
		s := &j.Steps[i]
		s.Started, s.Done, s.BootID, s.StartedAt, s.DoneAt = true, i < 5, "boot-2", at(20+2*i), at(21+2*i)
		if i == 5 {
			s.DoneAt = nil
		}
	}
	if r := j.resumed("boot-3", *at(40)); r.Step != "reboot" || r.PrevBoot != "boot-2" || !r.Planned {
		t.Fatalf("the planned reboot: %+v", r)
	}
	if got, want := detail(j, "reboot"), "requested in boot boot-2"; got != want {
		t.Errorf("reboot: %q, want %q (no resume note)", got, want)
	}
	// Bounded.
	for i := 0; i < 2*maxResumes; i++ {
		j.resumed("boot-3", *at(50 + i))
	}
	if len(j.Resumes) != maxResumes {
		t.Errorf("%d resumes kept, want %d", len(j.Resumes), maxResumes)
	}
}
