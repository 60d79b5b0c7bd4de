package controllers

import (
	"context"
	"encoding/json"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/render"
)

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=machineconfiguration.openshift.io,resources=machineconfigpools,verbs=get;list;watch
// +kubebuilder:rbac:groups=machineconfiguration.openshift.io,resources=machineconfigs,verbs=get;list;watch

// RolloutReconciler moves each pool's nodes to the pool's target, a slice
// at a time: it sets a node's desiredConfig annotation, and the node's
// daemon executes the plan. It never exceeds the pool's maxUnavailable
// (counting nodes that are updating, not Ready, cordoned or degraded),
// honours paused, picks Ready and schedulable nodes by zone then age, and
// sends a node only to a target whose plan from that node's config is
// ready. decideRollout makes these choices; the reconciler reads and
// patches.
type RolloutReconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	// Recheck is how often a pool waiting for a slot or a plan is looked
	// at again besides the events that wake it.
	Recheck time.Duration
}

// SetupWithManager reconciles every pool when nodes or MachineConfigs
// (their plans) change.
func (r *RolloutReconciler) SetupWithManager(mgr ctrl.Manager) error {
	allPools := enqueueAllPools(r.Client)
	return ctrl.NewControllerManagedBy(mgr).
		Named("rollout").
		For(&mcfgv1.MachineConfigPool{}).
		Watches(&mcfgv1.MachineConfigPool{}, allPools, poolMembershipChanged).
		Watches(&corev1.Node{}, enqueuePoolsOfNode(r.Client)).
		Watches(&ndpmcv1.MachineConfig{}, allPools).
		// Pools are independent (the queue never hands one pool to two
		// workers): one slow pool must not hold the others back.
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
		Complete(r)
}

// Reconcile sends as many of a pool's nodes to its target as its budget
// allows: decideRollout decides, Reconcile reads and patches.
func (r *RolloutReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var pool mcfgv1.MachineConfigPool
	if err := r.Client.Get(ctx, req.NamespacedName, &pool); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if rolloutBlocked(&pool) != "" {
		return reconcile.Result{}, nil
	}
	// The cache's own nodes, read-only: send patches a copy. A pool of
	// hundreds of nodes is looked at on every step of every node.
	view := render.NewPoolView(r.Client, &pool)
	view.Shared = true
	nodes, err := view.Nodes(ctx)
	if err != nil {
		return reconcile.Result{}, nil // the render controller reports bad selectors
	}
	target := pool.Spec.Configuration.Name
	mc := &ndpmcv1.MachineConfig{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: target}, mc); apierrors.IsNotFound(err) {
		mc = nil // not yet: decideRollout sends nothing
	} else if err != nil {
		return reconcile.Result{}, err
	}
	d := decideRollout(&pool, nodes, mc)
	for _, n := range d.Redirect {
		desired := n.Annotations[ndpmcv1.DesiredConfigAnnotation]
		if err := r.send(ctx, n, target); err != nil {
			return reconcile.Result{}, err
		}
		r.Recorder.Eventf(n, &pool, corev1.EventTypeNormal, "Redirected", "Rollout", "pool %s: sent to the new target %s instead of %s", pool.Name, target, desired)
	}
	// The picks go out together (each patch still carries the node's
	// resourceVersion): one at a time, a slice of a large pool would take
	// longer to send than its nodes take to update.
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(maxParallelSends)
	for i, n := range d.Send {
		g.Go(func() error {
			if err := r.send(gctx, n, target); err != nil {
				return err
			}
			r.Recorder.Eventf(n, &pool, corev1.EventTypeNormal, "UpdateStarted", "Rollout", "pool %s: sent to %s (%d of %d nodes out, budget %d)", pool.Name, target, d.Out+i+1, len(nodes), d.Budget)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return reconcile.Result{}, err
	}
	if d.Wait {
		return reconcile.Result{RequeueAfter: r.recheck()}, nil
	}
	return reconcile.Result{}, nil
}

func (r *RolloutReconciler) recheck() time.Duration {
	if r.Recheck > 0 {
		return r.Recheck
	}
	return 30 * time.Second
}

// maxParallelSends bounds the desiredConfig patches a pool sends at once.
const maxParallelSends = 8

// send sets a node's desiredConfig, only if it is still what the decision
// was made on (the patch carries the node's resourceVersion). n may be the
// cache's own object: the patch's answer goes into a copy.
func (r *RolloutReconciler) send(ctx context.Context, n *corev1.Node, target string) error {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": n.ResourceVersion,
		"annotations":     map[string]string{ndpmcv1.DesiredConfigAnnotation: target},
	}})
	return r.Client.Patch(ctx, n.DeepCopy(), client.RawPatch(types.MergePatchType, patch))
}
