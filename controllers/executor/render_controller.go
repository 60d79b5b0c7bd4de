package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ndp-dev/ndp/apis/conditions"
	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/controllers/poolevents"
	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/mco/mcoguard"
	"github.com/ndp-dev/ndp/planner/changeset"
	"github.com/ndp-dev/ndp/render"
)

// The pool is patched (spec.configuration), never updated; its status is
// the pool status controller's. A rendered config is created with the pool
// as its controller (blockOwnerDeletion): where the API server enforces
// OwnerReferencesPermissionEnforcement (OpenShift does), that needs update
// on the pool's finalizers.
//
// +kubebuilder:rbac:groups=machineconfiguration.openshift.io,resources=machineconfigpools,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=machineconfiguration.openshift.io,resources=machineconfigpools/finalizers,verbs=update
// +kubebuilder:rbac:groups=machineconfiguration.openshift.io,resources=machineconfigs,verbs=get;list;watch;create;update

// RenderReconciler merges each pool's MachineConfigs into an immutable
// rendered-<pool>-<hash> MachineConfig and makes it the pool's target.
type RenderReconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	// Conditions gets the pool condition RenderDegraded.
	Conditions *PoolConditions
	// MCO tells whether the Machine Config Operator manages the nodes.
	MCO *mcoguard.Guard
}

// SetupWithManager reconciles every pool on any MachineConfig change: a
// label change can move a config from one pool to another.
func (r *RenderReconciler) SetupWithManager(mgr ctrl.Manager) error {
	allPools := poolevents.AllPools(r.Client)
	mco, err := mcoChanges(r.MCO, allPools)
	if err != nil {
		return err
	}
	// A rendering depends on the pool's spec and on the MachineConfigs'
	// specs and labels: the status writes of the other controllers (plans,
	// pool status), an event per step of every node at scale, are left out.
	return ctrl.NewControllerManagedBy(mgr).
		Named("render").
		For(&mcfgv1.MachineConfigPool{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&ndpmcv1.MachineConfig{}, allPools, builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}))).
		WatchesRawSource(mco).
		Complete(r)
}

// Reconcile renders one pool.
func (r *RenderReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var pool mcfgv1.MachineConfigPool
	if err := r.Client.Get(ctx, req.NamespacedName, &pool); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	// Where the MCO manages the nodes, its render controller owns the
	// pool's target: write nothing (the rollout reports MCOPresent).
	if v, err := mcoVerdict(r.MCO); err != nil || v.StandDown {
		return reconcile.Result{}, err
	}
	mcs, err := render.NewPoolView(r.Client, &pool).Sources(ctx)
	var selErr *render.SelectorError
	if errors.As(err, &selErr) {
		return reconcile.Result{}, r.degraded(ctx, &pool, "InvalidSelector", selErr.Error())
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	sel, _ := render.NewPoolView(r.Client, &pool).MachineConfigSelector() // valid: Sources read it
	if !generatedReady(pool.Name, sel, mcNames(mcs), r.registriesWithheld(&pool)) {
		// The registries controller writes this pool's generated config
		// within moments (its creation wakes this controller); a target
		// rendered without it would move every node adopted meanwhile
		// through one more update, a reboot under the default policies.
		return reconcile.Result{RequeueAfter: 5 * time.Second}, nil
	}
	sources := make([]render.Source, 0, len(mcs))
	refs := make([]corev1.ObjectReference, 0, len(mcs)) // sorted by name, as the sources
	for _, mc := range mcs {
		sources = append(sources, render.SourceOf(mc, nil))
		refs = append(refs, corev1.ObjectReference{APIVersion: ndpmcv1.GroupVersion.String(), Kind: "MachineConfig", Name: mc.Name})
	}
	if len(sources) == 0 {
		// As the MCO's render controller: a pool that selects nothing is
		// reported, not left silently without a target.
		sel, _ := render.NewPoolView(r.Client, &pool).MachineConfigSelector() // valid: Sources read it
		return reconcile.Result{}, r.degraded(ctx, &pool, "NoMachineConfigs",
			fmt.Sprintf("MachineConfigPool %q: no MachineConfigs found matching spec.machineConfigSelector %q", pool.Name, sel.String()))
	}
	rendered, err := render.Merge(pool.Name, sources)
	if err != nil {
		return reconcile.Result{}, r.degraded(ctx, &pool, "InvalidMachineConfig", err.Error())
	}
	if msg, err := r.unreconcilable(ctx, &pool, rendered); err != nil {
		return reconcile.Result{}, err
	} else if msg != "" {
		return reconcile.Result{}, r.degraded(ctx, &pool, "Unreconcilable", msg)
	}

	mc := &ndpmcv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{
		Name:        rendered.Name,
		Labels:      map[string]string{ndpmcv1.RenderedForLabel: pool.Name},
		Annotations: map[string]string{ndpmcv1.SourcesAnnotation: sourcesJSON(rendered.Sources)},
	}, Spec: rendered.Spec}
	if err := controllerutil.SetControllerReference(&pool, mc, r.Client.Scheme()); err != nil {
		return reconcile.Result{}, err
	}
	// Rendered configs are immutable: the name is the content's digest, so
	// one already in the cluster is this one, unless someone edited it.
	var existing ndpmcv1.MachineConfig
	if err := r.Client.Get(ctx, client.ObjectKeyFromObject(mc), &existing, client.UnsafeDisableDeepCopy); apierrors.IsNotFound(err) {
		if err := r.Client.Create(ctx, mc); err != nil && !apierrors.IsAlreadyExists(err) {
			return reconcile.Result{}, err
		}
	} else if err != nil {
		return reconcile.Result{}, err
	} else if err := r.restore(ctx, &pool, &existing, mc); err != nil {
		return reconcile.Result{}, err
	}
	if pool.Spec.Configuration.Name != rendered.Name {
		old := pool.Spec.Configuration.Name
		// A patch of the one field this controller owns: no conflict with
		// the status writer, nor with an administrator pausing the pool.
		before := pool.DeepCopy()
		pool.Spec.Configuration = mcfgv1.MachineConfigPoolStatusConfiguration{
			ObjectReference: corev1.ObjectReference{APIVersion: ndpmcv1.GroupVersion.String(), Kind: "MachineConfig", Name: rendered.Name},
			Source:          refs,
		}
		if err := r.Client.Patch(ctx, &pool, client.MergeFrom(before)); err != nil {
			return reconcile.Result{}, err
		}
		r.Recorder.Eventf(&pool, mc, corev1.EventTypeNormal, "Rendered", "Render", "target configuration %s (was %q) from %d MachineConfigs", rendered.Name, old, len(refs))
	}
	return reconcile.Result{}, r.setRenderCondition(ctx, &pool, corev1.ConditionFalse, "Rendered", "rendered "+rendered.Name)
}

// generatedReady tells whether a pool's MachineConfigs (names, selected by
// sel) can be rendered: they hold the pool's generated registries config,
// or sel would not select it (a selector without the pool's role label),
// or the registries controller withholds it (invalid image-mirror objects
// and no earlier config to keep: RegistriesDegraded says so).
func generatedReady(pool string, sel labels.Selector, names []string, registriesWithheld bool) bool {
	return registriesWithheld || !sel.Matches(labels.Set{ndpmcv1.RoleLabel: pool}) ||
		slices.Contains(names, render.GeneratedRegistriesName(pool))
}

// registriesWithheld: the pool's RegistriesDegraded is True, as the
// registries controller reported it since this process started or, before
// that, as the pool's status has it.
func (r *RenderReconciler) registriesWithheld(pool *mcfgv1.MachineConfigPool) bool {
	if r.Conditions != nil {
		if c, ok := r.Conditions.get(pool.Name)[ndpmcv1.ConditionRegistriesDegraded]; ok {
			return c.Status == corev1.ConditionTrue
		}
	}
	for _, c := range pool.Status.Conditions {
		if c.Type == ndpmcv1.ConditionRegistriesDegraded {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func mcNames(mcs []*ndpmcv1.MachineConfig) []string {
	names := make([]string, 0, len(mcs))
	for _, mc := range mcs {
		names = append(names, mc.Name)
	}
	return names
}

// restore puts back a rendered config that was edited by hand: its spec
// and its RenderedForLabel, as the MCO's render controller re-applies its
// generated MachineConfig (TestUpdatesGeneratedMachineConfig). The admission
// policy manifests/admission/rendered-configs.yaml refuses such edits; this
// is for clusters without it. Status (the plans) is a subresource, and
// other labels and annotations are left alone.
func (r *RenderReconciler) restore(ctx context.Context, pool *mcfgv1.MachineConfigPool, existing, want *ndpmcv1.MachineConfig) error {
	specSame, err := sameSpec(existing.Spec, want.Spec)
	if err != nil {
		return err
	}
	if specSame && existing.Labels[ndpmcv1.RenderedForLabel] == pool.Name {
		return nil
	}
	fixed := existing.DeepCopy() // existing is the cache's own
	fixed.Spec = want.Spec
	if fixed.Labels == nil {
		fixed.Labels = map[string]string{}
	}
	fixed.Labels[ndpmcv1.RenderedForLabel] = pool.Name
	if err := r.Client.Update(ctx, fixed); err != nil {
		return fmt.Errorf("restoring the rendered config %s: %w", existing.Name, err)
	}
	r.Recorder.Eventf(pool, fixed, corev1.EventTypeWarning, "RenderedConfigRestored", "Render",
		"rendered config %s was edited (rendered configs are immutable): its spec and %s label were put back", existing.Name, ndpmcv1.RenderedForLabel)
	return nil
}

// sameSpec compares two MachineConfig specs by content: the API server
// stores spec.config re-encoded (keys sorted), and empty lists may come
// back absent.
func sameSpec(a, b mcfgv1.MachineConfigSpec) (bool, error) {
	var ca, cb any
	for raw, dst := range map[*[]byte]*any{&a.Config.Raw: &ca, &b.Config.Raw: &cb} {
		if len(*raw) > 0 {
			if err := json.Unmarshal(*raw, dst); err != nil {
				return false, nil // not what ndp rendered: put it back
			}
		}
	}
	if !reflect.DeepEqual(ca, cb) {
		return false, nil
	}
	a.Config, b.Config = runtime.RawExtension{}, runtime.RawExtension{}
	return equality.Semantic.DeepEqual(normalSpec(a), normalSpec(b)), nil
}

func normalSpec(s mcfgv1.MachineConfigSpec) mcfgv1.MachineConfigSpec {
	if len(s.KernelArguments) == 0 {
		s.KernelArguments = nil
	}
	if len(s.Extensions) == 0 {
		s.Extensions = nil
	}
	return s
}

// unreconcilable compares the new rendering with the pool's current
// target; it names each unreconcilable field and the MachineConfigs that
// set it.
func (r *RenderReconciler) unreconcilable(ctx context.Context, pool *mcfgv1.MachineConfigPool, rendered *render.Rendered) (string, error) {
	current := pool.Spec.Configuration.Name
	if current == "" || current == rendered.Name {
		return "", nil
	}
	var mc ndpmcv1.MachineConfig
	if err := r.Client.Get(ctx, client.ObjectKey{Name: current}, &mc); err != nil {
		return "", client.IgnoreNotFound(err)
	}
	from, err := machineconfig.New(mc.Name, mc.Spec)
	if err != nil {
		return "", nil // an unreadable current config cannot block the fix
	}
	to, err := machineconfig.New(rendered.Name, rendered.Spec)
	if err != nil {
		return "", err
	}
	cs, err := changeset.Diff(from, to)
	if err != nil || len(cs.Unreconcilable) == 0 {
		return "", err
	}
	var msgs []string
	for _, u := range cs.Unreconcilable {
		section := u.Field
		if i := strings.IndexByte(section, '['); i >= 0 {
			section = section[:i]
		}
		who := rendered.SectionSources[section]
		if len(who) == 0 {
			if src := rendered.Sources["file:"+strings.TrimSuffix(strings.TrimPrefix(u.Field, "spec.config.storage.files[path="), "].append")]; src != "" {
				who = []string{src}
			}
		}
		msgs = append(msgs, fmt.Sprintf("MachineConfig %s: %s: %s", strings.Join(quoteAll(who), ", "), u.Field, u.Reason))
	}
	return "no rendered config produced, unreconcilable against " + current + ": " + strings.Join(msgs, "; "), nil
}

func quoteAll(names []string) []string {
	if len(names) == 0 {
		return []string{"(removed)"}
	}
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = fmt.Sprintf("%q", n)
	}
	return out
}

// sourcesJSON encodes the sources annotation (encoding/json sorts the keys).
func sourcesJSON(m map[string]string) string {
	b, _ := json.Marshal(m) // a map of strings always encodes
	return string(b)
}

func (r *RenderReconciler) degraded(ctx context.Context, pool *mcfgv1.MachineConfigPool, reason, msg string) error {
	r.Recorder.Eventf(pool, nil, corev1.EventTypeWarning, reason, "Render", "%s", conditions.Truncate(msg, 1000))
	return r.setRenderCondition(ctx, pool, corev1.ConditionTrue, reason, msg)
}

func (r *RenderReconciler) setRenderCondition(_ context.Context, pool *mcfgv1.MachineConfigPool, status corev1.ConditionStatus, reason, msg string) error {
	r.Conditions.Set(pool.Name, mcfgv1.MachineConfigPoolRenderDegraded, status, reason, msg)
	return nil
}
