package controllers

import (
	"context"
	"encoding/json"
	"slices"
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
// (counting nodes that are not ready or not done), honours paused, picks
// nodes in the MCO's order (zone, then age; no zone last), sends a node
// only to a target whose plan from that node's config is ready, and keeps
// the MCO's UpdateInProgress:PreferNoSchedule taint on the nodes not sent
// to the target yet. decideRollout makes these choices; the reconciler
// reads and patches, one write per node.
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
	// One write per node: its desiredConfig and its UpdateInProgress
	// taint together. taint is only read from here on (the sends below
	// run concurrently).
	taint := map[*corev1.Node]bool{}
	for _, n := range d.Taint {
		taint[n] = true
	}
	for _, n := range d.Untaint {
		taint[n] = false
	}
	written := map[*corev1.Node]bool{}
	write := func(ctx context.Context, n *corev1.Node, desired string) error {
		t, ok := taint[n]
		return r.patchNode(ctx, n, desired, t, ok)
	}
	for _, n := range d.Redirect {
		written[n] = true
		desired := n.Annotations[ndpmcv1.DesiredConfigAnnotation]
		if err := write(ctx, n, target); err != nil {
			return reconcile.Result{}, err
		}
		if n.Annotations[ndpmcv1.CurrentConfigAnnotation] == "" || desired == "" {
			r.Recorder.Eventf(n, &pool, corev1.EventTypeNormal, "Adopted", "Rollout", "pool %s: runs no config or was never sent one: set to %s", pool.Name, target)
		} else {
			r.Recorder.Eventf(n, &pool, corev1.EventTypeNormal, "Redirected", "Rollout", "pool %s: sent to the new target %s instead of %s", pool.Name, target, desired)
		}
	}
	for _, n := range d.Record {
		written[n] = true
		if err := write(ctx, n, n.Annotations[ndpmcv1.CurrentConfigAnnotation]); err != nil {
			return reconcile.Result{}, err
		}
	}
	for _, n := range d.Send {
		written[n] = true
	}
	// The picks go out together (each patch still carries the node's
	// resourceVersion): one at a time, a slice of a large pool would take
	// longer to send than its nodes take to update. So do the taints of
	// the nodes not written otherwise.
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(maxParallelSends)
	for i, n := range d.Send {
		g.Go(func() error {
			if err := write(gctx, n, target); err != nil {
				return err
			}
			r.Recorder.Eventf(n, &pool, corev1.EventTypeNormal, "UpdateStarted", "Rollout", "pool %s: sent to %s (%d of %d nodes out, budget %d)", pool.Name, target, d.Out+i+1, len(nodes), d.Budget)
			return nil
		})
	}
	for _, n := range append(slices.Clone(d.Taint), d.Untaint...) {
		if !written[n] {
			g.Go(func() error { return write(gctx, n, "") })
		}
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

// patchNode sets a node's desiredConfig (unless desired is "") and, if
// taintKnown, adds (taint) or removes the UpdateInProgress taint, in one
// merge patch, only if the node is still what the decision was made on
// (the patch carries the node's resourceVersion: the taint list it
// replaces is the one read, other taints kept). n may be the cache's own
// object: the patch's answer goes into a copy.
func (r *RolloutReconciler) patchNode(ctx context.Context, n *corev1.Node, desired string, taint, taintKnown bool) error {
	meta := map[string]any{"resourceVersion": n.ResourceVersion}
	if desired != "" {
		meta["annotations"] = map[string]string{ndpmcv1.DesiredConfigAnnotation: desired}
	}
	body := map[string]any{"metadata": meta}
	if taintKnown {
		taints := []corev1.Taint{}
		for _, t := range n.Spec.Taints {
			if !t.MatchTaint(&UpdateInProgressTaint) {
				taints = append(taints, t)
			}
		}
		if taint {
			taints = append(taints, UpdateInProgressTaint)
		}
		body["spec"] = map[string]any{"taints": taints}
	}
	patch, _ := json.Marshal(body)
	return r.Client.Patch(ctx, n.DeepCopy(), client.RawPatch(types.MergePatchType, patch))
}
