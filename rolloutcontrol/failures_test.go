package rolloutcontrol

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
)

// A pool's failed nodes: Degraded ones, and those not back from a reboot
// within the shortest rebootTimeout; haltAfter of them (the smallest)
// hold every start.
func TestDecideFailures(t *testing.T) {
	now := epoch.Add(time.Hour)
	degraded := "@" + ndpmcv1.StateAnnotation + "=" + ndpmcv1.StateDegraded
	// down is a node at work on its update, not Ready since ago (ready:
	// Ready since then).
	down := func(name string, ago time.Duration, ready bool) *corev1.Node {
		n := tnode(name, "", 0, "@"+ndpmcv1.StateAnnotation+"="+ndpmcv1.StateWorking)
		st := corev1.ConditionFalse
		if ready {
			st = corev1.ConditionTrue
		}
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st, LastTransitionTime: metav1.NewTime(now.Add(-ago))}}
		return n
	}
	fail := func(halt int32, timeout time.Duration) v1alpha1.RolloutPolicySpec {
		f := &v1alpha1.RolloutFailures{}
		if halt > 0 {
			f.HaltAfter = ptr.To(halt)
		}
		if timeout > 0 {
			f.RebootTimeout = &metav1.Duration{Duration: timeout}
		}
		return v1alpha1.RolloutPolicySpec{Failures: f}
	}
	for _, tc := range []struct {
		name     string
		policies []PolicyInput
		out      []*corev1.Node // unavailable nodes of the pool
		send     string
		overdue  string
		failed   string
		halted   string // the pool's reason, "" for none
		next     time.Time
	}{
		{name: "no policy: a failed node only counts against the budget", out: []*corev1.Node{tnode("d1", "", 0, degraded)},
			send: "c1", failed: "d1"},
		{name: "fewer failed than haltAfter", policies: []PolicyInput{policy("p", fail(2, 0))}, out: []*corev1.Node{tnode("d1", "", 0, degraded)},
			send: "c1", failed: "d1"},
		{name: "haltAfter reached", policies: []PolicyInput{policy("p", fail(2, 0))},
			out:    []*corev1.Node{tnode("d1", "", 0, degraded), tnode("d2", "", 0, degraded)},
			failed: "d1 d2", halted: "halted: 2 of the pool's nodes failed (d1, d2), haltAfter is 2 [rolloutpolicy p]"},
		{name: "the smallest haltAfter wins", policies: []PolicyInput{policy("a", fail(3, 0)), policy("b", fail(1, 0))},
			out:    []*corev1.Node{tnode("d1", "", 0, degraded)},
			failed: "d1", halted: "halted: 1 of the pool's nodes failed (d1), haltAfter is 1 [rolloutpolicy b]"},
		{name: "a node down in its update: the decision changes when it is due", policies: []PolicyInput{policy("p", fail(1, 15*time.Minute))},
			out:  []*corev1.Node{down("r1", 10*time.Minute, false)},
			send: "c1", next: now.Add(5 * time.Minute)},
		{name: "a node down too long: marked, failed, and the pool halts", policies: []PolicyInput{policy("p", fail(1, 15*time.Minute))},
			out:     []*corev1.Node{down("r1", 20*time.Minute, false)},
			overdue: "r1", failed: "r1", halted: "halted: 1 of the pool's nodes failed (r1), haltAfter is 1 [rolloutpolicy p]"},
		{name: "the shortest rebootTimeout wins", policies: []PolicyInput{policy("a", fail(0, time.Hour)), policy("b", fail(0, 15*time.Minute))},
			out:  []*corev1.Node{down("r1", 20*time.Minute, false)},
			send: "c1", overdue: "r1", failed: "r1"},
		{name: "back and Ready: nothing to mark", policies: []PolicyInput{policy("p", fail(1, time.Minute))},
			out:  []*corev1.Node{down("r1", 20*time.Minute, true)},
			send: "c1"},
		{name: "a Degraded node is not marked again", policies: []PolicyInput{policy("p", fail(0, time.Minute))},
			out:  []*corev1.Node{tnode("r1", "", 0, degraded)},
			send: "c1", failed: "r1"},
		{name: "not at work: not this policy's to mark", policies: []PolicyInput{policy("p", fail(1, time.Minute))},
			out: []*corev1.Node{func() *corev1.Node {
				n := down("r1", 20*time.Minute, false)
				n.Annotations[ndpmcv1.StateAnnotation] = ndpmcv1.StateDone
				return n
			}()},
			send: "c1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cand := tnode("c1", "", 0)
			nodes := append([]*corev1.Node{cand}, tc.out...)
			d := Decide(Input{Now: now, Policies: tc.policies, Nodes: nodes, Out: tc.out, Candidates: []*corev1.Node{cand}, Allowed: 3,
				Plan: func(*corev1.Node) (*ndpmcv1.PostConfigActions, bool) { return nil, true }})
			var overdue []string
			for _, o := range d.Overdue {
				overdue = append(overdue, o.Node.Name)
			}
			var halted []string
			for _, r := range d.Pool {
				halted = append(halted, r.String())
			}
			for what, got := range map[string][2]string{
				"send":    {strings.Join(names(d.Send), " "), tc.send},
				"overdue": {strings.Join(overdue, " "), tc.overdue},
				"failed":  {strings.Join(d.Failed, " "), tc.failed},
				"halted":  {strings.Join(halted, "; "), tc.halted},
			} {
				if got[0] != got[1] {
					t.Errorf("%s: %q, want %q", what, got[0], got[1])
				}
			}
			if !d.Next.Equal(tc.next) {
				t.Errorf("next %v, want %v", d.Next, tc.next)
			}
		})
	}
}

func TestOverdueMessage(t *testing.T) {
	o := Overdue{Since: utc("2026-01-01 10:04"), Timeout: 15 * time.Minute, Policy: "workers"}
	if got, want := o.Message(), "RebootTimeout: not Ready for 15m0s of its update, since 2026-01-01 10:04:00 UTC (rolloutpolicy workers's failures.rebootTimeout)"; got != want {
		t.Errorf("%q\nwant %q", got, want)
	}
}

// OverdueNodes, a paused pool's check: the nodes down too long in their
// update under the shortest rebootTimeout, and when the next one is due.
func TestOverdueNodes(t *testing.T) {
	now := epoch.Add(time.Hour)
	node := func(name, state string, ago time.Duration, ready bool) *corev1.Node {
		n := tnode(name, "", 0, "@"+ndpmcv1.StateAnnotation+"="+state)
		st := corev1.ConditionFalse
		if ready {
			st = corev1.ConditionTrue
		}
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st, LastTransitionTime: metav1.NewTime(now.Add(-ago))}}
		return n
	}
	timeout := func(name string, d time.Duration) *v1alpha1.RolloutPolicy {
		return policy(name, v1alpha1.RolloutPolicySpec{Failures: &v1alpha1.RolloutFailures{RebootTimeout: &metav1.Duration{Duration: d}}}).Policy
	}
	halt := policy("halt", v1alpha1.RolloutPolicySpec{Failures: &v1alpha1.RolloutFailures{HaltAfter: ptr.To[int32](1)}}).Policy
	nodes := []*corev1.Node{
		node("lost", ndpmcv1.StateWorking, 15*time.Minute, false),
		node("rebooting", ndpmcv1.StateWorking, 5*time.Minute, false),
		node("draining", ndpmcv1.StateWorking, time.Hour, true),
		node("marked", ndpmcv1.StateDegraded, time.Hour, false),
		node("idle-down", ndpmcv1.StateDone, time.Hour, false),
	}
	for _, tc := range []struct {
		name     string
		policies []*v1alpha1.RolloutPolicy
		overdue  string
		next     time.Time
	}{
		{name: "no policy", policies: nil},
		{name: "no rebootTimeout", policies: []*v1alpha1.RolloutPolicy{halt}},
		{name: "10m: the node down 15m, the next in 5m", policies: []*v1alpha1.RolloutPolicy{halt, timeout("ten", 10*time.Minute)},
			overdue: "lost (ten, 10m0s)", next: now.Add(5 * time.Minute)},
		{name: "the shortest wins", policies: []*v1alpha1.RolloutPolicy{timeout("ten", 10*time.Minute), timeout("four", 4*time.Minute)},
			overdue: "lost (four, 4m0s) rebooting (four, 4m0s)"},
		{name: "nobody due yet", policies: []*v1alpha1.RolloutPolicy{timeout("hour", time.Hour)}, next: now.Add(45 * time.Minute)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			overdue, next := OverdueNodes(tc.policies, nodes, now)
			var got []string
			for _, o := range overdue {
				got = append(got, fmt.Sprintf("%s (%s, %s)", o.Node.Name, o.Policy, o.Timeout))
			}
			if g := strings.Join(got, " "); g != tc.overdue {
				t.Errorf("overdue %q, want %q", g, tc.overdue)
			}
			if !next.Equal(tc.next) {
				t.Errorf("next %v, want %v", next, tc.next)
			}
		})
	}
}
