package controllers

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
)

// The cache keeps objects without their managedFields, and everything else
// as it was.
func TestCacheOptionsStripManagedFields(t *testing.T) {
	transform := CacheOptions().DefaultTransform
	if transform == nil {
		t.Fatal("CacheOptions has no DefaultTransform")
	}
	mc := &ndpmcv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{
		Name:          "rendered-worker-1",
		Annotations:   map[string]string{"a": "b"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "machine-config-controller", Operation: metav1.ManagedFieldsOperationUpdate}},
	}}
	out, err := transform(mc)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*ndpmcv1.MachineConfig)
	if len(got.ManagedFields) != 0 {
		t.Errorf("managedFields kept: %+v", got.ManagedFields)
	}
	if got.Name != "rendered-worker-1" || got.Annotations["a"] != "b" {
		t.Errorf("the rest changed: %+v", got.ObjectMeta)
	}
}
