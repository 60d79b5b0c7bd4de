package cluster

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/internal/testkit"
)

// A replica that has just started — after a crash, a restart of the API
// server, or to take over — plans only once its policy controller has
// loaded every NodeDisruptionPolicy. Found by make faults: both replicas
// restarted after the API server did, the new leader planned a chrony
// change before the chrony policy was loaded, as an unclaimed change (a
// drain and a reboot), and the node it sent went on to reboot with it.
// Here the policy's Rego tests take seconds, so a replica that did not
// wait would plan, and store, the reboot first.
func TestFreshReplicaPlansWithEveryPolicy(t *testing.T) {
	a := basePool(t, "fresh").Spec.Configuration.Name
	create(t, node("fresh-0", "fresh", a))
	// -race makes OPA's evaluation five to six times slower: a sixth of the
	// work keeps the check as long.
	n := 600
	if testkit.RaceDetector {
		n = 250
	}
	slow := v1alpha1.NodeDisruptionPolicySpec{
		Rego: `package ndp.policy.fresh_chrony

claims contains {"change": c.id, "match": "/etc/chrony.conf", "actions": [{"type": "Restart", "restart": {"serviceName": "chronyd.service"}}]} if {
	some c in input.changes
	c.path == "/etc/chrony.conf"
}
`,
		// About a second of work on an idle machine (a few under load, within
		// the 5s a test may take), little memory: the check of this policy is slow.
		RegoTests: fmt.Sprintf(`package ndp.policy.fresh_chrony_test

test_slow if {
	every i in numbers.range(1, %[1]d) {
		every j in numbers.range(1, %[1]d) {
			i + j > 1
		}
	}
}
`, n),
	}
	create(t, newPolicy("fresh-chrony", slow))
	waitCondition(t, "fresh-chrony", v1alpha1.ConditionAccepted, metav1.ConditionTrue)

	// No controller runs while the change lands; then a fresh replica.
	withoutSuiteReplica(t)
	// Two changes: one the default policy claims (None), one fresh-chrony
	// claims (Restart). Whichever of the two the fresh replica loads first,
	// a plan made before it has both is a reboot.
	create(t, sourceMC("50-fresh-chrony", "fresh").WithFile("/etc/chrony.conf", "pool fresh").WithFile("/var/lib/kubelet/config.json", "{}").Build())
	started := time.Now()
	_, set, _ := takeoverReplica(t, 4*time.Second)
	b := waitPool(t, "fresh", func(p *mcfgv1.MachineConfigPool) bool { return len(p.Spec.Configuration.Source) == 3 }).Spec.Configuration.Name

	// Every plan the target's status ever holds, from a poll every 50ms.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var seen []ndpmcv1.PostConfigActions
	go func() {
		for ctx.Err() == nil {
			var mc ndpmcv1.MachineConfig
			if err := k8s.Get(ctx, client.ObjectKey{Name: b}, &mc); err == nil {
				mu.Lock()
				seen = append(seen, mc.Status.PostConfigActions...)
				mu.Unlock()
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	testkit.Until(t, "the fresh replica plans the chrony change as a restart", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range seen {
			if p.From == a && len(p.Actions) == 1 && p.Actions[0].Type == "Restart" {
				return true
			}
		}
		return false
	})
	cancel()
	mu.Lock()
	defer mu.Unlock()
	for _, p := range seen {
		if p.Reboot || p.Drain {
			t.Errorf("the fresh replica planned before it had loaded every policy: %+v", p)
			break
		}
	}
	if _, ok := set.Get("fresh-chrony"); !ok {
		t.Error("the fresh replica has not loaded fresh-chrony")
	}
	t.Logf("planned %s after the fresh replica started", time.Since(started).Round(time.Millisecond))
}
