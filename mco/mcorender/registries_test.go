package mcorender

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/google/go-cmp/cmp"
	configv1 "github.com/openshift/api/config/v1"
	"go.podman.io/image/v5/pkg/sysregistriesv2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ndp-dev/ndp/nodeconfig"
	"github.com/ndp-dev/ndp/registries"
)

const basePolicy = `{"default":[{"type":"insecureAcceptAnything"}],"transports":{"docker-daemon":{"":[{"type":"insecureAcceptAnything"}]}}}`

// The files of the generated registries MachineConfig beside
// registries.conf (whose contents registries.TestRender checks).
func TestRegistriesFiles(t *testing.T) {
	base := []byte("unqualified-search-registries = [\"registry.access.redhat.com\"]\n")
	paths := func(fs []nodeconfig.File) []string {
		var out []string
		for _, f := range fs {
			out = append(out, f.Path)
		}
		return out
	}
	file := func(t *testing.T, fs []nodeconfig.File, path string) string {
		t.Helper()
		for _, f := range fs {
			if f.Path == path {
				return string(f.Data)
			}
		}
		t.Fatalf("no %s in %q", path, paths(fs))
		return ""
	}
	// files renders in and checks which files it writes.
	files := func(t *testing.T, in registries.Inputs, want ...string) []nodeconfig.File {
		t.Helper()
		fs, err := registriesFiles(base, []byte(basePolicy), in)
		if err != nil {
			t.Fatal(err)
		}
		if got := paths(fs); !cmp.Equal(got, want) {
			t.Errorf("files %q, want %q", got, want)
		}
		return fs
	}
	t.Run("nothing set: no file, the template's stay", func(t *testing.T) {
		files(t, registries.Inputs{})
	})
	t.Run("a mirror set: registries.conf alone", func(t *testing.T) {
		idms := configv1.ImageDigestMirrorSet{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: configv1.ImageDigestMirrorSetSpec{ImageDigestMirrors: []configv1.ImageDigestMirrors{
			{Source: "quay.io/x", Mirrors: []configv1.ImageMirror{"m.example.com/x"}}}}}
		in := registries.Inputs{IDMS: []configv1.ImageDigestMirrorSet{idms}}
		fs := files(t, in, registries.ConfPath)
		want, err := registries.Render(base, in)
		if err != nil {
			t.Fatal(err)
		}
		if got := file(t, fs, registries.ConfPath); got != string(want) {
			t.Errorf("registries.conf %q, want registries.Render's %q", got, want)
		}
	})
	t.Run("search registries: the drop-in alone", func(t *testing.T) {
		fs := files(t, registries.Inputs{Search: []string{"registry.example.com"}}, SearchRegistriesPath)
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
		fs := files(t, registries.Inputs{Blocked: []string{"blocked.example.com", "quay.io/a/b/c"}}, registries.ConfPath, PolicyPath)
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
		fs := files(t, registries.Inputs{Allowed: []string{"quay.io"}}, PolicyPath)
		p := decode(t, file(t, fs, PolicyPath))
		if !cmp.Equal(p.Default, reject) || !cmp.Equal(p.Transports["docker"]["quay.io"], accept) {
			t.Errorf("policy.json %+v", p)
		}
	})
	t.Run("refused without registries.conf to write: registries.Validate", func(t *testing.T) {
		_, err := registriesFiles(base, []byte(basePolicy), registries.Inputs{Allowed: []string{"*example.com"}})
		var invalid *registries.InvalidError
		if !errors.As(err, &invalid) {
			t.Errorf("error %v, want a *registries.InvalidError", err)
		}
	})
	if _, err := registriesFiles(nil, []byte(basePolicy), registries.Inputs{Blocked: []string{"b.example.com"}}); err == nil || !strings.Contains(err.Error(), "no "+registries.ConfPath) {
		t.Errorf("no template registries.conf: %v", err)
	}
}

// A refusal of RegistriesIgnition is an *InvalidRegistriesError, and
// registries.Validate's names each object through it.
func TestRegistriesIgnitionRefuses(t *testing.T) {
	_, err := RegistriesIgnition("worker", nil, registries.Inputs{Blocked: []string{"b.example.com"}, Allowed: []string{"a.example.com"}})
	var refused *InvalidRegistriesError
	var invalid *registries.InvalidError
	if !errors.As(err, &refused) || !errors.As(err, &invalid) || !strings.Contains(err.Error(), "image.config.openshift.io cluster spec.registrySources: only one of") {
		t.Errorf("error %v", err)
	}
}
