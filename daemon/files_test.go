package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ndp-dev/ndp/machineconfig"
)

func config(t *testing.T, name, ign string) *machineconfig.Config {
	t.Helper()
	c, err := machineconfig.New(name, mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: []byte(ign)}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func testHost(t *testing.T) *Host {
	t.Helper()
	dir := t.TempDir()
	for p, data := range map[string]string{
		"etc/passwd": "root:x:0:0::/root:/bin/sh\ncore:x:1000:1001::/home/core:/bin/sh\nchrony:x:990:990::/:/sbin/nologin\n",
		"etc/group":  "root:x:0:\ncore:x:1001:\nchrony:x:990:\n",
		"etc/shadow": "root:*:1::::::\ncore:*:19000:0:99999:7:::\n",
	} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h, err := OpenHost(dir, "/etc/systemd/system")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

const empty = `{"ignition":{"version":"3.4.0"}}`

func TestPlanFilesWritesRemovesAndOwns(t *testing.T) {
	h := testHost(t)
	from := config(t, "a", `{"ignition":{"version":"3.4.0"},
	  "storage":{"files":[{"path":"/etc/old.conf","contents":{"source":"data:,x"}}]},
	  "systemd":{"units":[{"name":"old.service","contents":"[Service]\n","enabled":true,"dropins":[{"name":"10-x.conf","contents":"[Service]\n"}]},
	                      {"name":"kept.service","dropins":[{"name":"a.conf","contents":"a"},{"name":"b.conf","contents":"b"}]}]}}`)
	to := config(t, "b", `{"ignition":{"version":"3.4.0"},
	  "storage":{"files":[{"path":"/etc/chrony.conf","mode":420,"user":{"name":"chrony"},"group":{"name":"chrony"},"contents":{"source":"data:;base64,aGVsbG8="}},
	                      {"path":"/usr/local/bin/tool","mode":3565,"contents":{"compression":"gzip","source":"data:;base64,H4sIAAAAAAAAA8tIzcnJVyjPL8pJ4QIALTsIrwwAAAA="}}]},
	  "systemd":{"units":[{"name":"kept.service","dropins":[{"name":"a.conf","contents":"a2"}]},{"name":"masked.service","mask":true},{"name":"new.service","contents":"[Service]\n","enabled":true}]},
	  "passwd":{"users":[{"name":"core","sshAuthorizedKeys":["ssh-ed25519 AAAA core@example"],"passwordHash":"$6$x"}]}}`)
	u, err := planFiles(h, from, to)
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string]hostFile{}
	for _, w := range u.Writes {
		byPath[w.Path] = w
	}
	if w := byPath["/etc/chrony.conf"]; string(w.Data) != "hello" || w.UID != 990 || w.GID != 990 || w.Mode != 0o644 {
		t.Errorf("chrony.conf: %+v", w)
	}
	if w := byPath["/usr/local/bin/tool"]; string(w.Data) != "hello world\n" || w.Mode != 0o755|os.ModeSetuid|os.ModeSetgid {
		t.Errorf("tool (gzip, mode 06755): %q %v", w.Data, w.Mode)
	}
	if w := byPath["/etc/systemd/system/masked.service"]; w.Symlink != "/dev/null" {
		t.Errorf("masked unit: %+v", w)
	}
	if w := byPath[authorizedKeysFile]; string(w.Data) != "ssh-ed25519 AAAA core@example\n" || w.UID != 1000 || w.GID != 1001 || w.Mode != 0o600 || w.DirMode != 0o700 {
		t.Errorf("authorized keys: %+v", w)
	}
	removes := strings.Join(u.Removes, " ")
	for _, want := range []string{"/etc/old.conf", "/etc/systemd/system/old.service", "/etc/systemd/system/old.service.d/10-x.conf", "/etc/systemd/system/kept.service.d/b.conf"} {
		if !strings.Contains(removes, want) {
			t.Errorf("removes %q lacks %s", removes, want)
		}
	}
	if strings.Join(u.Enable, ",") != "new.service" || strings.Join(u.Disable, ",") != "old.service" {
		t.Errorf("enable %v disable %v", u.Enable, u.Disable)
	}
	if u.PasswordHash == nil || *u.PasswordHash != "$6$x" {
		t.Errorf("password hash: %v", u.PasswordHash)
	}
}

func TestPlanFilesRefusesBeforeWriting(t *testing.T) {
	h := testHost(t)
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(h.Path, "etc/escape")); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct{ ign, want string }{
		"symlink out of the root": {`{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/etc/escape/x","contents":{"source":"data:,x"}}]}}`, "resolves outside the host root"},
		"unknown user":            {`{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/etc/x","user":{"name":"nobody-here"},"contents":{"source":"data:,x"}}]}}`, `no user "nobody-here"`},
		"remote source":           {`{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/etc/x","contents":{"source":"https://example.com/x"}}]}}`, "remote sources"},
		"bad gzip":                {`{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/etc/x","contents":{"compression":"gzip","source":"data:,notgzip"}}]}}`, "invalid gzip"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := planFiles(h, config(t, "a", empty), config(t, "b", tc.ign))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := rel("/../../etc/x"); err != nil {
		t.Errorf("an absolute path with .. cleans to one inside the root: %v", err)
	}
	if _, err := rel("etc/x"); err == nil {
		t.Error("a relative path was accepted")
	}
}

func TestWriteSnapshotRestore(t *testing.T) {
	h := testHost(t)
	f := hostFile{Path: "/etc/app/conf.d/x.conf", Exists: true, Data: []byte("one"), Mode: 0o640, UID: 990, GID: 990}
	before, err := h.Snapshot(f.Path)
	if err != nil || before.Exists {
		t.Fatalf("snapshot of a missing file: %+v %v", before, err)
	}
	if err := h.WriteFile(f); err != nil {
		t.Fatal(err)
	}
	got, err := h.Snapshot(f.Path)
	if err != nil || string(got.Data) != "one" || got.Mode != 0o640 || got.UID != 990 || got.GID != 990 {
		t.Fatalf("written: %+v %v", got, err)
	}
	entries, _ := os.ReadDir(filepath.Join(h.Path, "etc/app/conf.d"))
	if len(entries) != 1 {
		t.Errorf("temporary files left beside the target: %v", entries)
	}
	if err := h.Restore(before); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(h.Path, f.Path)); !os.IsNotExist(err) {
		t.Errorf("restoring a missing file left it there: %v", err)
	}
	if err := setPasswordHash(h, "$6$new"); err != nil {
		t.Fatal(err)
	}
	shadow, _ := h.ReadFile("/etc/shadow")
	if string(shadow) != "root:*:1::::::\ncore:$6$new:19000:0:99999:7:::\n" {
		t.Errorf("shadow: %q", shadow)
	}
}
