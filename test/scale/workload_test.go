//go:build scale

package scale

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// workload plays what a real cluster does with the pods a drain evicts: one
// ReplicaSet per pool (no kube-controller-manager runs here) replaces each
// evicted pod on the pool's least loaded schedulable Ready node, as the
// scheduler's spreading would, and the kubelet reports the replacement
// Ready. Without it the first drain would empty the nodes for good, and a
// later drain — the "+policy" one it is compared with — would have
// nothing to evict and nothing for the drained-pods pacing to wait on.
type workload struct {
	cs    kubernetes.Interface // the harness's
	nodes cache.Store          // the shared Node informer's, once started

	mu     sync.Mutex
	podsOn map[string]int // node → its live pods, as this workload placed them
	made   int
}

func newWorkload(cs kubernetes.Interface) *workload {
	return &workload{cs: cs, podsOn: map[string]int{}}
}

// createPod creates one of pool's pods on node, Running and Ready.
func (w *workload) createPod(ctx context.Context, pool, node string) error {
	w.mu.Lock()
	w.made++
	name := fmt.Sprintf("web-%s-%d", pool, w.made)
	w.podsOn[node]++
	w.mu.Unlock()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: workloadNS, Name: name, Labels: map[string]string{poolLabel: pool},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-" + pool, UID: types.UID("rs-" + pool), Controller: ptr(true)}}},
		Spec: corev1.PodSpec{
			NodeName:                     node,
			AutomountServiceAccountToken: ptr(false),
			Containers:                   []corev1.Container{{Name: "web", Image: "registry.example.com/web:1"}},
		},
	}
	created, err := w.cs.CoreV1().Pods(workloadNS).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("pod %s/%s: %w", workloadNS, name, err)
	}
	now := metav1.Now()
	created.Status = corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &now, Conditions: []corev1.PodCondition{
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
	}}
	if _, err := w.cs.CoreV1().Pods(workloadNS).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("pod %s/%s status: %w", workloadNS, name, err)
	}
	return nil
}

// start replaces every pod deleted from now on, until ctx ends.
func (w *workload) start(ctx context.Context, pods cache.SharedIndexInformer, nodes cache.Store) {
	w.nodes = nodes
	_, _ = pods.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		p, ok := obj.(*corev1.Pod)
		if !ok || p.Labels[poolLabel] == "" {
			return
		}
		w.mu.Lock()
		w.podsOn[p.Spec.NodeName]--
		w.mu.Unlock()
		go func() {
			// A replacement that cannot be placed or written is left
			// out: the pool then has one pod less, which the drains
			// and the pacing handle as a scaled-down ReplicaSet.
			if node := w.place(p.Labels[poolLabel], p.Spec.NodeName); node != "" {
				_ = w.createPod(ctx, p.Labels[poolLabel], node)
			}
		}()
	}})
}

// place is the pool's schedulable Ready node with the fewest pods (not
// the one the pod left), or "" when there is none.
func (w *workload) place(pool, from string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	best, fewest := "", 0
	for _, obj := range w.nodes.List() {
		n := obj.(*corev1.Node)
		if n.Labels[poolLabel] != pool || n.Name == from || n.Spec.Unschedulable || !nodeReady(n) {
			continue
		}
		if c := w.podsOn[n.Name]; best == "" || c < fewest || (c == fewest && n.Name < best) {
			best, fewest = n.Name, c
		}
	}
	return best
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
