package daemon

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// The daemon's RBAC: its own Node (read, annotate, cordon), pods on it
// (drain: list, evict, wait for them to go), DaemonSets (the drain checks
// DaemonSet pods' owners; the MCO's daemon, watched by name: mcoguard), the
// ClusterOperator machine-config (watched by name: mcoguard), MachineConfigs (read plans) and its
// MachineConfigNode (server-side apply creates it), its NodeHistory (created
// once, then its status updated at each step of an update). No update of nodes
// (cordon is a patch) and no delete of pods (the drain deletes only where
// the API server has no eviction subresource, which no supported
// Kubernetes lacks). RBAC cannot say "its own node" or "pods on its node":
// manifests/admission/daemon-own-node.yaml confines what it writes.
//
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=list
// +kubebuilder:rbac:groups="",resources=pods/eviction,verbs=create
// +kubebuilder:rbac:groups=apps,resources=daemonsets,verbs=get
// +kubebuilder:rbac:groups=apps,resources=daemonsets,verbs=list;watch,resourceNames=machine-config-daemon
// +kubebuilder:rbac:groups=config.openshift.io,resources=clusteroperators,verbs=list;watch,resourceNames=machine-config
// +kubebuilder:rbac:groups=machineconfiguration.openshift.io,resources=machineconfigs,verbs=get
// +kubebuilder:rbac:groups=machineconfiguration.openshift.io,resources=machineconfignodes,verbs=get;create;patch
// +kubebuilder:rbac:groups=machineconfiguration.openshift.io,resources=machineconfignodes/status,verbs=patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=ndp.dev,resources=nodehistories,verbs=get;create
// +kubebuilder:rbac:groups=ndp.dev,resources=nodehistories/status,verbs=update;patch

// SetupWithManager reconciles the daemon's own Node: every change of it
// (a new desiredConfig above all) runs Sync. The manager's cache should
// hold only that Node (see CacheOptions).
func (d *Daemon) SetupWithManager(mgr ctrl.Manager) error {
	// Series that alerts read exist from the start.
	drainBlockedPods.WithLabelValues(d.NodeName).Set(0)
	degraded.WithLabelValues(d.NodeName).Set(0)
	own := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetName() == d.NodeName })
	b := ctrl.NewControllerManagedBy(mgr).
		Named("ndp-daemon").
		For(&corev1.Node{}, builder.WithPredicates(own, notTaintsOnly))
	wakeUp := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: d.NodeName}}}
	})
	// The MCO coming or going wakes the daemon (its guard's watch).
	if n, ok := d.MCO.(mcoNotifies); ok {
		b = b.WatchesRawSource(source.Channel(n.Subscribe(), wakeUp))
	}
	// The host asking for a reboot wakes it (a watch of the sentinel file).
	if d.Sentinel != nil && d.Sentinel.Path != "" {
		wake := make(chan event.GenericEvent, 1)
		if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
			return d.Sentinel.watch(ctx, d.Host.Path, wake, d.Log)
		})); err != nil {
			return err
		}
		b = b.WatchesRawSource(source.Channel(wake, wakeUp))
	}
	return b.
		// One update at a time: the steps of a node are sequential.
		WithOptions(controller.Options{MaxConcurrentReconciles: 1}).
		Complete(reconcile.Func(func(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
			after, err := d.Sync(ctx) // errors are logged and retried with backoff
			return reconcile.Result{RequeueAfter: after}, err
		}))
}

// notTaintsOnly drops the updates of the Node that change its taints and
// nothing else the daemon reads: the rollout controller's UpdateInProgress
// taint on every node waiting for its turn, and the node lifecycle
// controller's, would otherwise each cost a Sync (and a read of the node)
// on every node of a rollout.
var notTaintsOnly = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	old, ok1 := e.ObjectOld.(*corev1.Node)
	cur, ok2 := e.ObjectNew.(*corev1.Node)
	if !ok1 || !ok2 {
		return true
	}
	return !TaintsOnly(old, cur)
}}

// TaintsOnly tells whether two versions of a node differ, if at all, in
// their taints alone (metadata the API server keeps aside): such an update
// does not wake the daemon (SetupWithManager), nor the scale test's fleet,
// which runs daemons the same way.
func TaintsOnly(old, cur *corev1.Node) bool {
	if equality.Semantic.DeepEqual(old.Spec.Taints, cur.Spec.Taints) {
		return false
	}
	a, b := old.Spec.DeepCopy(), cur.Spec.DeepCopy()
	a.Taints, b.Taints = nil, nil
	return equality.Semantic.DeepEqual(a, b) &&
		equality.Semantic.DeepEqual(old.Labels, cur.Labels) &&
		equality.Semantic.DeepEqual(old.Annotations, cur.Annotations) &&
		equality.Semantic.DeepEqual(old.DeletionTimestamp, cur.DeletionTimestamp) &&
		equality.Semantic.DeepEqual(&old.Status, &cur.Status)
}
