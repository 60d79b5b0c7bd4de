package node

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/internal/testkit/builder"
)

// A node that does not come back from its reboot (powered off, not Ready) is marked
// Degraded once the policy's rebootTimeout runs out, and with haltAfter 1
// the rollout starts no other node, though the budget (2) would allow it
// once the second node has settled; the pool says why. Powered on again,
// its daemon goes on where it stopped, the halt lifts and the last node
// goes: each node rebooted once. (The settle time only orders the test:
// the third node would start before the timeout ran out without it.)
func TestRolloutHaltsOnANodeNotBackFromItsReboot(t *testing.T) {
	r := newRollout(t, "roll-lost", 3, intstr.FromInt(2))
	a := r.target()
	lost, played := r.hosts[0], r.hosts[1:] // the oldest goes first
	pol := &v1alpha1.RolloutPolicy{ObjectMeta: metav1.ObjectMeta{Name: "roll-lost"}, Spec: v1alpha1.RolloutPolicySpec{
		PoolSelector: metav1.LabelSelector{MatchLabels: r.labelPool()},
		Failures:     &v1alpha1.RolloutFailures{HaltAfter: ptr.To[int32](1), RebootTimeout: &metav1.Duration{Duration: 5 * time.Second}},
		Pacing:       &v1alpha1.RolloutPacing{SettleAfter: &metav1.Duration{Duration: 12 * time.Second}},
	}}
	if err := k8s.Create(context.Background(), pol); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), pol) })
	superviseHosts(t, played)
	off := lostAtReboot(t, lost)
	rebootingChange(t, r)
	b := r.newTarget(a)
	<-off
	var n *corev1.Node
	testkit.Eventually(t, "the lost node marked Degraded", func() (bool, string) {
		n = lost.node()
		s, why := n.Annotations[ndpmcv1.StateAnnotation], n.Annotations[ndpmcv1.ReasonAnnotation]
		return s == ndpmcv1.StateDegraded && strings.HasPrefix(why, "RebootTimeout: not Ready for 5s of its update, since "), fmt.Sprintf("state %s: %s", s, why)
	}, testkit.Within(2*time.Minute))
	if !strings.Contains(n.Annotations[ndpmcv1.ReasonAnnotation], "(rolloutpolicy roll-lost's failures.rebootTimeout)") {
		t.Errorf("reason %q", n.Annotations[ndpmcv1.ReasonAnnotation])
	}
	r.waitHeld("halted: 1 of the pool's nodes failed (" + lost.name + "), haltAfter is 1 [rolloutpolicy roll-lost]")
	// The second node finishes and settles; the third is not sent while
	// the pool halts.
	testkit.Eventually(t, "the second node done", func() (bool, string) {
		m := played[0].node()
		return m.Annotations[ndpmcv1.CurrentConfigAnnotation] == b && m.Annotations[ndpmcv1.StateAnnotation] == ndpmcv1.StateDone, fmt.Sprintf("%v", m.Annotations)
	}, testkit.Within(2*time.Minute))
	testkit.Eventually(t, "the settle time over, the halt alone holding", func() (bool, string) {
		c := r.poolCondition(ndpmcv1.ConditionRolloutHeld)
		return c.Status == corev1.ConditionTrue && strings.Contains(c.Message, "halted:") && !strings.Contains(c.Message, "settles"), c.Message
	}, testkit.Within(2*time.Minute))
	r.waitDecided()
	if sent := r.sentTo(b); strings.Join(sent, " ") != lost.name+" "+played[0].name {
		t.Fatalf("sent to %s while halted: %v", b, sent)
	}
	var events corev1.EventList
	if err := k8s.List(context.Background(), &events, client.InNamespace("default")); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range events.Items {
		found = found || (e.Reason == v1alpha1.RebootTimeoutReason && e.InvolvedObject.Name == lost.name)
	}
	if !found {
		t.Errorf("no %s Event on %s", v1alpha1.RebootTimeoutReason, lost.name)
	}

	// Powered on: the daemon goes on after its reboot, and so does the pool.
	lost.setBootID("boot-2")
	lost.setReady(true)
	lost.start()
	r.waitDone(b, 3*time.Minute)
	for _, h := range r.hosts {
		if h.reboots() != 1 {
			t.Errorf("%s: %d reboot requests, want 1", h.name, h.reboots())
		}
	}
}

// lostAtReboot stops h when it asks for its reboot and reports it not
// Ready (a machine powered off): the returned channel closes then.
func lostAtReboot(t *testing.T, h *host) <-chan struct{} {
	off := make(chan struct{})
	go func() {
		defer close(off)
		for h.reboots() == 0 {
			select {
			case <-time.After(100 * time.Millisecond):
			case <-t.Context().Done():
				return
			}
		}
		h.stop()
		h.setReady(false)
	}()
	return off
}

// rebootingChange is a change to r's pool that its plan drains and reboots
// for: a file no NodeDisruptionPolicy claims.
func rebootingChange(t *testing.T, r *rollout) {
	motd := builder.MachineConfig("60-"+r.pool+"-motd").WithFileMap(map[string]string{"/etc/motd": "hello\n"}, 0o644).Build()
	motd.Labels = map[string]string{ndpmcv1.RoleLabel: r.pool}
	if err := k8s.Create(context.Background(), motd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), motd) })
}

// A paused pool starts nothing, but its node that does not come back
// from its reboot is still marked Degraded once the rebootTimeout runs
// out, while the pool stays paused; unpaused and powered on, the node
// finishes.
func TestRolloutMarksALostNodeWhilePaused(t *testing.T) {
	r := newRollout(t, "roll-paused", 1, intstr.FromInt(1))
	a := r.target()
	lost := r.hosts[0]
	pol := &v1alpha1.RolloutPolicy{ObjectMeta: metav1.ObjectMeta{Name: "roll-paused"}, Spec: v1alpha1.RolloutPolicySpec{
		PoolSelector: metav1.LabelSelector{MatchLabels: r.labelPool()},
		Failures:     &v1alpha1.RolloutFailures{RebootTimeout: &metav1.Duration{Duration: 3 * time.Second}},
	}}
	if err := k8s.Create(context.Background(), pol); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), pol) })
	off := lostAtReboot(t, lost)
	rebootingChange(t, r)
	b := r.newTarget(a)
	testkit.Eventually(t, lost.name+" sent to "+b, func() (bool, string) {
		return len(r.sentTo(b)) == 1, ""
	})
	r.setPaused(true)
	<-off
	testkit.Eventually(t, "the lost node marked Degraded while the pool is paused", func() (bool, string) {
		n := lost.node()
		s, why := n.Annotations[ndpmcv1.StateAnnotation], n.Annotations[ndpmcv1.ReasonAnnotation]
		return s == ndpmcv1.StateDegraded && strings.HasPrefix(why, "RebootTimeout: not Ready for 3s of its update, since "), fmt.Sprintf("state %s: %s", s, why)
	}, testkit.Within(2*time.Minute))
	if !r.mcp().Spec.Paused {
		t.Fatal("the pool is no longer paused")
	}

	r.setPaused(false)
	lost.setBootID("boot-2")
	lost.setReady(true)
	lost.start()
	r.waitDone(b, 3*time.Minute)
	if lost.reboots() != 1 {
		t.Errorf("%s: %d reboot requests, want 1", lost.name, lost.reboots())
	}
}
