package framework

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The apt scenario's repository: each snapshot's Packages index names
// its packages' versions, files, sizes and digests, and each package is
// what dpkg-deb reads back (its fields, files, modes and scripts).
func TestBuildAptRepo(t *testing.T) {
	if _, err := exec.LookPath("dpkg-deb"); err != nil {
		t.Skip("no dpkg-deb (not Debian)")
	}
	dir := t.TempDir()
	if err := BuildAptRepo(dir, []byte("\x7fELF a binary")); err != nil {
		t.Fatal(err)
	}
	for i, versions := range aptSnapshots {
		snap := filepath.Join(dir, "snapshot-"+strconv.Itoa(i+1))
		index, err := os.ReadFile(filepath.Join(snap, "Packages"))
		if err != nil {
			t.Fatal(err)
		}
		stanzas := strings.Split(strings.TrimSpace(string(index)), "\n\n")
		if len(stanzas) != 2 {
			t.Fatalf("%s: %d stanzas, want 2:\n%s", snap, len(stanzas), index)
		}
		for _, s := range stanzas {
			f := fields(s)
			if f["Version"] != versions[f["Package"]] {
				t.Errorf("%s: %s %s, want %s", snap, f["Package"], f["Version"], versions[f["Package"]])
			}
			deb := filepath.Join(snap, strings.TrimPrefix(f["Filename"], "./"))
			b, err := os.ReadFile(deb)
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(b)
			if f["Size"] != strconv.Itoa(len(b)) || f["SHA256"] != hex.EncodeToString(sum[:]) {
				t.Errorf("%s: Size %s SHA256 %s, want %d %x", deb, f["Size"], f["SHA256"], len(b), sum)
			}
			info, err := exec.Command("dpkg-deb", "--field", deb, "Package", "Version", "Architecture").Output()
			if err != nil {
				t.Fatal(err)
			}
			if got := fields(string(info)); got["Package"] != f["Package"] || got["Version"] != f["Version"] || got["Architecture"] != f["Architecture"] {
				t.Errorf("%s: dpkg-deb reads %v, the index says %v", deb, got, f)
			}
		}
	}
	contents := func(deb string) string {
		out, err := exec.Command("dpkg-deb", "--contents", filepath.Join(dir, deb)).Output()
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	if c := contents("snapshot-2/ndp-demo_2.0_amd64.deb"); !strings.Contains(c, "-rwxr-xr-x root/root") || !strings.Contains(c, "."+demoBinary) ||
		!strings.Contains(c, "./lib/systemd/system/"+DemoService) {
		t.Errorf("ndp-demo 2.0 holds:\n%s", c)
	}
	script := func(deb string) string {
		out, _ := exec.Command("dpkg-deb", "--info", filepath.Join(dir, deb), "postinst").Output()
		return string(out)
	}
	if s := script("snapshot-3/ndp-demo-kernel_2.0_all.deb"); !strings.Contains(s, "/var/run/reboot-required.pkgs") {
		t.Errorf("ndp-demo-kernel 2.0's postinst does not ask for a reboot:\n%s", s)
	}
	if s := script("snapshot-1/ndp-demo-kernel_1.0_all.deb"); s != "" {
		t.Errorf("ndp-demo-kernel 1.0 has a postinst:\n%s", s)
	}
}

// fields reads a deb822 stanza's single-line fields.
func fields(stanza string) map[string]string {
	f := map[string]string{}
	for _, l := range strings.Split(stanza, "\n") {
		if k, v, ok := strings.Cut(l, ": "); ok && !strings.HasPrefix(l, " ") {
			f[k] = strings.TrimSpace(v)
		}
	}
	return f
}
