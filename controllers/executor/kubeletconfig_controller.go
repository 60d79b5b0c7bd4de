package executor

import (
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

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

// kubeletConfigs is the KubeletConfig controller's kind: it renders each
// KubeletConfig, for every pool its machineConfigPoolSelector selects,
// into the MachineConfig 99-<pool>-generated-kubelet (-1, -2 ... for the
// pool's later ones), as the MCO's kubelet config controller does: the
// pool's own kubelet.conf with spec.kubeletConfig merged over it, the
// log-level drop-in, the node-sizing file. Its status says Success or
// Failure (naming the field); a config that cannot be rendered writes
// nothing. Deleting it deletes its MachineConfigs (finalizers). It writes
// nothing while the MCO is present.
var kubeletConfigs = newConfigKind[mcfgv1.KubeletConfig, mcfgv1.KubeletConfigList](nodeconfig.KindKubelet,
	nodeconfig.OwnerOfKubeletConfig, render.KubeletConfigIgnition,
	func(kc *mcfgv1.KubeletConfig) (*[]mcfgv1.KubeletConfigCondition, *int64) {
		return &kc.Status.Conditions, &kc.Status.ObservedGeneration
	})
