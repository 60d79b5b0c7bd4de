package executor

import (
	"context"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/mco/mcoguard"
	"github.com/ndp-dev/ndp/nodeconfig"
	"github.com/ndp-dev/ndp/render"
)

// A generated MachineConfig is created with its KubeletConfig as its
// controller (blockOwnerDeletion), which under
// OwnerReferencesPermissionEnforcement needs update on the KubeletConfig's
// finalizers; the KubeletConfig's own finalizers (the MachineConfigs'
// names, as the MCO's) are patched.
//
// +kubebuilder:rbac:groups=machineconfiguration.openshift.io,resources=kubeletconfigs,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=machineconfiguration.openshift.io,resources=kubeletconfigs/status,verbs=get;patch
// +kubebuilder:rbac:groups=machineconfiguration.openshift.io,resources=kubeletconfigs/finalizers,verbs=update
// +kubebuilder:rbac:groups=machineconfiguration.openshift.io,resources=machineconfigpools,verbs=get;list;watch
// +kubebuilder:rbac:groups=machineconfiguration.openshift.io,resources=machineconfigs,verbs=get;list;watch;create;update;delete

// KubeletConfigReconciler renders each KubeletConfig, for every pool its
// machineConfigPoolSelector selects, into the MachineConfig
// 99-<pool>-generated-kubelet (-1, -2 ... for the pool's later ones), as
// the MCO's kubelet config controller does: the pool's own kubelet.conf
// with spec.kubeletConfig merged over it, the log-level drop-in, the
// node-sizing file. Its status says Success or Failure (naming the field);
// a config that cannot be rendered writes nothing. Deleting it deletes its
// MachineConfigs (finalizers). It writes nothing while the MCO is present.
type KubeletConfigReconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	// MCO tells whether the Machine Config Operator manages the nodes.
	MCO *mcoguard.Guard
}

// SetupWithManager watches KubeletConfigs, their MachineConfigs, the pools
// and the base MachineConfigs.
func (r *KubeletConfigReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return (&generatedConfigs{Client: r.Client, Recorder: r.Recorder, MCO: r.MCO, kind: kubeletKind{}}).setup(mgr, "kubeletconfig")
}

type kubeletKind struct{}

func (kubeletKind) kind() nodeconfig.Kind    { return nodeconfig.KindKubelet }
func (kubeletKind) typeName() string         { return "KubeletConfig" }
func (kubeletKind) newObject() client.Object { return &mcfgv1.KubeletConfig{} }
func (kubeletKind) owner(o client.Object) nodeconfig.Owner {
	return nodeconfig.OwnerOfKubeletConfig(o.(*mcfgv1.KubeletConfig))
}

func (kubeletKind) list(ctx context.Context, c client.Reader) ([]client.Object, error) {
	var l mcfgv1.KubeletConfigList
	if err := c.List(ctx, &l); err != nil {
		return nil, err
	}
	out := make([]client.Object, len(l.Items))
	for i := range l.Items {
		out[i] = &l.Items[i]
	}
	return out, nil
}

func (kubeletKind) ignition(pool string, mcs []*ndpmcv1.MachineConfig, o client.Object) ([]byte, error) {
	return render.KubeletConfigIgnition(pool, mcs, o.(*mcfgv1.KubeletConfig))
}

func (kubeletKind) setCondition(o client.Object, success bool, reason, msg string) bool {
	kc := o.(*mcfgv1.KubeletConfig)
	typ := mcfgv1.KubeletConfigFailure
	if success {
		typ = mcfgv1.KubeletConfigSuccess
	}
	var changed bool
	kc.Status.Conditions, changed = appendCondition(kc.Status.Conditions,
		mcfgv1.KubeletConfigCondition{Type: typ, Status: conditionStatus(success), LastTransitionTime: metav1.Now(), Reason: reason, Message: msg},
		func(a, b mcfgv1.KubeletConfigCondition) bool {
			return a.Type == b.Type && a.Status == b.Status && a.Reason == b.Reason && a.Message == b.Message
		})
	if kc.Status.ObservedGeneration != kc.Generation {
		kc.Status.ObservedGeneration, changed = kc.Generation, true
	}
	return changed
}
