package cluster

import (
	"context"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/internal/testkit"
)

func TestPlanControllerWritesPlansIntoTheTarget(t *testing.T) {
	a := basePool(t, "compute").Spec.Configuration.Name
	for _, n := range []string{"compute-0", "compute-1", "compute-2"} {
		create(t, node(n, "compute", a))
	}
	create(t, newPolicy("compute-chrony", chronySpec()))
	waitCondition(t, "compute-chrony", v1alpha1.ConditionAccepted, metav1.ConditionTrue)
	create(t, sourceMC("50-compute-chrony", "compute").WithFile("/etc/chrony.conf", "pool x").Build())
	b := waitPool(t, "compute", func(p *mcfgv1.MachineConfigPool) bool { return len(p.Spec.Configuration.Source) == 3 }).Spec.Configuration.Name

	plans := waitPlans(t, b, func(ps []ndpmcv1.PostConfigActions) bool {
		return len(ps) == 1 && len(ps[0].Actions) == 1 && ps[0].Actions[0].Type == "Restart"
	})
	p := plans[0]
	if p.From != a || p.Drain || p.Reboot || p.Actions[0].Restart.ServiceName != "chronyd.service" || len(p.Reasons) != 1 || p.Reasons[0].Policy == "" || p.PlanHash == "" {
		t.Errorf("plan(A→B): %+v", p)
	}
	revision := p.PolicyRevision

	// Without the policy the change needs a reboot, under a new revision.
	var pol v1alpha1.NodeDisruptionPolicy
	if err := k8s.Get(context.Background(), client.ObjectKey{Name: "compute-chrony"}, &pol); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(context.Background(), &pol); err != nil {
		t.Fatal(err)
	}
	plans = waitPlans(t, b, func(ps []ndpmcv1.PostConfigActions) bool {
		return len(ps) == 1 && ps[0].Reboot && ps[0].PolicyRevision != revision
	})
	if !plans[0].Drain || plans[0].Actions[0].Type != "Reboot" {
		t.Errorf("plan after the policy went: %+v", plans[0])
	}

	// A node on another old config gets its own plan in the same target.
	other := node("compute-3", "compute", "rendered-compute-older")
	create(t, renderedMC("rendered-compute-older", "compute").Build())
	create(t, other)
	waitPlans(t, b, func(ps []ndpmcv1.PostConfigActions) bool { return len(ps) == 2 })
}

// Image-mirror objects reach nodes through the same path: a rendered
// config whose status holds the plan.
func TestImageMirrorPlansInMachineConfigStatus(t *testing.T) {
	create(t, machineConfigPool("mirror"))
	a := waitPool(t, "mirror", func(p *mcfgv1.MachineConfigPool) bool { return p.Spec.Configuration.Name != "" }).Spec.Configuration.Name
	nodes := []string{"mirror-0", "mirror-1"}
	for _, n := range nodes {
		create(t, node(n, "mirror", a))
	}
	onlyPlan := func(target, from string, drain bool) {
		t.Helper()
		ps := waitPlans(t, target, func(ps []ndpmcv1.PostConfigActions) bool { return len(ps) == 1 && ps[0].From == from })
		if len(ps[0].Actions) != 1 || ps[0].Actions[0].Reload == nil || ps[0].Actions[0].Reload.ServiceName != "crio.service" || ps[0].Drain != drain {
			t.Errorf("plan %s -> %s: %+v, want Reload crio.service, drain %t", from, target, ps[0], drain)
		}
	}

	idms := &configv1.ImageDigestMirrorSet{ObjectMeta: metav1.ObjectMeta{Name: "mirror-release"}, Spec: configv1.ImageDigestMirrorSetSpec{ImageDigestMirrors: []configv1.ImageDigestMirrors{
		{Source: "quay.io/mirror-test/release", Mirrors: []configv1.ImageMirror{"mirror.example.com/mirror-test/release"}}}}}
	create(t, idms)
	b := waitPool(t, "mirror", func(p *mcfgv1.MachineConfigPool) bool { return p.Spec.Configuration.Name != a }).Spec.Configuration.Name
	onlyPlan(b, a, false)

	// The nodes update to B; deleting the IDMS takes them back, after a drain.
	testkit.SetNodeConfig(t, k8s, b, nodes...)
	if err := k8s.Delete(context.Background(), idms); err != nil {
		t.Fatal(err)
	}
	back := waitPool(t, "mirror", func(p *mcfgv1.MachineConfigPool) bool { return p.Spec.Configuration.Name != b }).Spec.Configuration.Name
	onlyPlan(back, b, true)
	// B's plan from A is pruned once no node runs A.
	waitPlans(t, b, func(ps []ndpmcv1.PostConfigActions) bool { return len(ps) == 0 })

	testkit.SetNodeConfig(t, k8s, back, nodes...)
	create(t, &configv1.ImageTagMirrorSet{ObjectMeta: metav1.ObjectMeta{Name: "mirror-tags"}, Spec: configv1.ImageTagMirrorSetSpec{ImageTagMirrors: []configv1.ImageTagMirrors{
		{Source: "registry.example.com/mirror-test/app", Mirrors: []configv1.ImageMirror{"mirror.example.com/mirror-test/app"}}}}})
	withTags := waitPool(t, "mirror", func(p *mcfgv1.MachineConfigPool) bool { return p.Spec.Configuration.Name != back }).Spec.Configuration.Name
	onlyPlan(withTags, back, true)
}
