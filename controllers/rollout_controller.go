package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/render"
)

// ZoneLabel orders a rollout: one zone after another.
const ZoneLabel = corev1.LabelTopologyZone

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=machineconfiguration.openshift.io,resources=machineconfigpools,verbs=get;list;watch
// +kubebuilder:rbac:groups=machineconfiguration.openshift.io,resources=machineconfigs,verbs=get;list;watch

// RolloutReconciler moves each pool's nodes to the pool's target, a slice
// at a time: it sets a node's desiredConfig annotation, and the node's
// daemon executes the plan. It never exceeds the pool's maxUnavailable
// (counting nodes that are updating, not Ready, cordoned or degraded),
// honours paused, picks Ready and schedulable nodes by zone then age, and
// sends a node only to a target whose plan from that node's config is
// ready.
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
		Watches(&corev1.Node{}, enqueuePoolsOfNode(r.Client)).
		Watches(&ndpmcv1.MachineConfig{}, allPools).
		// Pools are independent (the queue never hands one pool to two
		// workers): one slow pool must not hold the others back.
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
		Complete(r)
}

// MaxUnavailable is the pool's budget of nodes out at once: an integer or
// a percentage of its nodes, rounded down, at least 1.
func MaxUnavailable(pool *mcfgv1.MachineConfigPool, nodes int) (int, error) {
	mu := intstr.FromInt(1)
	if pool.Spec.MaxUnavailable != nil {
		mu = *pool.Spec.MaxUnavailable
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(&mu, nodes, false)
	if err != nil {
		return 1, fmt.Errorf("MachineConfigPool %q: spec.maxUnavailable: %w", pool.Name, err)
	}
	return max(n, 1), nil
}

// Reconcile sends as many of a pool's nodes to its target as its budget
// allows.
func (r *RolloutReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var pool mcfgv1.MachineConfigPool
	if err := r.Client.Get(ctx, req.NamespacedName, &pool); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	target := pool.Spec.Configuration.Name
	if target == "" || pool.Spec.Paused {
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
	budget, err := MaxUnavailable(&pool, len(nodes))
	if err != nil {
		return reconcile.Result{}, nil
	}
	var mc ndpmcv1.MachineConfig
	if err := r.Client.Get(ctx, client.ObjectKey{Name: target}, &mc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if c := meta.FindStatusCondition(mc.Status.Conditions, ndpmcv1.ConditionUnreconcilable); c != nil && c.Status == metav1.ConditionTrue {
		return reconcile.Result{}, nil // the pool is Degraded, naming it; no node goes
	}
	planReady := meta.IsStatusConditionTrue(mc.Status.Conditions, ndpmcv1.ConditionPlanReady)

	// ready: the node may go to the target now. A node that runs no config
	// yet adopts it (it was provisioned with it), one that runs it already
	// needs nothing; any other needs the plan from its config.
	ready := func(n *corev1.Node) bool {
		cur := n.Annotations[ndpmcv1.CurrentConfigAnnotation]
		return cur == "" || cur == target || (planReady && mc.Status.PlanFrom(cur) != nil)
	}
	out := 0
	var candidates []*corev1.Node
	for _, n := range nodes {
		if unavailable(n) {
			out++
			// A node sent to an older target that it has not started on,
			// or failed on, already counts against the budget: it goes to
			// the new target (a fix, a newer change) at once. A node at
			// work finishes first.
			cur, desired, state := n.Annotations[ndpmcv1.CurrentConfigAnnotation], n.Annotations[ndpmcv1.DesiredConfigAnnotation], n.Annotations[ndpmcv1.StateAnnotation]
			if (desired != cur || state == ndpmcv1.StateDegraded) && desired != target && state != ndpmcv1.StateWorking && ready(n) {
				if err := r.send(ctx, n, target); err != nil {
					return reconcile.Result{}, err
				}
				r.Recorder.Eventf(n, &pool, corev1.EventTypeNormal, "Redirected", "Rollout", "pool %s: sent to the new target %s instead of %s", pool.Name, target, desired)
			}
			continue
		}
		if n.Annotations[ndpmcv1.DesiredConfigAnnotation] != target && n.Annotations[ndpmcv1.CurrentConfigAnnotation] != target {
			candidates = append(candidates, n)
		}
	}
	if len(candidates) == 0 {
		return reconcile.Result{}, nil
	}
	sort.Slice(candidates, func(i, j int) bool {
		a, b := candidates[i], candidates[j]
		if za, zb := a.Labels[ZoneLabel], b.Labels[ZoneLabel]; za != zb {
			return za < zb
		}
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
	waiting := false
	var picks []*corev1.Node
	for _, n := range candidates {
		if out+len(picks) >= budget {
			break
		}
		if !ready(n) {
			waiting = true
			continue
		}
		picks = append(picks, n)
	}
	// The picks go out together (each patch still carries the node's
	// resourceVersion): one at a time, a slice of a large pool would take
	// longer to send than its nodes take to update.
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(maxParallelSends)
	for i, n := range picks {
		g.Go(func() error {
			if err := r.send(gctx, n, target); err != nil {
				return err
			}
			r.Recorder.Eventf(n, &pool, corev1.EventTypeNormal, "UpdateStarted", "Rollout", "pool %s: sent to %s (%d of %d nodes out, budget %d)", pool.Name, target, out+i+1, len(nodes), budget)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return reconcile.Result{}, err
	}
	if waiting {
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
