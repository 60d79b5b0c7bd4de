package rolloutcontrol

import (
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
)

// TestExample decides with the guide's example policy: on a Thursday a
// reboot waits for Saturday night while a chrony restart goes; on Saturday
// night the canary goes first, one per zone; a firing alert in a
// production namespace holds everything.
func TestExample(t *testing.T) {
	raw, err := os.ReadFile("../examples/rollout/workers.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rp := &v1alpha1.RolloutPolicy{}
	if err := yaml.UnmarshalStrict(raw, rp); err != nil {
		t.Fatal(err)
	}
	p, err := Compile(rp)
	if err != nil {
		t.Fatal(err)
	}
	reboot := plan(true, true, ndpmcv1.RebootAction)
	restart := plan(false, false, ndpmcv1.RestartAction)

	thursday := utc("2026-11-26 17:00")
	v := CheckWindows([]*Policy{p}, KindsOf(reboot), thursday)
	if got := WindowMessage(v, thursday); got != "waiting: outside the maintenance window, opens Sat 22:00 Europe/Berlin for plans that reboot or drain" {
		t.Errorf("reboot on Thursday: %q", got)
	}
	if v := CheckWindows([]*Policy{p}, KindsOf(restart), thursday); !v.Allowed || WindowMessage(v, thursday) != "" {
		t.Errorf("restart on Thursday: %+v", v)
	}
	christmas := utc("2026-12-25 12:00")
	if got := WindowMessage(CheckWindows([]*Policy{p}, KindsOf(reboot), christmas), christmas); !strings.Contains(got, "opens Sat 2027-01-02 22:00 Europe/Berlin") {
		t.Errorf("reboot at Christmas: %q", got)
	}

	nodes := []*corev1.Node{tnode("a1", "a", 1), tnode("a2", "a", 2, "ndp.dev/rollout-ring=canary"), tnode("b1", "b", 1), tnode("b2", "b", 0, "ndp.dev/rollout-ring=early")}
	quiet := GateResults{PrometheusAlerts: &AlertsResult{}, PrometheusQuery: &QueryResult{}, BlockingPods: &PodsResult{}}
	in := Input{Policies: []PolicyInput{{Policy: rp, Gates: quiet}}, Nodes: nodes, Candidates: nodes, Allowed: 4,
		Plan: func(*corev1.Node) (*ndpmcv1.PostConfigActions, bool) { return reboot, true }}

	in.Now = thursday
	if d := Decide(in); len(d.Send) != 0 || len(d.Held) != 4 {
		t.Errorf("Thursday: sent %v, held %v", names(d.Send), d.Held)
	}
	in.Now = utc("2026-11-28 22:30") // Saturday 23:30 in Berlin
	if got := strings.Join(names(Decide(in).Send), " "); got != "a2 b2" {
		t.Errorf("Saturday night: sent %q, want the canary and the early node, one per zone", got)
	}
	in.Policies[0].Gates.PrometheusAlerts = &AlertsResult{Alerts: []Alert{alert(AlertFiring, "alertname", "KubePodCrashLooping", "namespace", "prod-shop", "pod", "cart-0")}}
	d := Decide(in)
	if len(d.Send) != 0 || len(d.Pool) != 1 || d.Pool[0].String() != "waiting: alert KubePodCrashLooping firing (namespace=prod-shop, pod=cart-0) [rolloutpolicy workers]" {
		t.Errorf("alert firing: sent %v, pool %v", names(d.Send), d.Pool)
	}
}
