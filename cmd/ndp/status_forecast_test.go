package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/internal/testkit/docexample"
)

const cfgZ = "rendered-worker-9a8b7c6d5e4f30211203f4e5d6c7b8a9"

// statusForecasts are what the advisor writes for the fake cluster's
// worker pool: the pending update (the MCO reboots for the chrony file,
// ndp's chrony policy restarts chronyd), one whose MCO decision failed,
// and a past one.
func statusForecasts() []client.Object {
	reboot := []v1alpha1.ForecastAction{{Type: "Reboot"}}
	restart := []v1alpha1.ForecastAction{{Type: "Restart", Service: "chronyd.service"}}
	ready := func(ok bool, reason, msg string) []metav1.Condition {
		st := metav1.ConditionFalse
		if ok {
			st = metav1.ConditionTrue
		}
		return []metav1.Condition{{Type: v1alpha1.ForecastConditionReady, Status: st, Reason: reason, Message: msg}}
	}
	ndp := &v1alpha1.NDPForecast{Summary: "Restart chronyd.service", Actions: restart, PolicyRevision: "sha256:abc",
		Rules: []v1alpha1.NDPRule{{Change: "file /etc/chrony.conf: added", Policy: "chrony", Match: "/etc/chrony.conf", Actions: restart}}}
	past := &v1alpha1.UpdateForecast{ObjectMeta: metav1.ObjectMeta{Name: "worker-z-a"}, Spec: v1alpha1.UpdateForecastSpec{Pool: "worker", From: cfgZ, To: cfgA},
		Status: v1alpha1.UpdateForecastStatus{State: v1alpha1.ForecastCompleted, NodeCount: 4, Nodes: []string{"worker-0", "worker-1", "worker-2", "worker-3"},
			MCO: &v1alpha1.MCOForecast{Summary: "None", Actions: []v1alpha1.ForecastAction{{Type: "None"}}, Rules: []v1alpha1.MCORule{{Change: "ssh keys", Rule: "ssh key policy", Actions: []v1alpha1.ForecastAction{{Type: "None"}}}},
				PolicySource: &v1alpha1.MCOPolicySource{From: "status", Generation: 1, ObservedGeneration: 1}},
			Conditions: append(ready(true, "Forecast", ""), metav1.Condition{Type: v1alpha1.ForecastConditionCurrent, Status: metav1.ConditionFalse, Reason: "Completed",
				LastTransitionTime: metav1.NewTime(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))})}}
	return []client.Object{
		&v1alpha1.UpdateForecast{ObjectMeta: metav1.ObjectMeta{Name: "worker-a-b"}, Spec: v1alpha1.UpdateForecastSpec{Pool: "worker", From: cfgA, To: cfgB},
			Status: v1alpha1.UpdateForecastStatus{State: v1alpha1.ForecastPending, NodeCount: 3, Nodes: []string{"worker-1", "worker-2", "worker-3"},
				MCO: &v1alpha1.MCOForecast{Summary: "drain, Reboot", Actions: reboot, Drain: true, Reboot: true,
					Rules:        []v1alpha1.MCORule{{Change: "file /etc/chrony.conf", Rule: "no node disruption policy", Actions: reboot}},
					PolicySource: &v1alpha1.MCOPolicySource{From: "spec", Generation: 3, ObservedGeneration: 2, Stale: true}},
				NDP: ndp, Conditions: ready(true, "Forecast", "")}},
		&v1alpha1.UpdateForecast{ObjectMeta: metav1.ObjectMeta{Name: "worker-z-b"}, Spec: v1alpha1.UpdateForecastSpec{Pool: "worker", From: cfgZ, To: cfgB},
			Status: v1alpha1.UpdateForecastStatus{State: v1alpha1.ForecastPending, NodeCount: 1, Nodes: []string{"worker-9"}, NDP: ndp,
				Conditions: ready(false, "DecisionFailed", "MCOPredicted: mcorules: not implemented yet")}},
		past,
	}
}

func TestStatusForecastsJSON(t *testing.T) {
	withFakeCluster(t, statusForecasts()...)
	code, out, errOut := ndp(t, "status", "worker", "-o", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r StatusReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(r.Pools) != 1 {
		t.Fatalf("pools: %s", out)
	}
	restart := []string{"Restart chronyd.service"}
	ndpSide := &ForecastPlanReport{Actions: restart, Rules: []ForecastRuleReport{{Change: "file /etc/chrony.conf: added", By: "policy chrony", Actions: restart}}, Policies: "sha256:abc"}
	want := []ForecastReport{{
		Name: "worker-a-b", From: cfgA, To: cfgB, State: "Pending", NodeCount: 3, Nodes: []string{"worker-1", "worker-2", "worker-3"},
		MCO: &ForecastPlanReport{Actions: []string{"Reboot"}, Drain: true, Reboot: true, Policies: "spec (stale: generation 3, observed 2)",
			Rules: []ForecastRuleReport{{Change: "file /etc/chrony.conf", By: "no node disruption policy", Actions: []string{"Reboot"}}}},
		NDP:   ndpSide,
		Ready: ConditionReport{Type: "Ready", Status: "True", Reason: "Forecast"},
	}, {
		Name: "worker-z-b", From: cfgZ, To: cfgB, State: "Pending", NodeCount: 1, Nodes: []string{"worker-9"}, NDP: ndpSide,
		Ready: ConditionReport{Type: "Ready", Status: "False", Reason: "DecisionFailed", Message: "MCOPredicted: mcorules: not implemented yet"},
	}, {
		Name: "worker-z-a", From: cfgZ, To: cfgA, State: "Completed", NodeCount: 4, Nodes: []string{"worker-0", "worker-1", "worker-2", "worker-3"},
		MCO: &ForecastPlanReport{Actions: []string{"None"}, Policies: "status",
			Rules: []ForecastRuleReport{{Change: "ssh keys", By: "ssh key policy", Actions: []string{"None"}}}},
		Ready: ConditionReport{Type: "Ready", Status: "True", Reason: "Forecast"},
	}}
	if d := cmp.Diff(want, r.Pools[0].Forecasts); d != "" {
		t.Errorf("forecasts (-want +got):\n%s", d)
	}
	// yaml carries the same.
	code, out, _ = ndp(t, "status", "worker", "-o", "yaml")
	if code != exitOK || !strings.Contains(out, "forecasts:") || !strings.Contains(out, "by: no node disruption policy") {
		t.Errorf("-o yaml: exit %d\n%s", code, out)
	}
}

func TestStatusForecastsText(t *testing.T) {
	withFakeCluster(t, statusForecasts()...)
	code, out, errOut := ndp(t, "status", "worker")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := `Forecasts (the MCO's update, and ndp's plan beside it):
  0f1e2d3c -> 6f3a1c9b (3 nodes)
    MCO: drain, Reboot [policies: spec (stale: generation 3, observed 2)]
      file /etc/chrony.conf: no node disruption policy (Reboot)
    ndp: Restart chronyd.service [policies: sha256:abc]
      file /etc/chrony.conf: added: policy chrony (Restart chronyd.service)
  9a8b7c6d -> 6f3a1c9b (1 node)
    MCO: unknown
    ndp: Restart chronyd.service [policies: sha256:abc]
      file /etc/chrony.conf: added: policy chrony (Restart chronyd.service)
    not ready: DecisionFailed: MCOPredicted: mcorules: not implemented yet
  9a8b7c6d -> 0f1e2d3c (4 nodes, completed)
    MCO: None [policies: status]
      ssh keys: ssh key policy (None)
    ndp: unknown
`
	_, got, ok := strings.Cut(out, "Forecasts (")
	if !ok {
		t.Fatalf("no forecasts in:\n%s", out)
	}
	if d := cmp.Diff(want, "Forecasts ("+got); d != "" {
		t.Errorf("forecasts text (-want +got):\n%s\nall:\n%s", d, out)
	}
	// docs/rollouts.md shows the first forecast of this output: the block
	// must be how this output begins.
	blocks, err := docexample.Parse("../..")
	if err != nil {
		t.Fatal(err)
	}
	shown := false
	for _, b := range blocks {
		if b.File == "docs/rollouts.md" && len(b.Lines) > 0 && strings.HasPrefix(b.Lines[0], "Forecasts (") {
			shown = true
			if page := strings.Join(b.Lines, "\n") + "\n"; !strings.HasPrefix("Forecasts ("+got, page) {
				t.Errorf("%s: the forecasts block is not how ndp status's forecasts begin:\n%s", b, page)
			}
		}
	}
	if !shown {
		t.Error("docs/rollouts.md: no block of forecasts")
	}
	// Without forecasts, nothing is said about them.
	withFakeCluster(t)
	if _, out, _ := ndp(t, "status"); strings.Contains(out, "Forecasts") {
		t.Errorf("forecasts shown without any:\n%s", out)
	}
}

func TestObservedLine(t *testing.T) {
	for _, tc := range []struct {
		o    *v1alpha1.ForecastObserved
		want string
	}{
		{nil, ""},
		{&v1alpha1.ForecastObserved{}, ""},
		{&v1alpha1.ForecastObserved{Agreed: 3}, "observed: 3 agreed"},
		{&v1alpha1.ForecastObserved{Agreed: 2, Mismatched: 1, InProgress: 1, Nodes: []v1alpha1.NodeVerdict{
			{Node: "worker-0", Verdict: v1alpha1.VerdictMismatch, Mismatches: []string{"reboot: foretold no, observed yes (Node status.nodeInfo.bootID a → b)"}},
			{Node: "worker-1", Verdict: v1alpha1.VerdictAgreed},
		}}, "observed: 2 agreed, 1 mismatch, 1 in progress (worker-0: reboot: foretold no, observed yes; kubectl ndp why NODE)"},
	} {
		if got := observedLine(tc.o); got != tc.want {
			t.Errorf("observedLine(%+v) = %q, want %q", tc.o, got, tc.want)
		}
	}
}
