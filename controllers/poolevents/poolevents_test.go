package poolevents

import (
	"context"
	"sort"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ndp-dev/ndp/internal/testkit"
)

// A node's update wakes the pools that select it before or after (and no
// other); a node created or deleted wakes every pool. Pools are read from a
// real API server.
func TestEnqueuePoolsOfNode(t *testing.T) {
	c := testkit.NewControlPlane(t, testkit.ControlPlaneOptions{Root: "../.."}).Client
	ctx := context.Background()
	for name, sel := range map[string]*metav1.LabelSelector{
		"infra":  {MatchLabels: map[string]string{"role": "infra"}},
		"worker": {MatchLabels: map[string]string{"role": "worker"}},
		"gpu":    {MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "gpu", Operator: metav1.LabelSelectorOpExists}}},
		"none":   nil, // selects no node
	} {
		if err := c.Create(ctx, &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: mcfgv1.MachineConfigPoolSpec{NodeSelector: sel}}); err != nil {
			t.Fatal(err)
		}
	}
	node := func(labels map[string]string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: labels}}
	}
	h := PoolsOfNode(c)
	woken := func(send func(workqueue.TypedRateLimitingInterface[reconcile.Request])) string {
		q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
		defer q.ShutDown()
		send(q)
		var names []string
		for q.Len() > 0 {
			r, _ := q.Get()
			names = append(names, r.Name)
			q.Done(r)
		}
		sort.Strings(names)
		return strings.Join(names, " ")
	}
	for _, tc := range []struct {
		name     string
		old, new map[string]string
		want     string
	}{
		{"a step of a worker", map[string]string{"role": "worker"}, map[string]string{"role": "worker"}, "worker"},
		{"moved to infra", map[string]string{"role": "worker"}, map[string]string{"role": "infra"}, "infra worker"},
		{"a worker given a GPU", map[string]string{"role": "worker"}, map[string]string{"role": "worker", "gpu": "a100"}, "gpu worker"},
		{"in no pool", map[string]string{"role": "db"}, map[string]string{"role": "db"}, ""},
	} {
		got := woken(func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Update(ctx, event.UpdateEvent{ObjectOld: node(tc.old), ObjectNew: node(tc.new)}, q)
		})
		if got != tc.want {
			t.Errorf("%s: woke %q, want %q", tc.name, got, tc.want)
		}
	}
	all := "gpu infra none worker"
	if got := woken(func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		h.Create(ctx, event.CreateEvent{Object: node(map[string]string{"role": "db"})}, q)
	}); got != all {
		t.Errorf("a node created woke %q, want every pool (%q): the node count decides single-node plans", got, all)
	}
	if got := woken(func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		h.Delete(ctx, event.DeleteEvent{Object: node(map[string]string{"role": "worker"})}, q)
	}); got != all {
		t.Errorf("a node deleted woke %q, want every pool (%q)", got, all)
	}
}

// TestPoolChanged: a pool's status-only update wakes none of the
// controllers that decide from its spec, labels and annotations.
func TestPoolChanged(t *testing.T) {
	base := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "worker", Generation: 3, Labels: map[string]string{"a": "1"}}}
	for name, tc := range map[string]struct {
		change func(p *mcfgv1.MachineConfigPool)
		want   bool
	}{
		"status only":       {func(p *mcfgv1.MachineConfigPool) { p.Status.UpdatedMachineCount = 7 }, false},
		"spec (generation)": {func(p *mcfgv1.MachineConfigPool) { p.Generation = 4; p.Spec.Paused = true }, true},
		"a label (a RolloutPolicy's poolSelector)": {func(p *mcfgv1.MachineConfigPool) { p.Labels["b"] = "2" }, true},
		"an annotation": {func(p *mcfgv1.MachineConfigPool) { p.Annotations = map[string]string{"x": "y"} }, true},
	} {
		t.Run(name, func(t *testing.T) {
			updated := base.DeepCopy()
			tc.change(updated)
			if got := SpecChanged.Update(event.UpdateEvent{ObjectOld: base, ObjectNew: updated}); got != tc.want {
				t.Errorf("SpecChanged = %t, want %t", got, tc.want)
			}
		})
	}
	if !SpecChanged.Create(event.CreateEvent{Object: base}) || !SpecChanged.Delete(event.DeleteEvent{Object: base}) {
		t.Error("a pool created or deleted must pass")
	}
}
