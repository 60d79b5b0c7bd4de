package mcorender_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/internal/testkit/builder"
	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/mco/mcorender"
	"github.com/ndp-dev/ndp/render"
)

// source is a MachineConfig of the given role with an Ignition 3.5 config.
func source(name, role string, ign *builder.IgnitionBuilder, spec mcfgv1.MachineConfigSpec) render.Source {
	spec.Config = runtime.RawExtension{Raw: ign.WithVersion("3.5.0").JSON()}
	return render.Source{Name: name, Role: role, Spec: spec}
}

// Merge's images: the ControllerConfig's unless a MachineConfig no MCO
// controller generated sets them; the last such one wins.
func TestMergeImages(t *testing.T) {
	base := mcorender.Base{OSImageURL: "quay.io/cc/os@sha256:0", BaseOSExtensionsContainerImage: "quay.io/cc/ext@sha256:0"}
	src := func(name string, generated bool, os, ext string) render.Source {
		s := source(name, "worker", builder.Ignition(), mcfgv1.MachineConfigSpec{OSImageURL: os, BaseOSExtensionsContainerImage: ext})
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
			r, err := mcorender.Merge("worker", tc.sources, base)
			if err != nil {
				t.Fatal(err)
			}
			if r.Spec.OSImageURL != tc.os || r.Spec.BaseOSExtensionsContainerImage != tc.ext {
				t.Errorf("osImageURL %q, baseOSExtensionsContainerImage %q; want %q, %q", r.Spec.OSImageURL, r.Spec.BaseOSExtensionsContainerImage, tc.os, tc.ext)
			}
		})
	}
}

func TestBaseOf(t *testing.T) {
	cc := &mcfgv1.ControllerConfig{Spec: mcfgv1.ControllerConfigSpec{OSImageURL: "quay.io/legacy@sha256:1", BaseOSContainerImage: "quay.io/os@sha256:2", BaseOSExtensionsContainerImage: "quay.io/ext@sha256:3"}}
	want := mcorender.Base{OSImageURL: "quay.io/os@sha256:2", BaseOSExtensionsContainerImage: "quay.io/ext@sha256:3"}
	if got := mcorender.BaseOf(cc); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if got := mcorender.BaseOf(nil); got != (mcorender.Base{}) {
		t.Errorf("nil: got %+v", got)
	}
}

// Merge shares render.Merge's facts (order, concatenation, FIPS, kernel type,
// kernel-devel) and differs in the encoding: no empty sections.
func TestMergeSpec(t *testing.T) {
	srcs := []render.Source{
		source("99-infra-rt", "infra", builder.Ignition(), mcfgv1.MachineConfigSpec{KernelType: "realtime", KernelArguments: []string{"c"}}),
		source("50-worker-b", "worker", builder.Ignition().WithFile("/etc/a", "b"), mcfgv1.MachineConfigSpec{KernelArguments: []string{"b"}, Extensions: []string{"usbguard"}, FIPS: true}),
		source("10-worker-a", "worker", builder.Ignition().WithFile("/etc/a", "a"), mcfgv1.MachineConfigSpec{KernelArguments: []string{"a"}}),
	}
	r, err := mcorender.Merge("infra", srcs, mcorender.Base{OSImageURL: "quay.io/os@sha256:0"})
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
	if from := r.Sources["file:/etc/a"]; from != "50-worker-b" {
		t.Errorf("/etc/a comes from %q, want the later worker config's", from)
	}
	if !strings.HasPrefix(r.Name, "rendered-infra-") || len(strings.TrimPrefix(r.Name, "rendered-infra-")) != 32 {
		t.Errorf("name %s, want rendered-infra-<32 hex digits>", r.Name)
	}
	srcs = append(srcs, source("98-infra-devel", "infra", builder.Ignition(), mcfgv1.MachineConfigSpec{Extensions: []string{"kernel-devel"}}))
	if _, err := mcorender.Merge("infra", srcs, mcorender.Base{}); err == nil || !strings.Contains(err.Error(), "kernel-devel") {
		t.Errorf("kernel-devel with realtime: %v", err)
	}
	// Extensions are checked only beside an Ignition config, as the MCO
	// does; Merge checks them always.
	bare := render.Source{Name: "50-bare", Role: "worker", Spec: mcfgv1.MachineConfigSpec{Extensions: []string{"not-an-extension"}}}
	if r, err := mcorender.Merge("worker", []render.Source{bare}, mcorender.Base{}); err != nil || !cmp.Equal(r.Spec.Extensions, []string{"not-an-extension"}) {
		t.Errorf("an unsupported extension without a config: %v", err)
	}
	if _, err := render.Merge("worker", []render.Source{bare}); err == nil {
		t.Error("Merge: an unsupported extension without a config is accepted")
	}
	bare.Spec.Config = runtime.RawExtension{Raw: builder.Ignition().JSON()}
	if _, err := mcorender.Merge("worker", []render.Source{bare}, mcorender.Base{}); err == nil || !strings.Contains(err.Error(), "spec.extensions[0]") {
		t.Errorf("an unsupported extension beside a config: %v", err)
	}
	empty := render.Source{Name: "50-empty", Role: "worker", Spec: mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: []byte("{}")}}}
	if _, err := mcorender.Merge("worker", []render.Source{empty}, mcorender.Base{}); err == nil || !strings.Contains(err.Error(), `MachineConfig "50-empty": spec.config.ignition.version`) {
		t.Errorf("an empty Ignition config: %v", err)
	}
	if _, err := mcorender.Merge("infra", nil, mcorender.Base{}); err == nil {
		t.Error("no sources: no error")
	}
}

// Merge over a real 4.20 cluster's source MachineConfigs gives the spec
// its MCO rendered for each pool (the images taken from that rendered
// config, as its ControllerConfig is not in the capture). The capture's SSH
// key is blanked in the sources and the rendered configs alike, so the
// specs compare but the names cannot. The 4.16 to 4.18 captures were
// rendered by MCOs that still left an empty compression ("") in place, so
// only this one is compared.
func TestMergeOfARealCluster(t *testing.T) {
	const cluster = "ocpbugs-60768"
	byPool := map[string][]render.Source{}
	rendered := map[string]*machineconfig.Config{}
	for _, mc := range testkit.RealCluster(t, cluster) {
		if strings.HasPrefix(mc.Name, "rendered-") {
			rendered[mc.Name] = mc.Config
			continue
		}
		src := render.SourceOf(mc.MachineConfig, mc.Config)
		byPool[src.Role] = append(byPool[src.Role], src)
	}
	// The configs each pool runs after the upgrade the capture ends with.
	for pool, name := range map[string]string{"worker": "rendered-worker-2b807ab49e9d8a7040a5bcc4085e31c1", "master": "rendered-master-505a1e08a37430cbe1ee421928f810ec"} {
		want := rendered[name]
		if want == nil {
			t.Fatalf("%s: no %s", cluster, name)
		}
		got, err := mcorender.Merge(pool, byPool[pool], mcorender.Base{OSImageURL: want.Spec.OSImageURL, BaseOSExtensionsContainerImage: want.Spec.BaseOSExtensionsContainerImage})
		if err != nil {
			t.Fatal(err)
		}
		gotCfg, err := machineconfig.New(got.Name, got.Spec)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want.Ignition, gotCfg.Ignition); d != "" {
			t.Errorf("%s from %d sources: Ignition config (-MCO +Merge):\n%s", name, len(byPool[pool]), d)
		}
		ws, gs := want.Spec, got.Spec
		ws.Config.Raw, gs.Config.Raw = nil, nil
		if d := cmp.Diff(ws, gs); d != "" {
			t.Errorf("%s: spec (-MCO +Merge):\n%s", name, d)
		}
	}
}

// The MCO's name of a rendered config is the hash of its spec: Name
// gives the names real clusters' render controllers gave (4.16 to 4.20,
// ../shared/mco-ref/realconfigs).
func TestNameOfRealRenderedConfigs(t *testing.T) {
	dir := testkit.RealConfigs(t)
	paths, err := filepath.Glob(filepath.Join(dir, "*", "rendered-*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no rendered configs in %s (%v)", dir, err)
	}
	reproduced := 0
	for _, p := range paths {
		cfg := testkit.ReadConfig(t, p)
		if strings.Contains(string(cfg.Spec.Config.Raw), "XXXXXXXXXXXXXXXX") {
			continue // captured with its SSH key blanked out: no longer the spec its name hashes
		}
		pool := strings.TrimPrefix(cfg.Name, "rendered-")
		pool = pool[:strings.LastIndex(pool, "-")]
		got, err := mcorender.Name(pool, cfg.Spec)
		if err != nil || got != cfg.Name {
			t.Errorf("%s: Name %s (%v), want %s", p, got, err, cfg.Name)
			continue
		}
		reproduced++
	}
	if reproduced < 16 {
		t.Errorf("%d real rendered names reproduced, want the 16 not redacted", reproduced)
	}
	t.Logf("%d of %d real rendered names reproduced (the others were redacted when captured)", reproduced, len(paths))
}
