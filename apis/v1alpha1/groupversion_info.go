// Package v1alpha1 holds the ndp.dev/v1alpha1 API: NodeDisruptionPolicy, the
// cluster resource that carries the rules deciding how a node applies a
// configuration change, and UpdateForecast, the advisor's forecast of a
// pool's pending update (what the MCO will do, and ndp's plan beside it), and
// NodeHistory, what each node went through in its last updates and why, and
// RolloutPolicy, when and in what order the nodes of some pools may be
// disrupted.
//
// +kubebuilder:object:generate=true
// +groupName=ndp.dev
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "ndp.dev", Version: "v1alpha1"}

	// SchemeBuilder registers this API's types with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds this API's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion, &NodeDisruptionPolicy{}, &NodeDisruptionPolicyList{}, &UpdateForecast{}, &UpdateForecastList{}, &NodeHistory{}, &NodeHistoryList{}, &RolloutPolicy{}, &RolloutPolicyList{})
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
