package advisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/controllers/poolevents"
	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/mco/mcorender"
	"github.com/ndp-dev/ndp/mco/mcorules"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/policyset"
	"github.com/ndp-dev/ndp/render"
)

// The advisor reads the MCO's objects and writes only its own forecasts.
// +kubebuilder:rbac:groups=ndp.dev,resources=updateforecasts,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=ndp.dev,resources=updateforecasts/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=ndp.dev,resources=nodehistories,verbs=get;list;watch
// +kubebuilder:rbac:groups=machineconfiguration.openshift.io,resources=machineconfigs;machineconfigpools;controllerconfigs,verbs=get;list;watch
// +kubebuilder:rbac:groups=operator.openshift.io,resources=machineconfigurations,verbs=get;list;watch
// +kubebuilder:rbac:groups=config.openshift.io,resources=infrastructures,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch

// The MCO's singletons the forecasts read.
const (
	// ControllerConfigName is the MCO's ControllerConfig: its render
	// controller's base images.
	ControllerConfigName = "machine-config-controller"
	// MachineConfigurationName is the MCO's MachineConfiguration: its node
	// disruption policies.
	MachineConfigurationName = "cluster"
	// InfrastructureName is the cluster's Infrastructure: its control plane
	// topology.
	InfrastructureName = "cluster"
)

// ForecastReconciler writes, for each MachineConfigPool, an UpdateForecast
// per pending update (the config its nodes run → the config they go to):
// what the MCO's daemon will do and ndp's plan beside it. The target is
// rendered in memory as the MCO's render controller will render it, so the
// forecast exists before the MCO sends the first node
// (docs/design.md#forecasts). It writes nothing but UpdateForecasts.
type ForecastReconciler struct {
	Client client.Client
	Active *policyset.ActivePolicies
	// History is how many past forecasts are kept per pool
	// (ForecastHistory when zero).
	History int

	configs *render.ConfigCache
	// predicted keeps parsed predictions by name: the MCO's rendered name
	// digests the content, so a name parses once.
	predictedMu sync.Mutex
	predicted   map[string]*machineconfig.Config
	// written is the status this process last wrote to each forecast
	// (by name, with the object's UID): the forecasts' only writer, it
	// knows their status better than a cache a write behind, and a
	// forecast completed from a stale copy kept the nodes it had before
	// its last write (test/mco's TestForecastBesideTheMCO under load).
	writtenMu sync.Mutex
	written   map[string]writtenStatus
}

// forget drops what freshen knows of a forecast deleted.
func (r *ForecastReconciler) forget(name string) {
	r.writtenMu.Lock()
	defer r.writtenMu.Unlock()
	delete(r.written, name)
}

// writtenStatus is a forecast's status as last written, and whose.
type writtenStatus struct {
	uid    types.UID
	status v1alpha1.UpdateForecastStatus
}

// freshen puts in stored the statuses this process wrote last, where the
// cache has not caught up with them (the same object, by UID).
func (r *ForecastReconciler) freshen(stored []v1alpha1.UpdateForecast) {
	r.writtenMu.Lock()
	defer r.writtenMu.Unlock()
	for i := range stored {
		if w, ok := r.written[stored[i].Name]; ok && w.uid == stored[i].UID {
			stored[i].Status = *w.status.DeepCopy()
		}
	}
}

// maxPredicted bounds ForecastReconciler.predicted.
const maxPredicted = 64

// SetupWithManager reconciles all pools when what a forecast is computed
// from changes.
func (r *ForecastReconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.init()
	allPools := poolevents.AllPools(r.Client)
	return ctrl.NewControllerManagedBy(mgr).
		Named("forecast").
		For(&mcfgv1.MachineConfigPool{}).
		Owns(&v1alpha1.UpdateForecast{}).
		Watches(&mcfgv1.MachineConfigPool{}, allPools, poolevents.MembershipChanged).
		Watches(&corev1.Node{}, poolevents.PoolsOfNode(r.Client), builder.WithPredicates(nodeConfigChanged)).
		Watches(&ndpmcv1.MachineConfig{}, allPools).
		Watches(&mcfgv1.ControllerConfig{}, allPools, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&operatorv1.MachineConfiguration{}, allPools).
		Watches(&configv1.Infrastructure{}, allPools).
		Watches(&v1alpha1.NodeHistory{}, enqueuePoolsOfHistory).
		WatchesRawSource(source.Channel(r.Active.Changes(), allPools)).
		Complete(r)
}

// init makes the caches the calculation needs (also for a reconciler that
// only computes, as MCOEntriesReconciler's).
func (r *ForecastReconciler) init() { r.configs = render.NewConfigCache(1024) }

// enqueuePoolsOfHistory maps a NodeHistory to the pools its advisor's
// updates name: their forecasts' status.observed is computed from it.
var enqueuePoolsOfHistory = handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
	h, ok := o.(*v1alpha1.NodeHistory)
	if !ok {
		return nil
	}
	var out []reconcile.Request
	seen := map[string]bool{}
	for _, u := range h.Status.Updates {
		if u.Executor == v1alpha1.ExecutorMCO && u.Pool != "" && !seen[u.Pool] {
			seen[u.Pool] = true
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: u.Pool}})
		}
	}
	return out
})

// nodeConfigChanged passes node events that can change a forecast: a node
// added or removed, relabelled, or its current or desired config changed
// (not its every status heartbeat).
var nodeConfigChanged = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	o, n := e.ObjectOld.GetAnnotations(), e.ObjectNew.GetAnnotations()
	return o[ndpmcv1.CurrentConfigAnnotation] != n[ndpmcv1.CurrentConfigAnnotation] ||
		o[ndpmcv1.DesiredConfigAnnotation] != n[ndpmcv1.DesiredConfigAnnotation] ||
		!mapsEqual(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels())
}}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// Reconcile writes one pool's forecasts.
func (r *ForecastReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	logger := log.FromContext(ctx)
	stored, err := r.storedForecasts(ctx, req.Name)
	if err != nil {
		return reconcile.Result{}, err
	}
	r.freshen(stored)
	var pool mcfgv1.MachineConfigPool
	if err := r.Client.Get(ctx, req.NamespacedName, &pool); err != nil {
		if !apierrors.IsNotFound(err) {
			return reconcile.Result{}, err
		}
		// The pool is gone: so are its forecasts.
		for i := range stored {
			r.forget(stored[i].Name)
			if err := r.Client.Delete(ctx, &stored[i]); client.IgnoreNotFound(err) != nil {
				return reconcile.Result{}, err
			}
		}
		return reconcile.Result{}, nil
	}

	in, err := r.input(ctx, &pool)
	var selErr *render.SelectorError
	if errors.As(err, &selErr) {
		logger.V(1).Info("no forecast for a pool with a bad selector", "reason", err.Error())
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	wanted := wantForecasts(*in)
	var histories v1alpha1.NodeHistoryList
	if err := r.Client.List(ctx, &histories); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing NodeHistories: %w", err)
	}
	observed := forecastObservations(histories.Items)
	writes := mergeForecasts(wanted, stored, in.Nodes, observed, r.history(), metav1.Now())
	for i := range writes.Apply {
		if err := r.write(ctx, &pool, &writes.Apply[i]); err != nil {
			return reconcile.Result{}, err
		}
	}
	for _, name := range writes.Delete {
		f := &v1alpha1.UpdateForecast{ObjectMeta: metav1.ObjectMeta{Name: name}}
		r.forget(name)
		if err := r.Client.Delete(ctx, f); client.IgnoreNotFound(err) != nil {
			return reconcile.Result{}, err
		}
	}
	// A replica still loading policies plans again shortly; a change of
	// the active set wakes every pool too.
	for _, f := range wanted {
		if c := meta.FindStatusCondition(f.Status.Conditions, v1alpha1.ForecastConditionNDPPlanned); c != nil && c.Reason == "PoliciesNotReady" {
			return reconcile.Result{RequeueAfter: 2 * time.Second}, nil
		}
	}
	return reconcile.Result{}, nil
}

func (r *ForecastReconciler) history() int {
	if r.History > 0 {
		return r.History
	}
	return ForecastHistory
}

// storedForecasts are the pool's forecasts.
func (r *ForecastReconciler) storedForecasts(ctx context.Context, pool string) ([]v1alpha1.UpdateForecast, error) {
	var list v1alpha1.UpdateForecastList
	if err := r.Client.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing UpdateForecasts: %w", err)
	}
	var out []v1alpha1.UpdateForecast
	for _, f := range list.Items {
		if f.Spec.Pool == pool {
			out = append(out, f)
		}
	}
	return out, nil
}

// write creates a forecast (owned by its pool, so that a pool's deletion
// takes them along even without ndp) and writes its whole status with one
// JSON patch (add /status replaces it): no resourceVersion, so a cache a
// write behind is no conflict, and nothing of an older status is left.
func (r *ForecastReconciler) write(ctx context.Context, pool *mcfgv1.MachineConfigPool, f *v1alpha1.UpdateForecast) error {
	obj := &v1alpha1.UpdateForecast{ObjectMeta: metav1.ObjectMeta{Name: f.Name}, Spec: f.Spec}
	if f.ResourceVersion == "" {
		// No blockOwnerDeletion: that would need a write permission on
		// the MCO's pools (their finalizers).
		obj.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: mcfgv1.GroupVersion.String(), Kind: "MachineConfigPool", Name: pool.Name, UID: pool.UID, Controller: ptr.To(true),
		}}
		if err := r.Client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating UpdateForecast %s: %w", f.Name, err)
		}
	}
	patch, err := json.Marshal([]map[string]any{{"op": "add", "path": "/status", "value": f.Status}})
	if err != nil {
		return err
	}
	if err := r.Client.Status().Patch(ctx, obj, client.RawPatch(types.JSONPatchType, patch)); err != nil {
		return fmt.Errorf("writing the status of UpdateForecast %s: %w", f.Name, err)
	}
	r.writtenMu.Lock()
	defer r.writtenMu.Unlock()
	if r.written == nil {
		r.written = map[string]writtenStatus{}
	}
	r.written[f.Name] = writtenStatus{uid: obj.UID, status: *f.Status.DeepCopy()}
	return nil
}

// input reads what the pool's forecasts are computed from.
func (r *ForecastReconciler) input(ctx context.Context, pool *mcfgv1.MachineConfigPool) (*forecastInput, error) {
	logger := log.FromContext(ctx)
	view := render.NewPoolView(r.Client, pool)
	in := &forecastInput{
		Pool: pool.Name, PoolLabels: pool.Labels, Rendered: pool.Spec.Configuration.Name,
		Configs: map[string]*machineconfig.Config{}, ConfigErrs: map[string]error{},
		Decide: mcorules.Decide,
	}

	// The pool's next rendered config, as the MCO will render it.
	predicted, err := r.predict(ctx, view)
	if err != nil {
		logger.Info("cannot predict the pool's rendered config; forecasting to its spec.configuration.name", "pool", pool.Name, "reason", err.Error())
		in.Target = in.Rendered
	} else {
		in.Target = predicted.Name
		in.Predicted = predicted
	}

	nodes, err := view.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	names := map[string]bool{in.Target: true}
	for _, n := range nodes {
		fn := forecastNode{Name: n.Name, Current: n.Annotations[ndpmcv1.CurrentConfigAnnotation], Desired: n.Annotations[ndpmcv1.DesiredConfigAnnotation]}
		in.Nodes = append(in.Nodes, fn)
		names[fn.Current], names[fn.Desired] = true, true
	}
	for name := range names {
		if name == "" {
			continue
		}
		var mc ndpmcv1.MachineConfig
		if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, &mc); err != nil {
			if !apierrors.IsNotFound(err) {
				in.ConfigErrs[name] = fmt.Errorf("reading MachineConfig %q: %w", name, err)
			}
			continue
		}
		cfg, err := r.configs.Get(&mc)
		if err != nil {
			in.ConfigErrs[name] = err
			continue
		}
		in.Configs[name] = cfg
	}

	// The MCO's policies, from MachineConfiguration cluster.
	var mcfg operatorv1.MachineConfiguration
	switch err := r.Client.Get(ctx, client.ObjectKey{Name: MachineConfigurationName}, &mcfg); {
	case err == nil:
		in.Policies, in.PolicySource = mcorules.PoliciesOf(&mcfg)
		in.Overrides = mcorules.OverridesOf(&mcfg)
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		in.Policies, in.PolicySource = mcorules.PoliciesOf(nil)
	default:
		return nil, fmt.Errorf("reading MachineConfiguration %s: %w", MachineConfigurationName, err)
	}

	if in.SingleNode, err = r.singleNode(ctx); err != nil {
		return nil, err
	}

	in.Plan = func(req planner.Request) (*planner.Plan, error) {
		p, err := r.Active.Ready(ctx, r.Client)
		if err != nil {
			return nil, err
		}
		return p.Plan(ctx, req)
	}
	return in, nil
}

// predict renders the pool's MachineConfigs as the MCO's render controller
// will, from its ControllerConfig's base.
func (r *ForecastReconciler) predict(ctx context.Context, view *render.PoolView) (*machineconfig.Config, error) {
	var cc mcfgv1.ControllerConfig
	if err := r.Client.Get(ctx, client.ObjectKey{Name: ControllerConfigName}, &cc); err != nil {
		return nil, fmt.Errorf("reading ControllerConfig %s: %w", ControllerConfigName, err)
	}
	mcs, err := view.Sources(ctx)
	if err != nil {
		return nil, err
	}
	sources := make([]render.Source, 0, len(mcs))
	for _, mc := range mcs {
		cfg, err := r.configs.Get(mc)
		if err != nil {
			return nil, err
		}
		sources = append(sources, render.SourceOf(mc, cfg))
	}
	rendered, err := mcorender.Merge(view.Pool.Name, sources, mcorender.BaseOf(&cc))
	if err != nil {
		return nil, err
	}
	r.predictedMu.Lock()
	defer r.predictedMu.Unlock()
	if cfg, ok := r.predicted[rendered.Name]; ok {
		return cfg, nil
	}
	cfg, err := machineconfig.New(rendered.Name, rendered.Spec)
	if err != nil {
		return nil, err
	}
	cfg.Sources = rendered.Sources
	if r.predicted == nil || len(r.predicted) >= maxPredicted {
		r.predicted = map[string]*machineconfig.Config{}
	}
	r.predicted[rendered.Name] = cfg
	return cfg, nil
}

// singleNode: the MCO never drains where the control plane is a single
// replica (Infrastructure cluster's status.controlPlaneTopology); without
// that, a cluster of one node.
func (r *ForecastReconciler) singleNode(ctx context.Context) (bool, error) {
	var infra configv1.Infrastructure
	switch err := r.Client.Get(ctx, client.ObjectKey{Name: InfrastructureName}, &infra); {
	case err == nil && infra.Status.ControlPlaneTopology != "":
		return infra.Status.ControlPlaneTopology == configv1.SingleReplicaTopologyMode, nil
	case err == nil || apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return render.SingleNode(ctx, r.Client)
	default:
		return false, fmt.Errorf("reading Infrastructure %s: %w", InfrastructureName, err)
	}
}

// PredictedSources is the source MachineConfig of each change id
// ("file:/etc/x", "unit:y.service") of the rendered config ndp predicted
// under that name, nil when no such prediction is kept: what the MCO's
// rendered configs do not record (the observer's NodeHistory changes).
func (r *ForecastReconciler) PredictedSources(name string) map[string]string {
	r.predictedMu.Lock()
	defer r.predictedMu.Unlock()
	if cfg, ok := r.predicted[name]; ok {
		return cfg.Sources
	}
	return nil
}
