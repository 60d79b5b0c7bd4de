package executor

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/ndp-dev/ndp/apis/conditions"
	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/controllers/poolevents"
	"github.com/ndp-dev/ndp/mco/mcoguard"
	"github.com/ndp-dev/ndp/render"
	"github.com/ndp-dev/ndp/rolloutcontrol"
)

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch
// A RolloutPolicy's blocking-pods gate lists pods and, for its namespaceSelector, reads
// namespaces; its drained-pods pacing reads the drained pods' owners and lists the pods of
// those that may have pods on their way (rolloutgates: no watch of pods).
// +kubebuilder:rbac:groups="",resources=pods,verbs=list
// +kubebuilder:rbac:groups="",resources=namespaces;replicationcontrollers,verbs=get
// +kubebuilder:rbac:groups=apps,resources=replicasets;statefulsets,verbs=get
// +kubebuilder:rbac:groups=machineconfiguration.openshift.io,resources=machineconfigpools,verbs=get;list;watch
// +kubebuilder:rbac:groups=machineconfiguration.openshift.io,resources=machineconfigs,verbs=get;list;watch
// The MCO's daemon, the one DaemonSet the cache holds (CacheOptions): its
// list and watch select it by name, which resourceNames authorizes.
// +kubebuilder:rbac:groups=apps,resources=daemonsets,verbs=get;list;watch,resourceNames=machine-config-daemon

// RolloutReconciler moves each pool's nodes to the pool's target, a slice
// at a time: it sets a node's desiredConfig annotation, and the node's
// daemon executes the plan. It never exceeds the pool's maxUnavailable
// (counting nodes that are not ready or not done), honours paused, picks
// nodes in the MCO's order (zone, then age; no zone last), sends a node
// only to a target whose plan from that node's config is ready, and keeps
// the MCO's UpdateInProgress:PreferNoSchedule taint on the nodes not sent
// to the target yet. decideRollout makes these choices; the reconciler
// reads and patches, one write per node. Where the Machine Config Operator
// manages the nodes (mcoguard), it writes no node at all and says so on
// every pool (MCOPresent).
type RolloutReconciler struct {
	Client client.Client
	// Nodes is the cache's Node index (render.IndexNodeLabels); nil: the
	// pool's nodes are listed from Client.
	Nodes    render.NodeIndex
	Recorder events.EventRecorder
	// Conditions gets each pool's MCOPresent.
	Conditions *PoolConditions
	// MCO tells whether the Machine Config Operator manages the nodes.
	MCO *mcoguard.Guard
	// Recheck is how often a pool waiting for a slot or a plan is looked
	// at again besides the events that wake it.
	Recheck time.Duration
	// Gates evaluates the gates of the RolloutPolicies; nil: gates hold
	// (rolloutcontrol.EvaluateGates: not evaluated).
	Gates GateSource
	// Now is the clock of the policies' windows and pacing; nil: time.Now.
	Now func() time.Time

	// board passes each pool's holds to the RolloutPolicy status writer
	// (nil: not passed).
	board *rolloutBoard
	// pacing remembers each pool's last finished node.
	pacing poolPacing
	// compiler keeps each policy's compiled form.
	compiler rolloutcontrol.Compiler
	// held holds, by pool, the last hold reported by an Event (holdKey),
	// and heldKinds the reason kinds of the ndp_rollout_held gauge.
	held, heldKinds sync.Map

	// warned holds, by pool, the MCO message last sent as an event, so
	// that a pool warns once per change, not at every reconcile.
	warned sync.Map
}

// mcoVerdict tells whether the Machine Config Operator manages the
// cluster's nodes, from the guard's watches (no request). The render,
// registries, kubelet and container runtime config and rollout controllers
// all stand down on it: the MCO writes the same rendered configs, the same
// generated MachineConfigs and the same pool and node fields. Before the
// guard knows, it is an error (retried; the guard's first sync wakes them).
func mcoVerdict(g *mcoguard.Guard) (mcoguard.Verdict, error) {
	if g == nil {
		return mcoguard.Verdict{}, errNoGuard
	}
	return g.Verdict()
}

var errNoGuard = errors.New("no Machine Config Operator guard (Options.MCO): cannot tell whether the MCO manages the nodes")

// mcoChanges is a source that enqueues with h whenever the MCO comes or
// goes (the guard's Subscribe).
func mcoChanges(g *mcoguard.Guard, h handler.EventHandler) (source.Source, error) {
	if g == nil {
		return nil, errNoGuard
	}
	return source.Channel(g.Subscribe(), h), nil
}

// rolloutDecisions counts, per pool, the reconciles that looked at the pool
// and decided (sent nodes, waited, or found it paused or blocked): the one
// sign that the rollout considered a pool and chose to send nobody.
var rolloutDecisions = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "ndp_rollout_decisions_total",
	Help: "Reconciles of a MachineConfigPool by the rollout controller that ended in a decision (nodes sent, or none).",
}, []string{"pool"})

func init() { ctrlmetrics.Registry.MustRegister(rolloutDecisions) }

// SetupWithManager reconciles every pool when nodes or MachineConfigs
// (their plans) change, or the MCO's ClusterOperator or daemon comes or
// goes.
func (r *RolloutReconciler) SetupWithManager(mgr ctrl.Manager) error {
	allPools := poolevents.AllPools(r.Client)
	mco, err := mcoChanges(r.MCO, allPools)
	if err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("rollout").
		For(&mcfgv1.MachineConfigPool{}, poolevents.Changed).
		Watches(&mcfgv1.MachineConfigPool{}, allPools, poolevents.MembershipChanged).
		Watches(&corev1.Node{}, poolevents.PoolsOfNode(r.Client)).
		Watches(&ndpmcv1.MachineConfig{}, allPools).
		// A policy's spec (not its status, which the status writer
		// patches) wakes the pools it selects, before or after the change.
		// A node's hold annotation is a node update: poolevents.PoolsOfNode
		// wakes its pool already.
		Watches(&v1alpha1.RolloutPolicy{}, enqueuePoolsOfPolicy(r.Client), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesRawSource(mco).
		// Pools are independent (the queue never hands one pool to two
		// workers): one slow pool must not hold the others back.
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
		Complete(r)
}

// Reconcile sends as many of a pool's nodes to its target as its budget
// allows: decideRollout decides, Reconcile reads and patches.
func (r *RolloutReconciler) Reconcile(ctx context.Context, req reconcile.Request) (_ reconcile.Result, rerr error) {
	var pool mcfgv1.MachineConfigPool
	if err := r.Client.Get(ctx, req.NamespacedName, &pool); err != nil {
		if apierrors.IsNotFound(err) {
			rolloutDecisions.DeleteLabelValues(req.Name)
			rolloutHeld.DeletePartialMatch(prometheus.Labels{"pool": req.Name})
			r.board.remove(req.Name)
			r.pacing.forget(req.Name)
			r.held.Delete(req.Name)
			r.heldKinds.Delete(req.Name)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	defer func() {
		if rerr == nil {
			rolloutDecisions.WithLabelValues(pool.Name).Inc()
		}
	}()
	// First, so that a paused pool reports it too.
	if down, err := r.standDown(ctx, &pool); down || err != nil {
		return reconcile.Result{}, err
	}
	switch rolloutBlocked(&pool) {
	case "":
	case stopPaused:
		return r.markOverdueWhilePaused(ctx, &pool)
	default:
		return reconcile.Result{}, nil
	}
	// The cache's own nodes, read-only: send patches a copy. A pool of
	// hundreds of nodes is looked at on every step of every node.
	view := render.NewCachedPoolView(r.Client, r.Nodes, &pool)
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
	pol, drained, gatesNext, err := r.rolloutPolicies(ctx, &pool, nodes)
	if err != nil {
		return reconcile.Result{}, err
	}
	var reads podReads
	if r.Gates != nil {
		if drained != nil {
			reads.drainedNotReady = func() ([]string, error) {
				return r.pacing.drainedNotReady(pool.Name, drained, pol.Now, func() ([]string, error) { return r.Gates.DrainedNotReady(ctx, drained) })
			}
		}
		reads.blocking = func(p *v1alpha1.RolloutPolicy) *rolloutcontrol.PodsResult { return r.Gates.BlockingPods(ctx, p) }
	}
	d, err := decideRolloutPaced(&pool, nodes, mc, pol, reads)
	if err != nil {
		return reconcile.Result{}, err
	}
	r.reportHolds(&pool, d, pol.policies(), pol.Now)
	if d.Policy != nil {
		for _, o := range d.Policy.Overdue {
			if err := r.markOverdue(ctx, &pool, o); err != nil {
				return reconcile.Result{}, err
			}
		}
	}
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
	write := func(ctx context.Context, n *corev1.Node, desired string, drain *v1alpha1.DrainTimeout) error {
		t, ok := taint[n]
		return r.patchNode(ctx, n, desired, drain, t, ok)
	}
	// A node sent to the target carries the pool's drain timeout, in the
	// same patch: its daemon executes it, deciding nothing.
	drain := rolloutcontrol.DrainTimeoutFor(pol.policies())
	for _, n := range d.Redirect {
		written[n] = true
		desired := n.Annotations[ndpmcv1.DesiredConfigAnnotation]
		if err := write(ctx, n, target, drain); err != nil {
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
		if err := write(ctx, n, n.Annotations[ndpmcv1.CurrentConfigAnnotation], nil); err != nil {
			return reconcile.Result{}, err
		}
	}
	for _, n := range d.Send {
		written[n] = true
	}
	for _, n := range d.Grant {
		if err := r.grantReboot(ctx, &pool, n, drain); err != nil {
			return reconcile.Result{}, err
		}
	}
	// The picks go out together (each patch still carries the node's
	// resourceVersion): one at a time, a slice of a large pool would take
	// longer to send than its nodes take to update. So do the taints of
	// the nodes not written otherwise.
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(maxParallelSends)
	for i, n := range d.Send {
		g.Go(func() error {
			if err := write(gctx, n, target, drain); err != nil {
				return err
			}
			// An Event for what a person reads: the node is about to be
			// drained or rebooted. A plan that only writes files and
			// restarts services is in the node's history (ndp why).
			if disrupts(mc, n) {
				r.Recorder.Eventf(n, &pool, corev1.EventTypeNormal, "UpdateStarted", "Rollout", "pool %s: sent to %s (%d of %d nodes out, budget %d)", pool.Name, target, d.Out+i+1, len(nodes), d.Budget)
			}
			return nil
		})
	}
	for _, n := range append(slices.Clone(d.Taint), d.Untaint...) {
		if !written[n] {
			g.Go(func() error { return write(gctx, n, "", nil) })
		}
	}
	if err := g.Wait(); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: requeueAfter(d, pol.Now, gatesNext, r.recheck())}, nil
}

// requeueAfter is when to look at the pool again besides the events that
// wake it: after recheck when a node waits for its plan, when a window
// opens or a settle time ends (a second late, so that it has), and when
// the gates are evaluated next; 0: only on events.
func requeueAfter(d rolloutDecision, now, gatesNext time.Time, recheck time.Duration) time.Duration {
	var after time.Duration
	soonest := func(a time.Duration) {
		if a > 0 && (after == 0 || a < after) {
			after = a
		}
	}
	if d.Wait {
		soonest(recheck)
	}
	if !d.Next.IsZero() {
		soonest(max(d.Next.Sub(now)+time.Second, time.Second))
	}
	if d.Policy != nil && polled(d.Policy) {
		if gatesNext.IsZero() {
			soonest(recheck) // no time of the source's own: poll
		} else {
			soonest(max(gatesNext.Sub(now), time.Second))
		}
	}
	return after
}

// polled: a reason holds that changes without an event the controller
// watches (a gate, pods drained from the last node).
func polled(d *rolloutcontrol.Decision) bool {
	is := func(r rolloutcontrol.Reason) bool {
		switch r.Kind {
		case rolloutcontrol.ReasonAlert, rolloutcontrol.ReasonQuery, rolloutcontrol.ReasonGateError, rolloutcontrol.ReasonBlockingPod, rolloutcontrol.ReasonDrainedPods:
			return true
		}
		return false
	}
	for _, r := range d.Pool {
		if is(r) {
			return true
		}
	}
	for _, rs := range d.Held {
		for _, r := range rs {
			if is(r) {
				return true
			}
		}
	}
	return false
}

func (r *RolloutReconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// rolloutPolicies reads the pool's RolloutPolicies from the cache and has
// their remote gates evaluated; drained are the pods drained from the
// pool's last node when a policy waits for them to be Ready again (the
// caller reads them when it matters); gatesNext is the earliest time a
// GateSource will look again.
func (r *RolloutReconciler) rolloutPolicies(ctx context.Context, pool *mcfgv1.MachineConfigPool, nodes []*corev1.Node) (pol rolloutPolicies, drained *v1alpha1.DrainedPods, gatesNext time.Time, err error) {
	pol = rolloutPolicies{Now: r.now()}
	var list v1alpha1.RolloutPolicyList
	if err := r.Client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return pol, nil, time.Time{}, err
	}
	for _, p := range rolloutcontrol.PoliciesFor(pool, list.Items) {
		pi := rolloutcontrol.PolicyInput{Policy: p}
		pi.Compiled, _ = r.compiler.Compile(p) // an invalid one: Decide holds the pool and says why
		// Without a GateSource the results stay nil: each gate holds as
		// "not evaluated yet" (or warns, failOpen). The blocking pods are
		// read when a node would start (decideRolloutPaced): until then
		// none block.
		if p.Spec.Gates != nil && r.Gates != nil {
			var next time.Time
			pi.Gates, next = r.Gates.Remote(ctx, p)
			if !next.IsZero() && (gatesNext.IsZero() || next.Before(gatesNext)) {
				gatesNext = next
			}
			if p.Spec.Gates.BlockingPods != nil {
				pi.Gates.BlockingPods = &rolloutcontrol.PodsResult{}
			}
		}
		pol.Policies = append(pol.Policies, pi)
	}
	if len(pol.Policies) > 0 {
		pol.Pacing, drained = r.pacing.observe(pool.Name, pool.Spec.Configuration.Name, nodes, pol.Now)
		if !waitsForDrainedPods(pol.Policies) {
			drained = nil
		}
	}
	return pol, drained, gatesNext, nil
}

func waitsForDrainedPods(policies []rolloutcontrol.PolicyInput) bool {
	for _, p := range policies {
		if p.Policy.Spec.Pacing != nil && p.Policy.Spec.Pacing.WaitForDrainedPodsReady {
			return true
		}
	}
	return false
}

// reportHolds reports what holds the pool's starts: its RolloutHeld
// condition (for a pool some policy selects or that had a hold: others
// keep their conditions as they were), the ndp_rollout_held gauge, an
// Event when the reasons change (RolloutHeld) or end (RolloutReleased),
// and the RolloutPolicy status writer's board.
func (r *RolloutReconciler) reportHolds(pool *mcfgv1.MachineConfigPool, d rolloutDecision, policies []*v1alpha1.RolloutPolicy, now time.Time) {
	if d.Stop != "" {
		return // not decided: the hold stays as last reported
	}
	v := holdView(d)
	key := holdKey(v)
	prev, had := r.held.Load(pool.Name)
	if len(policies) == 0 && !v.Holding() && !had {
		return
	}
	st, reason, msg := heldCondition(v)
	if r.Conditions != nil {
		r.Conditions.Set(pool.Name, ndpmcv1.ConditionRolloutHeld, st, reason, msg)
	}
	r.board.set(pool.Name, v, policies, now)

	// The gauge: every kind that held before and does not now goes to 0.
	kinds := map[rolloutcontrol.ReasonKind]int{}
	for k, n := range v.Kinds {
		kinds[k] = n
	}
	if old, ok := r.heldKinds.Load(pool.Name); ok {
		for k := range old.(map[rolloutcontrol.ReasonKind]int) {
			if _, still := kinds[k]; !still {
				rolloutHeld.WithLabelValues(pool.Name, string(k)).Set(0)
			}
		}
		for k := range kinds {
			if _, was := old.(map[rolloutcontrol.ReasonKind]int)[k]; !was {
				rolloutHolds.WithLabelValues(pool.Name, string(k)).Inc()
			}
		}
	} else {
		for k := range kinds {
			rolloutHolds.WithLabelValues(pool.Name, string(k)).Inc()
		}
	}
	for k, n := range kinds {
		rolloutHeld.WithLabelValues(pool.Name, string(k)).Set(float64(n))
	}
	r.heldKinds.Store(pool.Name, kinds)

	r.held.Store(pool.Name, key)
	if r.Recorder == nil || (had && prev.(string) == key) {
		return
	}
	switch {
	case v.Holding():
		r.Recorder.Eventf(pool, nil, corev1.EventTypeNormal, "RolloutHeld", "Rollout", "%s", conditions.Message(msg))
	case had && prev.(string) != "":
		r.Recorder.Eventf(pool, nil, corev1.EventTypeNormal, "RolloutReleased", "Rollout", "no rollout policy or hold annotation holds a start now")
	}
}

// enqueuePoolsOfPolicy maps a RolloutPolicy's event to the pools its
// selector selects, before or after an update; an invalid selector wakes
// every pool (it holds them all: rolloutcontrol.PoliciesFor).
func enqueuePoolsOfPolicy(c client.Client) handler.EventHandler {
	pools := func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request], objs ...client.Object) {
		var list mcfgv1.MachineConfigPoolList
		if err := c.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
			return
		}
		for i := range list.Items {
			p := &list.Items[i]
			for _, o := range objs {
				rp, ok := o.(*v1alpha1.RolloutPolicy)
				if !ok {
					continue
				}
				if sel, err := rolloutcontrol.Selects(rp, p); sel || err != nil {
					q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: p.Name}})
					break
				}
			}
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			pools(ctx, q, e.Object)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			pools(ctx, q, e.ObjectOld, e.ObjectNew)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			pools(ctx, q, e.Object)
		},
	}
}

// standDown reports on the pool whether the Machine Config Operator manages
// the nodes (MCOPresent, with a Warning event when that changes), and
// tells the rollout to write nothing if it does: both would set the
// nodes' desiredConfig. Read from the guard at every reconcile; a guard
// that does not know yet is an error, retried, never taken for an absence.
func (r *RolloutReconciler) standDown(ctx context.Context, pool *mcfgv1.MachineConfigPool) (bool, error) {
	v, err := mcoVerdict(r.MCO)
	if err != nil {
		return true, err
	}
	if !v.StandDown {
		r.Conditions.Set(pool.Name, ndpmcv1.ConditionMCOPresent, corev1.ConditionFalse, "AsExpected", "")
		r.warned.Delete(pool.Name)
		return false, nil
	}
	r.Conditions.Set(pool.Name, ndpmcv1.ConditionMCOPresent, corev1.ConditionTrue, mcoguard.Reason, v.Message)
	if prev, _ := r.warned.Swap(pool.Name, v.Message); prev != v.Message {
		r.Recorder.Eventf(pool, nil, corev1.EventTypeWarning, mcoguard.Reason, "Rollout", "%s", v.Message)
	}
	return true, nil
}

func (r *RolloutReconciler) recheck() time.Duration {
	if r.Recheck > 0 {
		return r.Recheck
	}
	return 30 * time.Second
}

// maxParallelSends bounds the desiredConfig patches a pool sends at once.
const maxParallelSends = 8

// grantReboot lets a node reboot as its host asked (RebootGrant, drain
// first): its daemon journals and runs the reboot. The patch carries the
// node's resourceVersion: a node whose request changed meanwhile is
// decided again.
func (r *RolloutReconciler) grantReboot(ctx context.Context, pool *mcfgv1.MachineConfigPool, n *corev1.Node, drain *v1alpha1.DrainTimeout) error {
	g := v1alpha1.RebootGrant{Request: n.Annotations[v1alpha1.RebootRequiredAnnotation], Drain: true}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": n.ResourceVersion,
		"annotations": map[string]any{v1alpha1.RebootGrantAnnotation: g.String(), v1alpha1.DrainTimeoutAnnotation: drainTimeoutValue(drain)}}})
	if err := r.Client.Patch(ctx, n.DeepCopy(), client.RawPatch(types.MergePatchType, patch)); err != nil {
		if apierrors.IsConflict(err) {
			return nil // the node changed: the next step decides again
		}
		return err
	}
	r.Recorder.Eventf(n, pool, corev1.EventTypeNormal, "RebootGranted", "Rollout", "pool %s: may reboot as its host asked: %s", pool.Name, n.Annotations[v1alpha1.RebootRequiredByAnnotation])
	return nil
}

// markOverdueWhilePaused: a paused pool starts nothing, but a node already
// in its update that does not come back from its reboot is still marked
// Degraded (the daemon that would say so is down with it): a pool is often
// paused by an administrator watching for exactly that.
func (r *RolloutReconciler) markOverdueWhilePaused(ctx context.Context, pool *mcfgv1.MachineConfigPool) (reconcile.Result, error) {
	var list v1alpha1.RolloutPolicyList
	if err := r.Client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return reconcile.Result{}, err
	}
	policies := rolloutcontrol.PoliciesFor(pool, list.Items)
	if len(policies) == 0 {
		return reconcile.Result{}, nil
	}
	nodes, err := render.NewCachedPoolView(r.Client, r.Nodes, pool).Nodes(ctx)
	if err != nil {
		return reconcile.Result{}, nil // the render controller reports bad selectors
	}
	now := r.now()
	overdue, next := rolloutcontrol.OverdueNodes(policies, nodes, now)
	for _, o := range overdue {
		if err := r.markOverdue(ctx, pool, o); err != nil {
			return reconcile.Result{}, err
		}
	}
	if next.IsZero() {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{RequeueAfter: next.Sub(now)}, nil
}

// markOverdue marks a node that did not come back from its reboot within
// a rollout policy's rebootTimeout Degraded, as its daemon would report a
// failed update: its daemon is not there to say anything. The patch
// carries the node's resourceVersion, so a daemon that came back and
// wrote first wins; if the node comes back later, its daemon goes on and
// says so.
func (r *RolloutReconciler) markOverdue(ctx context.Context, pool *mcfgv1.MachineConfigPool, o rolloutcontrol.Overdue) error {
	msg := o.Message()
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": o.Node.ResourceVersion,
		"annotations": map[string]string{ndpmcv1.StateAnnotation: ndpmcv1.StateDegraded, ndpmcv1.ReasonAnnotation: msg}}})
	if err := r.Client.Patch(ctx, o.Node.DeepCopy(), client.RawPatch(types.MergePatchType, patch)); err != nil {
		if apierrors.IsConflict(err) {
			return nil // the node changed: the next step decides again
		}
		return err
	}
	r.Recorder.Eventf(o.Node, pool, corev1.EventTypeWarning, v1alpha1.RebootTimeoutReason, "Rollout", "pool %s: %s", pool.Name, msg)
	return nil
}

// patchNode sets a node's desiredConfig (unless desired is "") with the
// drain timeout it goes with (none: removed; not for a node recorded where
// it is, whose daemon changes nothing: desired is its currentConfig) and,
// if taintKnown, adds (taint) or removes the UpdateInProgress taint, in
// one merge patch, only if the node is still what the decision was made
// on (the patch carries the node's resourceVersion: the taint list it
// replaces is the one read, other taints kept). n may be the cache's own
// object: the patch's answer goes into a copy.
func (r *RolloutReconciler) patchNode(ctx context.Context, n *corev1.Node, desired string, drain *v1alpha1.DrainTimeout, taint, taintKnown bool) error {
	meta := map[string]any{"resourceVersion": n.ResourceVersion}
	if desired != "" {
		a := map[string]any{ndpmcv1.DesiredConfigAnnotation: desired}
		if desired != n.Annotations[ndpmcv1.CurrentConfigAnnotation] {
			a[v1alpha1.DrainTimeoutAnnotation] = drainTimeoutValue(drain)
		}
		meta["annotations"] = a
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

// disrupts tells whether node n's plan to the target mc drains or
// reboots it (unknown: it does).
func disrupts(mc *ndpmcv1.MachineConfig, n *corev1.Node) bool {
	if mc == nil {
		return true
	}
	p := mc.Status.PlanFrom(n.Annotations[ndpmcv1.CurrentConfigAnnotation])
	return p == nil || p.Disrupts()
}

// drainTimeoutValue is DrainTimeoutAnnotation's value in a merge patch:
// nil removes it.
func drainTimeoutValue(d *v1alpha1.DrainTimeout) any {
	if d == nil {
		return nil
	}
	return d.String()
}
