package render_test

import (
	"testing"

	igntypes "github.com/coreos/ignition/v2/config/v3_5/types"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/internal/testkit/builder"
	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/mco/mcorender"
	"github.com/ndp-dev/ndp/render"
)

// renders is Merge and MergeMCO, for the facts both must hold.
var renders = map[string]func(string, []render.Source) (*render.Rendered, error){
	"Merge": render.Merge,
	"MergeMCO": func(pool string, srcs []render.Source) (*render.Rendered, error) {
		return mcorender.Merge(pool, srcs, mcorender.Base{OSImageURL: "quay.io/base/os@sha256:0"})
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
func TestSourceOfGenerated(t *testing.T) {
	mc := &ndpmcv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: "00-worker", Labels: map[string]string{ndpmcv1.RoleLabel: "worker"},
		Annotations: map[string]string{ndpmcv1.GeneratedByControllerVersionAnnotation: "abc"}}}
	if s := render.SourceOf(mc, nil); !s.Generated || s.Role != "worker" {
		t.Errorf("%+v: want generated, role worker", s)
	}
	mc.Annotations = nil
	if s := render.SourceOf(mc, nil); s.Generated {
		t.Error("a MachineConfig without the annotation is generated")
	}
}
