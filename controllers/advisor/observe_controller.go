package advisor

import (
	"context"
	"fmt"
	"strings"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ndp-dev/ndp/apis/conditions"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/mco/mcoentries"
	"github.com/ndp-dev/ndp/nodepool"
)

// The observer reads what the MCO records of each node and writes its
// NodeHistory; Events about Nodes are read in the MCO daemon's and the
// kubelet's namespaces only (CacheOptions).
// +kubebuilder:rbac:groups=ndp.dev,resources=nodehistories,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=ndp.dev,resources=nodehistories/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=machineconfiguration.openshift.io,resources=machineconfignodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=operator.openshift.io,resources=machineconfigurations,verbs=get;list;watch
// +kubebuilder:rbac:groups="",namespace=openshift-machine-config-operator,resources=events,verbs=get;list;watch
// +kubebuilder:rbac:groups="",namespace=default,resources=events,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// The observer's metrics.
var (
	forecastMismatches = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ndp_forecast_mismatches_total",
		Help: "Checks of an observed MCO update that contradicted ndp's forecast, by pool and check (drain, reboot, reload crio.service...).",
	}, []string{"pool", "check"})
	forecastObservedUpdates = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ndp_forecast_observed_updates_total",
		Help: "Node updates by the MCO that ndp's advisor observed to the end, by pool and verdict (Agreed, Mismatch, PartlyObserved).",
	}, []string{"pool", "verdict"})
)

func init() { ctrlmetrics.Registry.MustRegister(forecastMismatches, forecastObservedUpdates) }

// eventNodeIndex indexes Events by the Node they are about.
const eventNodeIndex = "ndp.involvedNode"

// ObserveReconciler watches each node through the MCO's updates
// (docs/design.md#observing-the-mco): when the MCO sends a node, it opens
// an update in the node's NodeHistory with what the node's UpdateForecast
// foretold, writes every observation as it is made (so a restart loses
// none: the history is the state, and Events still within their TTL are
// listed again), and judges the update when the node is done. A mismatch
// is a Warning Event on the Node and a metric; the forecast controller
// tallies the verdicts on the forecast. It writes only NodeHistories and
// Events.
type ObserveReconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	// Sources gives ndp's prediction's source MachineConfigs of a rendered
	// config (ForecastReconciler.PredictedSources); nil: unknown.
	Sources func(rendered string) map[string]string
	// APIReader reads MachineConfiguration cluster with its managedFields
	// (the cache strips them), once per update, to record which of the
	// forecast's rules were ndp's entries; the manager's when nil.
	APIReader client.Reader

	// mcn: the API server serves MachineConfigNodes (v1).
	mcn bool
}

// SetupWithManager watches Nodes, their MachineConfigNodes, the Events
// about them and the forecasts.
func (r *ObserveReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &corev1.Event{}, eventNodeIndex, func(o client.Object) []string {
		if ev, ok := o.(*corev1.Event); ok && ev.InvolvedObject.Kind == "Node" {
			return []string{ev.InvolvedObject.Name}
		}
		return nil
	}); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("observe").
		For(&corev1.Node{}, builder.WithPredicates(nodeObservationChanged)).
		Watches(&corev1.Event{}, handler.EnqueueRequestsFromMapFunc(nodeOfEvent), builder.WithPredicates(predicate.NewPredicateFuncs(observedEvent))).
		Watches(&v1alpha1.UpdateForecast{}, handler.EnqueueRequestsFromMapFunc(nodesOfForecast))
	// A cluster without MachineConfigNodes (before OpenShift 4.19, or
	// HyperShift) is observed through the rest.
	if _, err := mgr.GetRESTMapper().RESTMapping(mcfgv1.GroupVersion.WithKind("MachineConfigNode").GroupKind(), mcfgv1.GroupVersion.Version); err == nil {
		r.mcn = true
		b = b.Watches(&mcfgv1.MachineConfigNode{}, handler.EnqueueRequestsFromMapFunc(nodeOfMCN))
	} else if !meta.IsNoMatchError(err) {
		return fmt.Errorf("looking up MachineConfigNodes: %w", err)
	}
	return b.Complete(r)
}

// nodeObservationChanged passes Node events that say something of an
// update: its MCO annotations, cordon, boot ID (not every heartbeat).
var nodeObservationChanged = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(*corev1.Node)
	n, ok2 := e.ObjectNew.(*corev1.Node)
	return !ok1 || !ok2 || observedNodeOf(o) != observedNodeOf(n)
}}

// observedEvent passes Events about Nodes from the MCO's daemon, and the
// kubelet's Rebooted.
func observedEvent(o client.Object) bool {
	ev, ok := o.(*corev1.Event)
	if !ok || ev.InvolvedObject.Kind != "Node" {
		return false
	}
	return ev.Namespace == MCDEventNamespace || (ev.Namespace == KubeletEventNamespace && ev.Reason == "Rebooted")
}

func nodeOfEvent(_ context.Context, o client.Object) []reconcile.Request {
	ev, ok := o.(*corev1.Event)
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: ev.InvolvedObject.Name}}}
}

func nodeOfMCN(_ context.Context, o client.Object) []reconcile.Request {
	name := o.GetName()
	if m, ok := o.(*mcfgv1.MachineConfigNode); ok && m.Spec.Node.Name != "" {
		name = m.Spec.Node.Name
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: name}}}
}

// nodesOfForecast wakes a forecast's nodes: an update opened before its
// forecast had the MCO's decision takes it then.
func nodesOfForecast(_ context.Context, o client.Object) []reconcile.Request {
	f, ok := o.(*v1alpha1.UpdateForecast)
	if !ok || f.Status.State != v1alpha1.ForecastPending {
		return nil
	}
	out := make([]reconcile.Request, 0, len(f.Status.Nodes))
	for _, n := range f.Status.Nodes {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: n}})
	}
	return out
}

// Reconcile observes one node.
func (r *ObserveReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	logger := log.FromContext(ctx)
	var node corev1.Node
	if err := r.Client.Get(ctx, req.NamespacedName, &node); err != nil {
		// A deleted node's history goes with it (its owner).
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	var hist v1alpha1.NodeHistory
	found := true
	if err := r.Client.Get(ctx, req.NamespacedName, &hist); err != nil {
		if !apierrors.IsNotFound(err) {
			return reconcile.Result{}, err
		}
		found = false
	}
	in := observeInput{Node: observedNodeOf(&node), History: hist.Status.Updates, Sources: r.Sources, Now: metav1.Now()}
	sent := in.Node.Desired != "" && in.Node.Desired != in.Node.Current
	if !sent && (len(hist.Status.Updates) == 0 || !isOpen(&hist.Status.Updates[0])) {
		return reconcile.Result{}, nil // nothing under way, nothing to open
	}

	pool, err := r.poolOf(ctx, &node)
	if err != nil {
		return reconcile.Result{}, err
	}
	in.Pool = pool
	if r.mcn {
		var mcn mcfgv1.MachineConfigNode
		switch err := r.Client.Get(ctx, req.NamespacedName, &mcn); {
		case err == nil:
			in.MCN = mcn.Status.Conditions
		case !apierrors.IsNotFound(err):
			return reconcile.Result{}, fmt.Errorf("reading MachineConfigNode %s: %w", req.Name, err)
		}
	}
	var evs corev1.EventList
	if err := r.Client.List(ctx, &evs, client.MatchingFields{eventNodeIndex: req.Name}); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing the Events about node %s: %w", req.Name, err)
	}
	in.Events = evs.Items
	forecasts := map[string]*v1alpha1.UpdateForecast{}
	in.Forecast = func(name string) *v1alpha1.UpdateForecast {
		if f, ok := forecasts[name]; ok {
			return f
		}
		var f v1alpha1.UpdateForecast
		if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, &f); err != nil {
			forecasts[name] = nil
			return nil
		}
		forecasts[name] = &f
		return &f
	}

	in.Entries = func() (map[string]bool, error) { return r.ndpEntries(ctx) }

	res := observe(in)
	if !res.Changed {
		return reconcile.Result{RequeueAfter: res.Requeue}, nil
	}
	if err := r.write(ctx, &node, &hist, found, res.Updates); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
			// The cache is behind our own last write: observe again.
			return reconcile.Result{RequeueAfter: time.Second}, nil
		}
		return reconcile.Result{}, err
	}
	if u := res.Closed; u != nil {
		r.report(ctx, &node, u, in.Forecast(u.Forecast))
		logger.Info("observed an MCO update to its end", "node", node.Name, "from", u.From, "to", u.To, "verdict", u.Verdict)
	}
	return reconcile.Result{RequeueAfter: res.Requeue}, nil
}

// ndpEntries reads which entries of MachineConfiguration cluster's node
// disruption policy ndp's field manager owns now; none when there is no
// MachineConfiguration (or the API server serves none).
func (r *ObserveReconciler) ndpEntries(ctx context.Context) (map[string]bool, error) {
	if r.APIReader == nil {
		return nil, nil
	}
	live, err := mcoentries.ReadLive(ctx, r.APIReader)
	if err != nil || live == nil {
		return nil, err
	}
	return live.Own.Mine, nil
}

// poolOf is the node's pool: the MCO's primary-pool rule.
func (r *ObserveReconciler) poolOf(ctx context.Context, node *corev1.Node) (string, error) {
	var list mcfgv1.MachineConfigPoolList
	if err := r.Client.List(ctx, &list); err != nil {
		return "", fmt.Errorf("listing MachineConfigPools: %w", err)
	}
	pools := make([]*mcfgv1.MachineConfigPool, len(list.Items))
	for i := range list.Items {
		pools[i] = &list.Items[i]
	}
	p, err := nodepool.Primary(node, pools)
	if err != nil || p == nil {
		return "", nil // recorded without a pool (and so without a forecast)
	}
	return p.Name, nil
}

// write stores the node's updates: a NodeHistory created (owned by the
// Node, so that it goes with it), then its status updated at the
// resourceVersion read, so that nothing a newer write recorded is lost.
func (r *ObserveReconciler) write(ctx context.Context, node *corev1.Node, hist *v1alpha1.NodeHistory, found bool, updates []v1alpha1.NodeUpdate) error {
	if !found {
		hist = v1alpha1.NewNodeHistory(node.Name, node.UID)
		if err := r.Client.Create(ctx, hist); err != nil {
			return fmt.Errorf("creating NodeHistory %s: %w", node.Name, err)
		}
	} else {
		hist = hist.DeepCopy()
	}
	hist.Status.Updates = updates
	if err := r.Client.Status().Update(ctx, hist); err != nil {
		return fmt.Errorf("writing the status of NodeHistory %s: %w", node.Name, err)
	}
	return nil
}

// report counts an update judged and, on a mismatch, says so on the
// Node, with the forecast as the related object.
func (r *ObserveReconciler) report(ctx context.Context, node *corev1.Node, u *v1alpha1.NodeUpdate, f *v1alpha1.UpdateForecast) {
	pool := u.Pool
	forecastObservedUpdates.WithLabelValues(pool, string(u.Verdict)).Inc()
	if u.Verdict != v1alpha1.VerdictMismatch {
		return
	}
	var parts []string
	for _, c := range u.Checks {
		if c.Result == v1alpha1.CheckMismatch {
			forecastMismatches.WithLabelValues(pool, c.What).Inc()
			parts = append(parts, mismatchText(u, c))
		}
	}
	msg := conditions.Truncate(fmt.Sprintf("node %s, update %s → %s (forecast %s): %s", node.Name, u.From, u.To, u.Forecast, strings.Join(parts, "; ")), 1024)
	if f != nil {
		r.Recorder.Eventf(node, f, corev1.EventTypeWarning, "ForecastMismatch", "Observe", "%s", msg)
	} else {
		// No typed nil as the related object.
		r.Recorder.Eventf(node, nil, corev1.EventTypeWarning, "ForecastMismatch", "Observe", "%s", msg)
	}
	log.FromContext(ctx).Info("the MCO did other than foretold", "node", node.Name, "message", msg)
}
