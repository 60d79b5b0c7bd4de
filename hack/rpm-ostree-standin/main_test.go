package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ndp-dev/ndp/osupdate"
)

func testStore(t *testing.T, boot *string) store {
	t.Helper()
	return store{dir: t.TempDir(), bootID: func() string { return *boot }, now: func() time.Time { return time.Unix(0, 0) }}
}

func mustRun(t *testing.T, s store, want int, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	if got := run(s, args, &out, &errOut); got != want {
		t.Fatalf("rpm-ostree %q: exit %d, want %d; stderr %q", args, got, want, errOut.String())
	}
	return out.String() + errOut.String()
}

func readDeployment(t *testing.T, path string) (Deployment, bool) {
	t.Helper()
	var d Deployment
	ok, err := readJSON(path, &d)
	if err != nil {
		t.Fatal(err)
	}
	return d, ok
}

// Each command line the daemon issues stages its change; only the next
// boot makes the staged deployment the booted one.
func TestStagesUntilTheNextBoot(t *testing.T) {
	boot := "boot-1"
	s := testStore(t, &boot)
	mustRun(t, s, 0, "rebase", "--experimental", "ostree-unverified-registry:example.com/os@sha256:2")
	mustRun(t, s, 0, "kargs", "--append-if-missing=a=1", "--append-if-missing=b")
	mustRun(t, s, 0, "kargs", "--delete-if-present=b", "--delete-if-present=absent", "--append-if-missing=a=1", "--append-if-missing=c")
	mustRun(t, s, 0, "update", "--install=usbguard", "--install=kerberos")
	mustRun(t, s, 0, "update", "--uninstall=kerberos")
	mustRun(t, s, 0, "override", "remove", "kernel", "kernel-core", "kernel-modules", "kernel-modules-core", "kernel-modules-extra",
		"--install=kernel-rt-core", "--install=kernel-rt-modules", "--install=kernel-rt-modules-extra")

	want := Deployment{Image: "example.com/os@sha256:2", Kargs: []string{"a=1", "c"}, Packages: []string{"usbguard"}, Kernel: "realtime"}
	staged, ok := readDeployment(t, s.path("staged.json"))
	if !ok || staged.StagedInBoot != "boot-1" {
		t.Fatalf("staged %+v (there: %t), want staged in boot-1", staged, ok)
	}
	staged.StagedAt, staged.StagedInBoot = "", ""
	if !reflect.DeepEqual(staged, want) {
		t.Fatalf("staged %+v, want %+v", staged, want)
	}
	if _, ok := readDeployment(t, s.path("booted.json")); ok {
		t.Fatal("booted.json written before a boot")
	}
	if st := mustRun(t, s, 0, "status"); !strings.Contains(st, "* booted image: \"\"") || !strings.Contains(st, "staged image: \"example.com/os@sha256:2\"") {
		t.Fatalf("status before the boot:\n%s", st)
	}

	boot = "boot-2"
	mustRun(t, s, 0, "standin-boot")
	booted, ok := readDeployment(t, s.path("booted.json"))
	if !ok || booted.BootedIn != "boot-2" || booted.Image != want.Image || booted.Kernel != "realtime" {
		t.Fatalf("booted %+v (there: %t), want the staged one, booted in boot-2", booted, ok)
	}
	if _, ok := readDeployment(t, s.path("staged.json")); ok {
		t.Fatal("staged.json left after the boot")
	}
	// A boot with nothing staged changes nothing.
	boot = "boot-3"
	mustRun(t, s, 0, "standin-boot")
	if again, _ := readDeployment(t, s.path("booted.json")); again.BootedIn != "boot-2" {
		t.Fatalf("a boot with nothing staged rewrote booted.json: %+v", again)
	}
	// The next change starts from the booted deployment.
	mustRun(t, s, 0, "override", "reset", "kernel", "kernel-core", "kernel-modules", "kernel-modules-core", "kernel-modules-extra")
	if next, _ := readDeployment(t, s.path("staged.json")); next.Kernel != "default" || next.Image != want.Image || !reflect.DeepEqual(next.Kargs, want.Kargs) {
		t.Fatalf("staged after a reset %+v, want the booted one with the default kernel", next)
	}
	var st struct{ Booted, Staged *Deployment }
	if err := json.Unmarshal([]byte(mustRun(t, s, 0, "status", "--json")), &st); err != nil || st.Booted == nil || st.Staged == nil {
		t.Fatalf("status --json: %+v, %v", st, err)
	}
}

// What ndp-daemon never asks is refused with exit 2 and a message, and
// changes nothing; every call, refused or not, is in the log.
func TestRefusesOtherCommandLines(t *testing.T) {
	boot := "boot-1"
	s := testStore(t, &boot)
	refused := [][]string{
		nil,
		{"upgrade"},
		{"rebase", "example.com/os:1"},
		{"rebase", "--experimental", "ostree-unverified-registry:"},
		{"rebase", "--experimental", "ostree-remote-image:example.com/os:1"},
		{"kargs"},
		{"kargs", "--append=a"},
		{"kargs", "--append-if-missing="},
		{"update"},
		{"update", "--install"},
		{"override", "remove", "kernel", "--install=kernel-rt-core"},
		{"override", "remove", "kernel", "kernel-core", "kernel-modules", "kernel-modules-core", "kernel-modules-extra", "--install=kernel-rt-core"},
		{"override", "reset", "kernel"},
		{"override", "replace", "kernel", "kernel-core", "kernel-modules", "kernel-modules-core", "kernel-modules-extra"},
		{"status", "--verbose"},
	}
	for _, args := range refused {
		if out := mustRun(t, s, 2, args...); !strings.Contains(out, "rpm-ostree (stand-in): usage: ") {
			t.Errorf("%q: message %q", args, out)
		}
	}
	if _, ok := readDeployment(t, s.path("staged.json")); ok {
		t.Fatal("a refused command staged something")
	}
	b, err := os.ReadFile(s.path("calls"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != len(refused) {
		t.Fatalf("%d calls logged, want %d", len(lines), len(refused))
	}
	var c Call
	if err := json.Unmarshal([]byte(lines[1]), &c); err != nil || c.Boot != "boot-1" || !reflect.DeepEqual(c.Argv, []string{"upgrade"}) || c.Error == "" {
		t.Fatalf("second call %+v (%v), want upgrade in boot-1 with its error", c, err)
	}
}

// The daemon's own OS updater, chrooted into a root holding the stand-in
// as /usr/bin/rpm-ostree, as in make cluster's worker VMs: every command
// line it issues for a change of each kind is accepted and staged.
func TestDaemonRpmOstreeThroughAChroot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chroot needs root")
	}
	root := t.TempDir()
	bin := filepath.Join(root, "usr", "bin", "rpm-ostree")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	from := osupdate.Config{KernelArguments: []string{"old=1"}, Extensions: []string{"kerberos"}, KernelType: "default"}
	to := osupdate.Config{OSImageURL: "example.com/os@sha256:2", KernelArguments: []string{"a=1"}, Extensions: []string{"usbguard"}, KernelType: "64k-pages"}
	if _, err := (osupdate.RpmOstree{Runner: osupdate.HostRunner{Root: root}}).Apply(context.Background(), from, to); err != nil {
		t.Fatal(err)
	}
	staged, ok := readDeployment(t, filepath.Join(root, DefaultDir, "staged.json"))
	if !ok || staged.Image != to.OSImageURL || !reflect.DeepEqual(staged.Kargs, to.KernelArguments) ||
		!reflect.DeepEqual(staged.Packages, to.Extensions) || staged.Kernel != "64k-pages" {
		t.Fatalf("staged %+v (there: %t), want %+v", staged, ok, to)
	}
	b, err := os.ReadFile(filepath.Join(root, DefaultDir, "calls"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n != 4 || strings.Contains(string(b), `"error"`) {
		t.Fatalf("calls (want 4: rebase, kargs, update, override, none refused):\n%s", b)
	}
	// Back to the default kernel: override reset.
	_, err = (osupdate.RpmOstree{Runner: osupdate.HostRunner{Root: root}}).Apply(context.Background(), to, osupdate.Config{KernelType: "default", Extensions: []string{"usbguard"}, KernelArguments: []string{"a=1"}, OSImageURL: "example.com/os@sha256:2"})
	if err != nil {
		t.Fatalf("back to the default kernel: %v", err)
	}
	if _, err := (osupdate.RpmOstree{Runner: osupdate.HostRunner{Root: filepath.Join(root, "nowhere")}}).Apply(context.Background(), from, to); err == nil || !strings.Contains(err.Error(), "rpm-ostree rebase") {
		t.Fatalf("a root without rpm-ostree: %v, want an error naming the command", err)
	}
}
