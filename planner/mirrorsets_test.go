package planner_test

import (
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ndp-dev/ndp/internal/testkit/builder"
	"github.com/ndp-dev/ndp/internal/testkit/policytest"
	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/registries"
)

// registries.conf rendered from image-mirror objects, planned with the
// default policy: what the registries controller's output will cost nodes.
func TestPlansOfRenderedMirrorSets(t *testing.T) {
	base := []byte("unqualified-search-registries = [\"registry.access.redhat.com\", \"docker.io\"]\n")
	render := func(name string, idms []configv1.ImageDigestMirrorSet, itms []configv1.ImageTagMirrorSet) *machineconfig.Config {
		data, err := registries.Render(base, registries.Inputs{IDMS: idms, ITMS: itms})
		if err != nil {
			t.Fatal(err)
		}
		return builder.MachineConfig(name).WithFiles(builder.File(registries.ConfPath, string(data))).Config(t)
	}
	digest := []configv1.ImageDigestMirrorSet{{ObjectMeta: metav1.ObjectMeta{Name: "release"}, Spec: configv1.ImageDigestMirrorSetSpec{ImageDigestMirrors: []configv1.ImageDigestMirrors{
		{Source: "quay.io/openshift-release-dev/ocp-release", Mirrors: []configv1.ImageMirror{"mirror.example.com/ocp/release"}}}}}}
	blocked := []configv1.ImageDigestMirrorSet{{ObjectMeta: metav1.ObjectMeta{Name: "release"}, Spec: configv1.ImageDigestMirrorSetSpec{ImageDigestMirrors: []configv1.ImageDigestMirrors{
		{Source: "quay.io/openshift-release-dev/ocp-release", Mirrors: []configv1.ImageMirror{"mirror.example.com/ocp/release"}, MirrorSourcePolicy: configv1.NeverContactSource}}}}}
	tags := []configv1.ImageTagMirrorSet{{ObjectMeta: metav1.ObjectMeta{Name: "tags"}, Spec: configv1.ImageTagMirrorSetSpec{ImageTagMirrors: []configv1.ImageTagMirrors{
		{Source: "registry.example.com/team/app", Mirrors: []configv1.ImageMirror{"mirror.example.com/team/app"}}}}}}

	none, withIDMS, withBlocked, withITMS := render("none", nil, nil), render("idms", digest, nil), render("blocked", blocked, nil), render("itms", digest, tags)
	p := policytest.Planner(t)
	for _, tc := range []struct {
		name      string
		from, to  *machineconfig.Config
		wantDrain bool
	}{
		{"IDMS added", none, withIDMS, false},
		{"IDMS deleted", withIDMS, none, true},
		{"ITMS added", withIDMS, withITMS, true},
		{"IDMS with NeverContactSource added", none, withBlocked, true},
	} {
		got := plan(t, p, tc.from, tc.to)
		if actionsString(got.Actions) != `[{"type":"Reload","reload":{"serviceName":"crio.service"}}]` || got.Drain != tc.wantDrain {
			t.Errorf("%s: actions %s drain %t, want Reload crio.service drain %t (%s)", tc.name, actionsString(got.Actions), got.Drain, tc.wantDrain, got.Reasons[0].Detail)
		}
	}
}
