package cluster

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/planner/policy"
)

const (
	benchPools   = 50
	benchSources = 3 // old configs per pool, one per node
	benchPolicy  = "bench-toggle"
)

// The framework calls a benchmark more than once; the cluster is set up the
// first time.
var benchSetup sync.Once

// setupReplanBench creates 50 pools, each with a source MachineConfig and
// three nodes on three different old rendered configs, and a policy.
func setupReplanBench(b *testing.B) {
	ctx := context.Background()
	for i := range benchPools {
		pool := fmt.Sprintf("bench%02d", i)
		benchMust(b, k8s.Create(ctx, machineConfigPool(pool)))
		benchMust(b, k8s.Create(ctx, sourceMC("00-"+pool+"-base", pool).WithFile("/etc/chrony.conf", "pool "+pool).Build()))
		for k := range benchSources {
			old := fmt.Sprintf("rendered-%s-old%d", pool, k)
			mc := renderedMC(old, pool).WithFile(fmt.Sprintf("/etc/bench/%d", k), "old").Build()
			benchMust(b, k8s.Create(ctx, mc))
			benchMust(b, k8s.Create(ctx, node(fmt.Sprintf("%s-%d", pool, k), pool, old)))
		}
	}
	benchMust(b, k8s.Create(ctx, newPolicy(benchPolicy, v1alpha1.NodeDisruptionPolicySpec{Files: []operatorv1.NodeDisruptionPolicySpecFile{{
		Path: "/etc/chrony.conf", Actions: []operatorv1.NodeDisruptionPolicySpecAction{policy.RestartAction("chronyd.service")}}}})))
	waitReplanned(b, revisionAfter(b, 1))
}

func benchMust(b *testing.B, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}

// revisionAfter waits until the policy's generation is accepted and returns
// the active set's revision.
func revisionAfter(b *testing.B, gen int64) string {
	for {
		var p v1alpha1.NodeDisruptionPolicy
		benchMust(b, k8s.Get(context.Background(), client.ObjectKey{Name: benchPolicy}, &p))
		if p.Status.ObservedGeneration == gen && p.Status.Revision != "" {
			return active.Planner().Engine.Revision()
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitReplanned waits until every bench pool's target holds benchSources
// plans made with revision rev.
func waitReplanned(b *testing.B, rev string) {
	ctx := context.Background()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		var pools mcfgv1.MachineConfigPoolList
		benchMust(b, k8s.List(ctx, &pools))
		done := 0
		for _, p := range pools.Items {
			if !strings.HasPrefix(p.Name, "bench") || p.Spec.Configuration.Name == "" {
				continue
			}
			var mc ndpmcv1.MachineConfig
			if err := k8s.Get(ctx, client.ObjectKey{Name: p.Spec.Configuration.Name}, &mc); err != nil || len(mc.Status.PostConfigActions) != benchSources {
				continue
			}
			current := true
			for _, pca := range mc.Status.PostConfigActions {
				current = current && pca.PolicyRevision == rev
			}
			if current {
				done++
			}
		}
		if done == benchPools {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d pools re-planned with %s", done, benchPools, rev)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// BenchmarkReplanAfterPolicyChange times, against the real API server, how
// long the controllers take from a policy change until every pool's target
// holds plans made with the new policy revision: 50 pools × 3 source
// configs = 150 plans per iteration.
func BenchmarkReplanAfterPolicyChange(b *testing.B) {
	benchSetup.Do(func() { setupReplanBench(b) })
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var pol v1alpha1.NodeDisruptionPolicy
		benchMust(b, k8s.Get(ctx, client.ObjectKey{Name: benchPolicy}, &pol))
		prio := pol.EffectivePriority() + 1 // any change gives a new revision
		pol.Spec.Priority = &prio
		benchMust(b, k8s.Update(ctx, &pol))
		waitReplanned(b, revisionAfter(b, pol.Generation))
	}
	b.ReportMetric(float64(benchPools*benchSources)*float64(b.N)/b.Elapsed().Seconds(), "plans/s")
}
