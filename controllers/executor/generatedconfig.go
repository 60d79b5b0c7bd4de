package executor

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ndp-dev/ndp/apis/conditions"
	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/mco/mcoguard"
	"github.com/ndp-dev/ndp/nodeconfig"
	"github.com/ndp-dev/ndp/render"
)

// configKind is what the KubeletConfig and ContainerRuntimeConfig
// controllers differ in (newConfigKind makes it); generatedConfigs does
// the rest, the same way for both, as the MCO's two controllers do.
type configKind struct {
	kind      nodeconfig.Kind
	typeName  string // KubeletConfig
	newObject func() client.Object
	list      func(ctx context.Context, c client.Reader) ([]client.Object, error)
	owner     func(client.Object) nodeconfig.Owner
	ignition  func(pool string, mcs []*ndpmcv1.MachineConfig, obj client.Object) ([]byte, error)
	// setCondition appends the condition to obj's status as the MCO's
	// cleanUpStatusConditions does, and sets observedGeneration; false
	// when the status already says so.
	setCondition func(obj client.Object, success bool, reason, msg string) bool
}

// mcoCondition is the MCO's KubeletConfigCondition and
// ContainerRuntimeConfigCondition alike: the same fields, tags included,
// but for the type of Type (CT). Constrained to it, either converts to it
// and back, so that one status update serves both.
type mcoCondition[CT ~string] = struct {
	Type               CT                     `json:"type"`
	Status             corev1.ConditionStatus `json:"status,omitempty"`
	LastTransitionTime metav1.Time            `json:"lastTransitionTime"`
	Reason             string                 `json:"reason,omitempty"`
	Message            string                 `json:"message,omitempty"`
}

// newConfigKind is the configKind of the MCO's config type T (its list
// L): its generated MachineConfigs' kind, the owner and the Ignition
// config its pools get, and its status (conditions and
// observedGeneration).
func newConfigKind[T, L any, PT interface {
	*T
	client.Object
}, PL interface {
	*L
	client.ObjectList
}, C interface{ ~mcoCondition[CT] }, CT ~string](
	kind nodeconfig.Kind,
	owner func(PT) nodeconfig.Owner,
	ignition func(pool string, mcs []*ndpmcv1.MachineConfig, obj PT) ([]byte, error),
	status func(PT) (conditions *[]C, observedGeneration *int64),
) configKind {
	return configKind{
		kind:      kind,
		typeName:  reflect.TypeFor[T]().Name(),
		newObject: func() client.Object { return PT(new(T)) },
		list: func(ctx context.Context, c client.Reader) ([]client.Object, error) {
			l := PL(new(L))
			if err := c.List(ctx, l); err != nil {
				return nil, err
			}
			items, err := meta.ExtractList(l)
			if err != nil {
				return nil, err
			}
			out := make([]client.Object, len(items))
			for i, o := range items {
				out[i] = o.(client.Object)
			}
			return out, nil
		},
		owner: func(o client.Object) nodeconfig.Owner { return owner(o.(PT)) },
		ignition: func(pool string, mcs []*ndpmcv1.MachineConfig, o client.Object) ([]byte, error) {
			return ignition(pool, mcs, o.(PT))
		},
		setCondition: func(o client.Object, success bool, reason, msg string) bool {
			conds, observed := status(o.(PT))
			typ := CT("Failure") // as both types name their Failure and Success
			if success {
				typ = "Success"
			}
			var changed bool
			*conds, changed = appendCondition(*conds,
				C(mcoCondition[CT]{Type: typ, Status: conditionStatus(success), LastTransitionTime: metav1.Now(), Reason: reason, Message: msg}),
				func(a, b C) bool {
					x, y := mcoCondition[CT](a), mcoCondition[CT](b)
					return x.Type == y.Type && x.Status == y.Status && x.Reason == y.Reason && x.Message == y.Message
				})
			if *observed != o.GetGeneration() {
				*observed, changed = o.GetGeneration(), true
			}
			return changed
		},
	}
}

// generatedConfigs renders one KubeletConfig or ContainerRuntimeConfig into
// its MachineConfig per selected pool.
type generatedConfigs struct {
	Client   client.Client
	Recorder events.EventRecorder
	MCO      *mcoguard.Guard
	kind     configKind
}

// SetupWithManager watches the kind's objects, their MachineConfigs, the
// pools and the base MachineConfigs.
func (r *generatedConfigs) SetupWithManager(mgr ctrl.Manager) error {
	all := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		objs, err := r.kind.list(ctx, r.Client)
		if err != nil {
			return nil
		}
		out := make([]reconcile.Request, 0, len(objs))
		for _, o := range objs {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: o.GetName()}})
		}
		return out
	})
	mco, err := mcoChanges(r.MCO, all)
	if err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(strings.ToLower(r.kind.typeName)).
		For(r.kind.newObject(), builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		// Its MachineConfigs, put back when edited or deleted.
		Owns(&ndpmcv1.MachineConfig{}, builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}))).
		// The pools (a new pool, a relabelled one) and the base files in
		// the pools' other MachineConfigs.
		Watches(&mcfgv1.MachineConfigPool{}, all, builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}))).
		Watches(&ndpmcv1.MachineConfig{}, all, builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}), notRendered)).
		WatchesRawSource(mco).
		Complete(r)
}

// notRendered leaves out rendered configs: no base comes from them.
var notRendered = predicate.NewPredicateFuncs(func(o client.Object) bool {
	_, rendered := o.GetLabels()[ndpmcv1.RenderedForLabel]
	return !rendered
})

// Reconcile renders one config for every pool it selects.
func (r *generatedConfigs) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	obj := r.kind.newObject()
	if err := r.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	// The MCO's kubelet and container runtime config controllers write
	// the same MachineConfigs, statuses and finalizers: where it manages
	// the nodes, touch nothing.
	if v, err := mcoVerdict(r.MCO); err != nil || v.StandDown {
		return reconcile.Result{}, err
	}
	if obj.GetDeletionTimestamp() != nil {
		return reconcile.Result{}, r.cascadeDelete(ctx, obj)
	}
	object := fmt.Sprintf("%s %q", r.kind.typeName, obj.GetName())

	var pools mcfgv1.MachineConfigPoolList
	if err := r.Client.List(ctx, &pools); err != nil {
		return reconcile.Result{}, err
	}
	var selected []*mcfgv1.MachineConfigPool
	for i := range pools.Items {
		ok, err := nodeconfig.SelectsPool(r.kind.owner(obj).Selector, &pools.Items[i])
		if err != nil {
			return reconcile.Result{}, r.fail(ctx, obj, "InvalidSelector", fmt.Sprintf("%s: %v", object, err))
		}
		if ok {
			selected = append(selected, &pools.Items[i])
		}
	}
	if len(selected) == 0 {
		sel, _ := metav1.LabelSelectorAsSelector(r.kind.owner(obj).Selector)
		return reconcile.Result{}, r.fail(ctx, obj, "NoMatchingPools",
			fmt.Sprintf("%s does not match any MachineConfigPools: spec.machineConfigPoolSelector %q selects none", object, selectorString(sel)))
	}
	sort.Slice(selected, func(i, j int) bool { return selected[i].Name < selected[j].Name })

	// Render for every pool first: an invalid config, or one pool that
	// cannot be rendered, writes nothing anywhere (the previous generated
	// MachineConfigs stay as they were).
	all, err := r.kind.list(ctx, r.Client)
	if err != nil {
		return reconcile.Result{}, err
	}
	owners := make([]nodeconfig.Owner, len(all))
	for i, o := range all {
		owners[i] = r.kind.owner(o)
	}
	type out struct {
		pool     *mcfgv1.MachineConfigPool
		name     string
		ignition []byte
	}
	var outs []out
	for _, pool := range selected {
		name, err := nodeconfig.ManagedName(r.kind.kind, pool, r.kind.owner(obj), owners, func(n string) bool {
			var mc ndpmcv1.MachineConfig
			return r.Client.Get(ctx, client.ObjectKey{Name: n}, &mc) == nil
		})
		if err != nil {
			return reconcile.Result{}, r.fail(ctx, obj, "NamingFailed", fmt.Sprintf("%s: %v", object, err))
		}
		mcs, err := render.NewPoolView(r.Client, pool).Sources(ctx)
		if err != nil {
			return reconcile.Result{}, r.fail(ctx, obj, "RenderFailed", fmt.Sprintf("%s: pool %s: %v", object, pool.Name, err))
		}
		ign, err := r.kind.ignition(pool.Name, mcs, obj)
		if nodeconfig.IsInvalid(err) {
			return reconcile.Result{}, r.fail(ctx, obj, "Invalid", err.Error())
		}
		if err != nil {
			return reconcile.Result{}, r.fail(ctx, obj, "RenderFailed", fmt.Sprintf("%s: %v", object, err))
		}
		outs = append(outs, out{pool, name, ign})
	}

	// The suffix annotation and a finalizer per generated MachineConfig
	// (its name, as the MCO's), before the MachineConfigs exist, so that
	// no MachineConfig outlives a deletion.
	before := obj.DeepCopyObject().(client.Object)
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	if _, ok := annotations[nodeconfig.MCNameSuffixAnnotation]; !ok {
		annotations[nodeconfig.MCNameSuffixAnnotation] = nodeconfig.Suffix(r.kind.kind, outs[0].pool.Name, outs[0].name)
		obj.SetAnnotations(annotations)
	}
	for _, o := range outs {
		controllerutil.AddFinalizer(obj, o.name)
	}
	if !equalStrings(before.GetFinalizers(), obj.GetFinalizers()) || len(before.GetAnnotations()) != len(obj.GetAnnotations()) {
		if err := r.Client.Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			return reconcile.Result{}, err
		}
	}

	gvk, err := r.Client.GroupVersionKindFor(obj)
	if err != nil {
		return reconcile.Result{}, err
	}
	wanted := map[string]bool{}
	for _, o := range outs {
		wanted[o.name] = true
		want := render.GeneratedMachineConfig(o.name, o.pool.Name, o.ignition)
		mc := &ndpmcv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: o.name}}
		op, err := controllerutil.CreateOrUpdate(ctx, r.Client, mc, func() error {
			if mc.Labels == nil {
				mc.Labels = map[string]string{}
			}
			mc.Labels[ndpmcv1.RoleLabel] = o.pool.Name
			mc.Spec = want.Spec
			// The MCO sets its config as the only owner, the controller.
			mc.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(obj, gvk)}
			return nil
		})
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("writing MachineConfig %s: %w", o.name, err)
		}
		if op != controllerutil.OperationResultNone {
			r.Recorder.Eventf(obj, mc, corev1.EventTypeNormal, "MachineConfigRendered", "Render", "%s %s for pool %s", o.name, op, o.pool.Name)
		}
	}
	// A pool it no longer selects loses its MachineConfig.
	if err := r.deleteOwned(ctx, obj, func(name string) bool { return !wanted[name] }); err != nil {
		return reconcile.Result{}, err
	}
	names := make([]string, 0, len(outs))
	for _, o := range outs {
		names = append(names, fmt.Sprintf("%s (pool %s)", o.name, o.pool.Name))
	}
	return reconcile.Result{}, r.status(ctx, obj, true, "Success", "Success: rendered "+strings.Join(names, ", "))
}

// cascadeDelete removes the MachineConfigs a config being deleted
// generated — those its finalizers name, as the MCO's cascadeDelete, and
// any other it controls — then its finalizers.
func (r *generatedConfigs) cascadeDelete(ctx context.Context, obj client.Object) error {
	mine := func(name string) bool { return isGeneratedFinalizer(r.kind.kind, name) }
	if err := r.deleteOwned(ctx, obj, func(string) bool { return true }); err != nil {
		return err
	}
	before := obj.DeepCopyObject().(client.Object)
	var keep []string
	for _, f := range obj.GetFinalizers() {
		if !mine(f) {
			keep = append(keep, f)
			continue
		}
		mc := &ndpmcv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: f}}
		if err := r.Client.Delete(ctx, mc); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting MachineConfig %s: %w", f, err)
		}
		r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, "MachineConfigDeleted", "Delete", "%s deleted with %s %q", f, r.kind.typeName, obj.GetName())
	}
	if len(keep) == len(obj.GetFinalizers()) {
		return nil
	}
	obj.SetFinalizers(keep)
	return client.IgnoreNotFound(r.Client.Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})))
}

// isGeneratedFinalizer: a finalizer naming a generated MachineConfig of
// kind (any pool).
func isGeneratedFinalizer(kind nodeconfig.Kind, f string) bool {
	i := strings.Index(f, "-generated-"+string(kind))
	if !strings.HasPrefix(f, "99-") || i < 0 {
		return false
	}
	return nodeconfig.IsGeneratedName(kind, f[len("99-"):i], f)
}

// deleteOwned deletes the MachineConfigs obj controls whose name drop
// selects.
func (r *generatedConfigs) deleteOwned(ctx context.Context, obj client.Object, drop func(string) bool) error {
	var list ndpmcv1.MachineConfigList
	if err := r.Client.List(ctx, &list); err != nil {
		return err
	}
	for i := range list.Items {
		mc := &list.Items[i]
		if ref := metav1.GetControllerOf(mc); ref == nil || ref.UID != obj.GetUID() || !drop(mc.Name) {
			continue
		}
		if err := r.Client.Delete(ctx, mc); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting MachineConfig %s: %w", mc.Name, err)
		}
		r.Recorder.Eventf(obj, mc, corev1.EventTypeNormal, "MachineConfigDeleted", "Delete", "%s deleted: %s %q no longer selects its pool", mc.Name, r.kind.typeName, obj.GetName())
	}
	return nil
}

// fail reports a config that could not be rendered: a Failure condition
// and a Warning event; nothing else is written.
func (r *generatedConfigs) fail(ctx context.Context, obj client.Object, reason, msg string) error {
	if r.kind.setCondition(obj.DeepCopyObject().(client.Object), false, reason, "Error: "+msg) {
		r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, reason, "Render", "%s", conditions.Truncate(msg, 1000))
	}
	return r.status(ctx, obj, false, reason, "Error: "+msg)
}

func (r *generatedConfigs) status(ctx context.Context, obj client.Object, success bool, reason, msg string) error {
	before := obj.DeepCopyObject().(client.Object)
	if !r.kind.setCondition(obj, success, reason, msg) {
		return nil
	}
	err := r.Client.Status().Patch(ctx, obj, client.MergeFrom(before))
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func equalStrings(a, b []string) bool { return slices.Equal(a, b) }

// appendCondition is the MCO's cleanUpStatusConditions: the newest
// condition last, at most three kept; a condition the last one already
// says (type, status and message) is not repeated, and its time is kept
// (the MCO refreshes it, which would make every reconcile a write).
func appendCondition[C any](conds []C, c C, same func(a, b C) bool) ([]C, bool) {
	if n := len(conds); n > 0 && same(conds[n-1], c) {
		return conds, false
	}
	conds = append(conds, c)
	if len(conds) > 3 {
		conds = conds[len(conds)-3:]
	}
	return conds, true
}

func conditionStatus(success bool) corev1.ConditionStatus {
	if success {
		return corev1.ConditionTrue
	}
	return corev1.ConditionFalse
}

func selectorString(s interface{ String() string }) string {
	if s == nil {
		return ""
	}
	return s.String()
}
