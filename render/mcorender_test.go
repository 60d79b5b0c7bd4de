package render_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	igntypes "github.com/coreos/ignition/v2/config/v3_5/types"
	"github.com/google/go-cmp/cmp"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/internal/testkit/builder"
	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/render"
)

// renders is Merge and MergeMCO, for the facts both must hold.
var renders = map[string]func(string, []render.Source) (*render.Rendered, error){
	"Merge": render.Merge,
	"MergeMCO": func(pool string, srcs []render.Source) (*render.Rendered, error) {
		return render.MergeMCO(pool, srcs, render.MCOBase{OSImageURL: "quay.io/base/os@sha256:0"})
	},
}

// fileOf is the merged file at path, and its contents as a node reads them.
func fileOf(t *testing.T, r *render.Rendered, path string) (igntypes.File, string, error) {
	t.Helper()
	cfg := parse(t, r)
	for _, f := range cfg.Ignition.Storage.Files {
		if f.Path == path {
			data, err := machineconfig.FileContents(cfg, &f)
			return f, string(data), err
		}
	}
	t.Fatalf("%s: no file %s", r.Name, path)
	return igntypes.File{}, "", nil
}

// A file's compression goes with its contents: a later MachineConfig's
// file without compression clears an earlier gzip one, which Ignition's
// field-by-field merge alone would keep (MCO helpers.go, compression
// defaulting around each merge).
func TestMergeCompressionGoesWithContents(t *testing.T) {
	gz := func(name, contents string) render.Source {
		return role(name, "worker", builder.Ignition().WithFiles(builder.FileGzip("/etc/x.conf", contents)), mcfgv1.MachineConfigSpec{})
	}
	plain := func(name, contents string) render.Source {
		return role(name, "worker", builder.Ignition().WithFiles(builder.File("/etc/x.conf", contents)), mcfgv1.MachineConfigSpec{})
	}
	other := role("30-other", "worker", builder.Ignition().WithFiles(builder.File("/etc/other", "o")), mcfgv1.MachineConfigSpec{})
	modeOnly := role("40-mode", "worker", builder.Ignition().WithFiles(builder.Entry{"path": "/etc/x.conf", "mode": 384}), mcfgv1.MachineConfigSpec{})
	cases := []struct {
		name        string
		sources     []render.Source
		compression string // "" for none
		contents    string // as a node decodes them; "" when it cannot
	}{
		{"gzip then plain: plain, uncompressed", []render.Source{gz("10-gz", "old\n"), plain("20-plain", "new\n")}, "", "new\n"},
		{"plain then gzip: gzip", []render.Source{plain("10-plain", "old\n"), gz("20-gz", "new\n")}, "gzip", "new\n"},
		{"gzip then another file: gzip kept", []render.Source{gz("10-gz", "old\n"), other}, "gzip", "old\n"},
		{"gzip alone: gzip", []render.Source{gz("10-gz", "only\n")}, "gzip", "only\n"},
		{"gzip then gzip: the later", []render.Source{gz("10-gz", "old\n"), gz("20-gz", "new\n")}, "gzip", "new\n"},
		// The MCO's rule cuts both ways: a later entry that changes only
		// the mode clears the compression and keeps the gzip contents, so
		// the rendered file is the compressed bytes (the MCO writes them so).
		{"gzip then a mode-only entry: compression cleared, contents kept", []render.Source{gz("10-gz", "old\n"), modeOnly}, "", ""},
	}
	for name, merge := range renders {
		for _, tc := range cases {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				r, err := merge("worker", tc.sources)
				if err != nil {
					t.Fatal(err)
				}
				f, contents, err := fileOf(t, r, "/etc/x.conf")
				if got := deref(f.Contents.Compression); got != tc.compression || (f.Contents.Compression != nil && *f.Contents.Compression == "") {
					t.Errorf("compression %q (set: %t), want %q (none: unset)", deref(f.Contents.Compression), f.Contents.Compression != nil, tc.compression)
				}
				if tc.contents == "" {
					return
				}
				if err != nil || contents != tc.contents {
					t.Errorf("a node reads %q (%v), want %q", contents, err, tc.contents)
				}
			})
		}
	}
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// MergeMCO's images: the ControllerConfig's unless a MachineConfig no MCO
// controller generated sets them; the last such one wins.
func TestMergeMCOImages(t *testing.T) {
	base := render.MCOBase{OSImageURL: "quay.io/cc/os@sha256:0", BaseOSExtensionsContainerImage: "quay.io/cc/ext@sha256:0"}
	src := func(name string, generated bool, os, ext string) render.Source {
		s := role(name, "worker", builder.Ignition(), mcfgv1.MachineConfigSpec{OSImageURL: os, BaseOSExtensionsContainerImage: ext})
		s.Generated = generated
		return s
	}
	cases := []struct {
		name    string
		sources []render.Source
		os, ext string
	}{
		{"none sets them: the ControllerConfig's", []render.Source{src("00-worker", true, "", "")}, base.OSImageURL, base.BaseOSExtensionsContainerImage},
		{"a generated MachineConfig does not override", []render.Source{src("00-worker", true, "quay.io/tpl/os@sha256:1", "quay.io/tpl/ext@sha256:1")}, base.OSImageURL, base.BaseOSExtensionsContainerImage},
		{"a user MachineConfig overrides", []render.Source{src("00-worker", true, "", ""), src("90-os", false, "quay.io/user/os@sha256:2", "")}, "quay.io/user/os@sha256:2", base.BaseOSExtensionsContainerImage},
		{"the last user MachineConfig wins", []render.Source{src("91-os", false, "quay.io/b@sha256:3", "quay.io/bx@sha256:3"), src("90-os", false, "quay.io/a@sha256:2", "quay.io/ax@sha256:2")}, "quay.io/b@sha256:3", "quay.io/bx@sha256:3"},
		{"a later generated one does not undo a user's", []render.Source{src("90-os", false, "quay.io/a@sha256:2", ""), src("99-worker-generated-x", true, "quay.io/tpl@sha256:1", "")}, "quay.io/a@sha256:2", base.BaseOSExtensionsContainerImage},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := render.MergeMCO("worker", tc.sources, base)
			if err != nil {
				t.Fatal(err)
			}
			if r.Spec.OSImageURL != tc.os || r.Spec.BaseOSExtensionsContainerImage != tc.ext {
				t.Errorf("osImageURL %q, baseOSExtensionsContainerImage %q; want %q, %q", r.Spec.OSImageURL, r.Spec.BaseOSExtensionsContainerImage, tc.os, tc.ext)
			}
		})
	}
}

func TestSourceOfGenerated(t *testing.T) {
	mc := &ndpmcv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: "00-worker", Labels: map[string]string{ndpmcv1.RoleLabel: "worker"},
		Annotations: map[string]string{render.GeneratedByControllerVersionAnnotation: "abc"}}}
	if s := render.SourceOf(mc, nil); !s.Generated || s.Role != "worker" {
		t.Errorf("%+v: want generated, role worker", s)
	}
	mc.Annotations = nil
	if s := render.SourceOf(mc, nil); s.Generated {
		t.Error("a MachineConfig without the annotation is generated")
	}
}

func TestMCOBaseOf(t *testing.T) {
	cc := &mcfgv1.ControllerConfig{Spec: mcfgv1.ControllerConfigSpec{OSImageURL: "quay.io/legacy@sha256:1", BaseOSContainerImage: "quay.io/os@sha256:2", BaseOSExtensionsContainerImage: "quay.io/ext@sha256:3"}}
	want := render.MCOBase{OSImageURL: "quay.io/os@sha256:2", BaseOSExtensionsContainerImage: "quay.io/ext@sha256:3"}
	if got := render.MCOBaseOf(cc); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if got := render.MCOBaseOf(nil); got != (render.MCOBase{}) {
		t.Errorf("nil: got %+v", got)
	}
}

// MergeMCO shares Merge's facts (order, concatenation, FIPS, kernel type,
// kernel-devel) and differs in the encoding: no empty sections.
func TestMergeMCOSpec(t *testing.T) {
	srcs := []render.Source{
		role("99-infra-rt", "infra", builder.Ignition(), mcfgv1.MachineConfigSpec{KernelType: "realtime", KernelArguments: []string{"c"}}),
		role("50-worker-b", "worker", builder.Ignition().WithFile("/etc/a", "b"), mcfgv1.MachineConfigSpec{KernelArguments: []string{"b"}, Extensions: []string{"usbguard"}, FIPS: true}),
		role("10-worker-a", "worker", builder.Ignition().WithFile("/etc/a", "a"), mcfgv1.MachineConfigSpec{KernelArguments: []string{"a"}}),
	}
	r, err := render.MergeMCO("infra", srcs, render.MCOBase{OSImageURL: "quay.io/os@sha256:0"})
	if err != nil {
		t.Fatal(err)
	}
	want := mcfgv1.MachineConfigSpec{OSImageURL: "quay.io/os@sha256:0", KernelArguments: []string{"a", "b", "c"}, Extensions: []string{"usbguard"}, FIPS: true, KernelType: "realtime"}
	got := r.Spec
	got.Config.Raw = nil
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("spec (-want +got):\n%s", d)
	}
	if raw := string(r.Spec.Config.Raw); strings.Contains(raw, `"systemd":{}`) || strings.Contains(raw, `"kernelArguments":{}`) {
		t.Errorf("empty sections encoded: %s", raw)
	}
	if _, contents, err := fileOf(t, r, "/etc/a"); err != nil || contents != "b" {
		t.Errorf("/etc/a reads %q (%v), want the later worker config's", contents, err)
	}
	if !strings.HasPrefix(r.Name, "rendered-infra-") || len(strings.TrimPrefix(r.Name, "rendered-infra-")) != 32 {
		t.Errorf("name %s, want rendered-infra-<32 hex digits>", r.Name)
	}
	srcs = append(srcs, role("98-infra-devel", "infra", builder.Ignition(), mcfgv1.MachineConfigSpec{Extensions: []string{"kernel-devel"}}))
	if _, err := render.MergeMCO("infra", srcs, render.MCOBase{}); err == nil || !strings.Contains(err.Error(), "kernel-devel") {
		t.Errorf("kernel-devel with realtime: %v", err)
	}
	// Extensions are checked only beside an Ignition config, as the MCO
	// does; Merge checks them always.
	bare := render.Source{Name: "50-bare", Role: "worker", Spec: mcfgv1.MachineConfigSpec{Extensions: []string{"not-an-extension"}}}
	if r, err := render.MergeMCO("worker", []render.Source{bare}, render.MCOBase{}); err != nil || !cmp.Equal(r.Spec.Extensions, []string{"not-an-extension"}) {
		t.Errorf("an unsupported extension without a config: %v", err)
	}
	if _, err := render.Merge("worker", []render.Source{bare}); err == nil {
		t.Error("Merge: an unsupported extension without a config is accepted")
	}
	bare.Spec.Config = runtime.RawExtension{Raw: builder.Ignition().JSON()}
	if _, err := render.MergeMCO("worker", []render.Source{bare}, render.MCOBase{}); err == nil || !strings.Contains(err.Error(), "spec.extensions[0]") {
		t.Errorf("an unsupported extension beside a config: %v", err)
	}
	empty := render.Source{Name: "50-empty", Role: "worker", Spec: mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: []byte("{}")}}}
	if _, err := render.MergeMCO("worker", []render.Source{empty}, render.MCOBase{}); err == nil || !strings.Contains(err.Error(), `MachineConfig "50-empty": spec.config.ignition.version`) {
		t.Errorf("an empty Ignition config: %v", err)
	}
	if _, err := render.MergeMCO("infra", nil, render.MCOBase{}); err == nil {
		t.Error("no sources: no error")
	}
}

// realConfigs is the directory of real clusters' MachineConfigs
// (mco-ref/realconfigs); the test skips without it.
func realConfigs(t *testing.T) string {
	if d := testkit.MCORef(); d != "" {
		if _, err := os.Stat(filepath.Join(d, "realconfigs")); err == nil {
			return filepath.Join(d, "realconfigs")
		}
	}
	t.Skip("the MCO reference configs (mco-ref/realconfigs) are absent")
	return ""
}

// MergeMCO over a real 4.20 cluster's source MachineConfigs gives the spec
// its MCO rendered for each pool (the images taken from that rendered
// config, as its ControllerConfig is not in the capture). The capture's SSH
// key is blanked in the sources and the rendered configs alike, so the
// specs compare but the names cannot. The 4.16 to 4.18 captures were
// rendered by MCOs that still left an empty compression ("") in place, so
// only this one is compared.
func TestMergeMCOOfARealCluster(t *testing.T) {
	dir := filepath.Join(realConfigs(t), "ocpbugs-60768")
	paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no MachineConfigs in %s (%v)", dir, err)
	}
	byPool := map[string][]render.Source{}
	rendered := map[string]*machineconfig.Config{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := machineconfig.Parse(p, data)
		if err != nil {
			t.Fatal(err)
		}
		var mc ndpmcv1.MachineConfig
		if err := yaml.Unmarshal(data, &mc); err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(mc.Name, "rendered-") {
			rendered[mc.Name] = cfg
			continue
		}
		src := render.SourceOf(&mc, cfg)
		byPool[src.Role] = append(byPool[src.Role], src)
	}
	// The configs each pool runs after the upgrade the capture ends with.
	for pool, name := range map[string]string{"worker": "rendered-worker-2b807ab49e9d8a7040a5bcc4085e31c1", "master": "rendered-master-505a1e08a37430cbe1ee421928f810ec"} {
		want := rendered[name]
		if want == nil {
			t.Fatalf("%s: no %s", dir, name)
		}
		got, err := render.MergeMCO(pool, byPool[pool], render.MCOBase{OSImageURL: want.Spec.OSImageURL, BaseOSExtensionsContainerImage: want.Spec.BaseOSExtensionsContainerImage})
		if err != nil {
			t.Fatal(err)
		}
		gotCfg := parse(t, got)
		if d := cmp.Diff(want.Ignition, gotCfg.Ignition); d != "" {
			t.Errorf("%s from %d sources: Ignition config (-MCO +MergeMCO):\n%s", name, len(byPool[pool]), d)
		}
		ws, gs := want.Spec, got.Spec
		ws.Config.Raw, gs.Config.Raw = nil, nil
		if d := cmp.Diff(ws, gs); d != "" {
			t.Errorf("%s: spec (-MCO +MergeMCO):\n%s", name, d)
		}
	}
}

// The MCO's name of a rendered config is the hash of its spec: MCOName
// gives the names real clusters' render controllers gave (4.16 to 4.20,
// ../shared/mco-ref/realconfigs).
func TestMCONameOfRealRenderedConfigs(t *testing.T) {
	dir := realConfigs(t)
	paths, err := filepath.Glob(filepath.Join(dir, "*", "rendered-*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no rendered configs in %s (%v)", dir, err)
	}
	reproduced := 0
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), "XXXXXXXXXXXXXXXX") {
			continue // captured with its SSH key blanked out: no longer the spec its name hashes
		}
		cfg, err := machineconfig.Parse(p, data)
		if err != nil {
			t.Fatal(err)
		}
		pool := strings.TrimPrefix(cfg.Name, "rendered-")
		pool = pool[:strings.LastIndex(pool, "-")]
		got, err := render.MCOName(pool, cfg.Spec)
		if err != nil || got != cfg.Name {
			t.Errorf("%s: MCOName %s (%v), want %s", p, got, err, cfg.Name)
			continue
		}
		reproduced++
	}
	if reproduced < 16 {
		t.Errorf("%d real rendered names reproduced, want the 16 not redacted", reproduced)
	}
	t.Logf("%d of %d real rendered names reproduced (the others were redacted when captured)", reproduced, len(paths))
}
