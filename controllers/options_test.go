package controllers

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
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

// Pods are cached slim: what the rollout policies read (the blocking-pods
// gate, the pods drained from the last node) and nothing else.
func TestCachedPodsAreSlim(t *testing.T) {
	var transform func(any) (any, error)
	for obj, o := range CacheOptions().ByObject {
		if _, ok := obj.(*corev1.Pod); ok {
			transform = o.Transform
		}
	}
	if transform == nil {
		t.Fatal("CacheOptions has no transform for pods")
	}
	yes := true
	now := metav1.Now()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "cart-a", Namespace: "web", UID: "p1", ResourceVersion: "7",
			Labels: map[string]string{"app": "cart"}, Annotations: map[string]string{"big": strings.Repeat("x", 1000)},
			OwnerReferences:   []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "cart-7d9", UID: "rs-1", Controller: &yes}},
			CreationTimestamp: now, DeletionTimestamp: &now,
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}},
		Spec: corev1.PodSpec{NodeName: "worker-1", Containers: []corev1.Container{{Name: "c", Image: "registry.example/cart:1"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1",
			Conditions:        []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: corev1.ConditionTrue, Message: "ok"}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "c", Ready: true}}},
	}
	out, err := transform(pod)
	if err != nil {
		t.Fatal(err)
	}
	want := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "cart-a", Namespace: "web", UID: "p1", ResourceVersion: "7",
			Labels:            map[string]string{"app": "cart"},
			OwnerReferences:   []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "cart-7d9", UID: "rs-1", Controller: &yes}},
			CreationTimestamp: now, DeletionTimestamp: &now},
		Spec:   corev1.PodSpec{NodeName: "worker-1"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("cached pod (-want +got):\n%s", diff)
	}
	// Anything else passes through.
	if n, _ := transform("not a pod"); n != "not a pod" {
		t.Errorf("a non-pod: %v", n)
	}
}
