package v1alpha1_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/internal/testkit"
)

// TestRolloutPolicyCRD creates RolloutPolicies on a real API server with
// the generated CRD: its defaults, and the rules that refuse bad specs with
// a message naming the field.
func TestRolloutPolicyCRD(t *testing.T) {
	cp := testkit.NewControlPlane(t, testkit.ControlPlaneOptions{Root: "../.."})
	ctx := context.Background()
	window := func(mod func(*v1alpha1.MaintenanceWindow)) v1alpha1.RolloutPolicySpec {
		w := v1alpha1.MaintenanceWindow{Days: []v1alpha1.Weekday{"Sat"}, Start: "22:00", End: "02:00", TimeZone: "Europe/Berlin"}
		if mod != nil {
			mod(&w)
		}
		return v1alpha1.RolloutPolicySpec{Windows: []v1alpha1.MaintenanceWindow{w}}
	}
	silences := func(mod func(*v1alpha1.NodeSilences)) v1alpha1.RolloutPolicySpec {
		s := v1alpha1.NodeSilences{URL: "http://alertmanager:9093", Matchers: []v1alpha1.SilenceMatcher{`node="{{node}}"`}}
		if mod != nil {
			mod(&s)
		}
		return v1alpha1.RolloutPolicySpec{Silences: &s}
	}
	pct := intstr.FromString("50%")
	bad := intstr.FromString("150%")
	zero := intstr.FromInt32(0)
	for _, c := range []struct {
		name string
		spec v1alpha1.RolloutPolicySpec
		want string // "" accepted; else a part of the error
	}{
		{"window", window(nil), ""},
		{"empty", v1alpha1.RolloutPolicySpec{}, "at least one of"},
		{"equal-times", window(func(w *v1alpha1.MaintenanceWindow) { w.End = "22:00" }), "start and end are equal"},
		{"bad-start", window(func(w *v1alpha1.MaintenanceWindow) { w.Start = "25:00" }), "spec.windows[0].start"},
		{"end-24", window(func(w *v1alpha1.MaintenanceWindow) { w.Start, w.End = "00:00", "24:00" }), ""},
		{"bad-day", window(func(w *v1alpha1.MaintenanceWindow) { w.Days = []v1alpha1.Weekday{"Saturday"} }), "spec.windows[0].days[0]"},
		{"all-alone", window(func(w *v1alpha1.MaintenanceWindow) { w.Holds = []v1alpha1.PlanKind{"All", "Reboot"} }), "All stands alone"},
		{"exclusion-backwards", window(func(w *v1alpha1.MaintenanceWindow) {
			w.Exclusions = []v1alpha1.DateRange{{Start: "2026-12-24", End: "2026-12-20"}}
		}), "end is before start"},
		{"zone-budget-pct", v1alpha1.RolloutPolicySpec{ZoneBudget: &pct}, ""},
		{"zone-budget-150", v1alpha1.RolloutPolicySpec{ZoneBudget: &bad}, "zoneBudget is a number"},
		{"zone-budget-0", v1alpha1.RolloutPolicySpec{ZoneBudget: &zero}, "zoneBudget is a number"},
		{"failures", v1alpha1.RolloutPolicySpec{Failures: &v1alpha1.RolloutFailures{HaltAfter: ptr.To[int32](2), RebootTimeout: &metav1.Duration{Duration: time.Minute}}}, ""},
		{"failures-empty", v1alpha1.RolloutPolicySpec{Failures: &v1alpha1.RolloutFailures{}}, "failures sets haltAfter, rebootTimeout, drainTimeout or several"},
		{"drain-timeout-alone", v1alpha1.RolloutPolicySpec{Failures: &v1alpha1.RolloutFailures{DrainTimeout: &metav1.Duration{Duration: 30 * time.Minute}}}, ""},
		{"drain-timeout-skip", v1alpha1.RolloutPolicySpec{Failures: &v1alpha1.RolloutFailures{DrainTimeout: &metav1.Duration{Duration: time.Hour}, OnDrainTimeout: v1alpha1.DrainTimeoutSkip}}, ""},
		{"drain-timeout-delete", v1alpha1.RolloutPolicySpec{Failures: &v1alpha1.RolloutFailures{DrainTimeout: &metav1.Duration{Duration: time.Hour}, OnDrainTimeout: v1alpha1.DrainTimeoutDeletePods}}, ""},
		{"on-drain-timeout-alone", v1alpha1.RolloutPolicySpec{Failures: &v1alpha1.RolloutFailures{HaltAfter: ptr.To[int32](1), OnDrainTimeout: v1alpha1.DrainTimeoutSkip}}, "onDrainTimeout needs drainTimeout"},
		{"on-drain-timeout-bad", v1alpha1.RolloutPolicySpec{Failures: &v1alpha1.RolloutFailures{DrainTimeout: &metav1.Duration{Duration: time.Hour}, OnDrainTimeout: "Evict"}}, "spec.failures.onDrainTimeout"},
		{"halt-after-0", v1alpha1.RolloutPolicySpec{Failures: &v1alpha1.RolloutFailures{HaltAfter: ptr.To[int32](0)}}, "spec.failures.haltAfter"},
		{"prometheus-nothing", v1alpha1.RolloutPolicySpec{Gates: &v1alpha1.RolloutGates{Prometheus: &v1alpha1.PrometheusGate{URL: "http://p:9090"}}}, "sets alerts, query or both"},
		{"prometheus-url", v1alpha1.RolloutPolicySpec{Gates: &v1alpha1.RolloutGates{Prometheus: &v1alpha1.PrometheusGate{URL: "p:9090", Query: "up == 0"}}}, "spec.gates.prometheus.url"},
		{"label-priority-no-label", v1alpha1.RolloutPolicySpec{Order: &v1alpha1.RolloutOrder{By: v1alpha1.OrderLabelPriority}}, "LabelPriority needs label and priorities"},
		{"zone-with-label", v1alpha1.RolloutPolicySpec{Order: &v1alpha1.RolloutOrder{By: v1alpha1.OrderZone, Label: "x"}}, "belong to LabelPriority"},
		{"silences", silences(nil), ""},
		{"silences-alone-regex", silences(func(s *v1alpha1.NodeSilences) {
			s.Matchers = []v1alpha1.SilenceMatcher{`instance=~"{{node}}(:[0-9]+)?"`, ` alertname != "Watchdog" `, `job!~"a\"b"`}
		}), ""},
		{"silences-no-matchers", silences(func(s *v1alpha1.NodeSilences) { s.Matchers = nil }), "spec.silences.matchers"},
		{"silences-too-many-matchers", silences(func(s *v1alpha1.NodeSilences) {
			s.Matchers = make([]v1alpha1.SilenceMatcher, v1alpha1.MaxSilenceMatchers+1)
			for i := range s.Matchers {
				s.Matchers[i] = `node="{{node}}"`
			}
		}), "spec.silences.matchers: Too many"},
		{"silences-unquoted", silences(func(s *v1alpha1.NodeSilences) { s.Matchers = []v1alpha1.SilenceMatcher{"node={{node}}"} }), "a matcher is a label name"},
		{"silences-no-operator", silences(func(s *v1alpha1.NodeSilences) { s.Matchers = []v1alpha1.SilenceMatcher{`node "x"`} }), "spec.silences.matchers[0]"},
		{"silences-url", silences(func(s *v1alpha1.NodeSilences) { s.URL = "alertmanager:9093" }), "spec.silences.url"},
		{"silences-short", silences(func(s *v1alpha1.NodeSilences) { s.Duration = &metav1.Duration{Duration: time.Minute} }), "duration is 5m to 24h"},
		{"silences-long", silences(func(s *v1alpha1.NodeSilences) { s.Duration = &metav1.Duration{Duration: 25 * time.Hour} }), "duration is 5m to 24h"},
		{"silences-max-below", silences(func(s *v1alpha1.NodeSilences) {
			s.Duration, s.MaxDuration = &metav1.Duration{Duration: 2 * time.Hour}, &metav1.Duration{Duration: time.Hour}
		}), "maxDuration is shorter than duration"},
		{"gates", v1alpha1.RolloutPolicySpec{Gates: &v1alpha1.RolloutGates{
			Prometheus:   &v1alpha1.PrometheusGate{URL: "http://p:9090", Alerts: &v1alpha1.AlertSelector{Names: []string{"KubePodCrashLooping"}, Include: []v1alpha1.LabelMatcher{{Label: "namespace", Value: "web"}}}},
			BlockingPods: &v1alpha1.BlockingPodsGate{Selector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}},
		}}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := &v1alpha1.RolloutPolicy{ObjectMeta: metav1.ObjectMeta{Name: c.name}, Spec: c.spec}
			err := cp.Client.Create(ctx, p)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && err == nil:
				t.Fatalf("accepted, want an error with %q", c.want)
			case c.want != "" && !strings.Contains(err.Error(), c.want):
				t.Fatalf("error %v, want one with %q", err, c.want)
			}
		})
	}

	// Defaults: UTC, firingOnly, Equal, Node scope.
	got := &v1alpha1.RolloutPolicy{}
	if err := cp.Client.Get(ctx, clientKey("gates"), got); err != nil {
		t.Fatal(err)
	}
	a := got.Spec.Gates.Prometheus.Alerts
	if a.FiringOnly == nil || !*a.FiringOnly || a.Include[0].Operator != v1alpha1.MatchEqual || got.Spec.Gates.BlockingPods.Scope != v1alpha1.BlockingPodsNode {
		t.Errorf("defaults not applied: %+v, scope %q", a, got.Spec.Gates.BlockingPods.Scope)
	}
	if err := cp.Client.Get(ctx, clientKey("silences"), got); err != nil {
		t.Fatal(err)
	}
	if d := got.Spec.Silences.Duration; d == nil || d.Duration != time.Hour {
		t.Errorf("silences.duration: %v, want the default 1h", d)
	}
	if err := cp.Client.Get(ctx, clientKey("zone-budget-pct"), got); err != nil {
		t.Fatal(err)
	}

	// The example the guide shows is accepted as written.
	raw, err := os.ReadFile("../../examples/rollout/workers.yaml")
	if err != nil {
		t.Fatal(err)
	}
	example := &v1alpha1.RolloutPolicy{}
	if err := yaml.UnmarshalStrict(raw, example); err != nil {
		t.Fatalf("examples/rollout/workers.yaml: %v", err)
	}
	if err := cp.Client.Create(ctx, example); err != nil {
		t.Fatalf("examples/rollout/workers.yaml refused: %v", err)
	}
}

func clientKey(name string) client.ObjectKey { return client.ObjectKey{Name: name} }
