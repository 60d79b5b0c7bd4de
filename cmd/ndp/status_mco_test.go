package main

import (
	"context"
	"strings"
	"testing"

	operatorv1 "github.com/openshift/api/operator/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/mco/mcoentries"
)

// kubectl ndp status shows ndp's entries in the MCO's policy list (those
// of field manager ndp only; the administrator's are not ndp's), which
// stand per update, and what each policy cannot give the MCO.
func TestStatusMCOEntries(t *testing.T) {
	restart := func(s string) []operatorv1.NodeDisruptionPolicySpecAction {
		return []operatorv1.NodeDisruptionPolicySpecAction{{Type: operatorv1.RestartSpecAction, Restart: &operatorv1.RestartService{ServiceName: operatorv1.NodeDisruptionPolicyServiceName(s)}}}
	}
	mc := &operatorv1.MachineConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster", Annotations: map[string]string{mcoentries.GuardAnnotation: "file:/etc/kubernetes/kubelet.conf"},
			ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: "ndp", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "operator.openshift.io/v1", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(
					`{"f:spec":{"f:nodeDisruptionPolicy":{"f:files":{"k:{\"path\":\"/etc/chrony.conf\"}":{".":{},"f:actions":{},"f:path":{}},"k:{\"path\":\"/etc/kubernetes/kubelet.conf\"}":{".":{},"f:actions":{},"f:path":{}}}}}}`)}},
				{Manager: "admin", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "operator.openshift.io/v1", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(
					`{"f:spec":{"f:nodeDisruptionPolicy":{"f:files":{"k:{\"path\":\"/etc/admin.conf\"}":{".":{},"f:actions":{},"f:path":{}}}}}}`)}},
			}},
		Spec: operatorv1.MachineConfigurationSpec{NodeDisruptionPolicy: operatorv1.NodeDisruptionPolicyConfig{Files: []operatorv1.NodeDisruptionPolicySpecFile{
			{Path: "/etc/admin.conf", Actions: []operatorv1.NodeDisruptionPolicySpecAction{{Type: operatorv1.NoneSpecAction}}},
			{Path: "/etc/chrony.conf", Actions: restart("chronyd.service")},
			{Path: "/etc/kubernetes/kubelet.conf", Actions: restart("kubelet.service")},
		}}},
	}
	pol := &v1alpha1.NodeDisruptionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "kubelet-live"}, Status: v1alpha1.NodeDisruptionPolicyStatus{MCO: &v1alpha1.PolicyMCOStatus{
		State: v1alpha1.MCOEntriesNone, NotExpressed: []string{"file /etc/kubernetes/kubelet.conf: its Rego reads the contents"}}}}
	// The fake client keeps no managedFields: a reader gives them back.
	c := fakeCluster(t, mc.DeepCopy(), pol)
	old := newStatusClient
	newStatusClient = func(*statusOptions) (client.Reader, error) { return withManagedFields{c, mc.ManagedFields}, nil }
	t.Cleanup(func() { newStatusClient = old })
	code, out, errOut := ndp(t, "status")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	testkit.CheckContains(t, "status", out,
		"ndp's entries in the MCO's node disruption policy (MachineConfiguration cluster, field manager ndp):\n"+
			"  file /etc/chrony.conf: Restart chronyd.service (static)\n"+
			"  file /etc/kubernetes/kubelet.conf: Restart kubelet.service (per update, guarded)\n",
		"  policy kubelet-live: not in the MCO: file /etc/kubernetes/kubelet.conf: its Rego reads the contents\n",
	)
	if strings.Contains(out, "/etc/admin.conf") {
		t.Errorf("status shows the administrator's entry as ndp's:\n%s", out)
	}
}

// withManagedFields is a reader that sets the MachineConfiguration's
// managedFields, which the fake client drops.
type withManagedFields struct {
	client.Reader
	mf []metav1.ManagedFieldsEntry
}

func (r withManagedFields) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := r.Reader.Get(ctx, key, obj, opts...)
	if mc, ok := obj.(*operatorv1.MachineConfiguration); ok && err == nil {
		mc.ManagedFields = r.mf
	}
	return err
}
