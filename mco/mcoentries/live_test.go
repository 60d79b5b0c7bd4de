package mcoentries_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	operatorv1 "github.com/openshift/api/operator/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ndp-dev/ndp/internal/testkit/policytest"
	"github.com/ndp-dev/ndp/mco/mcoentries"
)

// ndp's entries are those it owns; its per-update entries, those of them
// the guard annotation lists (an administrator's entry it lists is not
// ndp's).
func TestLiveMineAndUpdateEntries(t *testing.T) {
	spec := mcoentries.Entries{Files: files(file("/etc/static", restartChrony), file("/etc/update", restartChrony), file("/etc/admin", restartChrony)),
		SSHKey: operatorv1.NodeDisruptionPolicySpecSSHKey{Actions: []operatorv1.NodeDisruptionPolicySpecAction{policytest.None}}}
	live := &mcoentries.Live{
		MC: &operatorv1.MachineConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "cluster",
			Annotations: map[string]string{mcoentries.GuardAnnotation: "file:/etc/update\nfile:/etc/admin\nsshkey"}}},
		Spec: spec,
		Own: mcoentries.Ownership{
			Mine:   map[string]bool{"file:/etc/static": true, "file:/etc/update": true},
			Others: map[string][]string{"file:/etc/admin": {"admin"}, "sshkey": {"admin"}},
		},
	}
	if diff := cmp.Diff([]string{"file:/etc/static", "file:/etc/update"}, mcoentries.Subjects(live.Mine())); diff != "" {
		t.Errorf("Mine (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"file:/etc/update"}, mcoentries.Subjects(live.UpdateEntries())); diff != "" {
		t.Errorf("UpdateEntries (-want +got):\n%s", diff)
	}
}

func TestWithinLimits(t *testing.T) {
	var many []operatorv1.NodeDisruptionPolicySpecFile
	for i := range 52 {
		many = append(many, file("/etc/f"+string(rune('a'+i/26))+string(rune('a'+i%26)), policytest.None))
	}
	admin := mcoentries.Entries{Files: many[:10]}
	kept, dropped := mcoentries.WithinLimits(admin, mcoentries.Entries{Files: many[10:]})
	if got := len(admin.Files) + len(kept.Files); got != 50 {
		t.Errorf("%d files in all, want the API's 50", got)
	}
	if len(dropped) != 2 || dropped[0].Subject != "file /etc/fbz" {
		t.Errorf("dropped %v, want the last two", dropped)
	}
}
