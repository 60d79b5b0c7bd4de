// Package v1 is ndp's Go type for machineconfiguration.openshift.io/v1
// MachineConfig: openshift/api's MachineConfigSpec plus a status, which
// openshift/api's type lacks, holding the plans computed for the config.
// ndp ships the MachineConfig CRD with a status subresource to match.
//
// plan.go reads and checks the plans on that status: PlanFrom and
// StandingPlan (half of the plan rule), the PlanHash the daemon verifies
// (Verify, Validate), and the conversions between ndp's actions and the
// MCO's NodeDisruptionPolicy actions. well_known.go holds the annotations,
// labels, node states, conditions and daemon paths the controllers and the
// daemon share.
//
// +kubebuilder:object:generate=true
// +groupName=machineconfiguration.openshift.io
package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is machineconfiguration.openshift.io/v1.
	GroupVersion = schema.GroupVersion{Group: "machineconfiguration.openshift.io", Version: "v1"}

	// SchemeBuilder registers ndp's MachineConfig type. Do not also register
	// openshift/api's MachineConfig in the same scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(func(s *runtime.Scheme) error {
		s.AddKnownTypes(GroupVersion, &MachineConfig{}, &MachineConfigList{})
		metav1.AddToGroupVersion(s, GroupVersion)
		return nil
	})

	// AddToScheme adds ndp's MachineConfig to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
