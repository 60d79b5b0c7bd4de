package executor

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ndp-dev/ndp/apis/conditions"
	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
)

// ClusterOperatorName is ndp's ClusterOperator.
const ClusterOperatorName = "ndp"

// Version is ndp's version, reported in the ClusterOperator (set at build
// time with -ldflags "-X github.com/ndp-dev/ndp/controllers/executor.Version=...").
var Version = "0.0.0-dev"

// +kubebuilder:rbac:groups=config.openshift.io,resources=clusteroperators,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=config.openshift.io,resources=clusteroperators/status,verbs=patch

// OperatorReconciler keeps the ClusterOperator "ndp" true to the cluster:
// its conditions are re-derived at every reconcile from the pools, the
// policies and the nodes' daemons, never remembered.
type OperatorReconciler struct {
	Client client.Client
	// Namespace ndp runs in, a related object.
	Namespace string
}

// SetupWithManager reconciles the one ClusterOperator on any change of
// what it summarises: pools (their status carries their nodes' counts)
// and policies. Not on every node's change: at 1,000 nodes that was a
// reconcile per node step for a status that did not move.
func (r *OperatorReconciler) SetupWithManager(mgr ctrl.Manager) error {
	one := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: ClusterOperatorName}}}
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("clusteroperator").
		For(&configv1.ClusterOperator{}).
		Watches(&mcfgv1.MachineConfigPool{}, one).
		Watches(&v1alpha1.NodeDisruptionPolicy{}, one).
		Complete(r)
}

// Reconcile derives and writes the ClusterOperator's status.
func (r *OperatorReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if req.Name != ClusterOperatorName {
		return reconcile.Result{}, nil
	}
	var co configv1.ClusterOperator
	if err := r.Client.Get(ctx, client.ObjectKey{Name: ClusterOperatorName}, &co); apierrors.IsNotFound(err) {
		co = configv1.ClusterOperator{ObjectMeta: metav1.ObjectMeta{Name: ClusterOperatorName}}
		if err := r.Client.Create(ctx, &co); err != nil && !apierrors.IsAlreadyExists(err) {
			return reconcile.Result{}, err
		}
	} else if err != nil {
		return reconcile.Result{}, err
	}
	var pools mcfgv1.MachineConfigPoolList
	var policies v1alpha1.NodeDisruptionPolicyList
	if err := r.Client.List(ctx, &pools); err != nil {
		return reconcile.Result{}, err
	}
	if err := r.Client.List(ctx, &policies); err != nil {
		return reconcile.Result{}, err
	}
	conds := OperatorConditions(pools.Items, policies.Items)

	var out []any
	for _, c := range conds {
		ltt := metav1.Now()
		for _, old := range co.Status.Conditions {
			if old.Type == c.Type && old.Status == c.Status && !old.LastTransitionTime.IsZero() {
				ltt = old.LastTransitionTime
			}
		}
		out = append(out, map[string]any{"type": string(c.Type), "status": string(c.Status), "reason": c.Reason, "message": conditions.Message(c.Message),
			"lastTransitionTime": ltt.UTC().Format(time.RFC3339)})
	}
	related := []any{
		map[string]any{"group": "", "resource": "namespaces", "name": r.namespace()},
		map[string]any{"group": v1alpha1.GroupVersion.Group, "resource": "nodedisruptionpolicies", "name": ""},
		map[string]any{"group": mcfgv1.GroupName, "resource": "machineconfigpools", "name": ""},
		map[string]any{"group": mcfgv1.GroupName, "resource": "machineconfigs", "name": ""},
		map[string]any{"group": mcfgv1.GroupName, "resource": "machineconfignodes", "name": ""},
	}
	if sameOperatorStatus(&co, conds) {
		return reconcile.Result{}, nil
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": ClusterOperatorName},
		"status": map[string]any{
			"conditions":     out,
			"versions":       []any{map[string]any{"name": "operator", "version": Version}},
			"relatedObjects": related,
		},
	}}
	u.SetGroupVersionKind(configv1.GroupVersion.WithKind("ClusterOperator"))
	return reconcile.Result{}, r.Client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("ndp-clusteroperator"), client.ForceOwnership)
}

func (r *OperatorReconciler) namespace() string {
	if r.Namespace != "" {
		return r.Namespace
	}
	return "ndp-system"
}

func sameOperatorStatus(co *configv1.ClusterOperator, conds []configv1.ClusterOperatorStatusCondition) bool {
	if len(co.Status.Conditions) != len(conds) || len(co.Status.Versions) != 1 || co.Status.Versions[0].Version != Version || len(co.Status.RelatedObjects) == 0 {
		return false
	}
	for _, c := range conds {
		found := false
		for _, old := range co.Status.Conditions {
			found = found || (old.Type == c.Type && old.Status == c.Status && old.Reason == c.Reason && old.Message == conditions.Message(c.Message))
		}
		if !found {
			return false
		}
	}
	return true
}

// OperatorConditions derives the ClusterOperator's conditions from the
// pools (their status, written by the pool status controller from the
// nodes' daemons) and the policies.
func OperatorConditions(pools []mcfgv1.MachineConfigPool, policies []v1alpha1.NodeDisruptionPolicy) []configv1.ClusterOperatorStatusCondition {
	sort.Slice(pools, func(i, j int) bool { return pools[i].Name < pools[j].Name })
	sort.Slice(policies, func(i, j int) bool { return policies[i].Name < policies[j].Name })
	poolCond := func(p *mcfgv1.MachineConfigPool, typ mcfgv1.MachineConfigPoolConditionType) *mcfgv1.MachineConfigPoolCondition {
		for i := range p.Status.Conditions {
			if p.Status.Conditions[i].Type == typ {
				return &p.Status.Conditions[i]
			}
		}
		return nil
	}
	var active, degradedPolicies []string
	for _, p := range policies {
		if meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.ConditionActive) {
			active = append(active, p.Name)
		}
		if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionDegraded); c != nil && c.Status == metav1.ConditionTrue {
			degradedPolicies = append(degradedPolicies, fmt.Sprintf("NodeDisruptionPolicy %s: %s", p.Name, c.Message))
		}
	}
	var progressing, degraded []string
	for i := range pools {
		p := &pools[i]
		if c := poolCond(p, mcfgv1.MachineConfigPoolUpdating); c != nil && c.Status == corev1.ConditionTrue {
			line := fmt.Sprintf("pool %s: %d of %d nodes updated to %s", p.Name, p.Status.UpdatedMachineCount, p.Status.MachineCount, p.Spec.Configuration.Name)
			// Why it does not move, when a rollout policy or a node's
			// hold keeps starts back (the pool's RolloutHeld).
			if h := poolCond(p, ndpmcv1.ConditionRolloutHeld); h != nil && h.Status == corev1.ConditionTrue {
				line += " (" + h.Message + ")"
			}
			progressing = append(progressing, line)
		}
		if c := poolCond(p, mcfgv1.MachineConfigPoolDegraded); c != nil && c.Status == corev1.ConditionTrue {
			degraded = append(degraded, fmt.Sprintf("pool %s: %s", p.Name, c.Message))
		}
	}
	cond := func(typ configv1.ClusterStatusConditionType, ok bool, reasonTrue, reasonFalse, msgTrue, msgFalse string) configv1.ClusterOperatorStatusCondition {
		if ok {
			return configv1.ClusterOperatorStatusCondition{Type: typ, Status: configv1.ConditionTrue, Reason: reasonTrue, Message: msgTrue}
		}
		return configv1.ClusterOperatorStatusCondition{Type: typ, Status: configv1.ConditionFalse, Reason: reasonFalse, Message: msgFalse}
	}
	all := append(append([]string{}, degraded...), degradedPolicies...)
	return []configv1.ClusterOperatorStatusCondition{
		cond(configv1.OperatorAvailable, len(active) > 0, "AsExpected", "NoActivePolicy",
			fmt.Sprintf("%d NodeDisruptionPolicies active (%s); %d pools", len(active), strings.Join(active, ", "), len(pools)),
			"no NodeDisruptionPolicy is active: no update can be planned"),
		cond(configv1.OperatorProgressing, len(progressing) > 0, "PoolsUpdating", "AsExpected", strings.Join(progressing, "; "), "every pool is on its target or paused"),
		cond(configv1.OperatorDegraded, len(all) > 0, "Degraded", "AsExpected", strings.Join(all, "; "), ""),
		cond(configv1.OperatorUpgradeable, len(degraded) == 0, "AsExpected", "PoolsDegraded", "", "degraded pools: "+strings.Join(degraded, "; ")),
	}
}
