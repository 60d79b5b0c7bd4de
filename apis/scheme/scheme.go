// Package scheme builds the runtime.Scheme of every type ndp's controllers
// and admission webhooks read or write, so that both (and the tests) decode
// the same kinds the same way.
package scheme

import (
	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	operatorv1alpha1 "github.com/openshift/api/operator/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
)

// New returns a scheme with Kubernetes' own types, NodeDisruptionPolicy,
// ndp's MachineConfig (with its status), MachineConfigPool, KubeletConfig,
// ContainerRuntimeConfig, the image-mirror objects, and what the advisor
// reads of the MCO's: ControllerConfig and MachineConfiguration.
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme, ndpmcv1.AddToScheme, configv1.AddToScheme, operatorv1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err) // static registrations: a programming error
		}
	}
	// openshift/api's pool, KubeletConfig and ContainerRuntimeConfig types,
	// but not its MachineConfig: ndp's own type (with the plan status) is
	// registered for that kind.
	s.AddKnownTypes(mcfgv1.GroupVersion, &mcfgv1.MachineConfigPool{}, &mcfgv1.MachineConfigPoolList{},
		&mcfgv1.KubeletConfig{}, &mcfgv1.KubeletConfigList{}, &mcfgv1.ContainerRuntimeConfig{}, &mcfgv1.ContainerRuntimeConfigList{},
		&mcfgv1.ControllerConfig{}, &mcfgv1.ControllerConfigList{},
		// The MCO's MachineConfigNode, which the advisor's observer reads.
		&mcfgv1.MachineConfigNode{}, &mcfgv1.MachineConfigNodeList{})
	// The MCO's MachineConfiguration (its node disruption policies), which
	// the advisor reads; the rest of operator.openshift.io/v1 is not needed.
	s.AddKnownTypes(operatorv1.GroupVersion, &operatorv1.MachineConfiguration{}, &operatorv1.MachineConfigurationList{})
	metav1.AddToGroupVersion(s, operatorv1.GroupVersion)
	return s
}
