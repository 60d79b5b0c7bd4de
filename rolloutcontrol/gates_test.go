package rolloutcontrol

import (
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
)

func alert(state AlertState, kv ...string) Alert {
	l := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		l[kv[i]] = kv[i+1]
	}
	return Alert{Labels: l, State: state}
}

func m(label string, op v1alpha1.MatchOperator, value string) v1alpha1.LabelMatcher {
	return v1alpha1.LabelMatcher{Label: label, Operator: op, Value: value}
}

func TestAlertMatcher(t *testing.T) {
	f := false
	crash := alert(AlertFiring, "alertname", "KubePodCrashLooping", "namespace", "web", "severity", "warning")
	crash2 := alert(AlertFiring, "alertname", "KubePodCrashLooping", "namespace", "web-2")
	pending := alert(AlertPending, "alertname", "KubePodCrashLooping", "namespace", "web")
	silenced := alert(AlertSuppressed, "alertname", "NodeDown", "namespace", "web")
	watchdog := alert(AlertFiring, "alertname", "Watchdog")
	all := []Alert{crash, crash2, pending, silenced, watchdog}
	for _, c := range []struct {
		name string
		sel  v1alpha1.AlertSelector
		want []int // indexes in all
	}{
		{"every firing alert", v1alpha1.AlertSelector{}, []int{0, 1, 4}},
		{"firing and pending and suppressed", v1alpha1.AlertSelector{FiringOnly: &f}, []int{0, 1, 2, 3, 4}},
		{"by name", v1alpha1.AlertSelector{Names: []string{"KubePodCrashLooping"}}, []int{0, 1}},
		{"by name, pending too", v1alpha1.AlertSelector{Names: []string{"KubePodCrashLooping"}, FiringOnly: &f}, []int{0, 1, 2}},
		{"include Equal", v1alpha1.AlertSelector{Include: []v1alpha1.LabelMatcher{m("namespace", "", "web")}}, []int{0}},
		{"include Regex is anchored", v1alpha1.AlertSelector{Include: []v1alpha1.LabelMatcher{m("namespace", v1alpha1.MatchRegex, "web")}}, []int{0}},
		{"include Regex", v1alpha1.AlertSelector{Include: []v1alpha1.LabelMatcher{m("namespace", v1alpha1.MatchRegex, "web.*")}}, []int{0, 1}},
		{"include NotEqual matches a missing label", v1alpha1.AlertSelector{Include: []v1alpha1.LabelMatcher{m("namespace", v1alpha1.MatchNotEqual, "web")}}, []int{1, 4}},
		{"include: all must match", v1alpha1.AlertSelector{Include: []v1alpha1.LabelMatcher{m("namespace", v1alpha1.MatchRegex, "web.*"), m("severity", "", "warning")}}, []int{0}},
		{"exclude Watchdog", v1alpha1.AlertSelector{Exclude: []v1alpha1.LabelMatcher{m("alertname", "", "Watchdog")}}, []int{0, 1}},
		{"exclude NotRegex", v1alpha1.AlertSelector{Exclude: []v1alpha1.LabelMatcher{m("namespace", v1alpha1.MatchNotRegex, "web-.*")}}, []int{1}},
		{"exclude: any excludes", v1alpha1.AlertSelector{Exclude: []v1alpha1.LabelMatcher{m("alertname", "", "Watchdog"), m("namespace", "", "web")}}, []int{1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			am, err := CompileAlertSelector(&c.sel, "alerts")
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			for i, a := range all {
				if am.Matches(a) {
					got = append(got, i)
				}
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("matched %v, want %v", got, c.want)
			}
		})
	}
	if _, err := CompileAlertSelector(&v1alpha1.AlertSelector{Include: []v1alpha1.LabelMatcher{m("namespace", v1alpha1.MatchRegex, "web(")}}, "spec.gates.prometheus.alerts"); err == nil ||
		!strings.Contains(err.Error(), "spec.gates.prometheus.alerts.include[0].value") {
		t.Errorf("bad regex: %v", err)
	}
}

func gatePolicy(t *testing.T, g v1alpha1.RolloutGates) *Policy {
	t.Helper()
	p, err := Compile(&v1alpha1.RolloutPolicy{ObjectMeta: metav1.ObjectMeta{Name: "gates"}, Spec: v1alpha1.RolloutPolicySpec{Gates: &g}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func pod(ns, name, node string, phase corev1.PodPhase, lbls map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls}, Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: phase}}
}

func TestEvaluateGates(t *testing.T) {
	prom := &v1alpha1.PrometheusGate{URL: "http://prometheus:9090", Alerts: &v1alpha1.AlertSelector{Names: []string{"KubePodCrashLooping"}}}
	query := &v1alpha1.PrometheusGate{URL: "http://prometheus:9090", Query: `sum by (job) (up == 0)`}
	am := &v1alpha1.AlertmanagerGate{URL: "http://alertmanager:9093", Alerts: v1alpha1.AlertSelector{Exclude: []v1alpha1.LabelMatcher{m("alertname", "", "Watchdog")}}}
	db := map[string]string{"app": "db"}
	podsNode := &v1alpha1.BlockingPodsGate{Selector: metav1.LabelSelector{MatchLabels: db}}
	podsCluster := &v1alpha1.BlockingPodsGate{Selector: metav1.LabelSelector{MatchLabels: db}, Scope: v1alpha1.BlockingPodsCluster}
	podsNS := &v1alpha1.BlockingPodsGate{Selector: metav1.LabelSelector{MatchLabels: db}, NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "prod"}}}
	crash := []Alert{
		alert(AlertFiring, "alertname", "KubePodCrashLooping", "namespace", "web", "pod", "a"),
		alert(AlertFiring, "alertname", "KubePodCrashLooping", "namespace", "web", "pod", "b"),
		alert(AlertFiring, "alertname", "Watchdog"),
	}
	down := errors.New(`Get "http://prometheus:9090/api/v1/alerts": dial tcp: connection refused`)
	pods := []*corev1.Pod{
		pod("data", "db-0", "worker-1", corev1.PodRunning, db),
		pod("data", "db-1", "worker-2", corev1.PodPending, db),
		pod("data", "db-job", "worker-3", corev1.PodSucceeded, db),
		pod("data", "web-0", "worker-3", corev1.PodRunning, map[string]string{"app": "web"}),
		pod("test", "db-0", "worker-3", corev1.PodRunning, db),
	}
	nsLabels := map[string]map[string]string{"data": {"tier": "prod"}, "test": {"tier": "test"}}
	for _, c := range []struct {
		name     string
		gates    v1alpha1.RolloutGates
		res      GateResults
		hold     []string          // parts of the pool's reasons, in order
		nodeHold map[string]string // node → a part of its reason
		warn     []string
	}{
		{name: "no alert selected", gates: v1alpha1.RolloutGates{Prometheus: prom}, res: GateResults{PrometheusAlerts: &AlertsResult{Alerts: crash[2:]}}},
		{name: "a firing alert holds, one reason per name", gates: v1alpha1.RolloutGates{Prometheus: prom}, res: GateResults{PrometheusAlerts: &AlertsResult{Alerts: crash}},
			hold: []string{"waiting: alert KubePodCrashLooping firing (namespace=web, pod=a) and 1 more of that name [rolloutpolicy gates]"}},
		{name: "prometheus down holds", gates: v1alpha1.RolloutGates{Prometheus: prom}, res: GateResults{PrometheusAlerts: &AlertsResult{Err: down}},
			hold: []string{"waiting: prometheus unreachable: Get \"http://prometheus:9090/api/v1/alerts\": dial tcp: connection refused, holding (failOpen=false)"}},
		{name: "prometheus down, failOpen", gates: v1alpha1.RolloutGates{Prometheus: prom, FailOpen: true}, res: GateResults{PrometheusAlerts: &AlertsResult{Err: down}},
			warn: []string{"prometheus unreachable: Get", "not holding (failOpen=true)"}},
		{name: "not evaluated holds", gates: v1alpha1.RolloutGates{Prometheus: prom}, res: GateResults{},
			hold: []string{"prometheus alerts: not evaluated yet, holding (failOpen=false)"}},
		{name: "query empty", gates: v1alpha1.RolloutGates{Prometheus: query}, res: GateResults{PrometheusQuery: &QueryResult{}}},
		{name: "query zero", gates: v1alpha1.RolloutGates{Prometheus: query}, res: GateResults{PrometheusQuery: &QueryResult{Samples: []Sample{{Labels: map[string]string{"job": "a"}}}}}},
		{name: "query not zero", gates: v1alpha1.RolloutGates{Prometheus: query}, res: GateResults{PrometheusQuery: &QueryResult{Samples: []Sample{
			{Labels: map[string]string{"job": "b"}, Value: 2}, {Labels: map[string]string{"job": "a"}, Value: 0}, {Labels: map[string]string{"job": "c"}, Value: 1}}}},
			hold: []string{"waiting: query sum by (job) (up == 0) is not zero: 2 (job=b), 1 (job=c)"}},
		{name: "query fails", gates: v1alpha1.RolloutGates{Prometheus: query}, res: GateResults{PrometheusQuery: &QueryResult{Err: errors.New("bad_data: parse error")}},
			hold: []string{"prometheus query failed: bad_data: parse error, holding (failOpen=false)"}},
		{name: "alertmanager", gates: v1alpha1.RolloutGates{Alertmanager: am}, res: GateResults{AlertmanagerAlerts: &AlertsResult{Alerts: []Alert{
			alert(AlertFiring, "alertname", "Watchdog"), alert(AlertSuppressed, "alertname", "NodeDown"), alert(AlertFiring, "alertname", "EtcdNoLeader", "instance", "m0")}}},
			hold: []string{"alert EtcdNoLeader firing (instance=m0) in alertmanager"}},
		{name: "blocking pods per node", gates: v1alpha1.RolloutGates{BlockingPods: podsNode}, res: GateResults{BlockingPods: &PodsResult{Pods: pods}},
			nodeHold: map[string]string{"worker-1": "blocking pod data/db-0 on node worker-1", "worker-2": "data/db-1", "worker-3": "test/db-0"}},
		{name: "blocking pods, namespace selector", gates: v1alpha1.RolloutGates{BlockingPods: podsNS}, res: GateResults{BlockingPods: &PodsResult{Pods: pods, NamespaceLabels: nsLabels}},
			nodeHold: map[string]string{"worker-1": "data/db-0", "worker-2": "data/db-1"}},
		{name: "blocking pods cluster-wide", gates: v1alpha1.RolloutGates{BlockingPods: podsCluster}, res: GateResults{BlockingPods: &PodsResult{Pods: pods}},
			hold: []string{"waiting: blocking pod data/db-0 and 2 more [rolloutpolicy gates]"}},
		{name: "every gate at once: each says", gates: v1alpha1.RolloutGates{Prometheus: &v1alpha1.PrometheusGate{URL: "http://p", Alerts: prom.Alerts, Query: query.Query}, Alertmanager: am},
			res:  GateResults{PrometheusAlerts: &AlertsResult{Alerts: crash[:1]}, PrometheusQuery: &QueryResult{Err: errors.New("timeout")}, AlertmanagerAlerts: &AlertsResult{Err: errors.New("503")}},
			hold: []string{"alert KubePodCrashLooping firing (namespace=web, pod=a)", "prometheus query failed: timeout", "alertmanager unreachable: 503"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := EvaluateGates(gatePolicy(t, c.gates), c.res)
			if len(v.Hold) != len(c.hold) {
				t.Fatalf("holds %v, want %d: %v", v.Hold, len(c.hold), c.hold)
			}
			for i, want := range c.hold {
				if got := v.Hold[i].String(); !strings.Contains(got, want) {
					t.Errorf("hold %d: %q, want one with %q", i, got, want)
				}
			}
			if len(v.NodeHold) != len(c.nodeHold) {
				t.Errorf("node holds %v, want %v", v.NodeHold, c.nodeHold)
			}
			for node, want := range c.nodeHold {
				if len(v.NodeHold[node]) != 1 || !strings.Contains(v.NodeHold[node][0].String(), want) {
					t.Errorf("node %s: %v, want %q", node, v.NodeHold[node], want)
				}
				if !v.Held(node) {
					t.Errorf("node %s not held", node)
				}
			}
			if len(c.warn) == 0 && len(v.Warnings) > 0 || len(c.warn) > 0 && len(v.Warnings) != 1 {
				t.Fatalf("warnings %v, want %v", v.Warnings, c.warn)
			}
			for _, w := range c.warn {
				if !strings.Contains(v.Warnings[0].Detail, w) {
					t.Errorf("warning %q, want %q in it", v.Warnings[0].Detail, w)
				}
			}
		})
	}
}
