package render

import (
	"context"
	"sort"

	corev1 "k8s.io/api/core/v1"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
)

// WaitingGroup is the nodes of a pool that run one config other than the
// pool's target: they wait for the plan from From to the target.
type WaitingGroup struct {
	From  string
	Nodes []*corev1.Node
	// Updating nodes have started executing the stored plan to the target:
	// that plan stands for the whole group while they do
	// (ndpmcv1.MachineConfigStatus.StandingPlan).
	Updating int
}

// Waiting groups the pool's nodes that must move to the pool's target by
// the config they run (PlanGroups). It is the half of the plan rule that
// says which plans a pool needs; the plan controller writes them and the
// what-if compares them, from this one function.
func (v *PoolView) Waiting(ctx context.Context) ([]WaitingGroup, error) {
	byConfig, err := v.NodesByConfig(ctx)
	if err != nil {
		return nil, err
	}
	return PlanGroups(byConfig, v.Pool.Spec.Configuration.Name), nil
}

// PlanGroups groups nodes (by their current config) that must move to
// target: every config but target itself and "" (a node ndp has not seen
// run a config yet has no plan to follow). Largest group first, then by
// config name. Nothing waits for a pool with no target.
func PlanGroups(byConfig map[string][]*corev1.Node, target string) []WaitingGroup {
	if target == "" {
		return nil
	}
	var out []WaitingGroup
	for from, nodes := range byConfig {
		if from == "" || from == target || len(nodes) == 0 {
			continue
		}
		g := WaitingGroup{From: from, Nodes: nodes}
		for _, n := range nodes {
			if ndpmcv1.ExecutingPlanTo(n.Annotations, target) {
				g.Updating++
			}
		}
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool {
		if len(out[i].Nodes) != len(out[j].Nodes) {
			return len(out[i].Nodes) > len(out[j].Nodes)
		}
		return out[i].From < out[j].From
	})
	return out
}
