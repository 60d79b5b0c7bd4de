package render

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/ndp-dev/ndp/apis/scheme"
)

func TestLabelIndexKey(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sel   metav1.LabelSelector
		want  string // "" for none
		exact bool
	}{
		{"matchLabels", metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/worker": ""}}, "node-role.kubernetes.io/worker=", true},
		{"the first of two labels, by key", metav1.LabelSelector{MatchLabels: map[string]string{"b": "2", "a": "1"}}, "a=1", false},
		{"In one value", metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "zone", Operator: metav1.LabelSelectorOpIn, Values: []string{"z1"}}}}, "zone=z1", true},
		{"In two values: the key", metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "zone", Operator: metav1.LabelSelectorOpIn, Values: []string{"z1", "z2"}}}}, "zone", false},
		{"Exists", metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "ndp.dev/scale", Operator: metav1.LabelSelectorOpExists}}}, "ndp.dev/scale", true},
		{"a value wins over an Exists before it", metav1.LabelSelector{
			MatchLabels:      map[string]string{"role": "infra"},
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: metav1.LabelSelectorOpExists}},
		}, "role=infra", false},
		{"NotIn only", metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "zone", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"z1"}}}}, "", false},
		{"DoesNotExist only", metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "gpu", Operator: metav1.LabelSelectorOpDoesNotExist}}}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sel, err := metav1.LabelSelectorAsSelector(&tc.sel)
			if err != nil {
				t.Fatal(err)
			}
			got, exact, ok := labelIndexKey(sel)
			if ok != (tc.want != "") || got != tc.want || exact != tc.exact {
				t.Errorf("labelIndexKey(%s) = %q, exact %t, %t; want %q, exact %t", sel, got, exact, ok, tc.want, tc.exact)
			}
		})
	}
}

// TestIndexedPoolNodes: a pool's nodes read from a Node informer's index
// (client-go's, with NodeLabelIndex) are the nodes read by matching every
// node's labels, for every kind of selector.
func TestIndexedPoolNodes(t *testing.T) {
	var objs []client.Object
	for i := range 24 {
		l := map[string]string{"zone": fmt.Sprintf("z%d", i%3)}
		switch i % 4 {
		case 0:
			l["node-role.kubernetes.io/worker"] = ""
		case 1:
			l["node-role.kubernetes.io/worker"] = ""
			l["gpu"] = "a100"
		case 2:
			l["node-role.kubernetes.io/infra"] = ""
		case 3:
			l["node-role.kubernetes.io/master"] = ""
		}
		objs = append(objs, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n%02d", i), Labels: l}})
	}
	plain := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(objs...).Build()
	index := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{NodeLabelIndex: nodeLabelKeys})
	for _, o := range objs {
		if err := index.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	req := func(key string, op metav1.LabelSelectorOperator, values ...string) metav1.LabelSelectorRequirement {
		return metav1.LabelSelectorRequirement{Key: key, Operator: op, Values: values}
	}
	for name, sel := range map[string]metav1.LabelSelector{
		"worker":            {MatchLabels: map[string]string{"node-role.kubernetes.io/worker": ""}},
		"gpu workers":       {MatchLabels: map[string]string{"node-role.kubernetes.io/worker": "", "gpu": "a100"}},
		"zone In one":       {MatchExpressions: []metav1.LabelSelectorRequirement{req("zone", metav1.LabelSelectorOpIn, "z1")}},
		"zone In two":       {MatchExpressions: []metav1.LabelSelectorRequirement{req("zone", metav1.LabelSelectorOpIn, "z1", "z2")}},
		"gpu Exists":        {MatchExpressions: []metav1.LabelSelectorRequirement{req("gpu", metav1.LabelSelectorOpExists)}},
		"infra, not z0":     {MatchLabels: map[string]string{"node-role.kubernetes.io/infra": ""}, MatchExpressions: []metav1.LabelSelectorRequirement{req("zone", metav1.LabelSelectorOpNotIn, "z0")}},
		"no gpu, not index": {MatchExpressions: []metav1.LabelSelectorRequirement{req("gpu", metav1.LabelSelectorOpDoesNotExist)}},
		"no such label":     {MatchLabels: map[string]string{"node-role.kubernetes.io/storage": ""}},
	} {
		t.Run(name, func(t *testing.T) {
			pool := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: mcfgv1.MachineConfigPoolSpec{NodeSelector: &sel}}
			want, err := NewPoolView(plain, pool).Nodes(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			// A Reader that fails to list nodes: every selector with a
			// label to look nodes up by is read from the index alone.
			var reader client.Reader = plain
			if name != "no gpu, not index" {
				reader = failingReader{}
			}
			got, err := NewCachedPoolView(reader, index, pool).Nodes(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			nodeNames := func(ns []*corev1.Node) []string {
				out := []string{}
				for _, n := range ns {
					out = append(out, n.Name)
				}
				sort.Strings(out)
				return out
			}
			if diff := cmp.Diff(nodeNames(want), nodeNames(got)); diff != "" {
				t.Errorf("nodes through the index (-by matching every node, +indexed):\n%s", diff)
			}
		})
	}
}

// failingReader fails every read of nodes.
type failingReader struct{ client.Reader }

func (failingReader) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	if _, nodes := list.(*corev1.NodeList); nodes {
		return errors.New("nodes listed from the Reader, not the index")
	}
	return nil
}
