package framework

import (
	"os"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"sigs.k8s.io/yaml"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/internal/testkit/builder"
	"github.com/ndp-dev/ndp/internal/testkit/policytest"
	"github.com/ndp-dev/ndp/nodeconfig"
	"github.com/ndp-dev/ndp/planner/loader"
)

// The KubeletConfig scenario's premise, offline: the worker VMs'
// kubelet.conf, with the KubeletConfig of examples/cluster merged over it
// by ndp's own renderer, is a kubelet restart under kubelet-live and a
// reboot under the defaults alone.
func TestWorkerKubeletConfigIsARestart(t *testing.T) {
	var kc mcfgv1.KubeletConfig
	if err := yaml.UnmarshalStrict(mustRead(t, "../../examples/cluster/kubeletconfig-max-pods.yaml"), &kc); err != nil {
		t.Fatal(err)
	}
	if err := nodeconfig.ValidateKubeletConfig(&kc); err != nil {
		t.Fatal(err)
	}
	files, err := nodeconfig.KubeletFiles(&kc, []byte(guestKubeletConfig()), "01-worker-kubelet")
	if err != nil {
		t.Fatal(err)
	}
	base := builder.MachineConfig("rendered-worker-base").WithFiles(builder.File(nodeconfig.KubeletConfPath, guestKubeletConfig())).Build()
	var fs []builder.Entry
	for _, f := range files {
		fs = append(fs, builder.File(f.Path, string(f.Data)))
	}
	merged := builder.MachineConfig("rendered-worker-kubelet").WithFiles(fs...).Build()
	pols, _, err := loader.Load("../../examples/policies/kubelet-live.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		kubeletLive bool // the shipped policy beside the defaults
		want        string
	}{
		{"defaults", false, "Reboot"},
		{"kubelet-live", true, "Restart kubelet.service"},
	} {
		p := policytest.Planner(t)
		if tc.kubeletLive {
			p = policytest.Planner(t, pols...)
		}
		plan := policytest.Plan(t, p, base, merged, "worker")
		var got string
		for i, a := range ndpmcv1.PlanActionsFrom(plan.Actions) {
			if i > 0 {
				got += ", "
			}
			got += a.String()
		}
		if got != tc.want {
			t.Errorf("%s: plan %q, want %q; reasons %+v", tc.name, got, tc.want, plan.Reasons)
		}
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
