package render_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/internal/testkit/builder"
	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/mco/mcorender"
	"github.com/ndp-dev/ndp/render"
)

// Rendered.Config of a MergeMCO rendering, which skips decoding
// spec.config again, is what machineconfig.New makes of the rendered spec
// (but for empty lists, which decoding leaves nil), for a real cluster's
// pools and small ones; and a merge that Ignition's validation refuses gets
// New's error.
func TestFromIgnitionIsNew(t *testing.T) {
	byPool := map[string][]render.Source{
		"small": {
			role("00-worker", "worker", builder.Ignition().WithFile("/etc/a", "a").WithUnit("a.service", "[Unit]"), mcfgv1.MachineConfigSpec{KernelArguments: []string{"x=1"}}),
			role("50-gz", "worker", builder.Ignition().WithFiles(builder.FileGzip("/etc/a", "zz"), builder.File("/etc/b", "b")), mcfgv1.MachineConfigSpec{}),
			role("60-none", "worker", nil, mcfgv1.MachineConfigSpec{Extensions: []string{"usbguard"}}),
		},
	}
	for _, mc := range testkit.RealCluster(t, "ocpbugs-60768") {
		if !strings.HasPrefix(mc.Name, "rendered-") {
			src := render.SourceOf(mc.MachineConfig, mc.Config)
			byPool[src.Role] = append(byPool[src.Role], src)
		}
	}
	if len(byPool) < 3 {
		t.Fatalf("pools %v: the real cluster's sources are missing", len(byPool))
	}
	for pool, srcs := range byPool {
		r, err := mcorender.Merge(pool, srcs, mcorender.Base{OSImageURL: "quay.io/os@sha256:0"})
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.Config()
		if err != nil {
			t.Fatalf("%s: %v", pool, err)
		}
		want := parse(t, r)
		if d := cmp.Diff(want, got, cmpopts.EquateEmpty()); d != "" {
			t.Errorf("%s: Rendered.Config (-New +Config):\n%s", pool, d)
		}
	}
	// A file with a mode only is valid in its source; the rendering, which
	// overwrites every file, is not (overwrite without contents).
	bad := []render.Source{
		role("00-file", "worker", builder.Ignition().WithFile("/etc/x", "x"), mcfgv1.MachineConfigSpec{}),
		role("50-mode", "worker", builder.Ignition().WithFiles(builder.Entry{"path": "/etc/b", "mode": 384}), mcfgv1.MachineConfigSpec{}),
	}
	r, err := mcorender.Merge("worker", bad, mcorender.Base{})
	if err != nil {
		t.Fatal(err)
	}
	_, want := machineconfig.New(r.Name, r.Spec)
	_, got := r.Config()
	if want == nil || got == nil || got.Error() != want.Error() {
		t.Errorf("an invalid merge: Config's error %v, New's %v", got, want)
	}
}
