package render_test

import (
	"errors"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/registries"
	"github.com/ndp-dev/ndp/render"
)

// The executor's registries config: registries.Render's registries.conf,
// written even without objects; refused objects or a file CRI-O would not
// load render nothing.
func TestRegistriesConfig(t *testing.T) {
	idms := []configv1.ImageDigestMirrorSet{{ObjectMeta: metav1.ObjectMeta{Name: "release"}, Spec: configv1.ImageDigestMirrorSetSpec{ImageDigestMirrors: []configv1.ImageDigestMirrors{
		{Source: "quay.io/openshift-release-dev/ocp-release", Mirrors: []configv1.ImageMirror{"mirror.example.com/ocp/release"}},
		{Source: "registry.example.com/team/app", Mirrors: []configv1.ImageMirror{"mirror.example.com/team/app"}}}}}}
	itms := []configv1.ImageTagMirrorSet{{ObjectMeta: metav1.ObjectMeta{Name: "tags"}, Spec: configv1.ImageTagMirrorSetSpec{ImageTagMirrors: []configv1.ImageTagMirrors{
		{Source: "registry.example.com/team/app", Mirrors: []configv1.ImageMirror{"mirror.example.com/team/app"}}}}}}
	conf := func(t *testing.T, ign []byte) string {
		t.Helper()
		cfg, err := machineconfig.New("x", mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: ign}})
		if err != nil {
			t.Fatal(err)
		}
		if files := cfg.Ignition.Storage.Files; len(files) != 1 || files[0].Path != registries.ConfPath {
			t.Fatalf("files %+v, want %s alone", files, registries.ConfPath)
		}
		data, err := machineconfig.FileContents(cfg, &cfg.Ignition.Storage.Files[0])
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	for _, tc := range []struct {
		name        string
		idms        []configv1.ImageDigestMirrorSet
		itms        []configv1.ImageTagMirrorSet
		wantEntries int
	}{
		{"no objects: the base", nil, nil, 0},
		{"digest and tag mirrors", idms, itms, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ign, entries, err := render.RegistriesConfig(render.DefaultRegistriesBase, tc.idms, tc.itms, nil)
			if err != nil {
				t.Fatal(err)
			}
			want, err := registries.Render([]byte(render.DefaultRegistriesBase), registries.Inputs{IDMS: tc.idms, ITMS: tc.itms})
			if err != nil {
				t.Fatal(err)
			}
			if got := conf(t, ign); got != string(want) || entries != tc.wantEntries {
				t.Errorf("registries.conf\n%s\nwith %d entries, want registries.Render's\n%s\nwith %d", got, entries, want, tc.wantEntries)
			}
			if !strings.Contains(string(want), `unqualified-search-registries = ["registry.access.redhat.com", "docker.io"]`) {
				t.Errorf("the base's search list is not kept:\n%s", want)
			}
		})
	}

	bad := configv1.ImageDigestMirrorSet{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Spec: configv1.ImageDigestMirrorSetSpec{ImageDigestMirrors: []configv1.ImageDigestMirrors{
		{Source: "quay.io/x", Mirrors: []configv1.ImageMirror{"quay.io/x"}, MirrorSourcePolicy: configv1.NeverContactSource}}}}
	ign, _, err := render.RegistriesConfig(render.DefaultRegistriesBase, append(idms, bad), itms, nil)
	var invalid *registries.InvalidError
	if !errors.As(err, &invalid) || ign != nil || !strings.Contains(err.Error(), `ImageDigestMirrorSet "bad" spec.imageDigestMirrors[0].mirrors[0]: "quay.io/x" is the source itself`) {
		t.Errorf("an invalid object: %s, %v", ign, err)
	}

	// CRI-O refuses pull-from-mirror in a registry with mirror-by-digest-only.
	byDigest := render.DefaultRegistriesBase + "\n[[registry]]\n  location = \"quay.io/openshift-release-dev/ocp-release\"\n  mirror-by-digest-only = true\n"
	if ign, _, err := render.RegistriesConfig(byDigest, idms, nil, nil); err == nil || errors.As(err, &invalid) || !strings.Contains(err.Error(), "rendered over the base") {
		t.Errorf("a rendering CRI-O refuses: %s, %v", ign, err)
	}
}
