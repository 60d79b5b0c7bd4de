package controllers

import (
	"context"

	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/render"
)

// PoolStatusFieldManager is the one writer of MachineConfigPool status.
// openshift/api declares the pool's conditions an atomic list, so two
// controllers applying conditions would take the list from each other:
// the render and registries controllers report theirs to PoolConditions,
// and this controller writes the whole status.
const PoolStatusFieldManager = "ndp-pool-status"

// PoolConditions holds the conditions other controllers report for pools
// (RenderDegraded, RegistriesDegraded) until the pool status controller
// writes them. A condition no controller has reported since the process
// started keeps the value the pool's status has.
type PoolConditions struct {
	mu      sync.Mutex
	byPool  map[string]map[mcfgv1.MachineConfigPoolConditionType]mcfgv1.MachineConfigPoolCondition
	changes chan event.GenericEvent
}

// NewPoolConditions returns an empty board.
func NewPoolConditions() *PoolConditions {
	return &PoolConditions{byPool: map[string]map[mcfgv1.MachineConfigPoolConditionType]mcfgv1.MachineConfigPoolCondition{}, changes: make(chan event.GenericEvent, 1024)}
}

// Set reports one condition of a pool.
func (b *PoolConditions) Set(pool string, typ mcfgv1.MachineConfigPoolConditionType, status corev1.ConditionStatus, reason, msg string) {
	c := mcfgv1.MachineConfigPoolCondition{Type: typ, Status: status, Reason: reason, Message: truncate(msg, maxMessage)}
	b.mu.Lock()
	m := b.byPool[pool]
	if m == nil {
		m = map[mcfgv1.MachineConfigPoolConditionType]mcfgv1.MachineConfigPoolCondition{}
		b.byPool[pool] = m
	}
	old, had := m[typ]
	m[typ] = c
	b.mu.Unlock()
	if had && old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message {
		return
	}
	p := &mcfgv1.MachineConfigPool{}
	p.Name = pool
	select {
	case b.changes <- event.GenericEvent{Object: p}:
	default: // a full queue: the periodic resync catches up
	}
}

func (b *PoolConditions) get(pool string) map[mcfgv1.MachineConfigPoolConditionType]mcfgv1.MachineConfigPoolCondition {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[mcfgv1.MachineConfigPoolConditionType]mcfgv1.MachineConfigPoolCondition{}
	for k, v := range b.byPool[pool] {
		out[k] = v
	}
	return out
}

// poolNodes counts each pool's nodes by state, for dashboards and the
// shipped alerts (manifests/monitoring).
var poolNodes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "ndp_pool_nodes",
	Help: "Nodes of a MachineConfigPool by state: total, updated, ready, updating, unavailable, degraded.",
}, []string{"pool", "state"})

func init() { ctrlmetrics.Registry.MustRegister(poolNodes) }

// Pool conditions the rollout adds to openshift/api's.
const (
	ConditionPoolUpdated      mcfgv1.MachineConfigPoolConditionType = mcfgv1.MachineConfigPoolUpdated
	ConditionPoolUpdating     mcfgv1.MachineConfigPoolConditionType = mcfgv1.MachineConfigPoolUpdating
	ConditionPoolDegraded     mcfgv1.MachineConfigPoolConditionType = mcfgv1.MachineConfigPoolDegraded
	ConditionPoolNodeDegraded mcfgv1.MachineConfigPoolConditionType = mcfgv1.MachineConfigPoolNodeDegraded
)

// +kubebuilder:rbac:groups=machineconfiguration.openshift.io,resources=machineconfigpools/status,verbs=patch

// PoolStatusReconciler writes each pool's status: node counts, the rollout
// conditions (Updated, Updating, NodeDegraded, Degraded) derived from its
// nodes and its target's plans, and the conditions other controllers
// report to PoolConditions. It is level-triggered: the status is
// re-derived from the cluster at every reconcile.
type PoolStatusReconciler struct {
	Client     client.Client
	Conditions *PoolConditions
}

// SetupWithManager reconciles a pool when it, its nodes or MachineConfigs
// change, or when another controller reports a condition.
func (r *PoolStatusReconciler) SetupWithManager(mgr ctrl.Manager) error {
	allPools := enqueueAllPools(r.Client)
	return ctrl.NewControllerManagedBy(mgr).
		Named("poolstatus").
		For(&mcfgv1.MachineConfigPool{}).
		Watches(&corev1.Node{}, enqueuePoolsOfNode(r.Client)).
		Watches(&ndpmcv1.MachineConfig{}, allPools).
		WatchesRawSource(source.Channel(r.Conditions.changes, &handler.EnqueueRequestForObject{})).
		Complete(r)
}

// Reconcile writes one pool's status.
func (r *PoolStatusReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var pool mcfgv1.MachineConfigPool
	if err := r.Client.Get(ctx, req.NamespacedName, &pool); err != nil {
		if apierrors.IsNotFound(err) {
			poolNodes.DeletePartialMatch(prometheus.Labels{"pool": req.Name})
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	nodes, err := render.NewPoolView(r.Client, &pool).Nodes(ctx)
	if err != nil {
		nodes = nil // a bad selector is the render controller's to report
	}
	target := pool.Spec.Configuration.Name
	var targetMC *ndpmcv1.MachineConfig
	if target != "" {
		var mc ndpmcv1.MachineConfig
		if err := r.Client.Get(ctx, client.ObjectKey{Name: target}, &mc); err == nil {
			targetMC = &mc
		} else if client.IgnoreNotFound(err) != nil {
			return reconcile.Result{}, err
		}
	}
	s := summarize(&pool, nodes, targetMC)
	for state, n := range map[string]int{"total": len(nodes), "updated": s.updated, "ready": s.ready, "updating": len(s.updating), "unavailable": s.unavailable, "degraded": len(s.degraded)} {
		poolNodes.WithLabelValues(pool.Name, state).Set(float64(n))
	}

	conds := map[mcfgv1.MachineConfigPoolConditionType]mcfgv1.MachineConfigPoolCondition{}
	for _, c := range pool.Status.Conditions {
		conds[c.Type] = c
	}
	set := func(typ mcfgv1.MachineConfigPoolConditionType, ok bool, reason, msg string) {
		st := corev1.ConditionFalse
		if ok {
			st = corev1.ConditionTrue
		}
		conds[typ] = mcfgv1.MachineConfigPoolCondition{Type: typ, Status: st, Reason: reason, Message: truncate(msg, maxMessage)}
	}
	for typ, c := range r.Conditions.get(pool.Name) {
		conds[typ] = c
	}
	set(ConditionPoolUpdated, s.updated == len(nodes) && target != "", "AllNodesUpdated", fmt.Sprintf("all %d nodes run %s", len(nodes), target))
	if c := conds[ConditionPoolUpdated]; c.Status != corev1.ConditionTrue {
		c.Reason, c.Message = "NodesNotUpdated", fmt.Sprintf("%d of %d nodes run %s", s.updated, len(nodes), target)
		conds[ConditionPoolUpdated] = c
	}
	switch {
	case s.updated == len(nodes):
		set(ConditionPoolUpdating, false, "Idle", "")
	case pool.Spec.Paused:
		set(ConditionPoolUpdating, false, "Paused", fmt.Sprintf("paused with %d of %d nodes on %s", s.updated, len(nodes), target))
	default:
		set(ConditionPoolUpdating, true, "Updating", fmt.Sprintf("%d of %d nodes on %s; updating: %s", s.updated, len(nodes), target, names(s.updating)))
	}
	set(ConditionPoolNodeDegraded, len(s.degraded) > 0, "NodeDegraded", strings.Join(s.degraded, "; "))
	if len(s.degraded) == 0 {
		c := conds[ConditionPoolNodeDegraded]
		c.Reason, c.Message = "AsExpected", ""
		conds[ConditionPoolNodeDegraded] = c
	}
	var why []string
	for _, typ := range []mcfgv1.MachineConfigPoolConditionType{ConditionPoolNodeDegraded, mcfgv1.MachineConfigPoolRenderDegraded, ndpmcv1.ConditionRegistriesDegraded} {
		if c, ok := conds[typ]; ok && c.Status == corev1.ConditionTrue {
			why = append(why, fmt.Sprintf("%s: %s", typ, c.Message))
		}
	}
	if s.unreconcilable != "" {
		why = append(why, s.unreconcilable)
	}
	set(ConditionPoolDegraded, len(why) > 0, "Degraded", strings.Join(why, "; "))
	if len(why) == 0 {
		c := conds[ConditionPoolDegraded]
		c.Reason = "AsExpected"
		conds[ConditionPoolDegraded] = c
	}

	// lastTransitionTime moves only when a condition's status does.
	var out []any
	for _, typ := range sortedConditionTypes(conds) {
		c := conds[typ]
		ltt := metav1.Now()
		for _, old := range pool.Status.Conditions {
			if old.Type == typ && old.Status == c.Status && !old.LastTransitionTime.IsZero() {
				ltt = old.LastTransitionTime
			}
		}
		out = append(out, map[string]any{"type": string(typ), "status": string(c.Status), "reason": c.Reason, "message": c.Message,
			"lastTransitionTime": ltt.UTC().Format(time.RFC3339)})
	}
	status := map[string]any{
		"observedGeneration":      pool.Generation,
		"machineCount":            int64(len(nodes)),
		"updatedMachineCount":     int64(s.updated),
		"readyMachineCount":       int64(s.ready),
		"unavailableMachineCount": int64(s.unavailable),
		"degradedMachineCount":    int64(len(s.degraded)),
		"conditions":              out,
	}
	if target != "" && s.updated == len(nodes) {
		status["configuration"] = map[string]any{"name": target}
	} else if pool.Status.Configuration.Name != "" {
		status["configuration"] = map[string]any{"name": pool.Status.Configuration.Name}
	}
	if same(&pool, status) {
		return reconcile.Result{}, nil
	}
	u := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": pool.Name}, "status": status}}
	u.SetGroupVersionKind(mcfgv1.GroupVersion.WithKind("MachineConfigPool"))
	err = r.Client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(PoolStatusFieldManager), client.ForceOwnership)
	return reconcile.Result{}, client.IgnoreNotFound(err)
}

// same tells whether the pool's status already says all of status.
func same(pool *mcfgv1.MachineConfigPool, status map[string]any) bool {
	st := pool.Status
	if st.ObservedGeneration != pool.Generation || int64(st.MachineCount) != status["machineCount"] || int64(st.UpdatedMachineCount) != status["updatedMachineCount"] ||
		int64(st.ReadyMachineCount) != status["readyMachineCount"] || int64(st.UnavailableMachineCount) != status["unavailableMachineCount"] ||
		int64(st.DegradedMachineCount) != status["degradedMachineCount"] {
		return false
	}
	if c, ok := status["configuration"].(map[string]any); ok && c["name"] != st.Configuration.Name {
		return false
	}
	conds := status["conditions"].([]any)
	if len(conds) != len(st.Conditions) {
		return false
	}
	for _, raw := range conds {
		c := raw.(map[string]any)
		found := false
		for _, old := range st.Conditions {
			if string(old.Type) == c["type"] && string(old.Status) == c["status"] && old.Reason == c["reason"] && old.Message == c["message"] {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func sortedConditionTypes(m map[mcfgv1.MachineConfigPoolConditionType]mcfgv1.MachineConfigPoolCondition) []mcfgv1.MachineConfigPoolConditionType {
	out := make([]mcfgv1.MachineConfigPoolConditionType, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// poolSummary is what a pool's nodes say about its rollout.
type poolSummary struct {
	updated, ready, unavailable int
	updating                    []*corev1.Node
	degraded                    []string // "node: reason"
	unreconcilable              string
}

func names(nodes []*corev1.Node) string {
	out := make([]string, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, n.Name)
	}
	return strings.Join(out, ", ")
}

func summarize(pool *mcfgv1.MachineConfigPool, nodes []*corev1.Node, target *ndpmcv1.MachineConfig) poolSummary {
	var s poolSummary
	name := pool.Spec.Configuration.Name
	for _, n := range nodes {
		cur, desired := n.Annotations[ndpmcv1.CurrentConfigAnnotation], n.Annotations[ndpmcv1.DesiredConfigAnnotation]
		state := n.Annotations[ndpmcv1.StateAnnotation]
		if name != "" && cur == name && (desired == "" || desired == name) && state != ndpmcv1.StateDegraded && state != ndpmcv1.StateUnreconcilable {
			s.updated++
			if nodeReady(n) && !n.Spec.Unschedulable {
				s.ready++
			}
		}
		if unavailable(n) {
			s.unavailable++
		}
		if updating(n) {
			s.updating = append(s.updating, n)
		}
		if state == ndpmcv1.StateDegraded || state == ndpmcv1.StateUnreconcilable {
			s.degraded = append(s.degraded, fmt.Sprintf("node %s: %s", n.Name, n.Annotations[ndpmcv1.ReasonAnnotation]))
		}
	}
	sort.Strings(s.degraded)
	if target != nil {
		for _, c := range target.Status.Conditions {
			if c.Type == ndpmcv1.ConditionUnreconcilable && c.Status == metav1.ConditionTrue {
				s.unreconcilable = fmt.Sprintf("the plans to %s are unreconcilable: %s", target.Name, c.Message)
			}
		}
	}
	return s
}

// nodeReady: the kubelet reports the node Ready.
func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// updating: the node was sent to a config it does not run yet, or its
// daemon is at work.
func updating(n *corev1.Node) bool {
	cur, desired := n.Annotations[ndpmcv1.CurrentConfigAnnotation], n.Annotations[ndpmcv1.DesiredConfigAnnotation]
	return (desired != "" && desired != cur) || n.Annotations[ndpmcv1.StateAnnotation] == ndpmcv1.StateWorking
}

// unavailable: updating, not Ready, cordoned or degraded. Degraded nodes
// consume the budget, so that a bad config stops spreading.
func unavailable(n *corev1.Node) bool {
	state := n.Annotations[ndpmcv1.StateAnnotation]
	return updating(n) || !nodeReady(n) || n.Spec.Unschedulable || state == ndpmcv1.StateDegraded || state == ndpmcv1.StateUnreconcilable
}
