package rolloutcontrol

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
)

var epoch = utc("2026-01-01 00:00")

// tnode is a node: name, zone ("" none), age in days after epoch, labels
// and annotations as "k=v".
func tnode(name, zone string, day int, kv ...string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}, Annotations: map[string]string{},
		CreationTimestamp: metav1.NewTime(epoch.AddDate(0, 0, day))}}
	if zone != "" {
		n.Labels[ZoneLabel] = zone
	}
	for _, s := range kv {
		k, v, _ := strings.Cut(s, "=")
		if strings.HasPrefix(k, "@") {
			n.Annotations[k[1:]] = v
		} else {
			n.Labels[k] = v
		}
	}
	return n
}

func names(nodes []*corev1.Node) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.Name
	}
	return out
}

func TestSortNodes(t *testing.T) {
	nodes := func() []*corev1.Node {
		return []*corev1.Node{
			tnode("e", "", 1), tnode("b2", "b", 3, "prio=canary"), tnode("a2", "a", 5), tnode("b1", "b", 2, "prio=late"),
			tnode("a1", "a", 4, "prio=canary"), tnode("c", "", 0, "prio=early"), tnode("a0", "a", 4),
		}
	}
	for _, c := range []struct {
		order *v1alpha1.RolloutOrder
		want  string
	}{
		// ndp's order without a policy, sortRolloutOrder's (the MCO's, ties by name).
		{nil, "a0 a1 a2 b1 b2 c e"},
		{&v1alpha1.RolloutOrder{By: v1alpha1.OrderZone}, "a0 a1 a2 b1 b2 c e"},
		{&v1alpha1.RolloutOrder{By: v1alpha1.OrderOldestFirst}, "c e b1 b2 a0 a1 a2"},
		{&v1alpha1.RolloutOrder{By: v1alpha1.OrderNewestFirst}, "a2 a0 a1 b2 b1 e c"},
		// canary, then early, then other values (late), then no label; ties in Zone order.
		{&v1alpha1.RolloutOrder{By: v1alpha1.OrderLabelPriority, Label: "prio", Priorities: []string{"canary", "early"}}, "a1 b2 c b1 a0 a2 e"},
	} {
		ns := nodes()
		SortNodes(ns, c.order)
		got := strings.Join(names(ns), " ")
		if got != c.want {
			t.Errorf("%+v: %s, want %s", c.order, got, c.want)
		}
		// Independent of the listing order.
		slices.Reverse(ns)
		SortNodes(ns, c.order)
		if again := strings.Join(names(ns), " "); again != got {
			t.Errorf("%+v: reversed input gives %s", c.order, again)
		}
	}
}

func plan(reboot, drain bool, actions ...ndpmcv1.PlanActionType) *ndpmcv1.PostConfigActions {
	p := &ndpmcv1.PostConfigActions{From: "old", Reboot: reboot, Drain: drain}
	for _, a := range actions {
		pa := ndpmcv1.PlanAction{Type: a}
		switch a {
		case ndpmcv1.RestartAction:
			pa.Restart = &ndpmcv1.PlanService{ServiceName: "chronyd.service"}
		case ndpmcv1.ReloadAction:
			pa.Reload = &ndpmcv1.PlanService{ServiceName: "crio.service"}
		}
		p.Actions = append(p.Actions, pa)
	}
	return p
}

func TestKindsOf(t *testing.T) {
	for _, c := range []struct {
		p    *ndpmcv1.PostConfigActions
		want Kinds
	}{
		{nil, KindNone},
		{plan(false, false, ndpmcv1.NoneAction), KindNone},
		{plan(true, true, ndpmcv1.RebootAction), KindReboot | KindDrain},
		{plan(false, true, ndpmcv1.NoneAction), KindDrain},
		{plan(false, false, ndpmcv1.RestartAction), KindRestart},
		{plan(false, false, ndpmcv1.DaemonReloadAction, ndpmcv1.ReloadAction), KindDaemonReload | KindReload},
		{plan(false, true, ndpmcv1.RestartAction), KindDrain | KindRestart},
		{plan(false, false, ndpmcv1.PackageUpdateAction), KindReboot | KindDrain | KindRestart},
	} {
		if got := KindsOf(c.p); got != c.want {
			t.Errorf("%+v: %v, want %v", c.p, got, c.want)
		}
	}
}

func policy(name string, spec v1alpha1.RolloutPolicySpec) PolicyInput {
	return PolicyInput{Policy: &v1alpha1.RolloutPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}}
}

func TestDecide(t *testing.T) {
	now := utc("2026-11-26 17:00") // Thursday
	reboot := plan(true, true, ndpmcv1.RebootAction)
	restart := plan(false, false, ndpmcv1.RestartAction)
	saturday := v1alpha1.RolloutPolicySpec{Windows: []v1alpha1.MaintenanceWindow{win("Sat", "02:00", "05:00", "Europe/Berlin")}}
	one, fifty := intstr.FromInt32(1), intstr.FromString("50%")
	crashing := PolicyInput{Policy: &v1alpha1.RolloutPolicy{ObjectMeta: metav1.ObjectMeta{Name: "alerts"}, Spec: v1alpha1.RolloutPolicySpec{Gates: &v1alpha1.RolloutGates{
		Prometheus: &v1alpha1.PrometheusGate{URL: "http://p:9090", Alerts: &v1alpha1.AlertSelector{Names: []string{"KubePodCrashLooping"}}}}}},
		Gates: GateResults{PrometheusAlerts: &AlertsResult{Alerts: []Alert{alert(AlertFiring, "alertname", "KubePodCrashLooping", "namespace", "web")}}}}
	settle := v1alpha1.RolloutPolicySpec{Pacing: &v1alpha1.RolloutPacing{SettleAfter: &metav1.Duration{Duration: 10 * time.Minute}, WaitForDrainedPodsReady: true}}

	// Pool: zones a (a1, a2, a3) and b (b1, b2); plans by node.
	pool := func() []*corev1.Node {
		return []*corev1.Node{tnode("a1", "a", 1), tnode("a2", "a", 2), tnode("a3", "a", 3), tnode("b1", "b", 1), tnode("b2", "b", 2)}
	}
	for _, c := range []struct {
		name     string
		policies []PolicyInput
		plans    map[string]*ndpmcv1.PostConfigActions // default reboot; absent key with "-" value: not ready
		notReady []string
		mutate   func(nodes []*corev1.Node)
		out      []string // nodes out
		allowed  int
		pacing   PacingState
		send     string
		held     map[string]string // node → a part of its reason
		pool     []string
		summary  []string
		next     string
	}{
		{name: "no policy: today's order and count", allowed: 2, send: "a1 a2"},
		{name: "a reboot waits for the window, a restart goes at once", policies: []PolicyInput{policy("saturday", saturday)},
			plans: map[string]*ndpmcv1.PostConfigActions{"a2": restart, "b2": restart}, allowed: 3, send: "a2 b2",
			held:    map[string]string{"a1": "opens Sat 02:00 Europe/Berlin for plans that reboot or drain", "a3": "outside", "b1": "outside"},
			summary: []string{"waiting: outside the maintenance window, opens Sat 02:00 Europe/Berlin for plans that reboot or drain (3 nodes)"},
			next:    "2026-11-28 01:00"},
		{name: "never more than allowed", policies: []PolicyInput{policy("order", v1alpha1.RolloutPolicySpec{Order: &v1alpha1.RolloutOrder{By: v1alpha1.OrderNewestFirst}})},
			allowed: 1, send: "a3"},
		{name: "nothing allowed: nothing sent", policies: []PolicyInput{policy("order", v1alpha1.RolloutPolicySpec{Order: &v1alpha1.RolloutOrder{By: v1alpha1.OrderNewestFirst}})},
			allowed: 0, send: ""},
		{name: "a firing alert holds the pool", policies: []PolicyInput{crashing}, allowed: 2, send: "",
			pool: []string{"waiting: alert KubePodCrashLooping firing (namespace=web) [rolloutpolicy alerts]"}},
		{name: "the hold annotation skips a node and names it", allowed: 2, send: "a2 a3",
			mutate: func(ns []*corev1.Node) {
				ns[0].Annotations[v1alpha1.HoldAnnotation] = "disk swap"
				ns[0].Annotations[v1alpha1.HoldByAnnotation] = "alice"
			},
			held:    map[string]string{"a1": "held: node a1 by annotation ndp.dev/hold: disk swap (by alice)"},
			summary: []string{"held: node a1 by annotation ndp.dev/hold: disk swap (by alice)"}},
		{name: "zone budget 1: one per zone, counting nodes out", policies: []PolicyInput{policy("zones", v1alpha1.RolloutPolicySpec{ZoneBudget: &one})},
			out: []string{"b1"}, allowed: 3, send: "a1",
			held: map[string]string{"a2": "zone a has 1 of its 3 nodes out (zoneBudget 1)", "a3": "zone a", "b2": "zone b has 1 of its 2 nodes out"}},
		{name: "zone budget 50%: rounded down, at least 1", policies: []PolicyInput{policy("zones", v1alpha1.RolloutPolicySpec{ZoneBudget: &fifty})},
			allowed: 5, send: "a1 b1", held: map[string]string{"a2": "zone a", "a3": "zone a", "b2": "zone b"}},
		{name: "zone budget never loosens allowed", policies: []PolicyInput{policy("zones", v1alpha1.RolloutPolicySpec{ZoneBudget: &fifty})},
			allowed: 1, send: "a1"},
		{name: "settling after the last node", policies: []PolicyInput{policy("pace", settle)}, allowed: 1,
			pacing: PacingState{LastDone: now.Add(-4 * time.Minute), LastNode: "b9"}, send: "",
			pool: []string{"waiting: node b9 settles for 10m0s after its update, until 17:06:00 UTC [rolloutpolicy pace]"}, next: "2026-11-26 17:06"},
		{name: "settled, drained pods not ready", policies: []PolicyInput{policy("pace", settle)}, allowed: 1,
			pacing: PacingState{LastDone: now.Add(-11 * time.Minute), LastNode: "b9", DrainedPodsNotReady: []string{"web/a", "web/b", "web/c", "web/d"}}, send: "",
			pool: []string{"waiting: pods drained from node b9 are not Ready yet: web/a, web/b, web/c and 1 more"}},
		{name: "settled and ready", policies: []PolicyInput{policy("pace", settle)}, allowed: 1,
			pacing: PacingState{LastDone: now.Add(-11 * time.Minute), LastNode: "b9"}, send: "a1"},
		{name: "a plan not ready is skipped, not counted", allowed: 1, notReady: []string{"a1"}, send: "a2",
			held: map[string]string{"a1": "its plan to the target is not ready"}},
		{name: "an invalid policy holds the pool and says why", policies: []PolicyInput{policy("bad", v1alpha1.RolloutPolicySpec{Windows: []v1alpha1.MaintenanceWindow{win("Sat", "02:00", "05:00", "Mars/Olympus")}})},
			allowed: 2, send: "", pool: []string{`waiting: invalid rolloutpolicy bad: spec.windows[0].timeZone: unknown time zone "Mars/Olympus"`}},
		{name: "strictest: windows of two policies intersect", policies: []PolicyInput{policy("saturday", saturday),
			policy("night", v1alpha1.RolloutPolicySpec{Windows: []v1alpha1.MaintenanceWindow{win("", "04:00", "06:00", "Europe/Berlin")}})},
			plans: map[string]*ndpmcv1.PostConfigActions{"a2": restart, "a3": restart, "b1": restart, "b2": restart}, allowed: 1, send: "a2",
			held: map[string]string{"a1": "opens Sat 04:00 Europe/Berlin"}, next: "2026-11-28 03:00"},
		{name: "strictest: a gate of one policy holds despite another's open window", policies: []PolicyInput{crashing,
			policy("always", v1alpha1.RolloutPolicySpec{Windows: []v1alpha1.MaintenanceWindow{win("Thu", "00:00", "24:00", "UTC")}})},
			allowed: 2, send: "", pool: []string{"alert KubePodCrashLooping"}},
		{name: "blocking pod on a node skips that node", policies: []PolicyInput{{Policy: &v1alpha1.RolloutPolicy{ObjectMeta: metav1.ObjectMeta{Name: "db"},
			Spec: v1alpha1.RolloutPolicySpec{Gates: &v1alpha1.RolloutGates{BlockingPods: &v1alpha1.BlockingPodsGate{Selector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}}}},
			Gates: GateResults{BlockingPods: &PodsResult{Pods: []*corev1.Pod{pod("data", "db-0", "a1", corev1.PodRunning, map[string]string{"app": "db"})}}}}},
			allowed: 1, send: "a2", held: map[string]string{"a1": "blocking pod data/db-0 on node a1"}},
		{name: "orders of two policies: the first by name applies, the other is reported", policies: []PolicyInput{
			policy("a", v1alpha1.RolloutPolicySpec{Order: &v1alpha1.RolloutOrder{By: v1alpha1.OrderNewestFirst}}),
			policy("b", v1alpha1.RolloutPolicySpec{Order: &v1alpha1.RolloutOrder{By: v1alpha1.OrderOldestFirst}})},
			allowed: 1, send: "a3", summary: []string{"warning: its order (OldestFirst) is ignored: rolloutpolicy a's (NewestFirst) applies [rolloutpolicy b]"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			nodes := pool()
			if c.mutate != nil {
				c.mutate(nodes)
			}
			var out, cand []*corev1.Node
			for _, n := range nodes {
				if slices.Contains(c.out, n.Name) {
					out = append(out, n)
				} else {
					cand = append(cand, n)
				}
			}
			slices.Reverse(cand) // any order
			in := Input{Now: now, Policies: c.policies, Nodes: nodes, Out: out, Candidates: cand, Allowed: c.allowed, Pacing: c.pacing,
				Plan: func(n *corev1.Node) (*ndpmcv1.PostConfigActions, bool) {
					if slices.Contains(c.notReady, n.Name) {
						return nil, false
					}
					if p, ok := c.plans[n.Name]; ok {
						return p, true
					}
					return reboot, true
				}}
			d := Decide(in)
			if got := strings.Join(names(d.Send), " "); got != c.send {
				t.Errorf("send %q, want %q", got, c.send)
			}
			if len(d.Send) > c.allowed {
				t.Errorf("sent %d, allowed %d", len(d.Send), c.allowed)
			}
			for _, n := range d.Send {
				if len(d.Held[n.Name]) > 0 {
					t.Errorf("%s sent and held: %v", n.Name, d.Held[n.Name])
				}
			}
			for node, want := range c.held {
				found := false
				for _, r := range d.Held[node] {
					found = found || strings.Contains(r.String(), want)
				}
				if !found {
					t.Errorf("node %s held %v, want a reason with %q", node, d.Held[node], want)
				}
			}
			if len(d.Pool) != len(c.pool) {
				t.Fatalf("pool reasons %v, want %v", d.Pool, c.pool)
			}
			for i, want := range c.pool {
				if !strings.Contains(d.Pool[i].String(), want) {
					t.Errorf("pool reason %q, want one with %q", d.Pool[i].String(), want)
				}
			}
			summary := Summary(d, v1alpha1.MaxPoolReasons)
			for _, want := range c.summary {
				if !slices.Contains(summary, want) {
					t.Errorf("summary %q lacks %q", summary, want)
				}
			}
			if (c.next == "") != d.Next.IsZero() || c.next != "" && !d.Next.Equal(utc(c.next)) {
				t.Errorf("next %s, want %q UTC", d.Next.UTC(), c.next)
			}
			if d.Holding() != (len(d.Pool) > 0 || len(d.Held) > 0) {
				t.Error("Holding disagrees")
			}
		})
	}
}

func TestDecideReportsHeldNodes(t *testing.T) {
	nodes := []*corev1.Node{tnode("w1", "", 0), tnode("w3", "", 0, "@"+v1alpha1.HoldAnnotation+"="), tnode("w2", "", 0, "@"+v1alpha1.HoldAnnotation+"=x")}
	d := Decide(Input{Now: epoch, Nodes: nodes, Out: nodes[1:], Candidates: nodes[:1], Allowed: 1,
		Plan: func(*corev1.Node) (*ndpmcv1.PostConfigActions, bool) { return nil, true }})
	if got := strings.Join(d.HeldNodes, " "); got != "w2 w3" {
		t.Errorf("held nodes %q", got)
	}
	if got := strings.Join(names(d.Send), " "); got != "w1" {
		t.Errorf("send %q", got)
	}
	if r := HoldReason("worker-3", "", ""); r.String() != "held: node worker-3 by annotation ndp.dev/hold" {
		t.Errorf("hold reason %q", r.String())
	}
}

func TestCompileNamesTheField(t *testing.T) {
	w := func(mod func(*v1alpha1.MaintenanceWindow)) v1alpha1.RolloutPolicySpec {
		x := win("Sat", "02:00", "05:00", "UTC")
		mod(&x)
		return v1alpha1.RolloutPolicySpec{Windows: []v1alpha1.MaintenanceWindow{win("", "01:00", "02:00", ""), x}}
	}
	bad := intstr.FromString("x%")
	for _, c := range []struct {
		spec v1alpha1.RolloutPolicySpec
		want string
	}{
		{w(func(x *v1alpha1.MaintenanceWindow) { x.TimeZone = "Europe/Nowhere" }), `spec.windows[1].timeZone: unknown time zone "Europe/Nowhere"`},
		{w(func(x *v1alpha1.MaintenanceWindow) { x.Start = "7:00" }), "spec.windows[1].start"},
		{w(func(x *v1alpha1.MaintenanceWindow) { x.Start = "24:00" }), "spec.windows[1].start"},
		{w(func(x *v1alpha1.MaintenanceWindow) { x.End = "24:01" }), "spec.windows[1].end"},
		{w(func(x *v1alpha1.MaintenanceWindow) { x.End = "02:00" }), "spec.windows[1].end: equals start"},
		{w(func(x *v1alpha1.MaintenanceWindow) { x.Days = []v1alpha1.Weekday{"Caturday"} }), "spec.windows[1].days[0]"},
		{w(func(x *v1alpha1.MaintenanceWindow) { x.Exclusions = []v1alpha1.DateRange{{Start: "2026-02-30"}} }), "spec.windows[1].exclusions[0].start"},
		{w(func(x *v1alpha1.MaintenanceWindow) {
			x.Exclusions = []v1alpha1.DateRange{{Start: "2026-02-03", End: "2026-02-01"}}
		}), "spec.windows[1].exclusions[0].end"},
		{w(func(x *v1alpha1.MaintenanceWindow) { x.Holds = []v1alpha1.PlanKind{"Explode"} }), "spec.windows[1].holds[0]"},
		{v1alpha1.RolloutPolicySpec{ZoneBudget: &bad}, "spec.zoneBudget"},
		{v1alpha1.RolloutPolicySpec{Order: &v1alpha1.RolloutOrder{By: v1alpha1.OrderLabelPriority}}, "spec.order"},
		{v1alpha1.RolloutPolicySpec{Gates: &v1alpha1.RolloutGates{BlockingPods: &v1alpha1.BlockingPodsGate{}}}, "spec.gates.blockingPods.selector: empty"},
		{v1alpha1.RolloutPolicySpec{Gates: &v1alpha1.RolloutGates{Alertmanager: &v1alpha1.AlertmanagerGate{URL: "http://a", Alerts: v1alpha1.AlertSelector{
			Exclude: []v1alpha1.LabelMatcher{m("a", "", "b"), m("x", v1alpha1.MatchNotRegex, "[")}}}}}, "spec.gates.alertmanager.alerts.exclude[1].value"},
		{v1alpha1.RolloutPolicySpec{PoolSelector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Near"}}}}, "spec.poolSelector"},
	} {
		_, err := Compile(&v1alpha1.RolloutPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: c.spec})
		if err == nil || !strings.Contains(err.Error(), "rolloutpolicy p: "+c.want) {
			t.Errorf("error %v, want one with %q", err, c.want)
		}
	}
	if _, err := Compile(&v1alpha1.RolloutPolicy{Spec: w(func(*v1alpha1.MaintenanceWindow) {})}); err != nil {
		t.Errorf("valid: %v", err)
	}
}

func TestCheckPacing(t *testing.T) {
	now := utc("2026-11-26 17:00")
	pace := func(name string, settle time.Duration, drained bool) *Policy {
		p, err := Compile(&v1alpha1.RolloutPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.RolloutPolicySpec{
			Pacing: &v1alpha1.RolloutPacing{SettleAfter: &metav1.Duration{Duration: settle}, WaitForDrainedPodsReady: drained}}})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	short, long, drained := pace("short", 5*time.Minute, false), pace("long", 15*time.Minute, false), pace("drained", 0, true)
	for _, c := range []struct {
		name     string
		policies []*Policy
		state    PacingState
		want     []string // reasons
		until    string
	}{
		{"no node done yet", []*Policy{long, drained}, PacingState{}, nil, ""},
		{"the longest settle applies", []*Policy{short, long}, PacingState{LastDone: now.Add(-10 * time.Minute), LastNode: "w1"},
			[]string{"waiting: node w1 settles for 15m0s after its update, until 17:05:00 UTC [rolloutpolicy long]"}, "2026-11-26 17:05"},
		{"settled", []*Policy{short, long}, PacingState{LastDone: now.Add(-15 * time.Minute)}, nil, ""},
		{"drained pods wait, without a time", []*Policy{short, drained}, PacingState{LastDone: now.Add(-time.Hour), DrainedPodsNotReady: []string{"web/cart-0"}},
			[]string{"waiting: pods drained from the last node are not Ready yet: web/cart-0 [rolloutpolicy drained]"}, ""},
		{"drained pods ignored without the policy", []*Policy{short}, PacingState{LastDone: now.Add(-time.Hour), DrainedPodsNotReady: []string{"web/cart-0"}}, nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			rs := CheckPacing(c.policies, c.state, now)
			if len(rs) != len(c.want) {
				t.Fatalf("reasons %v, want %v", rs, c.want)
			}
			for i, r := range rs {
				if r.String() != c.want[i] {
					t.Errorf("reason %q, want %q", r.String(), c.want[i])
				}
			}
			if c.until != "" && !rs[0].Until.Equal(utc(c.until)) {
				t.Errorf("until %s, want %s", rs[0].Until, c.until)
			}
		})
	}
}
