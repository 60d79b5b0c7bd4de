package render

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
)

func TestPlanGroups(t *testing.T) {
	node := func(name, current, state, desired string) *corev1.Node {
		a := map[string]string{ndpmcv1.CurrentConfigAnnotation: current}
		if state != "" {
			a[ndpmcv1.StateAnnotation] = state
		}
		if desired != "" {
			a[ndpmcv1.DesiredConfigAnnotation] = desired
		}
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: a}}
	}
	type group struct {
		From     string
		Nodes    []string
		Updating int
	}
	for _, tc := range []struct {
		name   string
		nodes  []*corev1.Node
		target string
		want   []group
	}{
		{name: "no target: nothing waits", nodes: []*corev1.Node{node("a", "c0", "", "")}, target: ""},
		{name: "every node at the target", nodes: []*corev1.Node{node("a", "t", "", ""), node("b", "t", "", "")}, target: "t"},
		{name: "a node with no config yet has no plan to follow", nodes: []*corev1.Node{node("a", "", "", "")}, target: "t"},
		{
			name:   "one group per source config, largest first, then by name",
			nodes:  []*corev1.Node{node("a", "c2", "", ""), node("b", "c1", "", ""), node("c", "c2", "", ""), node("d", "c0", "", ""), node("e", "t", "", "")},
			target: "t",
			want:   []group{{From: "c2", Nodes: []string{"a", "c"}}, {From: "c0", Nodes: []string{"d"}}, {From: "c1", Nodes: []string{"b"}}},
		},
		{
			name: "updating counts the nodes executing the plan to this target only",
			nodes: []*corev1.Node{
				node("a", "c1", ndpmcv1.StateWorking, "t"),
				node("b", "c1", ndpmcv1.StateWorking, "older"), // working toward a target replaced since
				node("c", "c1", ndpmcv1.StateDone, "t"),        // sent, not started
			},
			target: "t",
			want:   []group{{From: "c1", Nodes: []string{"a", "b", "c"}, Updating: 1}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			byConfig := map[string][]*corev1.Node{}
			for _, n := range tc.nodes {
				cur := n.Annotations[ndpmcv1.CurrentConfigAnnotation]
				byConfig[cur] = append(byConfig[cur], n)
			}
			var got []group
			for _, g := range PlanGroups(byConfig, tc.target) {
				gg := group{From: g.From, Updating: g.Updating}
				for _, n := range g.Nodes {
					gg.Nodes = append(gg.Nodes, n.Name)
				}
				got = append(got, gg)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("PlanGroups (-want +got):\n%s", diff)
			}
		})
	}
}
