package rolloutgates

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/internal/testkit"
)

// The blocking-pod gate lists pods by selector from a real API server,
// with their nodes and their namespaces' labels.
func TestBlockingPods(t *testing.T) {
	c, mk := apiServer(t)
	ctx := context.Background()
	mk(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"tier": "prod"}}})
	mk(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "batch"}})
	pod := func(ns, name, app, node string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": app}},
			Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "backup"}}},
		}
	}
	mk(pod("web", "backup-1", "backup", "worker-1"))
	mk(pod("batch", "backup-2", "backup", "worker-2"))
	mk(pod("web", "nginx", "nginx", "worker-3"))
	done := pod("web", "backup-done", "backup", "worker-3")
	mk(done)
	done.Status.Phase = corev1.PodSucceeded
	if err := c.Status().Update(ctx, done); err != nil {
		t.Fatal(err)
	}

	now := time.Date(2026, 11, 27, 2, 0, 0, 0, time.UTC)
	e := NewEvaluator(c, Options{Now: func() time.Time { return now }})
	gate := &v1alpha1.BlockingPodsGate{
		Selector:          metav1.LabelSelector{MatchLabels: map[string]string{"app": "backup"}},
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "prod"}},
	}
	if v, words := verdict(t, e, policy("pods", v1alpha1.RolloutGates{BlockingPods: gate})); words != "node worker-1: waiting: blocking pod web/backup-1 on node worker-1 [rolloutpolicy pods]" ||
		!v.Held("worker-1") || v.Held("worker-2") || v.Held("worker-3") {
		t.Errorf("scope Node: %q", words)
	}
	res, next := e.Results(ctx, policy("pods", v1alpha1.RolloutGates{BlockingPods: gate}))
	if !next.IsZero() || res.BlockingPods == nil || len(res.BlockingPods.Pods) != 2 || res.BlockingPods.NamespaceLabels["web"]["tier"] != "prod" {
		t.Errorf("results: next %s, %+v", next, res.BlockingPods)
	}

	all := *gate
	all.NamespaceSelector, all.Scope = nil, v1alpha1.BlockingPodsCluster
	if _, words := verdict(t, e, policy("pods-cluster", v1alpha1.RolloutGates{BlockingPods: &all})); words != "hold: waiting: blocking pod batch/backup-2 and 1 more [rolloutpolicy pods-cluster]" {
		t.Errorf("scope Cluster: %q", words)
	}

	// Gone from the API server, gone from the gate once its last read is
	// PodsInterval old. Without a kubelet a pod on a node is only gone
	// when forced: while it terminates, it still runs, and holds.
	if err := c.Delete(ctx, pod("web", "backup-1", "", ""), client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	now = now.Add(DefaultPodsInterval - time.Second)
	if v, words := verdict(t, e, policy("pods", v1alpha1.RolloutGates{BlockingPods: gate})); !v.Held("worker-1") {
		t.Errorf("read again before PodsInterval: %q", words)
	}
	now = now.Add(time.Second)
	testkit.Eventually(t, "the deleted pod no longer holds its node", func() (bool, string) {
		v, words := verdict(t, e, policy("pods", v1alpha1.RolloutGates{BlockingPods: gate}))
		return !v.Held("worker-1"), words
	})
}

// apiServer starts a real kube-apiserver (no CRDs) and returns its client
// and a helper that creates an object or fails the test.
func apiServer(t *testing.T) (client.Client, func(client.Object)) {
	t.Helper()
	ctrllog.SetLogger(logr.Discard()) // envtest's client logs nothing worth reading here
	c := testkit.NewControlPlane(t, testkit.ControlPlaneOptions{Root: "..", NoCRDs: true}).Client
	return c, func(o client.Object) {
		t.Helper()
		if err := c.Create(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
}
