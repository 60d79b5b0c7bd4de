package render

import (
	"context"
	"errors"
	"fmt"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/scheme"
)

func TestPoolView(t *testing.T) {
	mc := func(name, role string, extra ...string) *ndpmcv1.MachineConfig {
		l := map[string]string{ndpmcv1.RoleLabel: role}
		for i := 0; i+1 < len(extra); i += 2 {
			l[extra[i]] = extra[i+1]
		}
		return &ndpmcv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}
	}
	node := func(name, role, current string) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"node-role.kubernetes.io/" + role: ""}}}
		if current != "" {
			n.Annotations = map[string]string{ndpmcv1.CurrentConfigAnnotation: current}
		}
		return n
	}
	compact := node("c1", "master", "rendered-master-1")
	compact.Labels["node-role.kubernetes.io/worker"] = ""
	objs := []client.Object{
		mc("50-b", "worker"), mc("00-a", "worker"), mc("50-master", "master"),
		mc("rendered-worker-1", "worker", ndpmcv1.RenderedForLabel, "worker"),
		node("w1", "worker", "rendered-worker-1"), node("w2", "worker", "rendered-worker-1"),
		node("w3", "worker", "rendered-worker-0"), node("w4", "worker", ""), node("m1", "master", "rendered-master-1"),
		// A compact cluster's node is labelled master and worker: the
		// master pool manages it (nodepool.Primary), not the worker pool.
		compact,
		&mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "master"}, Spec: mcfgv1.MachineConfigPoolSpec{
			NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/master": ""}},
		}},
	}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(objs...).Build()
	pool := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "worker"}, Spec: mcfgv1.MachineConfigPoolSpec{
		MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{ndpmcv1.RoleLabel: "worker"}},
		NodeSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/worker": ""}},
	}}
	ctx := context.Background()
	v := NewPoolView(c, pool)

	srcs, err := v.Sources(ctx)
	if err != nil || len(srcs) != 2 || srcs[0].Name != "00-a" || srcs[1].Name != "50-b" {
		t.Fatalf("sources: %v %v", names(srcs), err)
	}
	groups, err := v.NodesByConfig(ctx)
	if err != nil || len(groups) != 3 || len(groups["rendered-worker-1"]) != 2 || len(groups["rendered-worker-0"]) != 1 || len(groups[""]) != 1 {
		t.Fatalf("nodes by config: %v %v", groups, err)
	}
	masterView := NewPoolView(c, &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "master"}, Spec: mcfgv1.MachineConfigPoolSpec{
		NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/master": ""}},
	}})
	if masters, err := masterView.Nodes(ctx); err != nil || len(masters) != 2 {
		t.Fatalf("the master pool's nodes: %d, %v; want m1 and c1", len(masters), err)
	}
	if single, err := v.SingleNode(ctx); err != nil || single {
		t.Errorf("single node: %t %v", single, err)
	}
	v.SingleNodeFunc = func(context.Context) (bool, error) { return true, nil }
	if single, _ := v.SingleNode(ctx); !single {
		t.Error("SingleNodeFunc is not used")
	}

	var selErr *SelectorError
	noSel := &PoolView{Pool: &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "bad"}}, Reader: c}
	if _, err := noSel.Sources(ctx); !errors.As(err, &selErr) || selErr.Field != "spec.machineConfigSelector" {
		t.Errorf("a pool without machineConfigSelector: %v", err)
	}
	// A pool without nodeSelector selects no node.
	if groups, err := noSel.NodesByConfig(ctx); err != nil || len(groups) != 0 {
		t.Errorf("a pool without nodeSelector: %v %v", groups, err)
	}
	badNodes := &PoolView{Pool: &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Spec: mcfgv1.MachineConfigPoolSpec{
		NodeSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Bogus"}}}}}, Reader: c}
	if _, err := badNodes.Nodes(ctx); !errors.As(err, &selErr) || selErr.Field != "spec.nodeSelector" {
		t.Errorf("an invalid nodeSelector: %v", err)
	}
}

func names(mcs []*ndpmcv1.MachineConfig) []string {
	out := make([]string, len(mcs))
	for i, mc := range mcs {
		out[i] = mc.Name
	}
	return out
}

func TestSingleNode(t *testing.T) {
	for _, tc := range []struct {
		nodes int
		want  bool
	}{{0, false}, {1, true}, {2, false}, {3, false}} {
		var objs []client.Object
		for i := range tc.nodes {
			objs = append(objs, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n%d", i)}})
		}
		c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(objs...).Build()
		if got, err := SingleNode(context.Background(), c); err != nil || got != tc.want {
			t.Errorf("%d nodes: single %t, %v; want %t", tc.nodes, got, err, tc.want)
		}
	}
}
