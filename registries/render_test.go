package registries

import (
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/google/go-cmp/cmp"
	configv1 "github.com/openshift/api/config/v1"
	operatorv1alpha1 "github.com/openshift/api/operator/v1alpha1"
	"go.podman.io/image/v5/pkg/sysregistriesv2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func idmsOf(name string, sets ...configv1.ImageDigestMirrors) configv1.ImageDigestMirrorSet {
	return configv1.ImageDigestMirrorSet{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: configv1.ImageDigestMirrorSetSpec{ImageDigestMirrors: sets}}
}

func digestSet(source string, pol configv1.MirrorSourcePolicy, mirrors ...configv1.ImageMirror) configv1.ImageDigestMirrors {
	return configv1.ImageDigestMirrors{Source: source, Mirrors: mirrors, MirrorSourcePolicy: pol}
}

func itmsOf(name string, sets ...configv1.ImageTagMirrors) configv1.ImageTagMirrorSet {
	return configv1.ImageTagMirrorSet{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: configv1.ImageTagMirrorSetSpec{ImageTagMirrors: sets}}
}

func mirror(loc, pull string) sysregistriesv2.Endpoint {
	return sysregistriesv2.Endpoint{Location: loc, PullFromMirror: pull}
}

func reg(location string, mirrors ...sysregistriesv2.Endpoint) sysregistriesv2.Registry {
	return sysregistriesv2.Registry{Endpoint: sysregistriesv2.Endpoint{Location: location}, Mirrors: mirrors}
}

// What the MCO's container-runtime-config controller writes into
// registries.conf, which both modes render (checked against the MCO's own
// code by test/mco); every rendering loads in CRI-O's parser.
func TestRender(t *testing.T) {
	base := "unqualified-search-registries = [\"registry.access.redhat.com\", \"docker.io\"]\nshort-name-mode = \"\"\n"
	withSub := base + "\n[[registry]]\n  location = \"quay.io/src/sub\"\n"
	withSrc := base + "\n[[registry]]\n  location = \"quay.io/src\"\n  [[registry.mirror]]\n    location = \"m0.example.com/x\"\n"
	const src, m1, m2, m3 = "quay.io/src", "m1.example.com/x", "m2.example.com/x", "m3.example.com/x"
	for _, tc := range []struct {
		name string
		base string
		in   Inputs
		want []sysregistriesv2.Registry
	}{
		{"one digest set", base, Inputs{IDMS: []configv1.ImageDigestMirrorSet{idmsOf("a", digestSet(src, "", m1, m2))}},
			[]sysregistriesv2.Registry{reg(src, mirror(m1, "digest-only"), mirror(m2, "digest-only"))}},
		{"chains merged in order", base, Inputs{IDMS: []configv1.ImageDigestMirrorSet{idmsOf("b", digestSet(src, "", m2, m3)), idmsOf("a", digestSet(src, "", m1, m2))}},
			[]sysregistriesv2.Registry{reg(src, mirror(m1, "digest-only"), mirror(m2, "digest-only"), mirror(m3, "digest-only"))}},
		{"unordered mirrors by name", base, Inputs{IDMS: []configv1.ImageDigestMirrorSet{idmsOf("a", digestSet(src, "", m2)), idmsOf("b", digestSet(src, "", m1))}},
			[]sysregistriesv2.Registry{reg(src, mirror(m1, "digest-only"), mirror(m2, "digest-only"))}},
		{"a cycle broken at the smallest name", base, Inputs{IDMS: []configv1.ImageDigestMirrorSet{idmsOf("a", digestSet(src, "", m2, m1)), idmsOf("b", digestSet(src, "", m1, m2))}},
			[]sysregistriesv2.Registry{reg(src, mirror(m1, "digest-only"), mirror(m2, "digest-only"))}},
		{"the source among its mirrors stays where it is", base, Inputs{IDMS: []configv1.ImageDigestMirrorSet{idmsOf("a", digestSet(src, "", m1, src, m2))}},
			[]sysregistriesv2.Registry{reg(src, mirror(m1, "digest-only"), mirror(src, "digest-only"), mirror(m2, "digest-only"))}},
		{"only the source: no mirror set", base, Inputs{IDMS: []configv1.ImageDigestMirrorSet{idmsOf("a", digestSet(src, "", src))}}, nil},
		{"never contact the source", base, Inputs{IDMS: []configv1.ImageDigestMirrorSet{idmsOf("a", digestSet(src, configv1.NeverContactSource, m1))}},
			[]sysregistriesv2.Registry{func() sysregistriesv2.Registry { r := reg(src, mirror(m1, "digest-only")); r.Blocked = true; return r }()}},
		{"digest then tag mirrors", base, Inputs{
			IDMS: []configv1.ImageDigestMirrorSet{idmsOf("a", digestSet(src, "", m1))},
			ITMS: []configv1.ImageTagMirrorSet{itmsOf("t", configv1.ImageTagMirrors{Source: src, Mirrors: []configv1.ImageMirror{m2}})},
		}, []sysregistriesv2.Registry{reg(src, mirror(m1, "digest-only"), mirror(m2, "tag-only"))}},
		{"a mirror of digests and tags: once for each, digests first", base, Inputs{
			IDMS: []configv1.ImageDigestMirrorSet{idmsOf("a", digestSet(src, "", m1, m2))},
			ITMS: []configv1.ImageTagMirrorSet{itmsOf("t", configv1.ImageTagMirrors{Source: src, Mirrors: []configv1.ImageMirror{m1}})},
		}, []sysregistriesv2.Registry{reg(src, mirror(m1, "digest-only"), mirror(m2, "digest-only"), mirror(m1, "tag-only"))}},
		{"the base's entry for the source: mirrors appended", withSrc, Inputs{IDMS: []configv1.ImageDigestMirrorSet{idmsOf("a", digestSet(src, "", m1))}},
			[]sysregistriesv2.Registry{reg(src, mirror("m0.example.com/x", ""), mirror(m1, "digest-only"))}},
		{"new entries after the base's, digest sources by name, then tag sources", withSub, Inputs{
			IDMS: []configv1.ImageDigestMirrorSet{idmsOf("a", digestSet("quay.io/z", "", m1), digestSet("quay.io/b", "", m1))},
			ITMS: []configv1.ImageTagMirrorSet{itmsOf("t", configv1.ImageTagMirrors{Source: "quay.io/a", Mirrors: []configv1.ImageMirror{m2}})},
		}, []sysregistriesv2.Registry{reg(src + "/sub"), reg("quay.io/b", mirror(m1, "digest-only")), reg("quay.io/z", mirror(m1, "digest-only")), reg("quay.io/a", mirror(m2, "tag-only"))}},
		{"a wildcard source is a prefix", base, Inputs{ICSP: []operatorv1alpha1.ImageContentSourcePolicy{{ObjectMeta: metav1.ObjectMeta{Name: "i"},
			Spec: operatorv1alpha1.ImageContentSourcePolicySpec{RepositoryDigestMirrors: []operatorv1alpha1.RepositoryDigestMirrors{{Source: "*.example.org", Mirrors: []string{"mirror.example.com/org"}}}}}}},
			[]sysregistriesv2.Registry{{Prefix: "*.example.org", Mirrors: []sysregistriesv2.Endpoint{mirror("mirror.example.com/org", "digest-only")}}}},
		{"an ICSP is a digest set", base, Inputs{ICSP: []operatorv1alpha1.ImageContentSourcePolicy{{ObjectMeta: metav1.ObjectMeta{Name: "i"},
			Spec: operatorv1alpha1.ImageContentSourcePolicySpec{RepositoryDigestMirrors: []operatorv1alpha1.RepositoryDigestMirrors{{Source: src, Mirrors: []string{m1}}}}}}},
			[]sysregistriesv2.Registry{reg(src, mirror(m1, "digest-only"))}},
		{"a registry inside the mirrored scope gets its mirrors", withSub, Inputs{IDMS: []configv1.ImageDigestMirrorSet{idmsOf("a", digestSet(src, "", m1))}},
			[]sysregistriesv2.Registry{reg(src+"/sub", mirror(m1+"/sub", "digest-only")), reg(src, mirror(m1, "digest-only"))}},
		{"insecure marks the scope, what is inside it and its mirrors", base, Inputs{
			IDMS:     []configv1.ImageDigestMirrorSet{idmsOf("a", digestSet(src, "", "m1.example.com/x"))},
			Insecure: []string{"m1.example.com"},
		}, []sysregistriesv2.Registry{
			reg(src, sysregistriesv2.Endpoint{Location: m1, PullFromMirror: "digest-only", Insecure: true}),
			{Endpoint: sysregistriesv2.Endpoint{Location: "m1.example.com", Insecure: true}},
		}},
		{"blocked marks the scope and what is inside it", base, Inputs{
			IDMS:    []configv1.ImageDigestMirrorSet{idmsOf("a", digestSet(src, "", m1))},
			Blocked: []string{"quay.io"},
		}, []sysregistriesv2.Registry{
			func() sysregistriesv2.Registry { r := reg(src, mirror(m1, "digest-only")); r.Blocked = true; return r }(),
			{Endpoint: sysregistriesv2.Endpoint{Location: "quay.io"}, Blocked: true},
		}},
		{"a wildcard is a prefix", base, Inputs{Blocked: []string{"*.example.com"}},
			[]sysregistriesv2.Registry{{Prefix: "*.example.com", Blocked: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := Render([]byte(tc.base), tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Parse(data); err != nil {
				t.Errorf("CRI-O would not load it: %v\n%s", err, data)
			}
			conf := &sysregistriesv2.V2RegistriesConf{}
			if _, err := toml.Decode(string(data), conf); err != nil {
				t.Fatalf("%v\n%s", err, data)
			}
			if d := cmp.Diff(tc.want, conf.Registries); d != "" {
				t.Errorf("registries (-want +got):\n%s", d)
			}
			if !cmp.Equal(conf.UnqualifiedSearchRegistries, []string{"registry.access.redhat.com", "docker.io"}) {
				t.Errorf("the base's search list is not kept: %q", conf.UnqualifiedSearchRegistries)
			}
		})
	}
}

// Validate names every bad entry and source, each by object and field:
// what the MCO refuses, and nothing is rendered.
func TestValidate(t *testing.T) {
	icsp := func(name, source string, mirrors ...string) operatorv1alpha1.ImageContentSourcePolicy {
		return operatorv1alpha1.ImageContentSourcePolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: operatorv1alpha1.ImageContentSourcePolicySpec{
			RepositoryDigestMirrors: []operatorv1alpha1.RepositoryDigestMirrors{{Source: source, Mirrors: mirrors}}}}
	}
	for _, tc := range []struct {
		name string
		in   Inputs
		want []string // one per error, in order
	}{
		{"a bad source", Inputs{IDMS: []configv1.ImageDigestMirrorSet{idmsOf("bad", digestSet("Quay.io/X", "", "m.example.com"))}},
			[]string{`ImageDigestMirrorSet "bad" spec.imageDigestMirrors[0].source: invalid source "Quay.io/X"`}},
		{"a scheme, a digest, a trailing slash", Inputs{IDMS: []configv1.ImageDigestMirrorSet{
			idmsOf("scheme", digestSet("https://quay.io/x", "", "m.example.com/x")),
			idmsOf("digest", digestSet("quay.io/x", "", "m.example.com/x@sha256:abc")),
			idmsOf("slash", digestSet("quay.io/y", "", "m.example.com/a", "m.example.com/y/")),
		}}, []string{
			`ImageDigestMirrorSet "scheme" spec.imageDigestMirrors[0].source: invalid source "https://quay.io/x"`,
			`ImageDigestMirrorSet "digest" spec.imageDigestMirrors[0].mirrors[0]: invalid mirror "m.example.com/x@sha256:abc"`,
			`ImageDigestMirrorSet "slash" spec.imageDigestMirrors[0].mirrors[1]: invalid mirror "m.example.com/y/"`,
		}},
		{"two policies for one source, across kinds", Inputs{
			ICSP: []operatorv1alpha1.ImageContentSourcePolicy{icsp("i", "quay.io/x", "m.example.com/x")},
			ITMS: []configv1.ImageTagMirrorSet{itmsOf("t", configv1.ImageTagMirrors{Source: "quay.io/x", Mirrors: []configv1.ImageMirror{"n.example.com/x"}, MirrorSourcePolicy: configv1.NeverContactSource})},
		}, []string{`ImageTagMirrorSet "t" spec.imageTagMirrors[0]: mirrorSourcePolicy NeverContactSource for source "quay.io/x" conflicts with AllowContactingSource of ImageContentSourcePolicy "i" spec.repositoryDigestMirrors[0]`}},
		{"never contact with the source a mirror", Inputs{IDMS: []configv1.ImageDigestMirrorSet{idmsOf("a", digestSet("quay.io/x", configv1.NeverContactSource, "m.example.com/x", "quay.io/x"))}},
			[]string{`ImageDigestMirrorSet "a" spec.imageDigestMirrors[0].mirrors[1]: "quay.io/x" is the source itself, which mirrorSourcePolicy NeverContactSource never contacts`}},
		{"registry sources", Inputs{Insecure: []string{"ok.example.com", "*example.com"}, Blocked: []string{"*.example.com/x"}, Allowed: []string{"a.example.com"}}, []string{
			`image.config.openshift.io cluster spec.registrySources.insecureRegistries[1]: invalid scope "*example.com"`,
			`image.config.openshift.io cluster spec.registrySources.blockedRegistries[0]: invalid scope "*.example.com/x"`,
			`image.config.openshift.io cluster spec.registrySources: only one of allowedRegistries or blockedRegistries may be set`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(tc.in)
			invalid, ok := err.(*InvalidError)
			if !ok {
				t.Fatalf("error %v, want an *InvalidError", err)
			}
			if len(invalid.Errs) != len(tc.want) {
				t.Fatalf("%d errors, want %d: %v", len(invalid.Errs), len(tc.want), err)
			}
			for i, want := range tc.want {
				if got := invalid.Errs[i].Error(); !strings.HasPrefix(got, want) {
					t.Errorf("error %d: %q, want %q", i, got, want)
				}
			}
			if data, err := Render([]byte(mcoBase), tc.in); data != nil || err == nil || err.Error() != invalid.Error() {
				t.Errorf("Render of what Validate refuses: %q, %v", data, err)
			}
		})
	}
	ok := Inputs{
		IDMS:     []configv1.ImageDigestMirrorSet{idmsOf("a", digestSet("quay.io/x", "", "quay.io/x", "m.example.com/x"))},
		ICSP:     []operatorv1alpha1.ImageContentSourcePolicy{icsp("i", "*.example.org", "m.example.com/org")},
		Insecure: []string{"*.example.com", "quay.io/x"},
	}
	if err := Validate(ok); err != nil {
		t.Errorf("valid inputs refused: %v", err)
	}
}
