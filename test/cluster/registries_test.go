package cluster

import (
	"context"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/policy"
	"github.com/ndp-dev/ndp/policies"
	"github.com/ndp-dev/ndp/render"
)

func TestImageMirrorSetsArePlannedThroughRegistriesConf(t *testing.T) {
	ctx := context.Background()
	p := active.Planner()
	if p == nil {
		waitCondition(t, policies.DefaultPolicyName, "Accepted", metav1.ConditionTrue)
		p = active.Planner()
	}
	create(t, machineConfigPool("infra"))
	name := render.GeneratedRegistriesName("infra")
	before := waitMachineConfig(t, name, func(*ndpmcv1.MachineConfig) bool { return true })
	if before.Labels[ndpmcv1.RoleLabel] != "infra" || len(before.OwnerReferences) != 1 {
		t.Errorf("labels %v, owners %v", before.Labels, before.OwnerReferences)
	}
	poolCondition(t, "infra", corev1.ConditionFalse)

	idms := &configv1.ImageDigestMirrorSet{ObjectMeta: metav1.ObjectMeta{Name: "release"}, Spec: configv1.ImageDigestMirrorSetSpec{ImageDigestMirrors: []configv1.ImageDigestMirrors{
		{Source: "quay.io/openshift-release-dev/ocp-release", Mirrors: []configv1.ImageMirror{"mirror.example.com/ocp/release"}}}}}
	create(t, idms)
	with := waitMachineConfig(t, name, func(mc *ndpmcv1.MachineConfig) bool { return mc.Generation > before.Generation })
	added, err := p.Plan(ctx, planner.Request{From: parseMC(t, before), To: parseMC(t, with)})
	if err != nil {
		t.Fatal(err)
	}
	if len(added.Actions) != 1 || added.Actions[0].Type != policy.ActionReload || added.Drain {
		t.Errorf("adding an IDMS: %+v", added)
	}

	// An invalid object (the MCO refuses a source never to contact
	// mirrored by itself) leaves the file as it is and says why. (The
	// webhook refuses it; this one got in while the webhook was down.)
	bad := &configv1.ImageDigestMirrorSet{ObjectMeta: metav1.ObjectMeta{Name: "self-mirror"}, Spec: configv1.ImageDigestMirrorSetSpec{ImageDigestMirrors: []configv1.ImageDigestMirrors{
		{Source: "quay.io/x", Mirrors: []configv1.ImageMirror{"quay.io/x"}, MirrorSourcePolicy: configv1.NeverContactSource}}}}
	withoutWebhook(t, imageMirrorWebhook, bad)
	create(t, bad)
	c := poolCondition(t, "infra", corev1.ConditionTrue)
	if !strings.Contains(c.Message, `ImageDigestMirrorSet "self-mirror" spec.imageDigestMirrors[0].mirrors[0]`) || !strings.Contains(c.Message, "is the source itself") {
		t.Errorf("condition: %+v", c)
	}
	waitEvent(t, "infra", "InvalidImageMirrors")
	if now := waitMachineConfig(t, name, func(*ndpmcv1.MachineConfig) bool { return true }); now.Generation != with.Generation {
		t.Errorf("an invalid object changed %s: generation %d, was %d", name, now.Generation, with.Generation)
	}
	if err := k8s.Delete(ctx, bad); err != nil {
		t.Fatal(err)
	}
	poolCondition(t, "infra", corev1.ConditionFalse)

	if err := k8s.Delete(ctx, idms); err != nil {
		t.Fatal(err)
	}
	after := waitMachineConfig(t, name, func(mc *ndpmcv1.MachineConfig) bool { return mc.Generation > with.Generation })
	removed, err := p.Plan(ctx, planner.Request{From: parseMC(t, with), To: parseMC(t, after)})
	if err != nil {
		t.Fatal(err)
	}
	if len(removed.Actions) != 1 || removed.Actions[0].Type != policy.ActionReload || !removed.Drain {
		t.Errorf("deleting the IDMS: %+v", removed)
	}
}
