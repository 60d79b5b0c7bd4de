package advisor

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/mco/mcoentries"
)

var (
	obsT0   = time.Date(2026, 9, 1, 10, 0, 0, 0, time.UTC)
	obsFrom = "rendered-worker-aaa"
	obsTo   = "rendered-worker-bbb"
)

func obsAt(s int) metav1.Time { return metav1.NewTime(obsT0.Add(time.Duration(s) * time.Second)) }

func openU() *v1alpha1.NodeUpdate {
	return &v1alpha1.NodeUpdate{From: obsFrom, To: obsTo, Pool: "worker", Executor: v1alpha1.ExecutorMCO, Started: obsAt(0),
		Result: v1alpha1.UpdateInProgress, Verdict: v1alpha1.VerdictPending, BootIDs: v1alpha1.BootIDs{Before: "boot-1"},
		Forecast: ForecastName("worker", obsFrom, obsTo), Evidence: []string{observedFromStart + "x"}}
}

func mcdEvent(reason, msg string, s int) corev1.Event {
	return corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: MCDEventNamespace, Name: reason},
		InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "w1"}, Reason: reason, Message: msg, Type: corev1.EventTypeNormal,
		Source: corev1.EventSource{Component: MCDEventComponent}, LastTimestamp: obsAt(s)}
}

// The same evidence twice adds nothing; a second proof of a step is added
// to its detail.
func TestFoldIsIdempotent(t *testing.T) {
	u := openU()
	e := evidence{Line: "Node spec.unschedulable=true", Step: stepCordon, At: obsAt(1)}
	if !fold(u, e) {
		t.Fatal("the first evidence changed nothing")
	}
	before := u.DeepCopy()
	if fold(u, e) || !equality.Semantic.DeepEqual(before, u) {
		t.Fatalf("the same evidence twice changed the update: %+v", u)
	}
	if !fold(u, evidence{Line: "Event Cordon", Step: stepCordon, At: obsAt(2)}) || len(u.Steps) != 1 || !strings.Contains(u.Steps[0].Detail, "Event Cordon") {
		t.Fatalf("a second proof of the cordon: steps %+v", u.Steps)
	}
	reload := &v1alpha1.ForecastAction{Type: "Reload", Service: "crio.service"}
	restart := &v1alpha1.ForecastAction{Type: "Restart", Service: "crio.service"}
	fold(u, evidence{Line: "a", Step: stepAction, Action: reload})
	fold(u, evidence{Line: "b", Step: stepAction, Action: restart})
	if len(u.Steps) != 3 {
		t.Fatalf("two different actions are two steps: %+v", u.Steps)
	}
}

func TestFoldOrdersStepsByWhenTheyHappened(t *testing.T) {
	u := openU()
	reload := &v1alpha1.ForecastAction{Type: "Reload", Service: "crio.service"}
	// Seen in this order after a restart: the Node uncordoned now, then
	// the daemon's earlier Events, re-listed.
	fold(u, evidence{Line: "Node annotation desiredDrain=uncordon-x", Step: stepUncordon, At: obsAt(30)})
	fold(u, evidence{Line: "Event ServiceReload", Step: stepAction, Action: reload, At: obsAt(10)})
	fold(u, evidence{Line: "Event Cordon", Step: stepCordon, At: obsAt(5)})
	// A second, earlier proof moves the uncordon back, before the reload.
	fold(u, evidence{Line: "Event Uncordon", Step: stepUncordon, At: obsAt(8)})
	var got []string
	for _, s := range u.Steps {
		got = append(got, s.Name)
	}
	if want := []string{stepCordon, stepUncordon, stepAction}; !slices.Equal(got, want) {
		t.Errorf("steps %v, want %v", got, want)
	}
	if !u.Steps[1].Started.Equal(ptrTime(obsAt(8))) {
		t.Errorf("the uncordon dates from %v, want its earliest proof %v", u.Steps[1].Started, obsAt(8))
	}
}

func ptrTime(t metav1.Time) *metav1.Time { return &t }

func TestEvidenceOfTheMCOsRecords(t *testing.T) {
	u := openU()
	steps := func(es []evidence) []string {
		var out []string
		for _, e := range es {
			s := e.Step
			if e.Action != nil {
				s += " " + actionWhat(*e.Action)
			}
			out = append(out, s)
		}
		return out
	}
	t.Run("node", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			n    observedNode
			want string
		}{
			{"nothing yet", observedNode{Current: obsFrom, Desired: obsTo, BootID: "boot-1"}, ""},
			{"cordoned and drain asked", observedNode{Unschedulable: true, DesiredDrain: "drain-" + obsTo, BootID: "boot-1"}, "cordon,drain"},
			{"drain of another update", observedNode{DesiredDrain: "drain-rendered-worker-ccc", BootID: "boot-1"}, ""},
			{"drained", observedNode{LastAppliedDrain: "drain-" + obsTo}, "drain"},
			{"uncordon", observedNode{DesiredDrain: "uncordon-" + obsTo, BootID: "boot-1"}, "uncordon"},
			{"rebooting", observedNode{Post: "Rebooting", BootID: "boot-1"}, "reboot"},
			{"new boot", observedNode{BootID: "boot-2"}, "reboot"},
			{"degraded", observedNode{State: "Degraded", Reason: "boom", BootID: "boot-1"}, ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				got := strings.Join(steps(nodeEvidence(u, tc.n, obsAt(3))), ",")
				if strings.Trim(got, ",") != tc.want {
					t.Errorf("steps %q, want %q", got, tc.want)
				}
			})
		}
	})
	t.Run("events", func(t *testing.T) {
		other := mcdEvent("Cordon", "Cordoned node to apply update", 2)
		other.InvolvedObject.Name = "w2"
		kubelet := mcdEvent("Rebooted", "Node w1 has been rebooted, boot id: boot-2", 40)
		kubelet.Namespace, kubelet.Type, kubelet.Source.Component = KubeletEventNamespace, corev1.EventTypeWarning, "kubelet"
		notMCD := mcdEvent("Drain", "Draining node to update config.", 2)
		notMCD.Source.Component = "someone"
		for _, tc := range []struct {
			name string
			ev   corev1.Event
			want string
		}{
			{"cordon", mcdEvent("Cordon", "Cordoned node to apply update", 2), stepCordon},
			{"drain", mcdEvent("Drain", "Draining node to update config.", 2), stepDrain},
			{"no drain", mcdEvent("Drain", "Drain not required, skipping", 2), ""},
			{"reboot into this config", mcdEvent("Reboot", "Node will reboot into config "+obsTo, 20), stepReboot},
			{"reboot into another", mcdEvent("Reboot", "Node will reboot into config rendered-worker-ccc", 20), "-"},
			{"reload crio", mcdEvent("ServiceReload", "Config changes do not require reboot. Service crio.service was reloaded.", 20), "action reload crio.service"},
			{"daemon-reload", mcdEvent("ServiceReload", "Config changes do not require reboot. Service daemon-reload was reloaded.", 20), "action daemon-reload"},
			{"restart", mcdEvent("ServiceRestart", "Config changes do not require reboot. Service chronyd.service was restarted.", 20), "action restart chronyd.service"},
			{"none", mcdEvent("SkipReboot", "Config changes do not require reboot.", 20), "action none"},
			{"kubelet rebooted", kubelet, stepReboot},
			{"another node", other, "-"},
			{"not the daemon", notMCD, "-"},
			{"before the update", mcdEvent("Cordon", "Cordoned node to apply update", -60), "-"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				es := eventEvidence(u, "w1", &tc.ev, nil)
				got := "-"
				if len(es) == 1 {
					got = steps(es)[0]
				}
				if got != tc.want {
					t.Errorf("step %q, want %q (%+v)", got, tc.want, es)
				}
			})
		}
		// After the previous update finished only.
		prev := obsAt(5)
		if es := eventEvidence(u, "w1", &[]corev1.Event{mcdEvent("Uncordon", "Uncordoned", 4)}[0], &prev); len(es) != 0 {
			t.Errorf("an Event of the previous update counted: %+v", es)
		}
	})
	t.Run("machineconfignode", func(t *testing.T) {
		c := func(typ, status, reason, msg string, s int) metav1.Condition {
			return metav1.Condition{Type: typ, Status: metav1.ConditionStatus(status), Reason: reason, Message: msg, LastTransitionTime: obsAt(s)}
		}
		for _, tc := range []struct {
			name string
			c    metav1.Condition
			want string
		}{
			{"drained now", c("Drained", "True", "x", "Drained node. The drain is complete", 5), stepDrain},
			{"drained, reset after the update", c("Drained", "False", "x", mcnPrefix+obsTo+": Drained node. The drain is complete", 50), stepDrain},
			{"drained in another update", c("Drained", "False", "x", mcnPrefix+"rendered-worker-ccc: Drained node. The drain is complete", 50), "-"},
			{"no drain", c("Drained", "False", "x", "Node Drain Not required for this update.", 5), ""},
			{"old unprefixed", c("Cordoned", "True", "x", "Cordoned node", -3600), "-"},
			{"reloaded", c("UpdatePostActionComplete", "True", "x", "Node has reloaded service crio.service", 20), "action reload crio.service"},
			{"none", c("UpdatePostActionComplete", "True", "None", "Changes do not require a reboot", 20), "action none"},
			{"rebooting", c("RebootedNode", "Unknown", "x", "Upgrade requires a reboot.", 20), stepReboot},
			{"prepared", c("UpdatePrepared", "True", "x", "Update Compatible. Post Cfg Actions: [] Drain Required: false", 2), ""},
			{"irrelevant", c("Resumed", "True", "x", "x", 2), "-"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				es := mcnEvidence(u, []metav1.Condition{tc.c}, nil)
				got := "-"
				if len(es) == 1 {
					got = steps(es)[0]
				}
				if got != tc.want {
					t.Errorf("step %q, want %q (%+v)", got, tc.want, es)
				}
			})
		}
	})
}

func TestJudge(t *testing.T) {
	step := func(name string, a *v1alpha1.ForecastAction, line string) v1alpha1.UpdateStep {
		return v1alpha1.UpdateStep{Name: name, Action: a, Result: stepObserved, Detail: line}
	}
	reloadCrio := &v1alpha1.ForecastAction{Type: "Reload", Service: "crio.service"}
	special := v1alpha1.UpdatePlan{Summary: "Special", Actions: []v1alpha1.ForecastAction{{Type: "Special"}}}
	drainReboot := v1alpha1.UpdatePlan{Summary: "drain, Reboot", Actions: []v1alpha1.ForecastAction{{Type: "Reboot"}}, Drain: true, Reboot: true}
	restart := v1alpha1.UpdatePlan{Summary: "Restart chronyd.service", Actions: []v1alpha1.ForecastAction{{Type: "Restart", Service: "chronyd.service"}}}
	for _, tc := range []struct {
		name    string
		plan    *v1alpha1.UpdatePlan
		edit    func(u *v1alpha1.NodeUpdate)
		verdict v1alpha1.Verdict
		want    map[string]v1alpha1.CheckResult
	}{
		{"special as foretold", &special, func(u *v1alpha1.NodeUpdate) {
			u.Steps = []v1alpha1.UpdateStep{step(stepAction, reloadCrio, "Event ServiceReload crio.service"), step(stepUncordon, nil, "uncordon")}
			u.BootIDs.After = "boot-1"
		}, v1alpha1.VerdictAgreed, map[string]v1alpha1.CheckResult{"drain": v1alpha1.CheckAgreed, "reboot": v1alpha1.CheckAgreed, "reload crio.service": v1alpha1.CheckAgreed}},
		{"special, but it rebooted", &special, func(u *v1alpha1.NodeUpdate) {
			u.Steps = []v1alpha1.UpdateStep{step(stepReboot, nil, "Node status.nodeInfo.bootID boot-1 → boot-2")}
			u.BootIDs.After = "boot-2"
		}, v1alpha1.VerdictMismatch, map[string]v1alpha1.CheckResult{"drain": v1alpha1.CheckAgreed, "reboot": v1alpha1.CheckMismatch, "reload crio.service": v1alpha1.CheckNotObservable}},
		{"drain and reboot foretold, never cordoned", &drainReboot, func(u *v1alpha1.NodeUpdate) {
			u.Steps = []v1alpha1.UpdateStep{step(stepReboot, nil, "boot")}
			u.BootIDs.After = "boot-2"
		}, v1alpha1.VerdictMismatch, map[string]v1alpha1.CheckResult{"drain": v1alpha1.CheckMismatch, "reboot": v1alpha1.CheckAgreed}},
		{"drain and reboot as foretold", &drainReboot, func(u *v1alpha1.NodeUpdate) {
			u.Steps = []v1alpha1.UpdateStep{step(stepCordon, nil, "c"), step(stepDrain, nil, "d"), step(stepReboot, nil, "boot")}
			u.BootIDs.After = "boot-2"
		}, v1alpha1.VerdictAgreed, map[string]v1alpha1.CheckResult{"drain": v1alpha1.CheckAgreed, "reboot": v1alpha1.CheckAgreed}},
		{"a restart without its Event", &restart, func(u *v1alpha1.NodeUpdate) { u.BootIDs.After = "boot-1" },
			v1alpha1.VerdictPartlyObserved, map[string]v1alpha1.CheckResult{"drain": v1alpha1.CheckAgreed, "reboot": v1alpha1.CheckAgreed, "restart chronyd.service": v1alpha1.CheckNotObservable}},
		{"a restart with its Event", &restart, func(u *v1alpha1.NodeUpdate) {
			u.BootIDs.After = "boot-1"
			u.Steps = []v1alpha1.UpdateStep{step(stepAction, &v1alpha1.ForecastAction{Type: "Restart", Service: "chronyd.service"}, "Event ServiceRestart")}
		}, v1alpha1.VerdictAgreed, map[string]v1alpha1.CheckResult{"restart chronyd.service": v1alpha1.CheckAgreed}},
		{"boot ids unknown, seen midway", &restart, func(u *v1alpha1.NodeUpdate) {
			u.BootIDs = v1alpha1.BootIDs{}
			u.Evidence = []string{observedMidway + "x"}
			u.Steps = []v1alpha1.UpdateStep{step(stepAction, &v1alpha1.ForecastAction{Type: "Restart", Service: "chronyd.service"}, "Event ServiceRestart")}
		}, v1alpha1.VerdictPartlyObserved, map[string]v1alpha1.CheckResult{"drain": v1alpha1.CheckNotObservable, "reboot": v1alpha1.CheckNotObservable}},
		{"midway, but the daemon said no drain", &special, func(u *v1alpha1.NodeUpdate) {
			u.BootIDs.After = "boot-1"
			u.Evidence = []string{observedMidway + "x", "MachineConfigNode Drained=False: Node Drain Not required for this update."}
			u.Steps = []v1alpha1.UpdateStep{step(stepAction, reloadCrio, "r")}
		}, v1alpha1.VerdictAgreed, map[string]v1alpha1.CheckResult{"drain": v1alpha1.CheckAgreed}},
		{"an action not foretold", &restart, func(u *v1alpha1.NodeUpdate) {
			u.BootIDs.After = "boot-1"
			u.Steps = []v1alpha1.UpdateStep{step(stepAction, &v1alpha1.ForecastAction{Type: "Restart", Service: "chronyd.service"}, "e"), step(stepAction, reloadCrio, "r")}
		}, v1alpha1.VerdictMismatch, map[string]v1alpha1.CheckResult{"restart chronyd.service": v1alpha1.CheckAgreed, "reload crio.service": v1alpha1.CheckMismatch}},
		{"no forecast", nil, func(u *v1alpha1.NodeUpdate) {}, v1alpha1.VerdictPartlyObserved, map[string]v1alpha1.CheckResult{"forecast": v1alpha1.CheckNotObservable}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := openU()
			u.Result = v1alpha1.UpdateDone
			u.Plan = tc.plan
			tc.edit(u)
			checks, verdict := judge(u)
			if verdict != tc.verdict {
				t.Errorf("verdict %s, want %s: %+v", verdict, tc.verdict, checks)
			}
			got := map[string]v1alpha1.CheckResult{}
			for _, c := range checks {
				got[c.What] = c.Result
				if c.Result == v1alpha1.CheckAgreed && c.Observed == v1alpha1.ObservedUnknown {
					t.Errorf("check %s agreed on an unknown observation", c.What)
				}
			}
			for what, r := range tc.want {
				if got[what] != r {
					t.Errorf("check %q: %s, want %s (all: %+v)", what, got[what], r, checks)
				}
			}
		})
	}
}

// One node through one update: opened when sent, each observation folded
// once, finished when Done, judged after settling; each step is a pure
// function of its input, and the same input twice writes nothing.
func TestObserveLifecycle(t *testing.T) {
	forecast := &v1alpha1.UpdateForecast{ObjectMeta: metav1.ObjectMeta{Name: ForecastName("worker", obsFrom, obsTo)},
		Status: v1alpha1.UpdateForecastStatus{MCO: &v1alpha1.MCOForecast{Summary: "Special", Actions: []v1alpha1.ForecastAction{{Type: "Special"}},
			Rules: []v1alpha1.MCORule{{Change: "file /etc/containers/registries.conf", Rule: "file policy /etc/containers/registries.conf", Actions: []v1alpha1.ForecastAction{{Type: "Special"}}}}}}}
	in := observeInput{Pool: "worker", Now: obsAt(0),
		Node: observedNode{Name: "w1", Current: obsFrom, Desired: obsTo, State: "Done", BootID: "boot-1"},
		Forecast: func(name string) *v1alpha1.UpdateForecast {
			return map[string]*v1alpha1.UpdateForecast{forecast.Name: forecast}[name]
		},
		Sources: func(r string) map[string]string {
			return map[string]string{"file:/etc/containers/registries.conf": "99-worker-generated-registries"}
		},
	}
	step := func(what string, edit func()) observeResult {
		t.Helper()
		edit()
		res := observe(in)
		again := observe(observeInput{Node: in.Node, Pool: in.Pool, History: res.Updates, MCN: in.MCN, Events: in.Events, Forecast: in.Forecast, Sources: in.Sources, Now: in.Now})
		if again.Changed {
			t.Errorf("%s: the same observation twice changed the history", what)
		}
		in.History = res.Updates
		return res
	}
	res := step("sent", func() {})
	if !res.Changed || len(res.Updates) != 1 {
		t.Fatalf("no update opened: %+v", res)
	}
	u := res.Updates[0]
	if u.Plan == nil || u.Plan.Source != "UpdateForecast "+forecast.Name || len(u.Changes) != 1 || u.Changes[0].MachineConfigs[0] != "99-worker-generated-registries" || !watchedFromStart(&u) {
		t.Fatalf("opened: %+v", u)
	}
	step("working", func() {
		in.Now, in.Node.State = obsAt(2), "Working"
		in.MCN = []metav1.Condition{{Type: "Drained", Status: "False", Message: "Node Drain Not required for this update.", LastTransitionTime: obsAt(2)}}
	})
	step("reloaded", func() {
		in.Now = obsAt(3)
		in.Events = []corev1.Event{mcdEvent("ServiceReload", "Config changes do not require reboot. Service crio.service was reloaded.", 3)}
	})
	res = step("done", func() {
		in.Now, in.Node.Current, in.Node.State, in.Node.DesiredDrain = obsAt(4), obsTo, "Done", "uncordon-"+obsTo
	})
	if res.Closed != nil || res.Requeue != observeSettle || res.Updates[0].Result != v1alpha1.UpdateDone || res.Updates[0].Finished == nil {
		t.Fatalf("done: closed %v, requeue %s, %+v", res.Closed, res.Requeue, res.Updates[0])
	}
	res = step("settled", func() {
		in.Now = metav1.NewTime(obsAt(4).Add(observeSettle))
		in.Events = append(in.Events, mcdEvent("NodeDone", "Setting node w1, currentConfig "+obsTo+" to Done", 4))
	})
	if res.Closed == nil || res.Closed.Verdict != v1alpha1.VerdictAgreed {
		t.Fatalf("settled: %+v", res.Closed)
	}
	if got := res.Updates[0]; len(got.Steps) != 2 || got.Steps[0].Name != stepAction || got.Steps[1].Name != stepUncordon {
		t.Errorf("steps: %+v", got.Steps)
	}
	res = step("later", func() { in.Now = obsAt(100) })
	if res.Changed || res.Closed != nil {
		t.Errorf("a judged update changed again: %+v", res)
	}

	// Sent to the next config before reaching this one: abandoned.
	in.History = nil
	in.Node = observedNode{Name: "w1", Current: obsFrom, Desired: obsTo, State: "Done", BootID: "boot-1"}
	step("sent again", func() {})
	res = step("sent elsewhere", func() { in.Node.Desired = "rendered-worker-ccc" })
	if len(res.Updates) != 2 || res.Updates[1].Result != v1alpha1.UpdateAbandoned || res.Updates[0].To != "rendered-worker-ccc" {
		t.Fatalf("abandoned: %+v", res.Updates)
	}

	// At most NodeHistoryUpdates are kept.
	in.History = make([]v1alpha1.NodeUpdate, v1alpha1.NodeHistoryUpdates)
	for i := range in.History {
		in.History[i] = v1alpha1.NodeUpdate{Executor: v1alpha1.ExecutorMCO, Result: v1alpha1.UpdateDone, Verdict: v1alpha1.VerdictAgreed}
	}
	in.Node.Desired = obsTo
	if res := observe(in); len(res.Updates) != v1alpha1.NodeHistoryUpdates || res.Updates[0].To != obsTo {
		t.Errorf("history of %d, newest to %s", len(res.Updates), res.Updates[0].To)
	}
}

func TestForecastObservations(t *testing.T) {
	name := ForecastName("worker", obsFrom, obsTo)
	hist := func(node string, us ...v1alpha1.NodeUpdate) v1alpha1.NodeHistory {
		return v1alpha1.NodeHistory{ObjectMeta: metav1.ObjectMeta{Name: node}, Status: v1alpha1.NodeHistoryStatus{Updates: us}}
	}
	up := func(v v1alpha1.Verdict, r v1alpha1.UpdateResult, checks ...v1alpha1.UpdateCheck) v1alpha1.NodeUpdate {
		return v1alpha1.NodeUpdate{Executor: v1alpha1.ExecutorMCO, Forecast: name, Verdict: v, Result: r, Checks: checks}
	}
	mismatch := v1alpha1.UpdateCheck{What: "reboot", Foretold: false, Observed: v1alpha1.ObservedYes, Result: v1alpha1.CheckMismatch, Evidence: []string{"boot id a → b"}}
	obs := forecastObservations([]v1alpha1.NodeHistory{
		hist("w2", up(v1alpha1.VerdictMismatch, v1alpha1.UpdateDone, mismatch)),
		hist("w1", up(v1alpha1.VerdictAgreed, v1alpha1.UpdateDone)),
		hist("w3", up(v1alpha1.VerdictPending, v1alpha1.UpdateInProgress)),
		hist("w4", up("", v1alpha1.UpdateAbandoned)),
		hist("w5", v1alpha1.NodeUpdate{Executor: v1alpha1.ExecutorNDP, Forecast: name, Verdict: v1alpha1.VerdictAgreed}),
	})[name]
	if obs == nil || obs.Agreed != 1 || obs.Mismatched != 1 || obs.InProgress != 1 || len(obs.Nodes) != 3 || obs.Nodes[0].Node != "w1" {
		t.Fatalf("observed: %+v", obs)
	}
	if got := obs.Nodes[1].Mismatches; len(got) != 1 || got[0] != "reboot: foretold no, observed yes (boot id a → b)" {
		t.Errorf("mismatches: %q", got)
	}
	var st v1alpha1.UpdateForecastStatus
	setObserved(&st, obs)
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ForecastConditionAgreed); c == nil || c.Status != metav1.ConditionFalse || c.Reason != "Mismatch" || !strings.Contains(c.Message, "w2: reboot") {
		t.Errorf("Agreed: %+v", c)
	}
	setObserved(&st, &v1alpha1.ForecastObserved{Agreed: 2})
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ForecastConditionAgreed); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Agreed: %+v", c)
	}
	setObserved(&st, nil)
	if meta.FindStatusCondition(st.Conditions, v1alpha1.ForecastConditionAgreed) != nil || st.Observed != nil {
		t.Errorf("nothing observed, yet: %+v", st)
	}
}

// The update records which of the forecast's rules were ndp's entries in
// MachineConfiguration cluster, read once, when the forecast is.
func TestObserveRecordsNDPEntries(t *testing.T) {
	restart := []v1alpha1.ForecastAction{{Type: "Restart", Service: "chronyd.service"}}
	forecast := &v1alpha1.UpdateForecast{ObjectMeta: metav1.ObjectMeta{Name: ForecastName("worker", obsFrom, obsTo)},
		Status: v1alpha1.UpdateForecastStatus{MCO: &v1alpha1.MCOForecast{Summary: "Restart chronyd.service, Reload crio.service", Actions: restart,
			Rules: []v1alpha1.MCORule{
				{Change: "file /etc/chrony.conf", Rule: "file policy /etc/chrony.conf", Actions: restart},
				{Change: "file /etc/chrony.d/x.conf", Rule: "file policy /etc/chrony.conf", Actions: restart},
				{Change: "file /etc/containers/registries.conf", Rule: "file policy /etc/containers/registries.conf", Actions: []v1alpha1.ForecastAction{{Type: "Special"}}},
				{Change: "unit app.service", Rule: "unit policy app.service", Actions: []v1alpha1.ForecastAction{{Type: "None"}}},
				{Change: "passwd: SSH keys changed", Rule: "ssh key policy", Actions: []v1alpha1.ForecastAction{{Type: "None"}}},
				{Change: "file /etc/other", Rule: "no node disruption policy", Actions: []v1alpha1.ForecastAction{{Type: "Reboot"}}},
			}}}}
	for _, tc := range []struct {
		name      string
		entries   func() (map[string]bool, error)
		want      []string
		evidence  string
		wantCalls int
	}{
		{"ndp's entries matched", func() (map[string]bool, error) {
			return map[string]bool{"file:/etc/chrony.conf": true, "sshkey": true, "file:/etc/unrelated": true}, nil
		}, []string{"file /etc/chrony.conf", "sshkey"}, "", 1},
		{"a unit", func() (map[string]bool, error) { return map[string]bool{"unit:app.service": true}, nil }, []string{"unit app.service"}, "", 1},
		{"none of ndp's entries used", func() (map[string]bool, error) {
			return map[string]bool{"file:/etc/kubernetes/kubelet.conf": true}, nil
		}, nil, "", 1},
		{"no MachineConfiguration", func() (map[string]bool, error) { return nil, nil }, nil, "", 1},
		{"not readable", func() (map[string]bool, error) { return nil, errors.New("connection refused") }, nil,
			"which of ndp's entries in MachineConfiguration cluster the MCO was foretold to use is not known: connection refused", 1},
		{"not asked", nil, nil, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			in := observeInput{Pool: "worker", Now: obsAt(0),
				Node:     observedNode{Name: "w1", Current: obsFrom, Desired: obsTo, State: "Done", BootID: "boot-1"},
				Forecast: func(string) *v1alpha1.UpdateForecast { return forecast },
			}
			if tc.entries != nil {
				in.Entries = func() (map[string]bool, error) { calls++; return tc.entries() }
			}
			res := observe(in)
			if len(res.Updates) != 1 || res.Updates[0].Plan == nil {
				t.Fatalf("no update opened with its forecast: %+v", res.Updates)
			}
			u := res.Updates[0]
			if !slices.Equal(u.MCOEntries, tc.want) {
				t.Errorf("mcoEntries %q, want %q", u.MCOEntries, tc.want)
			}
			if tc.evidence != "" && !slices.Contains(u.Evidence, tc.evidence) {
				t.Errorf("evidence %q, want it to hold %q", u.Evidence, tc.evidence)
			}
			// Set once: observing again neither reads nor changes it.
			in.History, in.Now = res.Updates, obsAt(1)
			again := observe(in)
			if again.Changed || !slices.Equal(again.Updates[0].MCOEntries, tc.want) {
				t.Errorf("observed again: changed %t, mcoEntries %q", again.Changed, again.Updates[0].MCOEntries)
			}
			if calls != tc.wantCalls {
				t.Errorf("MachineConfiguration read %d times, want %d", calls, tc.wantCalls)
			}
		})
	}
}

// A mismatch whose foretold step came from ndp's entry names it.
func TestMismatchNamesTheEntry(t *testing.T) {
	restart := []v1alpha1.ForecastAction{{Type: "Restart", Service: "chronyd.service"}}
	drainRestart := []v1alpha1.ForecastAction{{Type: "Drain"}, {Type: "Restart", Service: "chronyd.service"}}
	changes := func(rule string, as []v1alpha1.ForecastAction) []v1alpha1.UpdateChange {
		return []v1alpha1.UpdateChange{
			{Change: "file /etc/chrony.conf", DecidedBy: rule, Actions: as},
			{Change: "file /etc/containers/registries.conf", DecidedBy: "file policy /etc/containers/registries.conf", Actions: []v1alpha1.ForecastAction{{Type: "Special"}}},
		}
	}
	rebooted := v1alpha1.UpdateCheck{What: "reboot", Foretold: false, Observed: v1alpha1.ObservedYes, Result: v1alpha1.CheckMismatch, Evidence: []string{"boot id a → b"}}
	notDrained := v1alpha1.UpdateCheck{What: "drain", Foretold: true, Observed: v1alpha1.ObservedNo, Result: v1alpha1.CheckMismatch, Evidence: []string{"no cordon or drain seen while the update ran"}}
	reloaded := v1alpha1.UpdateCheck{What: "reload crio.service", Foretold: false, Observed: v1alpha1.ObservedYes, Result: v1alpha1.CheckMismatch}
	long := rebooted
	long.Evidence = []string{strings.Repeat("x", 1100)}
	for _, tc := range []struct {
		name    string
		entries []string
		changes []v1alpha1.UpdateChange
		check   v1alpha1.UpdateCheck
		want    string
	}{
		{"a reboot where ndp's entry said restart", []string{"file /etc/chrony.conf"}, changes("file policy /etc/chrony.conf", restart), rebooted,
			"reboot: foretold no, observed yes (boot id a → b): foretold by ndp's entry file /etc/chrony.conf in MachineConfiguration cluster"},
		{"two of ndp's entries", []string{"file /etc/chrony.conf", "sshkey"}, changes("file policy /etc/chrony.conf", restart), reloaded,
			"reload crio.service: foretold no, observed yes: foretold by ndp's entries file /etc/chrony.conf, sshkey in MachineConfiguration cluster"},
		{"a drain foretold by ndp's entry, not seen", []string{"file /etc/chrony.conf"}, changes("file policy /etc/chrony.conf", drainRestart), notDrained,
			"drain: foretold yes, observed no (no cordon or drain seen while the update ran): foretold by ndp's entry file /etc/chrony.conf in MachineConfiguration cluster"},
		{"a drain foretold by another entry", []string{"file /etc/chrony.conf"}, changes("file policy /etc/chrony.conf", restart), notDrained,
			"drain: foretold yes, observed no (no cordon or drain seen while the update ran)"},
		{"no entry of ndp's used", nil, changes("file policy /etc/chrony.conf", restart), rebooted,
			"reboot: foretold no, observed yes (boot id a → b)"},
		{"the evidence is cut, not the entry", []string{"file /etc/chrony.conf"}, changes("file policy /etc/chrony.conf", restart), long,
			": foretold by ndp's entry file /etc/chrony.conf in MachineConfiguration cluster"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := openU()
			u.MCOEntries, u.Changes = tc.entries, tc.changes
			got := mismatchText(u, tc.check)
			if strings.HasPrefix(tc.name, "the evidence is cut") {
				if !strings.HasSuffix(got, tc.want) || len(got) > 1024 {
					t.Errorf("%d bytes, %q", len(got), got[max(0, len(got)-120):])
				}
				return
			}
			if got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// The observer tells ndp's entries from the administrator's by the live
// object's managedFields, as the entries controller applies them; without
// a MachineConfiguration there are none.
func TestObserverReadsNDPEntries(t *testing.T) {
	c := testkit.NewControlPlane(t, testkit.ControlPlaneOptions{Root: "../.."}).Client
	ctx := context.Background()
	r := &ObserveReconciler{Client: c, APIReader: c}
	if mine, err := r.ndpEntries(ctx); err != nil || len(mine) != 0 {
		t.Fatalf("no MachineConfiguration: %v, %v", mine, err)
	}
	none := []operatorv1.NodeDisruptionPolicySpecAction{{Type: operatorv1.NoneSpecAction}}
	mc := &operatorv1.MachineConfiguration{ObjectMeta: metav1.ObjectMeta{Name: mcoentries.MachineConfigurationName}, Spec: operatorv1.MachineConfigurationSpec{
		StaticPodOperatorSpec: operatorv1.StaticPodOperatorSpec{OperatorSpec: operatorv1.OperatorSpec{ManagementState: operatorv1.Managed}},
		NodeDisruptionPolicy: operatorv1.NodeDisruptionPolicyConfig{
			Files:  []operatorv1.NodeDisruptionPolicySpecFile{{Path: "/etc/admin.conf", Actions: none}},
			SSHKey: operatorv1.NodeDisruptionPolicySpecSSHKey{Actions: none},
		},
	}}
	if err := c.Create(ctx, mc, client.FieldOwner("admin")); err != nil {
		t.Fatal(err)
	}
	u, err := mcoentries.ApplyObject(mcoentries.Entries{Files: []operatorv1.NodeDisruptionPolicySpecFile{{Path: "/etc/chrony.conf",
		Actions: []operatorv1.NodeDisruptionPolicySpecAction{{Type: operatorv1.RestartSpecAction, Restart: &operatorv1.RestartService{ServiceName: "chronyd.service"}}}}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(mcoentries.FieldManager)); err != nil {
		t.Fatal(err)
	}
	mine, err := r.ndpEntries(ctx)
	if err != nil || len(mine) != 1 || !mine["file:/etc/chrony.conf"] {
		t.Errorf("ndp's entries: %v, %v", mine, err)
	}
}
