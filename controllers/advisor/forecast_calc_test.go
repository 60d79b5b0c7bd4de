package advisor

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/internal/testkit/builder"
	"github.com/ndp-dev/ndp/internal/testkit/policytest"
	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/mco/mcorules"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/policy"
	"github.com/ndp-dev/ndp/policyset"
)

const (
	r1 = "rendered-worker-11111111111111111111111111111111"
	r2 = "rendered-worker-22222222222222222222222222222222"
	r3 = "rendered-worker-33333333333333333333333333333333"
)

func TestForecastName(t *testing.T) {
	long := strings.Repeat("p", 250) // pool-1-2 would not fit
	for _, tc := range []struct {
		pool, from, to, want string
	}{
		{"worker", r1, r2, "worker-11111111111111111111111111111111-22222222222222222222222222222222"},
		{"infra", "rendered-infra-abc", "rendered-infra-def", "infra-abc-def"},
		// Not both of the pool's rendered names: a digest, still readable by pool.
		{"worker", "00-worker", r2, "worker-"},
		{"worker", "rendered-master-1", r2, "worker-"},
		{"worker", "rendered-worker-UPPER", r2, "worker-"},
		{long, "rendered-" + long + "-1", "rendered-" + long + "-2", long[:253-33] + "-"},
	} {
		got := ForecastName(tc.pool, tc.from, tc.to)
		if !strings.HasPrefix(got, tc.want) || (!strings.HasSuffix(tc.want, "-") && got != tc.want) {
			t.Errorf("ForecastName(%.20s, %s, %s) = %q, want %q", tc.pool, tc.from, tc.to, got, tc.want)
		}
		if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
			t.Errorf("ForecastName(%.20s, %s, %s) = %q: not a valid name: %v", tc.pool, tc.from, tc.to, got, errs)
		}
		if again := ForecastName(tc.pool, tc.from, tc.to); again != got {
			t.Errorf("ForecastName is not deterministic: %q then %q", got, again)
		}
	}
	if a, b := ForecastName("worker", "00-worker", r2), ForecastName("worker", "01-worker", r2); a == b {
		t.Errorf("two pairs, one name: %q", a)
	}
}

// calcConfigs are three rendered configs: r2 adds /etc/chrony.conf to r1,
// r3 also changes the OS image.
func calcConfigs(t *testing.T) map[string]*machineconfig.Config {
	base := func(name string) *builder.MachineConfigBuilder {
		return builder.MachineConfig(name).WithFile("/etc/base.conf", "base")
	}
	return map[string]*machineconfig.Config{
		r1: base(r1).Config(t),
		r2: base(r2).WithFile("/etc/chrony.conf", "pool 2.rhel.pool.ntp.org iburst").Config(t),
		r3: base(r3).WithFile("/etc/chrony.conf", "pool 2.rhel.pool.ntp.org iburst").WithOSImageURL("quay.io/os@sha256:3").Config(t),
	}
}

// fakeDecide stands for the MCO's decision: a reboot and drain per move,
// with one rule naming the move, so that a test can tell which pair was
// decided with which policies.
func fakeDecide(in mcorules.Input) (*mcorules.Decision, error) {
	reboot := []mcorules.Action{{Type: operatorv1.RebootStatusAction}}
	return &mcorules.Decision{From: in.From.Name, To: in.To.Name, Actions: reboot, Drain: !in.SingleNode, Reboot: true,
		Rules: []mcorules.Rule{{Change: "file /etc/chrony.conf", Rule: "no node disruption policy", Actions: reboot}}}, nil
}

func fakePlan(req planner.Request) (*planner.Plan, error) {
	restart := []policy.Action{{Type: policy.ActionRestart, Restart: &operatorv1.RestartService{ServiceName: "chronyd.service"}}}
	return &planner.Plan{From: req.From.Name, To: req.To.Name, Actions: restart, PolicyRevision: "sha256:rev",
		Reasons: []planner.Reason{{Change: "file /etc/chrony.conf: added", Policy: "chrony", Match: "/etc/chrony.conf", Actions: restart}}}, nil
}

func calcInput(t *testing.T, nodes ...forecastNode) forecastInput {
	return forecastInput{
		Pool: "worker", Target: r2, Rendered: r1, Configs: calcConfigs(t), Nodes: nodes,
		PolicySource: mcorules.PolicySource{From: "status", Generation: 2, ObservedGeneration: 2},
		Decide:       fakeDecide, Plan: fakePlan,
	}
}

type wantForecast struct {
	from, to, toSource string
	nodes              []string
	mco                string // the MCO's summary; "" when none
	ndp                string
	ready              string // Ready's reason
}

func checkForecasts(t *testing.T, got []v1alpha1.UpdateForecast, want []wantForecast) {
	t.Helper()
	if len(got) != len(want) {
		var names []string
		for _, f := range got {
			names = append(names, f.Spec.From+"->"+f.Spec.To)
		}
		t.Fatalf("got %d forecasts %v, want %d", len(got), names, len(want))
	}
	for i, w := range want {
		f := got[i]
		s := f.Status
		if f.Spec.Pool != "worker" || f.Spec.From != w.from || f.Spec.To != w.to || f.Name != ForecastName("worker", w.from, w.to) {
			t.Errorf("forecast %d: %s %+v, want %s -> %s", i, f.Name, f.Spec, w.from, w.to)
		}
		if s.ToSource != w.toSource || s.State != v1alpha1.ForecastPending {
			t.Errorf("forecast %d: toSource %q state %q, want %q Pending", i, s.ToSource, s.State, w.toSource)
		}
		if fmt.Sprint(s.Nodes) != fmt.Sprint(w.nodes) || int(s.NodeCount) != len(w.nodes) {
			t.Errorf("forecast %d: nodes %v (%d), want %v", i, s.Nodes, s.NodeCount, w.nodes)
		}
		mco, ndp := "", ""
		if s.MCO != nil {
			mco = s.MCO.Summary
		}
		if s.NDP != nil {
			ndp = s.NDP.Summary
		}
		if mco != w.mco || ndp != w.ndp {
			t.Errorf("forecast %d: MCO %q ndp %q, want %q and %q", i, mco, ndp, w.mco, w.ndp)
		}
		ready := meta.FindStatusCondition(s.Conditions, v1alpha1.ForecastConditionReady)
		if ready == nil || ready.Reason != w.ready || (ready.Status == metav1.ConditionTrue) != (w.ready == "Forecast") {
			t.Errorf("forecast %d: Ready %+v, want reason %s", i, ready, w.ready)
		}
	}
}

func TestWantForecasts(t *testing.T) {
	n := func(name, current, desired string) forecastNode { return forecastNode{name, current, desired} }
	notReady := func(planner.Request) (*planner.Plan, error) { return nil, &policyset.NotReadyError{} }
	for _, tc := range []struct {
		name  string
		in    func(*forecastInput)
		nodes []forecastNode
		want  []wantForecast
	}{{
		name:  "nodes on the rendered config, the pool moves to the prediction",
		nodes: []forecastNode{n("w3", r1, r1), n("w1", r1, r1), n("w2", r1, "")},
		want:  []wantForecast{{r1, r2, toPredicted, []string{"w1", "w2", "w3"}, "drain, Reboot", "Restart chronyd.service", "Forecast"}},
	}, {
		name:  "the MCO has rendered the target: to is its own",
		in:    func(in *forecastInput) { in.Rendered, in.Configs[r2] = r2, calcConfigs(t)[r2] },
		nodes: []forecastNode{n("w1", r1, r1)},
		want:  []wantForecast{{r1, r2, toRendered, []string{"w1"}, "drain, Reboot", "Restart chronyd.service", "Forecast"}},
	}, {
		name:  "a node sent to the target, one done, one waiting: one forecast of the two on from",
		nodes: []forecastNode{n("w1", r1, r2), n("w2", r2, r2), n("w3", r1, r1)},
		want:  []wantForecast{{r1, r2, toPredicted, []string{"w1", "w3"}, "drain, Reboot", "Restart chronyd.service", "Forecast"}},
	}, {
		name:  "a node sent to an older target goes there first; the others go to the new one",
		in:    func(in *forecastInput) { in.Target, in.Rendered, in.Configs = r3, r2, calcConfigs(t) },
		nodes: []forecastNode{n("w1", r1, r2), n("w2", r1, r1), n("w3", r2, r2)},
		want: []wantForecast{
			{r1, r2, toRendered, []string{"w1"}, "drain, Reboot", "Restart chronyd.service", "Forecast"},
			{r1, r3, toRendered, []string{"w2"}, "drain, Reboot", "Restart chronyd.service", "Forecast"},
			{r2, r3, toRendered, []string{"w3"}, "drain, Reboot", "Restart chronyd.service", "Forecast"},
		},
	}, {
		name:  "every node on the target, or on no config yet: nothing pending",
		nodes: []forecastNode{n("w1", r2, r2), n("w2", "", "")},
	}, {
		name:  "no target known (no prediction, nothing rendered): nothing",
		in:    func(in *forecastInput) { in.Target = "" },
		nodes: []forecastNode{n("w1", r1, "")},
	}, {
		name:  "single node: the MCO does not drain",
		in:    func(in *forecastInput) { in.SingleNode = true },
		nodes: []forecastNode{n("sno", r1, r1)},
		want:  []wantForecast{{r1, r2, toPredicted, []string{"sno"}, "Reboot", "Restart chronyd.service", "Forecast"}},
	}, {
		name: "the MCO's decision fails: Ready False with its error, ndp's plan still there",
		in: func(in *forecastInput) {
			in.Decide = func(mcorules.Input) (*mcorules.Decision, error) {
				return nil, errors.New("mcorules: no target config (Input.To)")
			}
		},
		nodes: []forecastNode{n("w1", r1, r1)},
		want:  []wantForecast{{r1, r2, toPredicted, []string{"w1"}, "", "Restart chronyd.service", "DecisionFailed"}},
	}, {
		name:  "ndp's policies not loaded yet: the MCO's decision, Ready False",
		in:    func(in *forecastInput) { in.Plan = notReady },
		nodes: []forecastNode{n("w1", r1, r1)},
		want:  []wantForecast{{r1, r2, toPredicted, []string{"w1"}, "drain, Reboot", "", "PoliciesNotReady"}},
	}, {
		name:  "the config the nodes run is gone",
		nodes: []forecastNode{n("w1", "rendered-worker-gone", "")},
		want:  []wantForecast{{"rendered-worker-gone", r2, toPredicted, []string{"w1"}, "", "", "ConfigNotFound"}},
	}, {
		name: "the MCO refuses",
		in: func(in *forecastInput) {
			in.Decide = func(mcorules.Input) (*mcorules.Decision, error) {
				return &mcorules.Decision{Refused: []string{"spec.fips: changed"}, Actions: []mcorules.Action{}}, nil
			}
		},
		nodes: []forecastNode{n("w1", r1, r1)},
		want:  []wantForecast{{r1, r2, toPredicted, []string{"w1"}, "Refused", "Restart chronyd.service", "Forecast"}},
	}, {
		name: "the MCO's daemon fails the update after deciding (registries.conf that does not decode)",
		in: func(in *forecastInput) {
			in.Decide = func(mcorules.Input) (*mcorules.Decision, error) {
				return &mcorules.Decision{Actions: []mcorules.Action{{Type: operatorv1.SpecialStatusAction}}, Error: "registries.conf: toml: bad"}, nil
			}
		},
		nodes: []forecastNode{n("w1", r1, r1)},
		want:  []wantForecast{{r1, r2, toPredicted, []string{"w1"}, "Fails", "Restart chronyd.service", "Forecast"}},
	}, {
		name: "the MCO's irreconcilable overrides reach its decision",
		in: func(in *forecastInput) {
			in.Overrides = operatorv1.IrreconcilableValidationOverrides{Storage: []operatorv1.IrreconcilableValidationOverridesStorage{operatorv1.IrreconcilableValidationOverridesStorageDisks}}
			in.Decide = func(i mcorules.Input) (*mcorules.Decision, error) {
				if len(i.Overrides.Storage) != 1 {
					return nil, fmt.Errorf("overrides %+v", i.Overrides)
				}
				return fakeDecide(i)
			}
		},
		nodes: []forecastNode{n("w1", r1, r1)},
		want:  []wantForecast{{r1, r2, toPredicted, []string{"w1"}, "drain, Reboot", "Restart chronyd.service", "Forecast"}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			// The cluster has r1; r2 is predicted.
			in := calcInput(t, tc.nodes...)
			all := in.Configs
			in.Predicted, in.Configs = all[r2], map[string]*machineconfig.Config{r1: all[r1]}
			if tc.in != nil {
				tc.in(&in)
			}
			checkForecasts(t, wantForecasts(in), tc.want)
		})
	}
}

func TestWantForecastsDetail(t *testing.T) {
	in := calcInput(t, forecastNode{"w1", r1, ""})
	in.Predicted, in.Configs = in.Configs[r2], map[string]*machineconfig.Config{r1: in.Configs[r1]}
	in.PolicySource = mcorules.PolicySource{From: "spec", Generation: 3, ObservedGeneration: 2, Stale: true}
	got := wantForecasts(in)
	if len(got) != 1 {
		t.Fatalf("got %d forecasts, want 1", len(got))
	}
	s := got[0].Status
	if s.MCO == nil || s.MCO.PolicySource == nil || !s.MCO.PolicySource.Stale || s.MCO.PolicySource.From != "spec" || s.MCO.PolicySource.Generation != 3 {
		t.Fatalf("MCO policy source %+v, want spec, generation 3, stale", s.MCO)
	}
	if c := meta.FindStatusCondition(s.Conditions, v1alpha1.ForecastConditionMCOPredicted); c == nil || c.Reason != "PredictedFromSpec" || !strings.Contains(c.Message, "stale") {
		t.Errorf("MCOPredicted %+v, want PredictedFromSpec saying stale", c)
	}
	if len(s.MCO.Rules) != 1 || s.MCO.Rules[0].Rule != "no node disruption policy" || s.MCO.Rules[0].Actions[0].Type != "Reboot" {
		t.Errorf("MCO rules %+v", s.MCO.Rules)
	}
	if s.NDP == nil || len(s.NDP.Rules) != 1 || s.NDP.Rules[0].Policy != "chrony" || s.NDP.Rules[0].Actions[0].Service != "chronyd.service" || s.NDP.PolicyRevision != "sha256:rev" {
		t.Errorf("ndp %+v", s.NDP)
	}
}

// TestWantForecastsRealPlanner plans with the planner and a chrony policy,
// as the controller does with the active set.
func TestWantForecastsRealPlanner(t *testing.T) {
	restart := policy.Action{Type: policy.ActionRestart, Restart: &operatorv1.RestartService{ServiceName: "chronyd.service"}}
	p := policytest.Planner(t, policytest.File("chrony", 100, "/etc/chrony.conf", restart))
	other := policytest.Planner(t, policy.Policy{Name: "infra-only", Priority: 100, Origin: "infra-only.yaml",
		PoolSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "infra"}},
		Files:        []operatorv1.NodeDisruptionPolicySpecFile{{Path: "/etc/chrony.conf", Actions: []policy.Action{restart}}}})
	for _, tc := range []struct {
		name    string
		p       *planner.Planner
		single  bool
		summary string
		policy  string
	}{
		{"the chrony policy restarts chronyd", p, false, "Restart chronyd.service", "chrony"},
		{"a policy for another pool does not apply: the default reboots", other, false, "drain, Reboot", planner.NoPolicy},
		{"single node: no drain", other, true, "Reboot", planner.NoPolicy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := calcInput(t, forecastNode{"w1", r1, ""})
			in.SingleNode = tc.single
			in.Plan = func(req planner.Request) (*planner.Plan, error) { return tc.p.Plan(t.Context(), req) }
			got := wantForecasts(in)
			if len(got) != 1 || got[0].Status.NDP == nil {
				t.Fatalf("got %+v", got)
			}
			n := got[0].Status.NDP
			if n.Summary != tc.summary || len(n.Rules) != 1 || n.Rules[0].Policy != tc.policy || !strings.HasPrefix(n.Rules[0].Change, "file /etc/chrony.conf") {
				t.Errorf("ndp's plan %+v, want %q by %s", n, tc.summary, tc.policy)
			}
		})
	}
}

func TestMergeForecasts(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC))
	now := metav1.NewTime(t0.Add(time.Hour))
	in := calcInput(t)
	in.Predicted = in.Configs[r2]
	pending := func(from, to string, nodes ...string) v1alpha1.UpdateForecast {
		var fn []forecastNode
		for _, n := range nodes {
			fn = append(fn, forecastNode{n, from, ""})
		}
		in := in
		in.Target, in.Nodes = to, fn
		in.Configs = calcConfigs(t)
		return wantForecasts(in)[0]
	}
	// stored is what the API server holds after a merge was written.
	// stored is what the API server holds after a merge was written: through
	// JSON, as the API server stores it (omitted empties, times in seconds).
	stored := func(fs ...v1alpha1.UpdateForecast) []v1alpha1.UpdateForecast {
		w := mergeForecasts(fs, nil, nil, nil, 10, metav1.NewTime(t0.Add(123*time.Millisecond)))
		out := make([]v1alpha1.UpdateForecast, len(w.Apply))
		for i := range w.Apply {
			w.Apply[i].ResourceVersion = "1"
			b, err := json.Marshal(w.Apply[i])
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &out[i]); err != nil {
				t.Fatal(err)
			}
		}
		return out
	}
	history := func(name string, state v1alpha1.ForecastState, at time.Time) v1alpha1.UpdateForecast {
		return v1alpha1.UpdateForecast{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1"}, Spec: v1alpha1.UpdateForecastSpec{Pool: "worker", From: r1, To: name},
			Status: v1alpha1.UpdateForecastStatus{State: state, Conditions: []metav1.Condition{{Type: forecastConditionCurrent, Status: metav1.ConditionFalse, Reason: string(state), LastTransitionTime: metav1.NewTime(at)}}}}
	}
	a := pending(r1, r2, "w1", "w2")

	t.Run("new: created with the times of now", func(t *testing.T) {
		w := mergeForecasts([]v1alpha1.UpdateForecast{a}, nil, nil, nil, 10, now)
		if len(w.Apply) != 1 || len(w.Delete) != 0 || w.Apply[0].ResourceVersion != "" {
			t.Fatalf("writes %+v", w)
		}
		for _, c := range w.Apply[0].Status.Conditions {
			if !c.LastTransitionTime.Equal(&now) {
				t.Errorf("condition %s at %v, want %v", c.Type, c.LastTransitionTime, now)
			}
		}
		if c := meta.FindStatusCondition(w.Apply[0].Status.Conditions, forecastConditionCurrent); c == nil || c.Status != metav1.ConditionTrue {
			t.Errorf("Current %+v", c)
		}
	})
	t.Run("unchanged: nothing written", func(t *testing.T) {
		w := mergeForecasts([]v1alpha1.UpdateForecast{a}, stored(a), nil, nil, 10, now)
		if len(w.Apply)+len(w.Delete) != 0 {
			t.Fatalf("writes %+v", w)
		}
	})
	t.Run("a node moved: the status written, the transition times kept", func(t *testing.T) {
		w := mergeForecasts([]v1alpha1.UpdateForecast{pending(r1, r2, "w2")}, stored(a), nil, nil, 10, now)
		if len(w.Apply) != 1 || w.Apply[0].Status.NodeCount != 1 || w.Apply[0].ResourceVersion != "1" {
			t.Fatalf("writes %+v", w)
		}
		for _, c := range w.Apply[0].Status.Conditions {
			if !c.LastTransitionTime.Equal(&t0) {
				t.Errorf("condition %s at %v, want kept at %v", c.Type, c.LastTransitionTime, t0)
			}
		}
	})
	t.Run("superseded while nodes still run from; completed when none does", func(t *testing.T) {
		for _, tc := range []struct {
			nodes []forecastNode
			want  v1alpha1.ForecastState
		}{
			{[]forecastNode{{"w1", r1, ""}}, v1alpha1.ForecastSuperseded},
			{[]forecastNode{{"w1", r2, r2}, {"w2", r2, r2}}, v1alpha1.ForecastCompleted},
		} {
			w := mergeForecasts(nil, stored(a), tc.nodes, nil, 10, now)
			if len(w.Apply) != 1 || w.Apply[0].Status.State != tc.want || w.Apply[0].Status.NodeCount != 2 {
				t.Fatalf("writes %+v, want %s keeping its 2 nodes", w, tc.want)
			}
			c := meta.FindStatusCondition(w.Apply[0].Status.Conditions, forecastConditionCurrent)
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != string(tc.want) || !c.LastTransitionTime.Equal(&now) {
				t.Errorf("Current %+v", c)
			}
			if r := meta.FindStatusCondition(w.Apply[0].Status.Conditions, v1alpha1.ForecastConditionReady); r == nil || !r.LastTransitionTime.Equal(&t0) {
				t.Errorf("Ready %+v, want kept", r)
			}
			// History stays as it is.
			again := w.Apply[0]
			if w := mergeForecasts(nil, []v1alpha1.UpdateForecast{again}, nil, nil, 10, now); len(w.Apply)+len(w.Delete) != 0 {
				t.Errorf("history rewritten: %+v", w)
			}
		}
	})
	t.Run("history bounded: the oldest deleted", func(t *testing.T) {
		var st []v1alpha1.UpdateForecast
		for i := range 5 {
			st = append(st, history(fmt.Sprintf("h%d", i), v1alpha1.ForecastCompleted, t0.Add(time.Duration(i)*time.Minute)))
		}
		st = append(st, stored(a)...)
		w := mergeForecasts(nil, st, nil, nil, 3, now)
		// a becomes history at now, the newest: h4, h3 stay.
		if fmt.Sprint(w.Delete) != "[h0 h1 h2]" {
			t.Errorf("deleted %v, want [h0 h1 h2]", w.Delete)
		}
		if len(w.Apply) != 1 || w.Apply[0].Name != a.Name {
			t.Errorf("applied %+v, want %s only", w.Apply, a.Name)
		}
		// The pending ones do not count.
		w = mergeForecasts([]v1alpha1.UpdateForecast{a}, st, nil, nil, 3, now)
		if fmt.Sprint(w.Delete) != "[h0 h1]" || len(w.Apply) != 0 {
			t.Errorf("with a pending: deleted %v applied %d, want [h0 h1] and none", w.Delete, len(w.Apply))
		}
	})
	t.Run("history wanted again is pending again", func(t *testing.T) {
		h := stored(a)[0]
		h.Status.State = v1alpha1.ForecastSuperseded
		meta.SetStatusCondition(&h.Status.Conditions, metav1.Condition{Type: forecastConditionCurrent, Status: metav1.ConditionFalse, Reason: "Superseded", LastTransitionTime: t0})
		w := mergeForecasts([]v1alpha1.UpdateForecast{a}, []v1alpha1.UpdateForecast{h}, nil, nil, 10, now)
		if len(w.Apply) != 1 || w.Apply[0].Status.State != v1alpha1.ForecastPending {
			t.Fatalf("writes %+v", w)
		}
		if c := meta.FindStatusCondition(w.Apply[0].Status.Conditions, forecastConditionCurrent); c.Status != metav1.ConditionTrue || !c.LastTransitionTime.Equal(&now) {
			t.Errorf("Current %+v", c)
		}
	})
}

// A decision larger than the API's bounds is cut to them, so the
// forecast can still be written.
func TestWantForecastsBounds(t *testing.T) {
	in := calcInput(t, forecastNode{"w1", r1, ""})
	in.Decide = func(mcorules.Input) (*mcorules.Decision, error) {
		d := &mcorules.Decision{Reboot: true}
		for i := range 1500 {
			reboot := []mcorules.Action{{Type: operatorv1.RebootStatusAction}}
			d.Actions = append(d.Actions, reboot...)
			d.Rules = append(d.Rules, mcorules.Rule{Change: fmt.Sprintf("file /etc/%d%s", i, strings.Repeat("x", 5000)), Rule: "no node disruption policy", Actions: reboot})
		}
		return d, nil
	}
	got := wantForecasts(in)
	m := got[0].Status.MCO
	if len(m.Rules) != maxForecastList || len(m.Actions) != maxForecastList || len(m.Rules[0].Change) != maxForecastText || len(m.Summary) > 1024 {
		t.Errorf("rules %d actions %d change %d summary %d: want the API's bounds", len(m.Rules), len(m.Actions), len(m.Rules[0].Change), len(m.Summary))
	}
}
