package registries_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	configv1 "github.com/openshift/api/config/v1"
	operatorv1alpha1 "github.com/openshift/api/operator/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ndp-dev/ndp/registries"
)

func idms(name string, policy configv1.MirrorSourcePolicy, source string, mirrors ...configv1.ImageMirror) configv1.ImageDigestMirrorSet {
	return configv1.ImageDigestMirrorSet{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: configv1.ImageDigestMirrorSetSpec{
		ImageDigestMirrors: []configv1.ImageDigestMirrors{{Source: source, Mirrors: mirrors, MirrorSourcePolicy: policy}}}}
}

func itms(name, source string, mirrors ...configv1.ImageMirror) configv1.ImageTagMirrorSet {
	return configv1.ImageTagMirrorSet{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: configv1.ImageTagMirrorSetSpec{
		ImageTagMirrors: []configv1.ImageTagMirrors{{Source: source, Mirrors: mirrors}}}}
}

const base = `unqualified-search-registries = ["registry.access.redhat.com", "docker.io"]
short-name-mode = ""
`

func TestRenderMirrorSets(t *testing.T) {
	baseConf, err := registries.Parse([]byte(base))
	if err != nil {
		t.Fatal(err)
	}
	rules, errs := registries.MirrorRules(
		[]configv1.ImageDigestMirrorSet{
			idms("b-release", configv1.NeverContactSource, "quay.io/openshift-release-dev/ocp-release", "mirror.example.com/ocp/release"),
			idms("a-app", "", "registry.example.com/team/app", "mirror.example.com/team/app", "backup.example.com/team/app"),
		},
		[]configv1.ImageTagMirrorSet{itms("tags", "registry.example.com/team/app", "mirror.example.com/team/app")},
		[]operatorv1alpha1.ImageContentSourcePolicy{{ObjectMeta: metav1.ObjectMeta{Name: "legacy"}, Spec: operatorv1alpha1.ImageContentSourcePolicySpec{
			RepositoryDigestMirrors: []operatorv1alpha1.RepositoryDigestMirrors{{Source: "*.example.org", Mirrors: []string{"mirror.example.com/org"}}}}}},
	)
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	data := registries.Marshal(registries.Render(baseConf, rules))
	got, err := registries.Parse(data)
	if err != nil {
		t.Fatalf("rendered registries.conf does not parse: %v\n%s", err, data)
	}
	want := map[string]registries.RegistryState{
		"*.example.org": {Scope: "*.example.org", Prefix: "*.example.org", Mirrors: []registries.MirrorState{{Location: "mirror.example.com/org", PullFromMirror: "digest-only"}}},
		"quay.io/openshift-release-dev/ocp-release": {Scope: "quay.io/openshift-release-dev/ocp-release", Prefix: "quay.io/openshift-release-dev/ocp-release", Location: "quay.io/openshift-release-dev/ocp-release", Blocked: true,
			Mirrors: []registries.MirrorState{{Location: "mirror.example.com/ocp/release", PullFromMirror: "digest-only"}}},
		// A mirror for digests (IDMS) and tags (ITMS) of the same source pulls both.
		"registry.example.com/team/app": {Scope: "registry.example.com/team/app", Prefix: "registry.example.com/team/app", Location: "registry.example.com/team/app",
			Mirrors: []registries.MirrorState{{Location: "mirror.example.com/team/app", PullFromMirror: "all"}, {Location: "backup.example.com/team/app", PullFromMirror: "digest-only"}}},
	}
	gotStates := map[string]registries.RegistryState{}
	for i := range got.Registries {
		gotStates[registries.Scope(&got.Registries[i])] = registries.State(&got.Registries[i])
	}
	if d := cmp.Diff(want, gotStates); d != "" {
		t.Errorf("rendered registries (-want +got):\n%s\n%s", d, data)
	}
	if d := registries.Diff(baseConf, got); len(d.RegistriesAdded) != 3 || d.SearchChanged || len(d.OtherChanged) != 0 {
		t.Errorf("the base settings must be kept: %+v", d)
	}
}

func TestMirrorRulesRejectInvalidObjects(t *testing.T) {
	rules, errs := registries.MirrorRules([]configv1.ImageDigestMirrorSet{
		idms("scheme", "", "https://quay.io/x", "mirror.example.com/x"),
		idms("self", "", "quay.io/x", "quay.io/x"),
		idms("digest", "", "quay.io/x@sha256:abc", "mirror.example.com/x"),
		idms("good", "", "quay.io/ok", "mirror.example.com/ok"),
	}, nil, nil)
	if len(rules) != 1 || rules[0].Source != "quay.io/ok" {
		t.Errorf("valid rules: %+v", rules)
	}
	var msgs []string
	for _, e := range errs {
		msgs = append(msgs, e.Error())
	}
	joined := strings.Join(msgs, "\n")
	for _, want := range []string{`ImageDigestMirrorSet "scheme" spec.imageDigestMirrors[0]: source: "https://quay.io/x": no scheme allowed`,
		`ImageDigestMirrorSet "self" spec.imageDigestMirrors[0]: mirrors[0]: "quay.io/x" is the source itself`,
		`ImageDigestMirrorSet "digest" spec.imageDigestMirrors[0]: source: "quay.io/x@sha256:abc": no digest allowed`} {
		if !strings.Contains(joined, want) {
			t.Errorf("errors lack %q:\n%s", want, joined)
		}
	}
}
