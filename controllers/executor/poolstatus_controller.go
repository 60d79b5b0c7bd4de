package executor

import (
	"context"
	"errors"
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
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/ndp-dev/ndp/apis/conditions"
	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/controllers/poolevents"
	"github.com/ndp-dev/ndp/nodepool"
	"github.com/ndp-dev/ndp/render"
)

// PoolStatusFieldManager is the one writer of MachineConfigPool status.
// openshift/api declares the pool's conditions an atomic list, so two
// controllers applying conditions would take the list from each other:
// the render and registries controllers report theirs to PoolConditions,
// and this controller writes the whole status.
const PoolStatusFieldManager = "ndp-pool-status"

// PoolConditions holds the conditions other controllers report for pools
// (RenderDegraded, RegistriesDegraded, MCOPresent) until the pool status controller
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
	c := mcfgv1.MachineConfigPoolCondition{Type: typ, Status: status, Reason: reason, Message: conditions.Message(msg)}
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
// re-derived from the cluster at every reconcile (calculatePoolStatus);
// the reconciler reads and applies.
type PoolStatusReconciler struct {
	Client client.Client
	// Nodes is the cache's Node index (render.IndexNodeLabels); nil: the
	// pool's nodes are listed from Client.
	Nodes    render.NodeIndex
	Recorder events.EventRecorder
	// Conditions gets UnmanagedNodes here, and RenderDegraded,
	// RegistriesDegraded and MCOPresent from the other controllers.
	Conditions *PoolConditions

	// warned holds "node\x00message" of the NoPrimaryPool events sent, so
	// that each pool that selects the node does not repeat it.
	warned sync.Map
	// Interval is the least time between two writes of a pool's status
	// that change only its progress: node counts, conditions' messages
	// (DefaultPoolStatusInterval when zero); written records when each
	// pool's was last written.
	Interval time.Duration
	written  sync.Map // pool name → time.Time
}

// DefaultPoolStatusInterval: during a rollout every node's step changes a
// pool's counts; written at each, a 1,000-node rollout cost the API
// server a pool status write per node, and woke the ClusterOperator's
// controller as often. A condition's change of status or reason (the
// rollout's end among them) is written at once.
const DefaultPoolStatusInterval = 2 * time.Second

// progressDue decides whether a status that differs from the pool's only
// in its progress (same) is written now (wait 0), or after wait: at most
// one such write per interval.
func progressDue(last, now time.Time, interval time.Duration) (wait time.Duration) {
	if since := now.Sub(last); since < interval {
		return interval - since
	}
	return 0
}

// SetupWithManager reconciles a pool when it, its nodes or MachineConfigs
// change, or when another controller reports a condition.
func (r *PoolStatusReconciler) SetupWithManager(mgr ctrl.Manager) error {
	allPools := poolevents.AllPools(r.Client)
	return ctrl.NewControllerManagedBy(mgr).
		Named("poolstatus").
		For(&mcfgv1.MachineConfigPool{}, poolevents.Changed).
		Watches(&mcfgv1.MachineConfigPool{}, allPools, poolevents.MembershipChanged).
		Watches(&corev1.Node{}, poolevents.PoolsOfNode(r.Client)).
		Watches(&ndpmcv1.MachineConfig{}, allPools).
		WatchesRawSource(source.Channel(r.Conditions.changes, &handler.EnqueueRequestForObject{})).
		// Pools are independent; the queue never hands one to two workers.
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
		Complete(r)
}

// Reconcile writes one pool's status.
func (r *PoolStatusReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var pool mcfgv1.MachineConfigPool
	if err := r.Client.Get(ctx, req.NamespacedName, &pool); err != nil {
		if apierrors.IsNotFound(err) {
			poolNodes.DeletePartialMatch(prometheus.Labels{"pool": req.Name})
			r.written.Delete(req.Name)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	// The cache's own nodes, read-only: they are only counted.
	view := render.NewCachedPoolView(r.Client, r.Nodes, &pool)
	nodes, unmanaged, err := view.Members(ctx)
	var selErr *render.SelectorError
	if errors.As(err, &selErr) {
		nodes, unmanaged = nil, nil // a bad selector is the render controller's to report
	} else if err != nil {
		return reconcile.Result{}, err
	}
	r.reportUnmanaged(&pool, unmanaged)
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
	st := calculatePoolStatus(&pool, nodes, targetMC, r.Conditions.get(pool.Name), metav1.Now())
	c := st.Counts
	for state, n := range map[string]int{"total": c.Total, "updated": c.Updated, "ready": c.Ready, "updating": c.Updating, "unavailable": c.Unavailable, "degraded": c.Degraded} {
		poolNodes.WithLabelValues(pool.Name, state).Set(float64(n))
	}
	var conds []any
	for _, cond := range st.Conditions {
		conds = append(conds, map[string]any{"type": string(cond.Type), "status": string(cond.Status), "reason": cond.Reason, "message": cond.Message,
			"lastTransitionTime": cond.LastTransitionTime.UTC().Format(time.RFC3339)})
	}
	status := map[string]any{
		"observedGeneration":      pool.Generation,
		"machineCount":            int64(c.Total),
		"updatedMachineCount":     int64(c.Updated),
		"readyMachineCount":       int64(c.Ready),
		"unavailableMachineCount": int64(c.Unavailable),
		"degradedMachineCount":    int64(c.Degraded),
		"conditions":              conds,
	}
	if st.Configuration != "" {
		status["configuration"] = map[string]any{"name": st.Configuration}
	}
	if same(&pool, status, true) {
		return reconcile.Result{}, nil
	}
	now := time.Now()
	if same(&pool, status, false) {
		interval := r.Interval
		if interval == 0 {
			interval = DefaultPoolStatusInterval
		}
		last, _ := r.written.Load(pool.Name)
		lastAt, _ := last.(time.Time)
		if wait := progressDue(lastAt, now, interval); wait > 0 {
			return reconcile.Result{RequeueAfter: wait}, nil
		}
	}
	u := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": pool.Name}, "status": status}}
	u.SetGroupVersionKind(mcfgv1.GroupVersion.WithKind("MachineConfigPool"))
	err = r.Client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(PoolStatusFieldManager), client.ForceOwnership)
	if err == nil {
		r.written.Store(pool.Name, now)
	}
	return reconcile.Result{}, client.IgnoreNotFound(err)
}

// reportUnmanaged sets the pool's UnmanagedNodes condition, and sends a
// Warning event about each node no pool manages, once per reason.
func (r *PoolStatusReconciler) reportUnmanaged(pool *mcfgv1.MachineConfigPool, unmanaged []nodepool.Unmanaged) {
	if len(unmanaged) == 0 {
		r.Conditions.Set(pool.Name, ndpmcv1.ConditionUnmanagedNodes, corev1.ConditionFalse, "AsExpected", "")
		return
	}
	msgs := make([]string, 0, len(unmanaged))
	for _, u := range unmanaged {
		msg := u.Err.Error()
		msgs = append(msgs, msg)
		if _, sent := r.warned.LoadOrStore(u.Node.Name+"\x00"+msg, true); !sent {
			r.Recorder.Eventf(u.Node, pool, corev1.EventTypeWarning, "NoPrimaryPool", "Membership", "%s", msg)
		}
	}
	sort.Strings(msgs)
	r.Conditions.Set(pool.Name, ndpmcv1.ConditionUnmanagedNodes, corev1.ConditionTrue, "NoPrimaryPool",
		fmt.Sprintf("%d selected nodes are managed by no pool: %s", len(unmanaged), strings.Join(msgs, "; ")))
}

// same tells whether the pool's status already says all of status; with
// progress false, all but its progress: the node counts and the
// conditions' messages (which count and name nodes), not their status
// or reason.
func same(pool *mcfgv1.MachineConfigPool, status map[string]any, progress bool) bool {
	st := pool.Status
	if st.ObservedGeneration != pool.Generation {
		return false
	}
	if progress && (int64(st.MachineCount) != status["machineCount"] || int64(st.UpdatedMachineCount) != status["updatedMachineCount"] ||
		int64(st.ReadyMachineCount) != status["readyMachineCount"] || int64(st.UnavailableMachineCount) != status["unavailableMachineCount"] ||
		int64(st.DegradedMachineCount) != status["degradedMachineCount"]) {
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
			if string(old.Type) == c["type"] && string(old.Status) == c["status"] && old.Reason == c["reason"] && (!progress || old.Message == c["message"]) {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}
