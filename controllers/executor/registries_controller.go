package executor

import (
	"context"
	"errors"
	"fmt"

	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1alpha1 "github.com/openshift/api/operator/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ndp-dev/ndp/apis/conditions"
	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/controllers/poolevents"
	"github.com/ndp-dev/ndp/mco/mcoguard"
	"github.com/ndp-dev/ndp/registries"
	"github.com/ndp-dev/ndp/render"
)

// 99-<pool>-generated-registries is created or updated with the pool as its
// controller. Under OwnerReferencesPermissionEnforcement (OpenShift) that
// needs update on the pool's finalizers, and adopting an existing one (an
// update that adds the owner reference) needs delete on it: this
// controller deletes nothing itself.
//
// +kubebuilder:rbac:groups=config.openshift.io,resources=imagedigestmirrorsets;imagetagmirrorsets,verbs=get;list;watch
// +kubebuilder:rbac:groups=operator.openshift.io,resources=imagecontentsourcepolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=machineconfiguration.openshift.io,resources=machineconfigpools,verbs=get;list;watch
// +kubebuilder:rbac:groups=machineconfiguration.openshift.io,resources=machineconfigpools/finalizers,verbs=update
// +kubebuilder:rbac:groups=machineconfiguration.openshift.io,resources=machineconfigs,verbs=get;list;watch;create;update;delete

// RegistriesReconciler renders ImageDigestMirrorSets, ImageTagMirrorSets
// and ImageContentSourcePolicies into /etc/containers/registries.conf as
// the MCO does (render.RegistriesConfig), as the MachineConfig
// 99-<pool>-generated-registries of every pool, so that their disruption
// is planned like any other config change.
type RegistriesReconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	// Conditions gets the pool condition RegistriesDegraded.
	Conditions *PoolConditions
	// Base is the registries.conf the mirrors are added to
	// (render.DefaultRegistriesBase when empty).
	Base string
	// MCO tells whether the Machine Config Operator manages the nodes.
	MCO *mcoguard.Guard
}

// SetupWithManager reconciles every pool when any image-mirror object changes.
func (r *RegistriesReconciler) SetupWithManager(mgr ctrl.Manager) error {
	allPools := poolevents.AllPools(r.Client)
	mco, err := mcoChanges(r.MCO, allPools)
	if err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("registries").
		For(&mcfgv1.MachineConfigPool{}, poolevents.Changed).
		Owns(&ndpmcv1.MachineConfig{}).
		Watches(&configv1.ImageDigestMirrorSet{}, allPools).
		Watches(&configv1.ImageTagMirrorSet{}, allPools).
		Watches(&operatorv1alpha1.ImageContentSourcePolicy{}, allPools).
		WatchesRawSource(mco).
		Complete(r)
}

// Reconcile renders one pool's registries MachineConfig.
func (r *RegistriesReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var pool mcfgv1.MachineConfigPool
	if err := r.Client.Get(ctx, req.NamespacedName, &pool); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	// The MCO's container runtime config controller writes the same
	// 99-<pool>-generated-registries: where it manages the nodes, write
	// nothing (the rollout reports MCOPresent).
	if v, err := mcoVerdict(r.MCO); err != nil || v.StandDown {
		return reconcile.Result{}, err
	}
	var idms configv1.ImageDigestMirrorSetList
	var itms configv1.ImageTagMirrorSetList
	var icsp operatorv1alpha1.ImageContentSourcePolicyList
	for _, l := range []client.ObjectList{&idms, &itms, &icsp} {
		if err := r.Client.List(ctx, l); err != nil {
			return reconcile.Result{}, err
		}
	}
	base := r.Base
	if base == "" {
		base = render.DefaultRegistriesBase
	}
	ign, entries, err := render.RegistriesConfig(base, idms.Items, itms.Items, icsp.Items)
	var invalid *registries.InvalidError
	if errors.As(err, &invalid) {
		// The previous file stays, as the MCO keeps its own: a
		// half-applied mirror set could send pulls to the wrong place
		// (registries.Validate).
		msg := "registries.conf is left unchanged: " + invalid.Error()
		r.Recorder.Eventf(&pool, nil, corev1.EventTypeWarning, "InvalidImageMirrors", "RenderRegistries", "%s", conditions.Truncate(msg, 1000))
		return reconcile.Result{}, r.setCondition(ctx, &pool, corev1.ConditionTrue, "InvalidImageMirrors", msg)
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	mc := &ndpmcv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: render.GeneratedRegistriesName(pool.Name)}}
	op, err := controllerutil.CreateOrUpdate(ctx, r.Client, mc, func() error {
		if mc.Labels == nil {
			mc.Labels = map[string]string{}
		}
		mc.Labels[ndpmcv1.RoleLabel] = pool.Name
		mc.Spec.Config = runtime.RawExtension{Raw: ign}
		return controllerutil.SetControllerReference(&pool, mc, r.Client.Scheme())
	})
	if err != nil {
		return reconcile.Result{}, err
	}
	if op != controllerutil.OperationResultNone {
		r.Recorder.Eventf(&pool, mc, corev1.EventTypeNormal, "RegistriesRendered", "RenderRegistries", "%s %s from %d image-mirror entries", mc.Name, op, entries)
	}
	return reconcile.Result{}, r.setCondition(ctx, &pool, corev1.ConditionFalse, "Rendered", fmt.Sprintf("%s holds %d image-mirror entries", mc.Name, entries))
}

func (r *RegistriesReconciler) setCondition(_ context.Context, pool *mcfgv1.MachineConfigPool, status corev1.ConditionStatus, reason, msg string) error {
	r.Conditions.Set(pool.Name, ndpmcv1.ConditionRegistriesDegraded, status, reason, msg)
	return nil
}
