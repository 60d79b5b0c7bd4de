package executor

import (
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

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

// containerRuntimeConfigs is the ContainerRuntimeConfig controller's
// kind: it renders each ContainerRuntimeConfig, for every pool its
// machineConfigPoolSelector selects, into the MachineConfig
// 99-<pool>-generated-containerruntime (-1, -2 ... for the pool's later
// ones), as the MCO's container runtime config controller does: a CRI-O
// drop-in /etc/crio/crio.conf.d/01-ctrcfg-<field> per field set, and the
// pool's storage.conf with overlaySize. Status, failures, deletion and the
// MCO as for KubeletConfigs.
var containerRuntimeConfigs = newConfigKind[mcfgv1.ContainerRuntimeConfig, mcfgv1.ContainerRuntimeConfigList](nodeconfig.KindContainerRuntime,
	nodeconfig.OwnerOfContainerRuntimeConfig, render.ContainerRuntimeConfigIgnition,
	func(c *mcfgv1.ContainerRuntimeConfig) (*[]mcfgv1.ContainerRuntimeConfigCondition, *int64) {
		return &c.Status.Conditions, &c.Status.ObservedGeneration
	})
