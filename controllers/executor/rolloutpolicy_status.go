package executor

import (
	"context"
	"sort"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/ndp-dev/ndp/apis/conditions"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/rolloutcontrol"
)

// RolloutPolicyStatusReconciler writes each RolloutPolicy's status:
// observedGeneration, Accepted (rolloutcontrol.Compile), and per selected
// pool what holds there now as the rollout controller last decided it
// (its board), with Holding when any pool holds. Level-triggered; it
// writes only when the status differs.
type RolloutPolicyStatusReconciler struct {
	Client client.Client
	// Gates, if it can, forgets a deleted policy's cached results.
	Gates GateSource
	board *rolloutBoard
}

// gateForgetter is a GateSource that keeps results per policy.
type gateForgetter interface{ Forget(policy string) }

// SetupWithManager reconciles a policy when its spec changes, when pools
// come, go or change their labels, and when the rollout's holds change.
func (r *RolloutPolicyStatusReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.board == nil {
		r.board = newRolloutBoard()
	}
	all := enqueueAllPolicies(r.Client)
	return ctrl.NewControllerManagedBy(mgr).
		Named("rolloutpolicy").
		For(&v1alpha1.RolloutPolicy{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&mcfgv1.MachineConfigPool{}, all, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}))).
		WatchesRawSource(source.Channel(r.board.changes, all)).
		Complete(r)
}

// enqueueAllPolicies maps any event to every RolloutPolicy: there are few.
func enqueueAllPolicies(c client.Client) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		var list v1alpha1.RolloutPolicyList
		if err := c.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
			return nil
		}
		out := make([]reconcile.Request, 0, len(list.Items))
		for _, p := range list.Items {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: p.Name}})
		}
		return out
	})
}

// Reconcile writes one policy's status.
func (r *RolloutPolicyStatusReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var p v1alpha1.RolloutPolicy
	if err := r.Client.Get(ctx, req.NamespacedName, &p); err != nil {
		if f, ok := r.Gates.(gateForgetter); ok && apierrors.IsNotFound(err) {
			f.Forget(req.Name)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	var pools mcfgv1.MachineConfigPoolList
	if err := r.Client.List(ctx, &pools, client.UnsafeDisableDeepCopy); err != nil {
		return reconcile.Result{}, err
	}
	want := rolloutPolicyStatus(&p, pools.Items, r.board.get, metav1.Now())
	if equality.Semantic.DeepEqual(want, p.Status) {
		return reconcile.Result{}, nil
	}
	base := p.DeepCopy()
	p.Status = want
	return reconcile.Result{}, client.IgnoreNotFound(r.Client.Status().Patch(ctx, &p, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})))
}

// rolloutPolicyStatus is a policy's status: Accepted from Compile,
// pools[] from what the rollout last decided for each pool the policy
// selects (a pool not decided yet is left out), Holding when one holds.
// A condition's lastTransitionTime moves only with its status (now).
func rolloutPolicyStatus(p *v1alpha1.RolloutPolicy, pools []mcfgv1.MachineConfigPool, decided func(pool, policy string) (v1alpha1.PoolRolloutStatus, bool), now metav1.Time) v1alpha1.RolloutPolicyStatus {
	st := v1alpha1.RolloutPolicyStatus{ObservedGeneration: p.Generation, Conditions: append([]metav1.Condition(nil), p.Status.Conditions...)}
	cond := func(typ string, ok bool, reason, msg string) {
		s := metav1.ConditionFalse
		if ok {
			s = metav1.ConditionTrue
		}
		c := metav1.Condition{Type: typ, Status: s, Reason: reason, Message: conditions.Message(msg), ObservedGeneration: p.Generation, LastTransitionTime: now}
		if old := meta.FindStatusCondition(st.Conditions, typ); old != nil && old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		}
		meta.SetStatusCondition(&st.Conditions, c)
	}
	if _, err := rolloutcontrol.Compile(p); err != nil {
		cond(v1alpha1.RolloutPolicyAccepted, false, "Invalid", err.Error()+": it holds every pool it selects")
	} else {
		cond(v1alpha1.RolloutPolicyAccepted, true, "Valid", "")
	}
	pools = append([]mcfgv1.MachineConfigPool(nil), pools...)
	sort.Slice(pools, func(i, j int) bool { return pools[i].Name < pools[j].Name })
	holding := []string{}
	for i := range pools {
		if sel, err := rolloutcontrol.Selects(p, &pools[i]); !sel && err == nil {
			continue
		}
		e, ok := decided(pools[i].Name, p.Name)
		if !ok {
			continue
		}
		if len(st.Pools) == v1alpha1.MaxPolicyPools {
			break
		}
		st.Pools = append(st.Pools, e)
		if e.Holding {
			holding = append(holding, e.Pool)
		}
	}
	if len(holding) > 0 {
		cond(v1alpha1.RolloutPolicyHolding, true, "Holding", "pools with a start held: "+joinMax(holding, 10))
	} else {
		cond(v1alpha1.RolloutPolicyHolding, false, "NotHolding", "")
	}
	return st
}

func joinMax(s []string, n int) string {
	out := ""
	for i, x := range s {
		if i == n {
			return out + ", …"
		}
		if i > 0 {
			out += ", "
		}
		out += x
	}
	return out
}
