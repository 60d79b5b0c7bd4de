//go:build scale

package scale

import (
	"context"
	"fmt"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// workload plays what a real cluster does with the pods a drain evicts: one
// ReplicaSet per pool (a real object; no kube-controller-manager runs
// here) replaces each evicted pod on the pool's least loaded schedulable
// Ready node, as the scheduler's spreading would, the kubelet reports the
// replacement Ready, and the ReplicaSet's status counts its pods, as its
// controller would write it. Without it the first drain would empty the
// nodes for good, and a later drain — the "+policy" one it is compared
// with — would have nothing to evict and nothing for the drained-pods
// pacing to wait on.
type workload struct {
	cs    kubernetes.Interface // the harness's
	nodes cache.Store          // the shared Node informer's, once started

	mu     sync.Mutex
	podsOn map[string]int // node → its live pods, as this workload placed them
	made   int
	sets   map[string]*replicaSet // by pool
}

// replicaSet is a pool's ReplicaSet as the workload plays it.
type replicaSet struct {
	name  string
	uid   types.UID
	live  int32         // its pods, all Ready (guarded by workload.mu)
	dirty chan struct{} // its status is to be written again
}

func newWorkload(cs kubernetes.Interface) *workload {
	return &workload{cs: cs, podsOn: map[string]int{}, sets: map[string]*replicaSet{}}
}

// createReplicaSets creates each pool's ReplicaSet, of wanted[pool] pods,
// and keeps its status written until ctx ends: one write at a time per
// ReplicaSet, of its latest count (changes meanwhile are coalesced, as its
// controller's work queue does).
func (w *workload) createReplicaSets(ctx context.Context, wanted map[string]int) error {
	for pool, n := range wanted {
		labels := map[string]string{poolLabel: pool}
		rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: workloadNS, Name: "web-" + pool}, Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr(int32(n)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.example.com/web:1"}}}},
		}}
		created, err := w.cs.AppsV1().ReplicaSets(workloadNS).Create(ctx, rs, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("replicaset %s/%s: %w", workloadNS, rs.Name, err)
		}
		set := &replicaSet{name: created.Name, uid: created.UID, dirty: make(chan struct{}, 1)}
		w.mu.Lock()
		w.sets[pool] = set
		w.mu.Unlock()
		go w.writeStatus(ctx, set, created.Generation)
	}
	return nil
}

func (w *workload) writeStatus(ctx context.Context, set *replicaSet, generation int64) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-set.dirty:
		}
		w.mu.Lock()
		live := set.live
		w.mu.Unlock()
		patch := fmt.Sprintf(`{"status":{"observedGeneration":%d,"replicas":%d,"readyReplicas":%d,"availableReplicas":%d}}`, generation, live, live, live)
		// A write that fails is left: the next change writes the count again.
		_, _ = w.cs.AppsV1().ReplicaSets(workloadNS).Patch(ctx, set.name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status")
	}
}

// counted adds d to pool's ReplicaSet's pods and has its status written.
func (w *workload) counted(pool string, d int32) {
	w.mu.Lock()
	set := w.sets[pool]
	if set != nil {
		set.live += d
	}
	w.mu.Unlock()
	if set != nil {
		select {
		case set.dirty <- struct{}{}:
		default: // a write is due already: it writes the latest count
		}
	}
}

// createPod creates one of pool's pods on node, Running and Ready.
func (w *workload) createPod(ctx context.Context, pool, node string) error {
	w.mu.Lock()
	w.made++
	name := fmt.Sprintf("web-%s-%d", pool, w.made)
	w.podsOn[node]++
	set := w.sets[pool]
	w.mu.Unlock()
	if set == nil {
		return fmt.Errorf("pool %s has no ReplicaSet", pool)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: workloadNS, Name: name, Labels: map[string]string{poolLabel: pool},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: set.name, UID: set.uid, Controller: ptr(true)}}},
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
	w.counted(pool, 1)
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
		w.counted(p.Labels[poolLabel], -1)
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
