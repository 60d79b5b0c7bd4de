package mcoentries_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	operatorv1 "github.com/openshift/api/operator/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ndp-dev/ndp/internal/testkit/policytest"
	"github.com/ndp-dev/ndp/mco/mcoentries"
	"github.com/ndp-dev/ndp/mco/mcorules"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/loader"
	"github.com/ndp-dev/ndp/planner/policy"
)

// admin is MachineConfiguration cluster with these file entries.
func admin(fs ...operatorv1.NodeDisruptionPolicySpecFile) *operatorv1.MachineConfiguration {
	mc := &operatorv1.MachineConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}}
	mc.Spec.NodeDisruptionPolicy.Files = fs
	return mc
}

// fileList lists a spec's file entries as "PATH: ACTIONS".
func fileList(e mcoentries.Entries) []string {
	var out []string
	for _, f := range e.Files {
		out = append(out, f.Path+": "+planner.FormatActions(f.Actions))
	}
	return out
}

func notes(us []mcoentries.Unexpressed) []string {
	var out []string
	for _, u := range us {
		out = append(out, u.String())
	}
	return out
}

func TestExport(t *testing.T) {
	chrony := policytest.File("chrony", 100, "/etc/chrony.conf", restartChrony)
	kubeletLive, _, err := loader.Load("../../examples/policies/kubelet-live.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pooled := policytest.File("infra-app", 100, "/etc/app.conf", restartChrony)
	pooled.PoolSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "infra"}}
	kubeletReboot := file("/etc/kubernetes/kubelet.conf", policytest.Reboot)
	ownedByNDP := admin(file("/etc/old.conf", policytest.None), file("/etc/admin.conf", policytest.None))
	ownedByNDP.ManagedFields = []metav1.ManagedFieldsEntry{{
		Manager: mcoentries.FieldManager, Operation: metav1.ManagedFieldsOperationApply,
		FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:nodeDisruptionPolicy":{"f:files":{"k:{\"path\":\"/etc/old.conf\"}":{".":{},"f:actions":{},"f:path":{}}}}}}`)},
	}}

	tests := []struct {
		name   string
		pols   []policy.Policy
		admin  *operatorv1.MachineConfiguration
		update string // a pair of examples/machineconfigs
		// ndp's entries, the whole spec, the notes (prefixes) and, with an
		// update, today, after and equal.
		entries, spec, notes []string
		today, after         string
		equal                bool
	}{{
		name:    "static only",
		pols:    []policy.Policy{chrony},
		entries: []string{"/etc/chrony.conf: Restart chronyd.service"},
		spec:    []string{"/etc/chrony.conf: Restart chronyd.service"},
	}, {
		name:    "Rego and a pool selector: no static entry, said why",
		pols:    append([]policy.Policy{pooled}, kubeletLive...),
		notes:   []string{"policy infra-app, spec.poolSelector: it applies to some pools only", "policy kubelet-live, its Rego: a Rego policy decides changes by what changed in them"},
		entries: nil,
	}, {
		name:    "the administrator's entries stay, ndp's over them",
		pols:    []policy.Policy{chrony},
		admin:   admin(file("/etc/app.conf", policytest.None)),
		entries: []string{"/etc/chrony.conf: Restart chronyd.service"},
		spec:    []string{"/etc/app.conf: None", "/etc/chrony.conf: Restart chronyd.service"},
	}, {
		name:    "an equal entry of the administrator's: one item",
		pols:    []policy.Policy{chrony},
		admin:   admin(file("/etc/chrony.conf", restartChrony)),
		entries: []string{"/etc/chrony.conf: Restart chronyd.service"},
		spec:    []string{"/etc/chrony.conf: Restart chronyd.service"},
	}, {
		name:  "the administrator holds the path otherwise: ndp's entry left out",
		pols:  []policy.Policy{chrony},
		admin: admin(file("/etc/chrony.conf", policytest.Reboot)),
		spec:  []string{"/etc/chrony.conf: Reboot"},
		notes: []string{"policy chrony, file /etc/chrony.conf: the administrator's entry for it in MachineConfiguration cluster has other actions (Reboot); ndp does not overwrite it"},
	}, {
		name:    "entries ndp applied before are not the administrator's",
		pols:    []policy.Policy{chrony},
		admin:   ownedByNDP,
		entries: []string{"/etc/chrony.conf: Restart chronyd.service"},
		spec:    []string{"/etc/admin.conf: None", "/etc/chrony.conf: Restart chronyd.service"},
	}, {
		name:    "an update: its per-update entry",
		pols:    kubeletLive,
		update:  "kubelet-maxpods",
		entries: []string{"/etc/kubernetes/kubelet.conf: Restart kubelet.service"},
		spec:    []string{"/etc/kubernetes/kubelet.conf: Restart kubelet.service"},
		notes:   []string{"policy kubelet-live, its Rego:"},
		today:   "drain and reboot", after: "Restart kubelet.service", equal: true,
	}, {
		name:   "an update whose path the administrator holds otherwise",
		pols:   kubeletLive,
		admin:  admin(kubeletReboot),
		update: "kubelet-maxpods",
		spec:   []string{"/etc/kubernetes/kubelet.conf: Reboot"},
		notes: []string{"policy kubelet-live, its Rego:",
			"policy kubelet-live, file /etc/kubernetes/kubelet.conf: the administrator's entry for it in MachineConfiguration cluster has other actions (Reboot)"},
		today: "drain and reboot", after: "drain and reboot", equal: false,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pols := policy.WithDefaultPolicy(tt.pols)
			pl := policytest.Planner(t, tt.pols...)
			in := mcoentries.ExportInput{Planner: pl, Policies: pols, Admin: tt.admin}
			if tt.update != "" {
				from, to, plan := loadPlan(t, pl, "../../examples/machineconfigs/"+tt.update)
				in.Update = &mcoentries.Update{From: from, To: to, Plan: plan}
			}
			res, err := mcoentries.Export(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.entries, fileList(res.Entries)); diff != "" {
				t.Errorf("ndp's entries (-want +got):\n%s\nnotes: %v", diff, res.Unexpressed)
			}
			if diff := cmp.Diff(tt.spec, fileList(res.Spec)); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
			got := notes(res.Unexpressed)
			if len(got) != len(tt.notes) {
				t.Errorf("notes %q, want %d", got, len(tt.notes))
			} else {
				for i, w := range tt.notes {
					if !strings.HasPrefix(got[i], w) {
						t.Errorf("note %d: %q, want it to start %q", i, got[i], w)
					}
				}
			}
			if (res.Update != nil) != (tt.update != "") {
				t.Fatalf("update result %v, want one: %t", res.Update, tt.update != "")
			}
			if res.Update != nil && (res.Today != tt.today || res.Update.After != tt.after || res.Update.Equal != tt.equal) {
				t.Errorf("today %q, after %q, equal %t; want %q, %q, %t", res.Today, res.Update.After, res.Update.Equal, tt.today, tt.after, tt.equal)
			}
			if err := mcorules.Validate(res.Spec); err != nil {
				t.Errorf("the spec does not validate: %v", err)
			}
			obj, err := res.Object()
			if err != nil {
				t.Fatal(err)
			}
			if obj.GetName() != "cluster" || obj.GetKind() != "MachineConfiguration" || len(obj.GetAnnotations()) > 0 {
				t.Errorf("object: %v", obj.Object)
			}
		})
	}
}

// A spec the MCO's API refuses is an error naming the field, never a
// result.
func TestExportInvalid(t *testing.T) {
	pl := policytest.Planner(t, policytest.File("chrony", 100, "/etc/chrony.conf", restartChrony))
	mc := admin()
	for i := range 50 {
		mc.Spec.NodeDisruptionPolicy.Files = append(mc.Spec.NodeDisruptionPolicy.Files, file("/etc/app/"+string(rune('a'+i/26))+string(rune('a'+i%26)), policytest.None))
	}
	pols := policy.WithDefaultPolicy([]policy.Policy{policytest.File("chrony", 100, "/etc/chrony.conf", restartChrony)})
	res, err := mcoentries.Export(context.Background(), mcoentries.ExportInput{Planner: pl, Policies: pols, Admin: mc})
	var fe *mcorules.FieldError
	if !errors.As(err, &fe) || fe.Field != "spec.nodeDisruptionPolicy.files" {
		t.Errorf("Export: %v, %v; want a FieldError on spec.nodeDisruptionPolicy.files", res, err)
	}
	if _, err := mcoentries.Export(context.Background(), mcoentries.ExportInput{Planner: pl, Policies: pols, Update: &mcoentries.Update{}}); err == nil {
		t.Error("an update without a plan: no error")
	}
}
