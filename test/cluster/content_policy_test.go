package cluster

import (
	"context"
	"os"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/internal/testkit/policytest"
	"github.com/ndp-dev/ndp/nodeconfig"
	"github.com/ndp-dev/ndp/planner/loader"
)

// An administrator's policy that reads inside a file (the guide's
// kubelet-maxpods example, docs/reading-files.md, tested offline by ndp test) decides in the
// cluster exactly as `ndp plan` does offline on the same two rendered
// configs: the same actions, drain, reboot and reasons.
func TestContentPolicyDecidesInTheClusterAsOffline(t *testing.T) {
	ctx := context.Background()
	const file = "../../examples/policies/kubelet-maxpods.yaml"
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := kubectlFile(t, string(src), "apply"); err != nil {
		t.Fatalf("applying %s: %v\n%s", file, err, out)
	}
	t.Cleanup(func() {
		_ = k8s.Delete(context.Background(), &v1alpha1.NodeDisruptionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "kubelet-maxpods"}})
	})
	waitCondition(t, "kubelet-maxpods", v1alpha1.ConditionAccepted, metav1.ConditionTrue)

	create(t, machineConfigPool("content"))
	// The base kubelet.conf as YAML, a later MachineConfig's as JSON (as
	// the MCO renders a KubeletConfig's): only the data is compared.
	create(t, sourceMC("01-content-kubelet", "content").WithFile(nodeconfig.KubeletConfPath,
		"apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nmaxPods: 250\ncgroupDriver: systemd\n").Build())
	from := waitPool(t, "content", func(p *mcfgv1.MachineConfigPool) bool { return hasSource(p, "01-content-kubelet") }).Spec.Configuration.Name
	create(t, node("content-a", "content", from))
	create(t, node("content-b", "content", from))
	previous := from
	for _, tc := range []struct {
		name, conf string
		want       string // the plan's actions, as the API prints them
	}{
		{"99-content-maxpods", `{"kind":"KubeletConfiguration","apiVersion":"kubelet.config.k8s.io/v1beta1","maxPods":500,"cgroupDriver":"systemd"}`, "Restart kubelet.service"},
		{"99-content-maxpods", `{"kind":"KubeletConfiguration","apiVersion":"kubelet.config.k8s.io/v1beta1","maxPods":500,"cgroupDriver":"cgroupfs"}`, "Reboot"},
	} {
		mc := sourceMC(tc.name, "content").WithFile(nodeconfig.KubeletConfPath, tc.conf).Build()
		var existing ndpmcv1.MachineConfig
		if err := k8s.Get(ctx, client.ObjectKey{Name: tc.name}, &existing); err == nil {
			existing.Spec = mc.Spec
			if err := k8s.Update(ctx, &existing); err != nil {
				t.Fatal(err)
			}
		} else {
			create(t, mc)
		}
		to := waitPool(t, "content", func(p *mcfgv1.MachineConfigPool) bool {
			return hasSource(p, tc.name) && p.Spec.Configuration.Name != from && p.Spec.Configuration.Name != previous
		}).Spec.Configuration.Name
		previous = to
		target := waitMachineConfig(t, to, func(mc *ndpmcv1.MachineConfig) bool { return mc.Status.PlanFrom(from) != nil })
		inCluster := target.Status.PlanFrom(from)

		var old ndpmcv1.MachineConfig
		if err := k8s.Get(ctx, client.ObjectKey{Name: from}, &old); err != nil {
			t.Fatal(err)
		}
		pols, _, err := loader.Load(file)
		if err != nil {
			t.Fatal(err)
		}
		offline := policytest.Plan(t, policytest.Planner(t, pols...), &old, target, "content").PostConfigActions()
		// The revision (and so the hash) covers every active policy of
		// the test cluster; the decision is what must match.
		ignore := cmpopts.IgnoreFields(ndpmcv1.PostConfigActions{}, "PolicyRevision", "PlanHash")
		if d := cmp.Diff(offline, *inCluster, ignore); d != "" {
			t.Errorf("%s: the cluster's plan differs from ndp plan's offline (-offline +cluster):\n%s", tc.conf, d)
		}
		var got []string
		for _, a := range inCluster.Actions {
			got = append(got, a.String())
		}
		if len(got) != 1 || got[0] != tc.want {
			t.Errorf("%s: plan %v, want %s", tc.conf, got, tc.want)
		}
	}
}

func hasSource(p *mcfgv1.MachineConfigPool, name string) bool {
	return slices.ContainsFunc(p.Spec.Configuration.Source, func(r corev1.ObjectReference) bool { return r.Name == name })
}
