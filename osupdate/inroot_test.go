package osupdate

import (
	"os"
	"path/filepath"
	"testing"
)

// Links resolve inside the host root: Debian's /var/run -> /run (absolute)
// must not lead into the daemon's own /run.
func TestInRoot(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"run", "var", "etc/a"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"var/run": "/run", "etc/rel": "a", "etc/up": "../run", "loop": "/loop"} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	for in, want := range map[string]string{
		"/var/run/reboot-required": "/run/reboot-required",
		"/run/reboot-required":     "/run/reboot-required",
		"/etc/rel/x":               "/etc/a/x",
		"/etc/up/x":                "/run/x",
		"/nope/x":                  "/nope/x",
		"/../../run/x":             "/run/x",
	} {
		got, err := InRoot(root, in)
		if err != nil || got != filepath.Join(root, want) {
			t.Errorf("InRoot(%s) = %s, %v; want %s", in, got, err, filepath.Join(root, want))
		}
	}
	if _, err := InRoot(root, "/loop/x"); err == nil {
		t.Error("a link to itself resolved")
	}
}
