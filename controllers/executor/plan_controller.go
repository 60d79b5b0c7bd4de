package executor

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/ndp-dev/ndp/apis/conditions"
	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/controllers/poolevents"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/policyset"
	"github.com/ndp-dev/ndp/render"
)

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=machineconfiguration.openshift.io,resources=machineconfigs/status,verbs=patch

// PlanReconciler writes, into each pool's target MachineConfig, the plan
// from every config a node of the pool runs today, computed with the active
// policy set: the node daemon only executes a plan found there.
type PlanReconciler struct {
	Client client.Client
	// Nodes is the cache's Node index (render.IndexNodeLabels); nil: the
	// pool's nodes are listed from Client.
	Nodes  render.NodeIndex
	Active *policyset.ActivePolicies

	configs *render.ConfigCache
}

// SetupWithManager reconciles all pools when nodes, MachineConfigs or the
// active policy set change.
func (r *PlanReconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.configs = render.NewConfigCache(1024)
	allPools := poolevents.AllPools(r.Client)
	return ctrl.NewControllerManagedBy(mgr).
		Named("plan").
		For(&mcfgv1.MachineConfigPool{}, poolevents.Changed).
		Watches(&mcfgv1.MachineConfigPool{}, allPools, poolevents.MembershipChanged).
		Watches(&corev1.Node{}, poolevents.PoolsOfNode(r.Client)).
		Watches(&ndpmcv1.MachineConfig{}, allPools).
		WatchesRawSource(source.Channel(r.Active.Changes(), allPools)).
		// Pools are independent; planning is CPU-bound.
		WithOptions(controller.Options{MaxConcurrentReconciles: runtime.GOMAXPROCS(0)}).
		Complete(r)
}

// Reconcile plans one pool's pending updates.
func (r *PlanReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var pool mcfgv1.MachineConfigPool
	if err := r.Client.Get(ctx, req.NamespacedName, &pool); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	target := pool.Spec.Configuration.Name
	if target == "" {
		return reconcile.Result{}, nil
	}
	// A replica that just started (a new leader, a restart of the API
	// server) must not plan before every policy is loaded: without them a
	// change they claim would be planned as a reboot, and kept for the
	// nodes already sent.
	p, err := r.Active.Ready(ctx, r.Client)
	var notReady *policyset.NotReadyError
	if errors.As(err, &notReady) {
		log.FromContext(ctx).V(1).Info("waiting for policies to load", "reason", err.Error())
		return reconcile.Result{RequeueAfter: time.Second}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	// The cache's own nodes, read-only: a plan reconcile only groups them
	// by config, at every node's step.
	view := render.NewCachedPoolView(r.Client, r.Nodes, &pool)
	groups, err := view.Waiting(ctx)
	var selErr *render.SelectorError
	if errors.As(err, &selErr) {
		return reconcile.Result{}, nil // the render controller reports bad selectors
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	single, err := view.SingleNode(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}

	var to ndpmcv1.MachineConfig
	if err := r.Client.Get(ctx, client.ObjectKey{Name: target}, &to); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	toCfg, err := r.configs.Get(&to)
	if err != nil {
		return reconcile.Result{}, err
	}
	status := to.Status.DeepCopy()
	status.PostConfigActions = nil
	var unreconcilable []string
	var planErrs []string
	for _, g := range groups {
		from := g.From
		if prev := to.Status.StandingPlan(from, p.Engine.Revision(), g.Updating > 0); prev != nil {
			status.PostConfigActions = append(status.PostConfigActions, *prev)
			continue
		}
		var fromMC ndpmcv1.MachineConfig
		if err := r.Client.Get(ctx, client.ObjectKey{Name: from}, &fromMC); err != nil {
			planErrs = append(planErrs, fmt.Sprintf("%s: %v", from, err))
			continue
		}
		fromCfg, err := r.configs.Get(&fromMC)
		if err != nil {
			planErrs = append(planErrs, err.Error())
			continue
		}
		plan, err := p.Plan(ctx, planner.Request{From: fromCfg, To: toCfg, Pool: pool.Name, PoolLabels: pool.Labels, SingleNode: single})
		if err != nil {
			planErrs = append(planErrs, fmt.Sprintf("%s: %v", from, err))
			continue
		}
		if len(plan.Unreconcilable) > 0 {
			for _, u := range plan.Unreconcilable {
				unreconcilable = append(unreconcilable, fmt.Sprintf("from %s: %s", from, u))
			}
			continue
		}
		status.PostConfigActions = append(status.PostConfigActions, plan.PostConfigActions())
	}
	sort.Slice(status.PostConfigActions, func(i, j int) bool { return status.PostConfigActions[i].From < status.PostConfigActions[j].From })
	status.ObservedGeneration = to.Generation
	setMCCondition(status, to.Generation, ndpmcv1.ConditionUnreconcilable, len(unreconcilable) > 0, "Unreconcilable", fmt.Sprint(unreconcilable))
	if len(planErrs) > 0 {
		setMCCondition(status, to.Generation, ndpmcv1.ConditionPlanReady, false, "PlanFailed", fmt.Sprint(planErrs))
	} else {
		setMCCondition(status, to.Generation, ndpmcv1.ConditionPlanReady, true, "Planned", fmt.Sprintf("%d plans with policy revision %s", len(status.PostConfigActions), p.Engine.Revision()))
	}
	if equality.Semantic.DeepEqual(*status, to.Status) {
		return reconcile.Result{}, nil
	}
	// The plan controller is the one writer of MachineConfig status: a
	// patch, not an update, so a cache a write behind is no conflict.
	before := to.DeepCopy()
	to.Status = *status
	return reconcile.Result{}, client.IgnoreNotFound(r.Client.Status().Patch(ctx, &to, client.MergeFrom(before)))
}

func setMCCondition(s *ndpmcv1.MachineConfigStatus, gen int64, typ string, ok bool, reason, msg string) {
	status := metav1.ConditionFalse
	if ok {
		status = metav1.ConditionTrue
	}
	if !ok && typ == ndpmcv1.ConditionUnreconcilable {
		reason, msg = "Reconcilable", ""
	}
	meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: conditions.Message(msg), ObservedGeneration: gen})
}
