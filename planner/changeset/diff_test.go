package changeset_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/ndp-dev/ndp/internal/testkit/builder"
	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/planner/changeset"
	"github.com/ndp-dev/ndp/registries"
)

func diff(t *testing.T, from, to *machineconfig.Config) *changeset.ChangeSet {
	t.Helper()
	cs, err := changeset.Diff(from, to)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func TestVersionBumpAndEncodingsAreNoChange(t *testing.T) {
	contents := "server time.example.com iburst\n"
	old := builder.MachineConfig("old").WithIgnitionVersion("3.1.0").WithFiles(builder.File("/etc/chrony.conf", contents)).Config(t)
	for name, f := range map[string]builder.Entry{
		"plain":  builder.File("/etc/chrony.conf", contents),
		"base64": builder.FileB64("/etc/chrony.conf", contents),
		"gzip":   builder.FileGzip("/etc/chrony.conf", contents),
	} {
		for _, version := range []string{"3.2.0", "3.3.0", "3.4.0", "3.5.0"} {
			if cs := diff(t, old, builder.MachineConfig("new").WithIgnitionVersion(version).WithFiles(f).Config(t)); len(cs.Changes) != 0 {
				t.Errorf("%s contents, Ignition %s: changes %+v, want none", name, version, cs.Changes)
			}
		}
	}
}

func TestFileChanges(t *testing.T) {
	base := builder.File("/etc/app/conf", "a\n")
	old := builder.MachineConfig("old").WithFiles(base, builder.File("/etc/gone", "x"), builder.File("/etc/owned", "x").With("user", map[string]any{"name": "root"})).Config(t)
	new := builder.MachineConfig("new").WithFiles(
		// Unset overwrite reads as the rendering's default, true: only
		// false is a change of it (TestDefaultedOverwriteIsNoChange).
		builder.File("/etc/app/conf", "b\n").With("mode", 0o600).With("overwrite", false),
		builder.File("/etc/added", "y"),
		builder.File("/etc/owned", "x").With("user", map[string]any{"id": 0}).With("group", map[string]any{"name": "wheel"}),
	).Config(t)
	cs := diff(t, old, new)
	want := []changeset.Change{
		{ID: "file:/etc/added", Kind: "file", Op: "added", Path: "/etc/added", Dirs: []string{"/etc/", "/"}},
		{ID: "file:/etc/app/conf", Kind: "file", Op: "changed", Path: "/etc/app/conf", Dirs: []string{"/etc/app/", "/etc/", "/"}, Fields: []string{"contents", "mode", "overwrite"}},
		{ID: "file:/etc/gone", Kind: "file", Op: "removed", Path: "/etc/gone", Dirs: []string{"/etc/", "/"}},
		{ID: "file:/etc/owned", Kind: "file", Op: "changed", Path: "/etc/owned", Dirs: []string{"/etc/", "/"}, Fields: []string{"group"}},
	}
	if d := cmp.Diff(want, cs.Changes, cmpopts.IgnoreFields(changeset.Change{}, "OldDigest", "NewDigest")); d != "" {
		t.Errorf("changes (-want +got):\n%s", d)
	}
	if c := cs.Change("file:/etc/app/conf"); c.OldDigest == c.NewDigest || !strings.HasPrefix(c.NewDigest, "sha256:") {
		t.Errorf("digests %q → %q", c.OldDigest, c.NewDigest)
	}
	if got := cs.Change("file:/etc/app/conf").Describe(); got != "file /etc/app/conf: contents, mode, overwrite changed" {
		t.Errorf("Describe() = %q", got)
	}
}

// TestDefaultedOverwriteIsNoChange: render.Merge sets overwrite: true on
// every file without one, as the MCO's MergeMachineConfigs does (MCO
// TestSetDefaultFileOverwrite). A config rendered before ndp did so and the
// same config rendered after differ only by that default: nothing to plan.
func TestDefaultedOverwriteIsNoChange(t *testing.T) {
	old := builder.MachineConfig("old").WithFiles(builder.File("/etc/a", "x")).Config(t)
	defaulted := builder.MachineConfig("new").WithFiles(builder.File("/etc/a", "x").With("overwrite", true)).Config(t)
	if cs := diff(t, old, defaulted); len(cs.Changes) != 0 || len(cs.Unreconcilable) != 0 {
		t.Errorf("unset → true: changes %+v, want none", cs.Changes)
	}
	if cs := diff(t, defaulted, old); len(cs.Changes) != 0 {
		t.Errorf("true → unset: changes %+v, want none", cs.Changes)
	}
	off := builder.MachineConfig("off").WithFiles(builder.File("/etc/a", "x").With("overwrite", false)).Config(t)
	if cs := diff(t, old, off); len(cs.Changes) != 1 || !slices.Equal(cs.Changes[0].Fields, []string{"overwrite"}) {
		t.Errorf("unset → false: changes %+v, want overwrite", cs.Changes)
	}
}

func TestRemoteSourcesCompareByURLAndHash(t *testing.T) {
	remote := func(hash string) map[string]any {
		return map[string]any{"path": "/etc/remote", "contents": map[string]any{
			"source": "https://example.com/f", "verification": map[string]any{"hash": hash}}}
	}
	h1 := "sha512-" + strings.Repeat("a", 128)
	h2 := "sha512-" + strings.Repeat("b", 128)
	if cs := diff(t, builder.MachineConfig("a").WithFiles(remote(h1)).Config(t), builder.MachineConfig("b").WithFiles(remote(h1)).Config(t)); len(cs.Changes) != 0 {
		t.Errorf("same remote source: %+v", cs.Changes)
	}
	cs := diff(t, builder.MachineConfig("a").WithFiles(remote(h1)).Config(t), builder.MachineConfig("b").WithFiles(remote(h2)).Config(t))
	if len(cs.Changes) != 1 || cs.Changes[0].NewDigest != "url:https://example.com/f#"+h2 {
		t.Errorf("changed remote hash: %+v", cs.Changes)
	}
	gz := remote(h1)
	gz["contents"].(map[string]any)["compression"] = "gzip"
	hdr := remote(h1)
	hdr["contents"].(map[string]any)["httpHeaders"] = []any{map[string]any{"name": "Authorization", "value": "Bearer x"}}
	for name, f := range map[string]map[string]any{"compression": gz, "headers": hdr} {
		cs := diff(t, builder.MachineConfig("a").WithFiles(remote(h1)).Config(t), builder.MachineConfig("b").WithFiles(f).Config(t))
		if len(cs.Changes) != 1 || cs.Changes[0].Fields[0] != "contents" {
			t.Errorf("remote source with new %s: %+v", name, cs.Changes)
		}
	}
}

func TestUnitChanges(t *testing.T) {
	units := func(us ...map[string]any) map[string]any {
		list := make([]any, len(us))
		for i, u := range us {
			list[i] = u
		}
		return map[string]any{"systemd": map[string]any{"units": list}}
	}
	dropin := func(name, contents string) map[string]any { return map[string]any{"name": name, "contents": contents} }
	old := builder.MachineConfig("old").WithConfig(units(
		map[string]any{"name": "a.service", "contents": "[Service]\n", "enabled": true},
		map[string]any{"name": "b.service", "dropins": []any{dropin("10-x.conf", "x"), dropin("20-y.conf", "y")}},
		map[string]any{"name": "c.service"},
		map[string]any{"name": "gone.service"},
	)).Config(t)
	new := builder.MachineConfig("new").WithConfig(units(
		map[string]any{"name": "a.service", "contents": "[Service]\nType=oneshot\n", "enabled": false},
		map[string]any{"name": "b.service", "dropins": []any{dropin("10-x.conf", "x2"), dropin("30-z.conf", "z")}},
		map[string]any{"name": "c.service", "enabled": false, "mask": true},
		map[string]any{"name": "new.timer"},
	)).Config(t)
	want := []changeset.Change{
		{ID: "unit:a.service", Kind: "unit", Op: "changed", Name: "a.service", Fields: []string{"contents", "enabled"}},
		{ID: "unit:b.service", Kind: "unit", Op: "changed", Name: "b.service", Fields: []string{"dropins"}, Dropins: []string{"10-x.conf", "20-y.conf", "30-z.conf"}},
		{ID: "unit:c.service", Kind: "unit", Op: "changed", Name: "c.service", Fields: []string{"enabled", "mask"}},
		{ID: "unit:gone.service", Kind: "unit", Op: "removed", Name: "gone.service"},
		{ID: "unit:new.timer", Kind: "unit", Op: "added", Name: "new.timer"},
	}
	if d := cmp.Diff(want, diff(t, old, new).Changes); d != "" {
		t.Errorf("changes (-want +got):\n%s", d)
	}
}

func TestPasswdChanges(t *testing.T) {
	core := func(hash string, keys ...any) map[string]any {
		u := map[string]any{"name": "core", "sshAuthorizedKeys": keys}
		if hash != "" {
			u["passwordHash"] = hash
		}
		return map[string]any{"passwd": map[string]any{"users": []any{u}}}
	}
	cs := diff(t, builder.MachineConfig("old").WithConfig(core("", "ssh-ed25519 AAAA one", "ssh-ed25519 AAAA two")).Config(t),
		builder.MachineConfig("new").WithConfig(core("$6$x", "ssh-ed25519 AAAA two", "ssh-ed25519 AAAA three")).Config(t))
	want := []changeset.Change{
		{ID: "sshkey", Kind: "sshkey", Op: "changed", Name: "sshkey", Added: []string{"ssh-ed25519 AAAA three"}, Removed: []string{"ssh-ed25519 AAAA one"}},
		{ID: "password", Kind: "password", Op: "added", Name: "password"},
	}
	if d := cmp.Diff(want, cs.Changes); d != "" {
		t.Errorf("changes (-want +got):\n%s", d)
	}
	if len(cs.Unreconcilable) != 0 {
		t.Errorf("core keys and password are reconcilable: %+v", cs.Unreconcilable)
	}
}

func TestOSChanges(t *testing.T) {
	old := builder.MachineConfig("old").WithSpecFields(map[string]any{
		"osImageURL": "quay.io/os@sha256:1", "kernelArguments": []string{"a=1", "b=2"},
		"extensions": []string{"usbguard", "kerberos"}, "kernelType": "",
	}).Config(t)
	same := builder.MachineConfig("same").WithSpecFields(map[string]any{
		"osImageURL": "quay.io/os@sha256:1", "kernelArguments": []string{"a=1", "b=2"},
		"extensions": []string{"kerberos", "usbguard"}, "kernelType": "default",
	}).Config(t)
	if cs := diff(t, old, same); len(cs.Changes) != 0 {
		t.Errorf("reordered extensions and kernelType \"\" vs default are no change: %+v", cs.Changes)
	}
	new := builder.MachineConfig("new").WithSpecFields(map[string]any{
		"osImageURL": "quay.io/os@sha256:2", "kernelArguments": []string{"b=2", "a=1"},
		"extensions": []string{"usbguard"}, "kernelType": "realtime",
	}).Config(t)
	var got []string
	for _, c := range diff(t, old, new).Changes {
		got = append(got, c.ID+" "+c.Op)
	}
	want := []string{"os:extensions changed", "os:kernelArguments changed", "os:kernelType changed", "os:osImageURL changed"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("kernel arguments are order-sensitive (-want +got):\n%s", d)
	}
}

func TestRegistriesSemanticDiff(t *testing.T) {
	conf := func(s string) *machineconfig.Config {
		return builder.MachineConfig("c").WithFiles(builder.File(registries.ConfPath, s)).Config(t)
	}
	base := "unqualified-search-registries = [\"registry.access.redhat.com\"]\n"
	cs := diff(t, conf(base), conf("# a comment\n"+base+"\n"))
	if len(cs.Changes) != 1 || cs.Registries == nil || !cs.Registries.Empty() {
		t.Errorf("comment-only change: changes %+v, registries %+v", cs.Changes, cs.Registries)
	}
	cs = diff(t, conf(base), conf(base+"[[registry]]\nlocation = \"quay.io/ocp\"\n[[registry.mirror]]\nlocation = \"mirror.example.com/ocp\"\npull-from-mirror = \"digest-only\"\n"))
	if cs.Registries == nil || len(cs.Registries.RegistriesAdded) != 1 || cs.Registries.RegistriesAdded[0].Scope != "quay.io/ocp" {
		t.Errorf("registry added: %+v", cs.Registries)
	}
	_, err := changeset.Diff(conf(base), conf(base+"[[registry]\n"))
	var ie *machineconfig.InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), registries.ConfPath) {
		t.Errorf("invalid new registries.conf: %v", err)
	}
	cs = diff(t, conf(base+"[[registry]\n"), conf(base))
	if cs.Registries == nil || cs.Registries.Unknown == "" {
		t.Errorf("an unreadable old registries.conf must be reported unknown: %+v", cs.Registries)
	}
}

func TestSourcesAnnotation(t *testing.T) {
	doc := `apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: rendered-worker-2
  annotations:
    ndp.dev/sources: '{"file:/etc/chrony.conf": "50-chrony"}'
spec:
  config:
    ignition: {version: 3.4.0}
    storage:
      files:
      - path: /etc/chrony.conf
        contents: {source: "data:,x"}
`
	to, err := machineconfig.Parse("new.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	cs := diff(t, builder.MachineConfig("old").Config(t), to)
	if len(cs.Changes) != 1 || cs.Changes[0].Source != "50-chrony" {
		t.Errorf("source not carried: %+v", cs.Changes)
	}
}

func TestInvalidContentsAreInputErrors(t *testing.T) {
	bad := map[string]any{"path": "/etc/x", "contents": map[string]any{"source": "data:;base64,bm90IGd6aXA=", "compression": "gzip"}}
	_, err := changeset.Diff(builder.MachineConfig("old").Config(t), builder.MachineConfig("new").WithFiles(bad).Config(t))
	var ie *machineconfig.InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "files[path=/etc/x].contents") || !strings.Contains(err.Error(), "gzip") {
		t.Errorf("got %v", err)
	}
}
