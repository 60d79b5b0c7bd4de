package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	operatorv1 "github.com/openshift/api/operator/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ndp-dev/ndp/mco/mcoentries"
)

func TestReleasedEntries(t *testing.T) {
	none := []operatorv1.NodeDisruptionPolicySpecAction{{Type: operatorv1.NoneSpecAction}}
	mf := func(manager, paths string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationApply, FieldsType: "FieldsV1",
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:nodeDisruptionPolicy":{"f:files":{` + paths + `}}}}`)}}
	}
	mc := func(guard string) *operatorv1.MachineConfiguration {
		m := &operatorv1.MachineConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "cluster", ManagedFields: []metav1.ManagedFieldsEntry{
			mf("ndp", `"k:{\"path\":\"/etc/chrony.conf\"}":{".":{}},"k:{\"path\":\"/etc/kubernetes/kubelet.conf\"}":{".":{}}`),
			mf("admin", `"k:{\"path\":\"/etc/admin.conf\"}":{".":{}}`),
		}}}
		if guard != "" {
			m.Annotations = map[string]string{mcoentries.GuardAnnotation: guard}
		}
		for _, p := range []string{"/etc/admin.conf", "/etc/chrony.conf", "/etc/kubernetes/kubelet.conf"} {
			m.Spec.NodeDisruptionPolicy.Files = append(m.Spec.NodeDisruptionPolicy.Files, operatorv1.NodeDisruptionPolicySpecFile{Path: p, Actions: none})
		}
		return m
	}
	tests := []struct {
		name     string
		mc       *operatorv1.MachineConfiguration
		all      bool
		keep     []string
		released []string
	}{
		{"per-update only", mc("file:/etc/kubernetes/kubelet.conf"), false, []string{"file:/etc/chrony.conf"}, []string{"file /etc/kubernetes/kubelet.conf"}},
		{"all", mc("file:/etc/kubernetes/kubelet.conf"), true, nil, []string{"file /etc/chrony.conf", "file /etc/kubernetes/kubelet.conf"}},
		{"nothing guarded", mc(""), false, []string{"file:/etc/chrony.conf", "file:/etc/kubernetes/kubelet.conf"}, nil},
		{"a guard without its entry", mc("file:/etc/other.conf"), false, []string{"file:/etc/chrony.conf", "file:/etc/kubernetes/kubelet.conf"}, []string{"the guard annotation " + mcoentries.GuardAnnotation}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keep, released, err := releasedEntries(tt.mc, tt.all)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.keep, mcoentries.Subjects(keep)); d != "" {
				t.Errorf("kept (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.released, released); d != "" {
				t.Errorf("released (-want +got):\n%s", d)
			}
		})
	}
}
