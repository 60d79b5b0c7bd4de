package nodepool

import (
	"errors"
	"fmt"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The MCO's test helpers select nodes by these labels
// (test/helpers: MasterSelector, WorkerSelector, InfraSelector).
func selector(label string) *metav1.LabelSelector {
	return metav1.AddLabelToSelector(&metav1.LabelSelector{}, label, "")
}

func pool(name, label string) *mcfgv1.MachineConfigPool {
	return &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: mcfgv1.MachineConfigPoolSpec{NodeSelector: selector(label)}}
}

var (
	master = pool("master", "node-role/master")
	worker = pool("worker", "node-role/worker")
	infra  = pool("infra", "node-role/infra")
)

func node(name string, labels map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func TestPrimary(t *testing.T) {
	tests := []struct {
		name   string
		pools  []*mcfgv1.MachineConfigPool
		labels map[string]string
		want   string // "" for none
		// conflict: no pool manages the node, and it is an error.
		conflict bool
	}{
		{name: "MCO TestGetPrimaryPoolForNode case#0: no role label, no pool",
			pools: []*mcfgv1.MachineConfigPool{master, worker}, labels: map[string]string{"node-role": ""}},
		{name: "MCO TestGetPrimaryPoolForNode case#1: master",
			pools: []*mcfgv1.MachineConfigPool{master, worker}, labels: map[string]string{"node-role/master": ""}, want: "master"},
		{name: "MCO TestGetPrimaryPoolForNode case#2: master wins over worker",
			pools: []*mcfgv1.MachineConfigPool{master, worker}, labels: map[string]string{"node-role/master": "", "node-role/worker": ""}, want: "master"},
		{name: "MCO TestGetPrimaryPoolForNode case#3: a custom pool wins over worker",
			pools: []*mcfgv1.MachineConfigPool{master, worker, infra}, labels: map[string]string{"node-role/worker": "", "node-role/infra": ""}, want: "infra"},
		{name: "MCO TestGetPrimaryPoolForNode case#4: master wins over a custom pool (OCPBUGS-2177)",
			pools: []*mcfgv1.MachineConfigPool{master, worker, infra}, labels: map[string]string{"node-role/master": "", "node-role/infra": ""}, want: "master"},
		{name: "MCO TestGetPrimaryPoolForNode case#5: two custom pools",
			pools:  []*mcfgv1.MachineConfigPool{master, worker, infra, pool("infra2", "node-role/infra2")},
			labels: map[string]string{"node-role/infra": "", "node-role/infra2": ""}, conflict: true},
		{name: "MCO TestGetPrimaryPoolForNode case#6: two custom pools with one selector",
			pools:  []*mcfgv1.MachineConfigPool{pool("test-cluster-pool-1", "node-role"), pool("test-cluster-pool-2", "node-role")},
			labels: map[string]string{"node-role": ""}, conflict: true},
		{name: "MCO TestGetPrimaryPoolForNode case#7: a Windows worker is never managed",
			pools: []*mcfgv1.MachineConfigPool{worker}, labels: map[string]string{"node-role/master": "", "node-role/worker": "", corev1.LabelOSStable: "windows"}},
		{name: "master, worker and a custom pool: master",
			pools: []*mcfgv1.MachineConfigPool{infra, worker, master}, labels: map[string]string{"node-role/master": "", "node-role/worker": "", "node-role/infra": ""}, want: "master"},
		{name: "a custom pool alone", pools: []*mcfgv1.MachineConfigPool{infra}, labels: map[string]string{"node-role/infra": ""}, want: "infra"},
		{name: "a Linux node is managed", pools: []*mcfgv1.MachineConfigPool{worker}, labels: map[string]string{"node-role/worker": "", corev1.LabelOSStable: "linux"}, want: "worker"},
		{name: "an empty selector selects nothing",
			pools:  []*mcfgv1.MachineConfigPool{{ObjectMeta: metav1.ObjectMeta{Name: "all"}, Spec: mcfgv1.MachineConfigPoolSpec{NodeSelector: &metav1.LabelSelector{}}}, worker},
			labels: map[string]string{"node-role/worker": ""}, want: "worker"},
		{name: "a missing selector selects nothing",
			pools: []*mcfgv1.MachineConfigPool{{ObjectMeta: metav1.ObjectMeta{Name: "none"}}}, labels: map[string]string{"node-role/worker": ""}},
		{name: "an invalid selector of any pool: no node is managed",
			pools: []*mcfgv1.MachineConfigPool{worker, {ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Spec: mcfgv1.MachineConfigPoolSpec{NodeSelector: &metav1.LabelSelector{
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Bogus"}}}}}},
			labels: map[string]string{"node-role/worker": ""}, conflict: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Primary(node("node-0", tc.labels), tc.pools)
			var conflict *ConflictError
			if tc.conflict != errors.As(err, &conflict) || (err != nil && conflict == nil) {
				t.Fatalf("error %v, want a conflict: %t", err, tc.conflict)
			}
			name := ""
			if got != nil {
				name = got.Name
			}
			if name != tc.want {
				t.Errorf("primary pool %q, want %q", name, tc.want)
			}
		})
	}
}

func TestForNodeOrder(t *testing.T) {
	// A custom pool's node that is also a worker has the worker pool as its
	// second pool (the MCO renders nothing from it, but reports it).
	got, err := ForNode(node("n", map[string]string{"node-role/worker": "", "node-role/infra": ""}), []*mcfgv1.MachineConfigPool{worker, infra, master})
	if err != nil || len(got) != 2 || got[0].Name != "infra" || got[1].Name != "worker" {
		t.Fatalf("pools %v, %v; want infra, worker", poolNames(got), err)
	}
	got, err = ForNode(node("n", map[string]string{"node-role/master": "", "node-role/worker": "", "node-role/infra": ""}), []*mcfgv1.MachineConfigPool{worker, infra, master})
	if err != nil || len(got) != 2 || got[0].Name != "master" || got[1].Name != "worker" {
		t.Fatalf("pools %v, %v; want master, worker", poolNames(got), err)
	}
}

func poolNames(ps []*mcfgv1.MachineConfigPool) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Name
	}
	return out
}

// nodeSet is the MCO's newMixedNodeSet: n nodes of each label set.
func nodeSet(n int, sets ...map[string]string) []*corev1.Node {
	var out []*corev1.Node
	for i, labels := range sets {
		for j := 0; j < n; j++ {
			out = append(out, node(fmt.Sprintf("node-%d-%d", i, j), labels))
		}
	}
	return out
}

func TestMembers(t *testing.T) {
	windows := node("windowsNode", map[string]string{corev1.LabelOSStable: "windows", "node-role/worker": ""})
	tests := []struct {
		name          string
		pool          *mcfgv1.MachineConfigPool
		pools         []*mcfgv1.MachineConfigPool // every pool; pool alone when nil
		nodes         []*corev1.Node
		members       int
		unmanaged     int
		selectorError bool
	}{
		{name: "MCO TestGetNodesForPool case#0: no node has the master label",
			pool: master, nodes: nodeSet(3, map[string]string{"node-role": ""}, map[string]string{"node-role/worker": ""})},
		{name: "MCO TestGetNodesForPool case#1: the masters",
			pool: master, nodes: nodeSet(2, map[string]string{"node-role/master": ""}, map[string]string{"node-role/worker": ""}), members: 2},
		{name: "MCO TestGetNodesForPool case#2: infra",
			pool: infra, nodes: nodeSet(3, map[string]string{"node-role/master": ""}, map[string]string{"node-role/worker": "", "node-role/infra": ""}), members: 3},
		{name: "MCO TestGetNodesForPool case#3: Windows and Linux workers, only Linux managed",
			pool: worker, nodes: append(nodeSet(3, map[string]string{"node-role/master": ""}, map[string]string{"node-role/worker": "", "node-role/infra": ""}), windows), members: 3},
		{name: "MCO TestGetNodesForPool case#4: a single Windows node",
			pool: worker, nodes: []*corev1.Node{windows}},
		{name: "infra's workers are not the worker pool's",
			pool: worker, pools: []*mcfgv1.MachineConfigPool{master, worker, infra},
			nodes: nodeSet(2, map[string]string{"node-role/worker": ""}, map[string]string{"node-role/worker": "", "node-role/infra": ""}), members: 2},
		{name: "compact cluster: the masters are not the worker pool's",
			pool: worker, pools: []*mcfgv1.MachineConfigPool{master, worker},
			nodes: nodeSet(3, map[string]string{"node-role/master": "", "node-role/worker": ""})},
		{name: "two custom pools: unmanaged, reported by each",
			pool: infra, pools: []*mcfgv1.MachineConfigPool{worker, infra, pool("gpu", "node-role/gpu")},
			nodes: nodeSet(1, map[string]string{"node-role/worker": "", "node-role/infra": "", "node-role/gpu": ""}, map[string]string{"node-role/infra": ""}), members: 1, unmanaged: 1},
		{name: "an invalid selector of the pool itself",
			pool: &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Spec: mcfgv1.MachineConfigPoolSpec{NodeSelector: &metav1.LabelSelector{
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Bogus"}}}}},
			nodes: nodeSet(1, map[string]string{"a": ""}), selectorError: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pools := tc.pools
			if pools == nil {
				pools = []*mcfgv1.MachineConfigPool{tc.pool}
			}
			members, unmanaged, err := Members(tc.pool, pools, tc.nodes)
			if (err != nil) != tc.selectorError {
				t.Fatalf("error %v, want one: %t", err, tc.selectorError)
			}
			if len(members) != tc.members || len(unmanaged) != tc.unmanaged {
				t.Errorf("%d members, %d unmanaged; want %d, %d", len(members), len(unmanaged), tc.members, tc.unmanaged)
			}
			for _, u := range unmanaged {
				if u.Err == nil || u.Err.Node != u.Node.Name {
					t.Errorf("unmanaged node %s without its reason: %v", u.Node.Name, u.Err)
				}
			}
		})
	}
}

func TestConflictErrorNamesNodeAndPools(t *testing.T) {
	_, err := Primary(node("n1", map[string]string{"node-role/infra": "", "node-role/gpu": ""}), []*mcfgv1.MachineConfigPool{pool("gpu", "node-role/gpu"), infra})
	if err == nil || err.Error() != "node n1 belongs to 2 custom pools (gpu, infra): no pool manages it until it is in one at most" {
		t.Errorf("error: %v", err)
	}
}

// BenchmarkMembers is what every plan, rollout and pool status reconcile
// of a 1,000-node cluster (5 pools of 200) asks: one pool's members.
func BenchmarkMembers(b *testing.B) {
	var pools []*mcfgv1.MachineConfigPool
	var nodes []*corev1.Node
	for p := range 5 {
		name := fmt.Sprintf("pool-%d", p)
		pools = append(pools, &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: mcfgv1.MachineConfigPoolSpec{
			NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"ndp.dev/pool": name}}}})
		for n := range 200 {
			nodes = append(nodes, node(fmt.Sprintf("%s-%d", name, n), map[string]string{"ndp.dev/pool": name, "node-role.kubernetes.io/worker": "", corev1.LabelOSStable: "linux"}))
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		members, _, err := Members(pools[0], pools, nodes[:200])
		if err != nil || len(members) != 200 {
			b.Fatal(len(members), err)
		}
	}
}
