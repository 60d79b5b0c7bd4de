// Package poolevents maps events to the MachineConfigPools they concern, for
// the controllers of both modes that reconcile per pool.
package poolevents

import (
	"context"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// AllPools maps any event to a request for every MachineConfigPool:
// which pools an object affects depends on selectors, and re-checking a
// pool is cheap.
func AllPools(c client.Client) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		var pools mcfgv1.MachineConfigPoolList
		if err := c.List(ctx, &pools, client.UnsafeDisableDeepCopy); err != nil {
			return nil
		}
		out := make([]reconcile.Request, 0, len(pools.Items))
		for _, p := range pools.Items {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: p.Name}})
		}
		return out
	})
}

// MembershipChanged passes the pool events that can move nodes between
// pools: a pool created or deleted, its spec changed (its nodeSelector).
// Which pool manages a node depends on every pool that selects it
// (nodepool.Primary), so such an event wakes every pool.
var MembershipChanged = builder.WithPredicates(predicate.GenerationChangedPredicate{})

// Changed passes a pool's events but for status-only updates: the
// controllers that decide from a pool's spec, labels (a RolloutPolicy's
// poolSelector) and annotations, and from its nodes, not from its status.
// The pool status controller writes the status at every node's step: each
// write woke the plan, rollout and registries controllers, and the pool
// status controller itself, for nothing (a single worker, saturated at
// 1,000 nodes, spent part of its time on its own echoes).
var Changed = builder.WithPredicates(SpecChanged)

// SpecChanged is Changed's predicate.
var SpecChanged = predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{})

// PoolsOfNode maps a Node's update to the pools whose nodeSelector
// selects it, before or after the update (a relabelled node leaves one pool
// and joins another). A node created or deleted wakes every pool: the
// cluster's node count decides single-node planning. In a large cluster a
// node's every step (its state, its Ready condition) is an event: waking
// only its own pool keeps the other pools' reconciles off the queue.
func PoolsOfNode(c client.Client) handler.EventHandler {
	all := AllPools(c)
	pools := func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request], nodes ...client.Object) {
		var list mcfgv1.MachineConfigPoolList
		if err := c.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
			return
		}
		for i := range list.Items {
			p := &list.Items[i]
			sel, err := metav1.LabelSelectorAsSelector(p.Spec.NodeSelector)
			if err != nil {
				// The pool reports its invalid selector when it
				// reconciles: let it.
				q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: p.Name}})
				continue
			}
			for _, n := range nodes {
				if n != nil && sel.Matches(labels.Set(n.GetLabels())) {
					q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: p.Name}})
					break
				}
			}
		}
	}
	return handler.Funcs{
		CreateFunc:  all.Create,
		DeleteFunc:  all.Delete,
		GenericFunc: all.Generic,
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			pools(ctx, q, e.ObjectOld, e.ObjectNew)
		},
	}
}
