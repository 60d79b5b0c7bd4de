package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/ndp-dev/ndp/test/framework"
)

// suite is what the scenarios share: the cluster, and what one leaves the
// next.
type suite struct {
	c   *framework.Cluster
	ctx context.Context
	// first is the worker pool's first rendering; second, without worker
	// VMs, the chrony change's.
	first, second string
}

// scenario is one subtest of TestCluster.
type scenario struct {
	name string
	run  func(t testing.TB)
}

// nodeScenarios run without worker VMs (NDP_CLUSTER_VMS=0), in order.
func (s *suite) nodeScenarios() []scenario {
	return []scenario{{"pool", s.nodePool}, {"leader", s.leader}, {"preview", s.preview}, {"chrony", s.nodeChrony}, {"drain", s.drain}, {"token", s.token}}
}

// vmScenarios run with the worker VMs, in order, after the pool's first
// rollout (vmPool); reboot carries the OS update (os-update), apt a
// package update (before rollout: no workload or window on the workers
// yet).
func (s *suite) vmScenarios() []scenario {
	return []scenario{{"leader", s.leader}, {"preview", s.preview}, {"chrony", s.chronyOnVMs}, {"kubelet", s.kubeletConfigOnVMs},
		{"apt", s.aptOnVMs}, {"rollout", s.rolloutControlsOnVMs}, {"reboot", s.rebootOnVMs}, {"upgrade", s.upgradeOnVMs}}
}

// TestCluster is make cluster: the cluster brought up once, then the
// scenarios.
func TestCluster(t *testing.T) {
	framework.RequireEnabled(t)
	chosen, err := chosenScenarios()
	if err != nil {
		t.Fatal(err)
	}
	if n := framework.WorkerCount(); n == 0 {
		if os.Getenv("NDP_CLUSTER_SCENARIOS") != "" {
			t.Fatal("NDP_CLUSTER_SCENARIOS chooses among the worker-VM scenarios: the smaller scenario (NDP_CLUSTER_VMS=0) runs whole")
		}
		fmt.Println("Scenario: without worker VMs, as asked (NDP_CLUSTER_VMS=0, make cluster VMS=0): the scenarios run on the namespace's own node, without systemd as PID 1.")
	} else {
		fmt.Printf("Scenario: the full one, with %d worker VMs (make cluster VMS=0 runs the smaller one without them).\n", n)
		if only := os.Getenv("NDP_CLUSTER_SCENARIOS"); only != "" {
			fmt.Printf("Only the worker-VM scenarios %s after the pool's first rollout, as asked (NDP_CLUSTER_SCENARIOS, make cluster SCENARIOS=...).\n", only)
		}
	}
	c := framework.Start(t)
	s := &suite{c: c, ctx: c.Context()}
	if len(c.Workers) == 0 {
		for _, sc := range s.nodeScenarios() {
			c.Run(t, sc.name, sc.run)
		}
		return
	}
	c.Run(t, "pool", s.vmPool)
	for _, sc := range s.vmScenarios() {
		c.Run(t, sc.name, func(t testing.TB) {
			if !chosen[sc.name] {
				t.Skipf("scenario %s skipped (NDP_CLUSTER_SCENARIOS=%s)", sc.name, os.Getenv("NDP_CLUSTER_SCENARIOS"))
			}
			sc.run(t)
		})
	}
}

// chosenScenarios reads NDP_CLUSTER_SCENARIOS (make cluster SCENARIOS=...),
// a comma-separated subset of the worker-VM scenarios, for development:
// empty runs them all. The pool's first rollout always runs; each scenario
// stands on its own after it.
func chosenScenarios() (map[string]bool, error) {
	var names []string
	for _, sc := range (&suite{}).vmScenarios() {
		names = append(names, sc.name)
	}
	env := strings.TrimSpace(os.Getenv("NDP_CLUSTER_SCENARIOS"))
	chosen := map[string]bool{}
	if env == "" {
		for _, n := range names {
			chosen[n] = true
		}
		return chosen, nil
	}
	for _, n := range strings.Split(env, ",") {
		n = strings.TrimSpace(n)
		if n == "os-update" {
			n = "reboot"
		}
		if !slices.Contains(names, n) {
			return nil, fmt.Errorf("NDP_CLUSTER_SCENARIOS: no scenario %q (the worker-VM scenarios: %s, and os-update, the reboot one)", n, strings.Join(names, ", "))
		}
		chosen[n] = true
	}
	return chosen, nil
}

// TestChosenScenarios: make cluster SCENARIOS=... reads as the names say.
func TestChosenScenarios(t *testing.T) {
	t.Setenv("NDP_CLUSTER_SCENARIOS", "")
	if all, err := chosenScenarios(); err != nil || len(all) != len((&suite{}).vmScenarios()) {
		t.Fatalf("unset: %v, %v; want every scenario", all, err)
	}
	os.Setenv("NDP_CLUSTER_SCENARIOS", "os-update, chrony")
	if got, err := chosenScenarios(); err != nil || len(got) != 2 || !got["reboot"] || !got["chrony"] {
		t.Fatalf("os-update,chrony: %v, %v", got, err)
	}
	os.Setenv("NDP_CLUSTER_SCENARIOS", "reboot,nope")
	if _, err := chosenScenarios(); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("an unknown name: %v", err)
	}
}
