package render_test

// The MCO's own test cases of MergeMachineConfigs and ValidateMachineConfig
// (openshift/machine-config-operator pkg/controller/common/helpers_test.go),
// ported to render.Merge and machineconfig.Validate. Each case names the MCO
// test it comes from. Cases on Ignition 2.2 configs are left out: ndp reads
// Ignition 3.x only.

import (
	"errors"
	"strings"
	"testing"

	igntypes "github.com/coreos/ignition/v2/config/v3_5/types"
	"github.com/google/go-cmp/cmp"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ndp-dev/ndp/internal/testkit/builder"
	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/render"
)

// role is a source of the given role with an Ignition 3.5 config (nil: none).
func role(name, r string, ign *builder.IgnitionBuilder, spec mcfgv1.MachineConfigSpec) render.Source {
	if ign != nil {
		spec.Config = runtime.RawExtension{Raw: ign.WithVersion("3.5.0").JSON()}
	}
	return render.Source{Name: name, Role: r, Spec: spec}
}

func merged(t *testing.T, srcs ...render.Source) (*render.Rendered, igntypes.Config) {
	t.Helper()
	r, err := render.Merge("worker", srcs)
	if err != nil {
		t.Fatal(err)
	}
	return r, parse(t, r).Ignition
}

func TestMCOMergeMachineConfigs(t *testing.T) {
	t.Run("a singular base config that sets FIPS also sets other defaults correctly", func(t *testing.T) {
		// MCO TestMergeMachineConfigs: "Test that a singular base config that sets FIPS also sets other defaults correctly"
		r, ign := merged(t, role("fips", "worker", nil, mcfgv1.MachineConfigSpec{FIPS: true}))
		want := mcfgv1.MachineConfigSpec{FIPS: true, KernelType: "default", KernelArguments: []string{}, Extensions: []string{}}
		got := r.Spec
		got.Config = runtime.RawExtension{}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("spec (-want +got):\n%s", d)
		}
		if ign.Ignition.Version != "3.5.0" || len(ign.Storage.Files)+len(ign.Passwd.Users) != 0 {
			t.Errorf("config %+v, want only the version", ign)
		}
	})

	t.Run("all other configs can also be set properly", func(t *testing.T) {
		// MCO TestMergeMachineConfigs: "Test that all other configs can also be set properly".
		// The MCO's case has two configs named "ssh" (kept in input order by
		// its stable sort); names are unique in a cluster, so here ssh-a and
		// ssh-b. Its extension "testExtensions" is not validated by
		// MergeMachineConfigs but is by the render controller: a supported
		// one here. Its Ignition 2.2 config is left out.
		key := func(k string) *builder.IgnitionBuilder {
			return builder.Ignition().WithEntries("passwd", "users", builder.Entry{"name": "core", "sshAuthorizedKeys": []any{k}})
		}
		r, ign := merged(t,
			role("osimageurl", "worker", nil, mcfgv1.MachineConfigSpec{OSImageURL: "overriddenURL"}),
			role("kargs", "worker", nil, mcfgv1.MachineConfigSpec{KernelArguments: []string{"testKarg", "kargFromIgnitionDowngrade"}}),
			role("kerneltype", "worker", nil, mcfgv1.MachineConfigSpec{KernelType: "realtime"}),
			role("extension", "worker", nil, mcfgv1.MachineConfigSpec{Extensions: []string{"usbguard"}}),
			role("ssh-a", "worker", key("5678"), mcfgv1.MachineConfigSpec{}),
			role("fips", "worker", nil, mcfgv1.MachineConfigSpec{FIPS: true}),
			role("passwd", "worker", builder.Ignition().WithEntries("passwd", "users", builder.Entry{"name": "core", "passwordHash": "testpass"}), mcfgv1.MachineConfigSpec{}),
			role("ssh-b", "worker", key("1234"), mcfgv1.MachineConfigSpec{}),
		)
		want := mcfgv1.MachineConfigSpec{OSImageURL: "overriddenURL", KernelArguments: []string{"testKarg", "kargFromIgnitionDowngrade"}, FIPS: true, KernelType: "realtime", Extensions: []string{"usbguard"}}
		got := r.Spec
		got.Config = runtime.RawExtension{}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("spec (-want +got):\n%s", d)
		}
		hash := "testpass"
		wantUsers := []igntypes.PasswdUser{{Name: "core", SSHAuthorizedKeys: []igntypes.SSHAuthorizedKey{"5678", "1234"}, PasswordHash: &hash}}
		if d := cmp.Diff(wantUsers, ign.Passwd.Users); d != "" {
			t.Errorf("users (-want +got):\n%s", d)
		}
	})

	t.Run("custom pool configuration can overwrite base pool configuration", func(t *testing.T) {
		// MCO TestMergeMachineConfigs: "Test that custom pool configuration can overwrite base pool configuration.
		// Also test that other alphanumeric ordering is preserved": bbb overrides aaa by name, ccc (infra)
		// overrides ddd (worker) by pool.
		// The MCO's expected result has ccc's plain contents, with ddd's file
		// gzip-compressed: its file helper sets compression "" (as its
		// NewIgnFile does), since Ignition's merge keeps a compression a later
		// file leaves unset (TestMCOIgnitionMergeCompressed). So does ccc's here.
		plainNew := map[string]any{"source": "data:,new", "compression": ""}
		r, ign := merged(t,
			role("ccc", "infra", builder.Ignition().WithFiles(builder.File("/etc/test2", "new").With("mode", 420).With("contents", plainNew)), mcfgv1.MachineConfigSpec{}),
			role("aaa", "worker", builder.Ignition().WithFiles(builder.File("/etc/test1", "old").With("mode", 420)), mcfgv1.MachineConfigSpec{}),
			role("bbb", "worker", builder.Ignition().WithFiles(builder.File("/etc/test1", "new").With("mode", 420)), mcfgv1.MachineConfigSpec{}),
			role("ddd", "worker", builder.Ignition().WithFiles(builder.FileGzip("/etc/test2", "old").With("mode", 420)), mcfgv1.MachineConfigSpec{}),
		)
		yes, mode := true, 420
		var paths []string
		for _, f := range ign.Storage.Files {
			paths = append(paths, f.Path)
			if f.Overwrite == nil || *f.Overwrite != yes || f.Mode == nil || *f.Mode != mode {
				t.Errorf("%s: overwrite %v mode %v", f.Path, f.Overwrite, f.Mode)
			}
		}
		if !cmp.Equal(paths, []string{"/etc/test1", "/etc/test2"}) {
			t.Errorf("files %v", paths)
		}
		for _, f := range ign.Storage.Files {
			got, err := machineconfig.FileContents(&machineconfig.Config{Ignition: ign}, &f)
			if err != nil || string(got) != "new" {
				t.Errorf("%s: contents %q (%v), want \"new\"", f.Path, got, err)
			}
		}
		if r.Sources["file:/etc/test1"] != "bbb" || r.Sources["file:/etc/test2"] != "ccc" {
			t.Errorf("sources %v, want /etc/test1 from bbb, /etc/test2 from ccc", r.Sources)
		}
	})
}

// MCO TestIgnitionMergeCompressed (https://github.com/coreos/butane/issues/332):
// a plain file saying compression "" merged over a gzip one decodes to its
// own contents.
func TestMCOIgnitionMergeCompressed(t *testing.T) {
	_, ign := merged(t,
		role("00-gz", "worker", builder.Ignition().WithFiles(builder.Entry{"path": "/etc/testfileconfig", "mode": 420, "contents": map[string]any{"compression": "gzip", "source": "data:;base64,H4sIAAAAAAAAA0vLz+cCAKhlMn4EAAAA"}}), mcfgv1.MachineConfigSpec{}),
		role("10-plain", "worker", builder.Ignition().WithFiles(builder.File("/etc/testfileconfig", "hello world").With("contents", map[string]any{"source": builder.DataURL("hello world"), "compression": ""})), mcfgv1.MachineConfigSpec{}),
	)
	got, err := machineconfig.FileContents(&machineconfig.Config{Ignition: ign}, &ign.Storage.Files[0])
	if err != nil || string(got) != "hello world" {
		t.Errorf("contents %q, %v", got, err)
	}
}

// MCO TestSetDefaultFileOverwrite: a file without overwrite gets true, one
// with false keeps it.
func TestMCOSetDefaultFileOverwrite(t *testing.T) {
	_, ign := merged(t, role("overwrite", "worker", builder.Ignition().WithFiles(
		builder.File("/etc/testfileconfig1", "test").With("mode", 420),
		builder.File("/etc/testfileconfig2", "test").With("mode", 420).With("overwrite", false),
	), mcfgv1.MachineConfigSpec{}))
	got := map[string]bool{}
	for _, f := range ign.Storage.Files {
		if f.Overwrite == nil {
			t.Fatalf("%s: overwrite unset", f.Path)
		}
		got[f.Path] = *f.Overwrite
	}
	if d := cmp.Diff(map[string]bool{"/etc/testfileconfig1": true, "/etc/testfileconfig2": false}, got); d != "" {
		t.Errorf("overwrite (-want +got):\n%s", d)
	}
}

// MCO TestRemoveIgnDuplicateFilesAndUnits, across MachineConfigs: the MCO
// merges one unit given by three configs with Ignition's merge — the last
// contents win, drop-ins are merged by name (the last of a name wins).
func TestMCOUnitsAndDropinsMergeByName(t *testing.T) {
	dropin := func(name, contents string) map[string]any { return map[string]any{"name": name, "contents": contents} }
	r, ign := merged(t,
		role("00-one", "worker", builder.Ignition().WithUnits(builder.Unit("test.service", "old").With("dropins", []any{dropin("one.conf", "old")})), mcfgv1.MachineConfigSpec{}),
		role("10-two", "worker", builder.Ignition().WithUnits(builder.Unit("test.service", "").With("dropins", []any{dropin("one.conf", "new")})), mcfgv1.MachineConfigSpec{}),
		role("20-three", "worker", builder.Ignition().WithUnits(builder.Unit("test.service", "new").With("dropins", []any{dropin("two.conf", "new")})), mcfgv1.MachineConfigSpec{}),
	)
	if len(ign.Systemd.Units) != 1 {
		t.Fatalf("units %+v", ign.Systemd.Units)
	}
	u := ign.Systemd.Units[0]
	got := map[string]string{"contents": *u.Contents}
	for _, d := range u.Dropins {
		got[d.Name] = *d.Contents
	}
	if d := cmp.Diff(map[string]string{"contents": "new", "one.conf": "new", "two.conf": "new"}, got); d != "" {
		t.Errorf("unit (-want +got):\n%s", d)
	}
	if r.Sources["unit:test.service"] != "20-three" {
		t.Errorf("source %q, want the last MachineConfig that touched the unit", r.Sources["unit:test.service"])
	}
}

// A later config's file that leaves fields unset keeps the earlier ones
// (Ignition's merge, field by field), where ndp used to replace the file.
func TestIgnitionMergeKeepsUnsetFields(t *testing.T) {
	_, ign := merged(t,
		role("00-a", "worker", builder.Ignition().WithFiles(builder.File("/etc/x", "a").With("mode", 0o600)), mcfgv1.MachineConfigSpec{}),
		role("10-b", "worker", builder.Ignition().WithFiles(builder.File("/etc/x", "b")), mcfgv1.MachineConfigSpec{}),
	)
	f := ign.Storage.Files[0]
	if *f.Contents.Source != "data:,b" || f.Mode == nil || *f.Mode != 0o600 {
		t.Errorf("contents %q mode %v: want 10-b's contents and 00-a's mode", *f.Contents.Source, f.Mode)
	}
}

func TestMCOKernelType(t *testing.T) {
	for _, tc := range []struct {
		name  string
		types []string
		want  string
	}{
		// MCO MergeMachineConfigs: "Setting FIPS to true or kernelType to a non-default value in any MachineConfig takes priority"
		{"none is default", []string{"", ""}, "default"},
		{"realtime wins over a later default", []string{"realtime", "default"}, "realtime"},
		{"the last non-default wins", []string{"realtime", "64k-pages"}, "64k-pages"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var srcs []render.Source
			for i, kt := range tc.types {
				srcs = append(srcs, role(string(rune('a'+i)), "worker", nil, mcfgv1.MachineConfigSpec{KernelType: kt}))
			}
			r, _ := merged(t, srcs...)
			if r.Spec.KernelType != tc.want {
				t.Errorf("kernelType %q, want %q", r.Spec.KernelType, tc.want)
			}
		})
	}
	// MCO MergeMachineConfigs: "installing kernel-devel extension is not supported with kernelType"
	_, err := render.Merge("worker", []render.Source{
		role("10-rt", "worker", nil, mcfgv1.MachineConfigSpec{KernelType: "realtime"}),
		role("20-devel", "worker", nil, mcfgv1.MachineConfigSpec{Extensions: []string{"kernel-devel"}}),
	})
	if err == nil || !strings.Contains(err.Error(), `MachineConfig "20-devel": spec.extensions`) || !strings.Contains(err.Error(), `"10-rt"`) {
		t.Errorf("kernel-devel with realtime: %v", err)
	}
}

func TestMCOValidateMachineConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		ign  *builder.IgnitionBuilder
		spec mcfgv1.MachineConfigSpec
		want string // "" valid
	}{
		// MCO TestValidateIgnition: "Test that an empty ignition config returns nil"
		{name: "empty config", want: ""},
		// MCO TestValidateIgnition: "Test that a valid ignition config returns nil" (mode 420)
		{name: "mode 0644", ign: builder.Ignition().WithFiles(builder.File("/etc/testfileconfig", "greatconfigstuff").With("mode", 420))},
		// MCO TestValidateIgnition: "Test that file modes do not have special bits (sticky, setuid, setgid) set" (0o1777)
		{name: "sticky", ign: builder.Ignition().WithFiles(builder.File("/etc/testfileconfig", "x").With("mode", 0o1777)),
			want: `MachineConfig "50-x": spec.config.storage.files[path=/etc/testfileconfig].mode: 01777 has the sticky bit`},
		{name: "setuid", ign: builder.Ignition().WithFiles(builder.File("/usr/local/bin/x", "x").With("mode", 0o4755)),
			want: `MachineConfig "50-x": spec.config.storage.files[path=/usr/local/bin/x].mode: 04755 has the setuid bit`},
		{name: "setuid and setgid", ign: builder.Ignition().WithFiles(builder.File("/usr/local/bin/x", "x").With("mode", 0o6755)),
			want: `06755 has the setuid and setgid bits`},
		// MCO TestValidateMachineConfigExtensions: "Supported"
		{name: "supported extensions", spec: mcfgv1.MachineConfigSpec{Extensions: []string{"sysstat", "sandboxed-containers"}}},
		// MCO TestValidateMachineConfigExtensions: "Unsupported" (every unsupported one named)
		{name: "unsupported extensions", spec: mcfgv1.MachineConfigSpec{Extensions: []string{"unsupported1", "unsupported2"}},
			want: `MachineConfig "50-x": spec.extensions[0]: unsupported extensions "unsupported1", "unsupported2" (supported: ipsec, kerberos, kernel-devel, sandboxed-containers, sysstat, two-node-ha, usbguard, wasm)`},
		{name: "unsupported extension, no Ignition config", spec: mcfgv1.MachineConfigSpec{Extensions: []string{"usbguard", "foo"}},
			want: `spec.extensions[1]: unsupported extension "foo"`},
		// MCO ValidateMachineConfig: "kernelType=%s is invalid"
		{name: "invalid kernel type", spec: mcfgv1.MachineConfigSpec{KernelType: "rt"}, want: `MachineConfig "50-x": spec.kernelType: "rt" is invalid`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := role("50-x", "worker", tc.ign, tc.spec)
			_, err := render.Merge("worker", []render.Source{src})
			if tc.want == "" {
				if err != nil {
					t.Errorf("refused: %v", err)
				}
				return
			}
			var ie *machineconfig.InputError
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.As(err, &ie) || ie.Field == "" {
				t.Errorf("got %v, want an InputError with %q", err, tc.want)
			}
			// The webhook calls Validate on its own: the same message.
			cfg, perr := machineconfig.New(`MachineConfig "50-x"`, src.Spec)
			if perr != nil {
				t.Fatal(perr)
			}
			if verr := machineconfig.Validate(`MachineConfig "50-x"`, cfg); verr == nil || verr.Error() != err.Error() {
				t.Errorf("Validate: %v, Merge: %v", verr, err)
			}
		})
	}
}
