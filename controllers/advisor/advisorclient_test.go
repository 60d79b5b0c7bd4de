package advisor

import (
	"context"
	"errors"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/scheme"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
)

// The advisor's client refuses, before sending anything, every write of
// what the MCO or the cluster version operator owns — by every verb and
// through the status and other subresources — and lets ndp.dev objects,
// Events and Leases through.
func TestAdvisorClientWritesOnlyNdpObjectsEventsAndLeases(t *testing.T) {
	ctx := context.Background()
	mc := func() *ndpmcv1.MachineConfig {
		return &ndpmcv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: "rendered-worker-1"}}
	}
	pool := func() *mcfgv1.MachineConfigPool {
		return &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "worker"}}
	}
	node := func() *corev1.Node { return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-a"}} }
	co := func() *configv1.ClusterOperator {
		return &configv1.ClusterOperator{ObjectMeta: metav1.ObjectMeta{Name: "machine-config"}}
	}
	mcn := func() *mcfgv1.MachineConfigNode {
		return &mcfgv1.MachineConfigNode{ObjectMeta: metav1.ObjectMeta{Name: "worker-a"}}
	}
	mcfg := func() *operatorv1.MachineConfiguration {
		return &operatorv1.MachineConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}}
	}
	unstructuredMC := func() *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("machineconfiguration.openshift.io/v1")
		u.SetKind("MachineConfig")
		u.SetName("rendered-worker-1")
		return u
	}
	// The types the advisor never writes, also the ones its scheme lacks.
	sch := scheme.New()
	sch.AddKnownTypes(mcfgv1.GroupVersion, &mcfgv1.MachineConfigNode{}, &mcfgv1.MachineConfigNodeList{})
	sch.AddKnownTypes(operatorv1.GroupVersion, &operatorv1.MachineConfiguration{}, &operatorv1.MachineConfigurationList{})
	metav1.AddToGroupVersion(sch, operatorv1.GroupVersion)
	base := fake.NewClientBuilder().WithScheme(sch).
		WithObjects(mc(), pool(), node(), co(), mcn(), mcfg()).
		WithStatusSubresource(&ndpmcv1.MachineConfig{}, &mcfgv1.MachineConfigPool{}, &v1alpha1.NodeDisruptionPolicy{}).Build()
	c := AdvisorClient(base)
	merge := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"annotations":{"ndp.dev/x":"y"}}}`))

	refused := []struct {
		name string
		do   func() error
		want string // in the error
	}{
		{"create a MachineConfig", func() error {
			return c.Create(ctx, &ndpmcv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: "99-new"}})
		}, "create of MachineConfig 99-new (machineconfiguration.openshift.io/v1)"},
		{"update a MachineConfig", func() error { return c.Update(ctx, mc()) }, "update of MachineConfig rendered-worker-1 (machineconfiguration.openshift.io/v1)"},
		{"patch a MachineConfig", func() error { return c.Patch(ctx, mc(), merge) }, "patch of"},
		{"delete a MachineConfig", func() error { return c.Delete(ctx, mc()) }, "delete of"},
		{"delete every MachineConfig", func() error { return c.DeleteAllOf(ctx, mc()) }, "deletecollection of"},
		{"write a MachineConfig's status", func() error { return c.Status().Update(ctx, mc()) }, "update status of MachineConfig rendered-worker-1"},
		{"patch a pool's status", func() error { return c.Status().Patch(ctx, pool(), merge) }, "patch status of MachineConfigPool worker (machineconfiguration.openshift.io/v1)"},
		{"patch a pool", func() error { return c.Patch(ctx, pool(), merge) }, "MachineConfigPool"},
		{"patch a Node", func() error { return c.Patch(ctx, node(), merge) }, "patch of Node worker-a (v1)"},
		{"evict through a subresource", func() error {
			return c.SubResource("eviction").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "p"}}, &corev1.Pod{})
		}, "create eviction of Pod a/p (v1)"},
		{"create a ClusterOperator", func() error {
			return c.Create(ctx, &configv1.ClusterOperator{ObjectMeta: metav1.ObjectMeta{Name: "ndp"}})
		}, "ClusterOperator ndp (config.openshift.io/v1)"},
		{"patch a ClusterOperator's status", func() error { return c.Status().Patch(ctx, co(), merge) }, "ClusterOperator machine-config"},
		{"update a MachineConfigNode", func() error { return c.Update(ctx, mcn()) }, "MachineConfigNode"},
		{"update the MachineConfiguration", func() error { return c.Update(ctx, mcfg()) }, "MachineConfiguration cluster (operator.openshift.io/v1)"},
		{"delete an unstructured MachineConfig", func() error { return c.Delete(ctx, unstructuredMC()) }, "delete of MachineConfig rendered-worker-1"},
		{"apply a Node", func() error { return c.Apply(ctx, corev1ac.Node("worker-a")) }, "apply of Node worker-a (v1)"},
		{"apply an unstructured MachineConfig", func() error {
			return c.Apply(ctx, client.ApplyConfigurationFromUnstructured(unstructuredMC()))
		}, "apply of MachineConfig rendered-worker-1"},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.do()
			var refusal *AdvisorWriteError
			if !errors.As(err, &refusal) {
				t.Fatalf("err = %v, want an *AdvisorWriteError", err)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "advisor") {
				t.Errorf("err = %q, want it to name %q and the advisor", err, tc.want)
			}
		})
	}
	// Nothing reached the (fake) API server.
	var got ndpmcv1.MachineConfig
	if err := base.Get(ctx, client.ObjectKeyFromObject(mc()), &got); err != nil || len(got.Annotations) > 0 {
		t.Errorf("the refused writes reached the MachineConfig: %v, annotations %v", err, got.Annotations)
	}
	var n corev1.Node
	if err := base.Get(ctx, client.ObjectKeyFromObject(node()), &n); err != nil || len(n.Annotations) > 0 {
		t.Errorf("the refused writes reached the Node: %v, annotations %v", err, n.Annotations)
	}
	if err := base.Get(ctx, client.ObjectKey{Name: "99-new"}, &ndpmcv1.MachineConfig{}); err == nil {
		t.Errorf("the refused create reached the API server")
	}

	// An unstructured apply of ndp's own object passes the check (the
	// fake client cannot apply, so the check is asked directly).
	forecast := &unstructured.Unstructured{}
	forecast.SetAPIVersion("ndp.dev/v1alpha1")
	forecast.SetKind("UpdateForecast")
	forecast.SetName("worker-a-b")
	if err := c.(*advisorClient).checkApply("apply", client.ApplyConfigurationFromUnstructured(forecast)); err != nil {
		t.Errorf("an unstructured apply of an UpdateForecast was refused: %v", err)
	}

	// ndp's own objects, Events and Leases are written; reads pass.
	np := &v1alpha1.NodeDisruptionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "chrony"}}
	for _, step := range []struct {
		name string
		do   func() error
	}{
		{"create a NodeDisruptionPolicy", func() error { return c.Create(ctx, np) }},
		{"write its status", func() error { return c.Status().Update(ctx, np) }},
		{"patch it", func() error { return c.Patch(ctx, np, merge) }},
		{"create an Event", func() error {
			return c.Create(ctx, &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "ndp-system", Name: "e"}, EventTime: metav1.NowMicro()})
		}},
		{"create a core Event", func() error {
			return c.Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "ndp-system", Name: "e"}})
		}},
		{"create a Lease", func() error {
			return c.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "ndp-system", Name: "l"}})
		}},
		{"read a MachineConfig", func() error { return c.Get(ctx, client.ObjectKeyFromObject(mc()), &ndpmcv1.MachineConfig{}) }},
		{"delete the NodeDisruptionPolicy", func() error { return c.Delete(ctx, np) }},
	} {
		if err := step.do(); err != nil {
			t.Errorf("%s: %v", step.name, err)
		}
	}
}

// With --mco-entries the advisor may apply MachineConfiguration cluster,
// and nothing more: not another MachineConfiguration, not by update, plain
// patch or delete, and not without the switch.
func TestAdvisorClientMCOEntries(t *testing.T) {
	mcu := func(name string) runtime.ApplyConfiguration {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("operator.openshift.io/v1")
		u.SetKind("MachineConfiguration")
		u.SetName(name)
		return client.ApplyConfigurationFromUnstructured(u)
	}
	on := &advisorClient{mcoEntries: true}
	off := &advisorClient{}
	if err := on.checkApply("apply", mcu("cluster")); err != nil {
		t.Errorf("apply of MachineConfiguration cluster refused with the switch: %v", err)
	}
	for name, err := range map[string]error{
		"without the switch":           off.checkApply("apply", mcu("cluster")),
		"another MachineConfiguration": on.checkApply("apply", mcu("other")),
	} {
		var refusal *AdvisorWriteError
		if !errors.As(err, &refusal) {
			t.Errorf("%s: err = %v, want an *AdvisorWriteError", name, err)
		}
	}
	sch := scheme.New()
	sch.AddKnownTypes(operatorv1.GroupVersion, &operatorv1.MachineConfiguration{}, &operatorv1.MachineConfigurationList{})
	metav1.AddToGroupVersion(sch, operatorv1.GroupVersion)
	mcfg := &operatorv1.MachineConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}}
	on.Client = fake.NewClientBuilder().WithScheme(sch).WithObjects(mcfg.DeepCopy()).Build()
	ctx := context.Background()
	merge := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"annotations":{"ndp.dev/x":"y"}}}`))
	for name, err := range map[string]error{
		"update":      on.Update(ctx, mcfg.DeepCopy()),
		"merge patch": on.Patch(ctx, mcfg.DeepCopy(), merge),
		"delete":      on.Delete(ctx, mcfg.DeepCopy()),
	} {
		var refusal *AdvisorWriteError
		if !errors.As(err, &refusal) {
			t.Errorf("%s of MachineConfiguration cluster: err = %v, want an *AdvisorWriteError", name, err)
		}
	}
}
