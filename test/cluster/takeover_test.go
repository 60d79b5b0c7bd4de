package cluster

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/controllers"
	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/planner/engine"
	"github.com/ndp-dev/ndp/policyset"
)

// takeoverReplica is one ndp-controller replica of this test's own
// election, holding the lease for lease when it leads (the others wait that
// long after its last renewal: the holder's duration is in the Lease); it
// does not give its lease up when stopped, as a crashed process would not.
func takeoverReplica(t *testing.T, lease time.Duration) (manager.Manager, *policyset.ActivePolicies, func()) {
	t.Helper()
	opts := replicaOptions("ndp-takeover-test")
	opts.LeaseDuration, opts.RenewDeadline, opts.RetryPeriod = ptr.To(lease), ptr.To(lease*3/4), ptr.To(500*time.Millisecond)
	mgr, err := ctrl.NewManager(restConfig, opts)
	if err != nil {
		t.Fatal(err)
	}
	set, err := controllers.SetupWithManager(mgr, engine.Options{}, controllerOptions)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = mgr.Start(ctx); close(done) }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	}
	t.Cleanup(stop)
	return mgr, set, stop
}

// withoutSuiteReplica stops the suite's replica (and, with it, the policy
// webhook it serves) until the test ends, so that only the test's own
// replicas act meanwhile.
func withoutSuiteReplica(t *testing.T) {
	t.Helper()
	restore := withoutPolicyWebhook(t)
	stopReplica()
	t.Cleanup(func() {
		if err := startReplica(); err != nil {
			t.Error(err)
		}
		restore()
	})
}

// waitElected waits, within a bound, for a replica to lead.
func waitElected(t *testing.T, mgr manager.Manager, who string, within time.Duration) {
	t.Helper()
	select {
	case <-mgr.Elected():
	case <-time.After(within):
		t.Fatalf("after %s: the %s replica was not elected", within, who)
	}
}

// standbyLease is how long the stopped leader's lease holds the standby
// back: long enough for the standby to activate a policy first on a loaded
// machine, so that the check sees a standby, not a new leader.
const standbyLease = 30 * time.Second

// A standby replica computes policies for its own webhook but writes
// nothing; when the leader dies, it takes over and writes the statuses it
// computed while standing by.
func TestStandbyTakesOverAndWritesStatuses(t *testing.T) {
	// Only this test's replicas may write statuses meanwhile.
	withoutSuiteReplica(t)

	leader, _, stopLeader := takeoverReplica(t, standbyLease)
	waitElected(t, leader, "first", testkit.Patience)
	standby, standbySet, _ := takeoverReplica(t, 4*time.Second)
	stopLeader() // its lease holds the standby back for standbyLease
	stopped := time.Now()

	create(t, newPolicy("takeover", chronySpec()))
	testkit.Until(t, "the standby activates the new policy", func() bool { _, ok := standbySet.Get("takeover"); return ok },
		testkit.Within(standbyLease/2))
	var p v1alpha1.NodeDisruptionPolicy
	if err := k8s.Get(context.Background(), client.ObjectKey{Name: "takeover"}, &p); err != nil {
		t.Fatal(err)
	}
	// The premise: the standby does not lead yet, so whatever the status
	// holds, a standby wrote.
	select {
	case <-standby.Elected():
		t.Fatalf("the standby was elected %s after the leader stopped, before the check (the lease is %s): its writes cannot be told apart", time.Since(stopped).Round(time.Millisecond), standbyLease)
	default:
	}
	if len(p.Status.Conditions) != 0 {
		t.Errorf("a standby wrote the status: %+v", p.Status)
	}
	waitElected(t, standby, "standby", standbyLease+testkit.Patience)
	got := waitCondition(t, "takeover", v1alpha1.ConditionAccepted, metav1.ConditionTrue)
	if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionActive); c == nil || c.Status != metav1.ConditionTrue || got.Status.Revision == "" {
		t.Errorf("after the takeover: %+v", got.Status)
	}
}
