package registries

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/google/go-cmp/cmp"
	configv1 "github.com/openshift/api/config/v1"
	operatorv1alpha1 "github.com/openshift/api/operator/v1alpha1"
	"go.podman.io/image/v5/pkg/sysregistriesv2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const mcoBasePolicy = `{"default":[{"type":"insecureAcceptAnything"}],"transports":{"docker-daemon":{"":[{"type":"insecureAcceptAnything"}]}}}`

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

func TestRenderMCORegistries(t *testing.T) {
	base := "unqualified-search-registries = [\"registry.access.redhat.com\", \"docker.io\"]\nshort-name-mode = \"\"\n"
	withSub := base + "\n[[registry]]\n  location = \"quay.io/src/sub\"\n"
	const src, m1, m2, m3 = "quay.io/src", "m1.example.com/x", "m2.example.com/x", "m3.example.com/x"
	for _, tc := range []struct {
		name string
		base string
		in   MCOInputs
		want []sysregistriesv2.Registry
	}{
		{"one digest set", base, MCOInputs{IDMS: []configv1.ImageDigestMirrorSet{idmsOf("a", digestSet(src, "", m1, m2))}},
			[]sysregistriesv2.Registry{reg(src, mirror(m1, "digest-only"), mirror(m2, "digest-only"))}},
		{"chains merged in order", base, MCOInputs{IDMS: []configv1.ImageDigestMirrorSet{idmsOf("b", digestSet(src, "", m2, m3)), idmsOf("a", digestSet(src, "", m1, m2))}},
			[]sysregistriesv2.Registry{reg(src, mirror(m1, "digest-only"), mirror(m2, "digest-only"), mirror(m3, "digest-only"))}},
		{"unordered mirrors by name", base, MCOInputs{IDMS: []configv1.ImageDigestMirrorSet{idmsOf("a", digestSet(src, "", m2)), idmsOf("b", digestSet(src, "", m1))}},
			[]sysregistriesv2.Registry{reg(src, mirror(m1, "digest-only"), mirror(m2, "digest-only"))}},
		{"a cycle broken at the smallest name", base, MCOInputs{IDMS: []configv1.ImageDigestMirrorSet{idmsOf("a", digestSet(src, "", m2, m1)), idmsOf("b", digestSet(src, "", m1, m2))}},
			[]sysregistriesv2.Registry{reg(src, mirror(m1, "digest-only"), mirror(m2, "digest-only"))}},
		{"the source among its mirrors stays where it is", base, MCOInputs{IDMS: []configv1.ImageDigestMirrorSet{idmsOf("a", digestSet(src, "", m1, src, m2))}},
			[]sysregistriesv2.Registry{reg(src, mirror(m1, "digest-only"), mirror(src, "digest-only"), mirror(m2, "digest-only"))}},
		{"only the source: no mirror set", base, MCOInputs{IDMS: []configv1.ImageDigestMirrorSet{idmsOf("a", digestSet(src, "", src))}}, nil},
		{"never contact the source", base, MCOInputs{IDMS: []configv1.ImageDigestMirrorSet{idmsOf("a", digestSet(src, configv1.NeverContactSource, m1))}},
			[]sysregistriesv2.Registry{func() sysregistriesv2.Registry { r := reg(src, mirror(m1, "digest-only")); r.Blocked = true; return r }()}},
		{"digest then tag mirrors", base, MCOInputs{
			IDMS: []configv1.ImageDigestMirrorSet{idmsOf("a", digestSet(src, "", m1))},
			ITMS: []configv1.ImageTagMirrorSet{itmsOf("t", configv1.ImageTagMirrors{Source: src, Mirrors: []configv1.ImageMirror{m2}})},
		}, []sysregistriesv2.Registry{reg(src, mirror(m1, "digest-only"), mirror(m2, "tag-only"))}},
		{"an ICSP is a digest set", base, MCOInputs{ICSP: []operatorv1alpha1.ImageContentSourcePolicy{{ObjectMeta: metav1.ObjectMeta{Name: "i"},
			Spec: operatorv1alpha1.ImageContentSourcePolicySpec{RepositoryDigestMirrors: []operatorv1alpha1.RepositoryDigestMirrors{{Source: src, Mirrors: []string{m1}}}}}}},
			[]sysregistriesv2.Registry{reg(src, mirror(m1, "digest-only"))}},
		{"a registry inside the mirrored scope gets its mirrors", withSub, MCOInputs{IDMS: []configv1.ImageDigestMirrorSet{idmsOf("a", digestSet(src, "", m1))}},
			[]sysregistriesv2.Registry{reg(src+"/sub", mirror(m1+"/sub", "digest-only")), reg(src, mirror(m1, "digest-only"))}},
		{"insecure marks the scope, what is inside it and its mirrors", base, MCOInputs{
			IDMS:     []configv1.ImageDigestMirrorSet{idmsOf("a", digestSet(src, "", "m1.example.com/x"))},
			Insecure: []string{"m1.example.com"},
		}, []sysregistriesv2.Registry{
			reg(src, sysregistriesv2.Endpoint{Location: m1, PullFromMirror: "digest-only", Insecure: true}),
			{Endpoint: sysregistriesv2.Endpoint{Location: "m1.example.com", Insecure: true}},
		}},
		{"blocked marks the scope and what is inside it", base, MCOInputs{
			IDMS:    []configv1.ImageDigestMirrorSet{idmsOf("a", digestSet(src, "", m1))},
			Blocked: []string{"quay.io"},
		}, []sysregistriesv2.Registry{
			func() sysregistriesv2.Registry { r := reg(src, mirror(m1, "digest-only")); r.Blocked = true; return r }(),
			{Endpoint: sysregistriesv2.Endpoint{Location: "quay.io"}, Blocked: true},
		}},
		{"a wildcard is a prefix", base, MCOInputs{Blocked: []string{"*.example.com"}},
			[]sysregistriesv2.Registry{{Prefix: "*.example.com", Blocked: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files, err := RenderMCO([]byte(tc.base), []byte(mcoBasePolicy), tc.in)
			if err != nil {
				t.Fatal(err)
			}
			var conf *sysregistriesv2.V2RegistriesConf
			for _, f := range files {
				if f.Path == ConfPath {
					conf = &sysregistriesv2.V2RegistriesConf{}
					if _, err := toml.Decode(string(f.Data), conf); err != nil {
						t.Fatalf("%s: %v\n%s", ConfPath, err, f.Data)
					}
				}
			}
			if conf == nil {
				t.Fatalf("no %s among %d files", ConfPath, len(files))
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

func TestRenderMCOFiles(t *testing.T) {
	base := []byte("unqualified-search-registries = [\"registry.access.redhat.com\"]\n")
	paths := func(fs []MCOFile) []string {
		var out []string
		for _, f := range fs {
			out = append(out, f.Path)
		}
		return out
	}
	file := func(t *testing.T, fs []MCOFile, path string) string {
		t.Helper()
		for _, f := range fs {
			if f.Path == path {
				return string(f.Data)
			}
		}
		t.Fatalf("no %s in %q", path, paths(fs))
		return ""
	}
	t.Run("nothing set: no file, the template's stay", func(t *testing.T) {
		fs, err := RenderMCO(base, []byte(mcoBasePolicy), MCOInputs{})
		if err != nil || len(fs) != 0 {
			t.Errorf("files %q, error %v", paths(fs), err)
		}
	})
	t.Run("search registries: the drop-in alone", func(t *testing.T) {
		fs, err := RenderMCO(base, []byte(mcoBasePolicy), MCOInputs{Search: []string{"registry.example.com"}})
		if err != nil {
			t.Fatal(err)
		}
		if got := paths(fs); !cmp.Equal(got, []string{SearchRegistriesPath}) {
			t.Errorf("files %q", got)
		}
		var conf sysregistriesv2.V2RegistriesConf
		if _, err := toml.Decode(file(t, fs, SearchRegistriesPath), &conf); err != nil || !cmp.Equal(conf.UnqualifiedSearchRegistries, []string{"registry.example.com"}) {
			t.Errorf("drop-in %q (%v)", file(t, fs, SearchRegistriesPath), err)
		}
	})
	type policyDoc struct {
		Default    []map[string]string                       `json:"default"`
		Transports map[string]map[string][]map[string]string `json:"transports"`
	}
	decode := func(t *testing.T, s string) policyDoc {
		t.Helper()
		var p policyDoc
		if err := json.Unmarshal([]byte(s), &p); err != nil {
			t.Fatalf("policy.json %q: %v", s, err)
		}
		return p
	}
	reject := []map[string]string{{"type": "reject"}}
	accept := []map[string]string{{"type": "insecureAcceptAnything"}}
	t.Run("blocked: registries.conf and policy.json", func(t *testing.T) {
		fs, err := RenderMCO(base, []byte(mcoBasePolicy), MCOInputs{Blocked: []string{"blocked.example.com", "quay.io/a/b/c"}})
		if err != nil {
			t.Fatal(err)
		}
		if got := paths(fs); !cmp.Equal(got, []string{ConfPath, PolicyPath}) {
			t.Errorf("files %q", got)
		}
		p := decode(t, file(t, fs, PolicyPath))
		want := policyDoc{Default: accept, Transports: map[string]map[string][]map[string]string{
			"docker":        {"blocked.example.com": reject, "quay.io/a/b/c": reject},
			"atomic":        {"blocked.example.com": reject},
			"docker-daemon": {"": accept},
		}}
		if d := cmp.Diff(want, p); d != "" {
			t.Errorf("policy.json (-want +got):\n%s", d)
		}
	})
	t.Run("allowed: policy.json alone", func(t *testing.T) {
		fs, err := RenderMCO(base, []byte(mcoBasePolicy), MCOInputs{Allowed: []string{"quay.io"}})
		if err != nil {
			t.Fatal(err)
		}
		if got := paths(fs); !cmp.Equal(got, []string{PolicyPath}) {
			t.Errorf("files %q", got)
		}
		p := decode(t, file(t, fs, PolicyPath))
		if !cmp.Equal(p.Default, reject) || !cmp.Equal(p.Transports["docker"]["quay.io"], accept) {
			t.Errorf("policy.json %+v", p)
		}
	})
	for _, tc := range []struct {
		name string
		in   MCOInputs
		want string
	}{
		{"allowed and blocked", MCOInputs{Allowed: []string{"a.example.com"}, Blocked: []string{"b.example.com"}}, "only one of allowedRegistries or blockedRegistries"},
		{"a bad insecure scope", MCOInputs{Insecure: []string{"*example.com"}}, `invalid entry for insecure registries "*example.com"`},
		{"a bad source", MCOInputs{IDMS: []configv1.ImageDigestMirrorSet{idmsOf("bad", digestSet("Quay.io/X", "", "m.example.com"))}}, `ImageDigestMirrorSet "bad" spec.imageDigestMirrors[0]: invalid format for source "Quay.io/X"`},
		{"two policies for one source", MCOInputs{IDMS: []configv1.ImageDigestMirrorSet{
			idmsOf("a", digestSet("quay.io/x", configv1.NeverContactSource, "m.example.com/x")),
			idmsOf("b", digestSet("quay.io/x", "", "n.example.com/x")),
		}}, `ImageDigestMirrorSet "b" spec.imageDigestMirrors[0]: conflicting mirrorSourcePolicy for source "quay.io/x"`},
		{"never contact with the source a mirror", MCOInputs{IDMS: []configv1.ImageDigestMirrorSet{idmsOf("a", digestSet("quay.io/x", configv1.NeverContactSource, "quay.io/x"))}}, "NeverContactSource with the source"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := RenderMCO(base, []byte(mcoBasePolicy), tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := RenderMCO(nil, []byte(mcoBasePolicy), MCOInputs{Blocked: []string{"b.example.com"}}); err == nil || !strings.Contains(err.Error(), "no "+ConfPath) {
		t.Errorf("no template registries.conf: %v", err)
	}
}
