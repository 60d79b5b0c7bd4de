package rolloutcontrol

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
)

func TestDrainTimeoutFor(t *testing.T) {
	drain := func(name string, d time.Duration, act v1alpha1.DrainTimeoutAction) *v1alpha1.RolloutPolicy {
		f := &v1alpha1.RolloutFailures{OnDrainTimeout: act}
		if d > 0 {
			f.DrainTimeout = &metav1.Duration{Duration: d}
		}
		return &v1alpha1.RolloutPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.RolloutPolicySpec{Failures: f}}
	}
	other := &v1alpha1.RolloutPolicy{Spec: v1alpha1.RolloutPolicySpec{Pacing: &v1alpha1.RolloutPacing{}}}
	for _, c := range []struct {
		name     string
		policies []*v1alpha1.RolloutPolicy
		want     string // DrainTimeout.String; "" for nil
	}{
		{"no policy", nil, ""},
		{"no drainTimeout", []*v1alpha1.RolloutPolicy{other, drain("h", 0, "")}, ""},
		{"unset onDrainTimeout is Wait", []*v1alpha1.RolloutPolicy{drain("a", time.Hour, "")}, "1h0m0s;Wait"},
		{"one policy", []*v1alpha1.RolloutPolicy{other, drain("a", 30*time.Minute, v1alpha1.DrainTimeoutSkip)}, "30m0s;Skip"},
		{"the least disruptive choice wins", []*v1alpha1.RolloutPolicy{drain("a", time.Minute, v1alpha1.DrainTimeoutDeletePods), drain("b", time.Hour, v1alpha1.DrainTimeoutSkip)}, "1h0m0s;Skip"},
		{"Wait beats both, whatever its timeout", []*v1alpha1.RolloutPolicy{drain("a", time.Hour, v1alpha1.DrainTimeoutSkip), drain("b", time.Minute, v1alpha1.DrainTimeoutWait)}, "1m0s;Wait"},
		{"same choice: the longest timeout", []*v1alpha1.RolloutPolicy{drain("a", time.Hour, v1alpha1.DrainTimeoutDeletePods), drain("b", 2*time.Hour, v1alpha1.DrainTimeoutDeletePods), drain("c", time.Minute, v1alpha1.DrainTimeoutDeletePods)}, "2h0m0s;DeletePods"},
		{"an unknown choice is ignored", []*v1alpha1.RolloutPolicy{drain("a", time.Hour, "Evict")}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := ""
			if d := DrainTimeoutFor(c.policies); d != nil {
				got = d.String()
			}
			if got != c.want {
				t.Errorf("%q, want %q", got, c.want)
			}
		})
	}
}

// A node that gave up its drain to the target is held, named, and not
// counted; one that gave up another target is a candidate like any other.
func TestDecideDrainSkipped(t *testing.T) {
	skipped := func(target string) string {
		return "@" + v1alpha1.DrainSkippedAnnotation + "=" + target
	}
	for _, c := range []struct {
		name   string
		target string
		nodes  [][]string // name, then annotations
		send   string
		held   string // "node: reason"
	}{
		{name: "skipped for the target: held, the next goes", target: "rendered-b",
			nodes: [][]string{{"w1", skipped("rendered-b"), "@" + v1alpha1.DrainSkippedReasonAnnotation + "=web/db-0 still there"}, {"w2"}},
			send:  "w2", held: "w1: skipped: node w1 gave up its drain to rendered-b: web/db-0 still there (kubectl ndp retry w1)"},
		{name: "skipped for an older target: a candidate again", target: "rendered-c",
			nodes: [][]string{{"w1", skipped("rendered-b")}, {"w2"}}, send: "w1"},
		{name: "annotation removed: a candidate again", target: "rendered-b",
			nodes: [][]string{{"w1"}, {"w2"}}, send: "w1"},
		{name: "every node skipped: nothing to send", target: "rendered-b",
			nodes: [][]string{{"w1", skipped("rendered-b")}}, send: "", held: "w1: skipped: node w1 gave up its drain to rendered-b (kubectl ndp retry w1)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var all []*corev1.Node
			for i, spec := range c.nodes {
				all = append(all, tnode(spec[0], "", i, spec[1:]...))
			}
			d := Decide(Input{Nodes: all, Candidates: all, Allowed: 1, Target: c.target,
				Plan: func(*corev1.Node) (*ndpmcv1.PostConfigActions, bool) { return nil, true }})
			if got := strings.Join(names(d.Send), " "); got != c.send {
				t.Errorf("send %q, want %q", got, c.send)
			}
			var held []string
			for _, n := range all {
				for _, r := range d.Held[n.Name] {
					held = append(held, n.Name+": "+r.String())
				}
			}
			if got := strings.Join(held, "; "); got != c.held {
				t.Errorf("held %q\nwant %q", got, c.held)
			}
		})
	}
}
