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

// As the KubeletConfig controller (kubeletconfig_controller.go), for
// ContainerRuntimeConfigs.
//
// +kubebuilder:rbac:groups=machineconfiguration.openshift.io,resources=containerruntimeconfigs,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=machineconfiguration.openshift.io,resources=containerruntimeconfigs/status,verbs=get;patch
// +kubebuilder:rbac:groups=machineconfiguration.openshift.io,resources=containerruntimeconfigs/finalizers,verbs=update
// +kubebuilder:rbac:groups=machineconfiguration.openshift.io,resources=machineconfigpools,verbs=get;list;watch
// +kubebuilder:rbac:groups=machineconfiguration.openshift.io,resources=machineconfigs,verbs=get;list;watch;create;update;delete

// ContainerRuntimeConfigReconciler renders each ContainerRuntimeConfig, for
// every pool its machineConfigPoolSelector selects, into the MachineConfig
// 99-<pool>-generated-containerruntime (-1, -2 ... for the pool's later
// ones), as the MCO's container runtime config controller does: a CRI-O
// drop-in /etc/crio/crio.conf.d/01-ctrcfg-<field> per field set, and the
// pool's storage.conf with overlaySize. Status, failures, deletion and the
// MCO as for KubeletConfigs.
type ContainerRuntimeConfigReconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	// MCO tells whether the Machine Config Operator manages the nodes.
	MCO *mcoguard.Guard
}

// SetupWithManager watches ContainerRuntimeConfigs, their MachineConfigs, the pools
// and the base MachineConfigs.
func (r *ContainerRuntimeConfigReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return (&generatedConfigs{Client: r.Client, Recorder: r.Recorder, MCO: r.MCO, kind: containerRuntimeKind{}}).setup(mgr, "containerruntimeconfig")
}

type containerRuntimeKind struct{}

func (containerRuntimeKind) kind() nodeconfig.Kind    { return nodeconfig.KindContainerRuntime }
func (containerRuntimeKind) typeName() string         { return "ContainerRuntimeConfig" }
func (containerRuntimeKind) newObject() client.Object { return &mcfgv1.ContainerRuntimeConfig{} }
func (containerRuntimeKind) owner(o client.Object) nodeconfig.Owner {
	return nodeconfig.OwnerOfContainerRuntimeConfig(o.(*mcfgv1.ContainerRuntimeConfig))
}

func (containerRuntimeKind) list(ctx context.Context, c client.Reader) ([]client.Object, error) {
	var l mcfgv1.ContainerRuntimeConfigList
	if err := c.List(ctx, &l); err != nil {
		return nil, err
	}
	out := make([]client.Object, len(l.Items))
	for i := range l.Items {
		out[i] = &l.Items[i]
	}
	return out, nil
}

func (containerRuntimeKind) ignition(pool string, mcs []*ndpmcv1.MachineConfig, o client.Object) ([]byte, error) {
	return render.ContainerRuntimeConfigIgnition(pool, mcs, o.(*mcfgv1.ContainerRuntimeConfig))
}

func (containerRuntimeKind) setCondition(o client.Object, success bool, reason, msg string) bool {
	c := o.(*mcfgv1.ContainerRuntimeConfig)
	typ := mcfgv1.ContainerRuntimeConfigFailure
	if success {
		typ = mcfgv1.ContainerRuntimeConfigSuccess
	}
	var changed bool
	c.Status.Conditions, changed = appendCondition(c.Status.Conditions,
		mcfgv1.ContainerRuntimeConfigCondition{Type: typ, Status: conditionStatus(success), LastTransitionTime: metav1.Now(), Reason: reason, Message: msg},
		func(a, b mcfgv1.ContainerRuntimeConfigCondition) bool {
			return a.Type == b.Type && a.Status == b.Status && a.Reason == b.Reason && a.Message == b.Message
		})
	if c.Status.ObservedGeneration != c.Generation {
		c.Status.ObservedGeneration, changed = c.Generation, true
	}
	return changed
}
