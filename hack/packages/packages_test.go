// Package packages tests hack/packages.sh, which make test, make cluster and
// make local-cluster run before building anything: it is run with a PATH of
// stub commands (apt-get records what it is asked), files under a fake root
// (NDP_PACKAGES_FS) and a stand-in user id (NDP_PACKAGES_EUID), so nothing is
// installed and the host's own packages do not matter.
package packages

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The commands and files of every profile (cluster with its worker VMs).
var (
	allCommands = []string{"make", "git", "systemctl", "unshare", "containerd", "containerd-shim-runc-v2", "ctr", "runc",
		"iptables", "ip", "nsenter", "qemu-system-x86_64", "qemu-img", "debootstrap", "mkfs.ext4", "socat", "gcc",
		"prometheus", "promtool", "prometheus-alertmanager", "prometheus-node-exporter", "curl"}
	allFiles = []string{"/lib/systemd/systemd", "/usr/lib/cni/bridge"}
)

// machine is a fake machine: what is installed, whether it is Debian, the
// user, and what apt-get install provides.
type machine struct {
	absent   []string // commands and files (absolute) not there
	notRoot  bool
	noDebian bool
	// provides: what apt-get install puts in place (commands, or files when absolute).
	provides []string
	env      []string
}

type result struct {
	code           int
	stdout, stderr string
	apt            []string // apt-get's arguments, one call a line
	took           time.Duration
}

func run(t *testing.T, m machine, profiles ...string) result {
	t.Helper()
	script, err := filepath.Abs("../packages.sh")
	if err != nil {
		t.Fatal(err)
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal(err)
	}
	chmod, err := exec.LookPath("chmod")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path, fs, aptLog := filepath.Join(dir, "bin"), filepath.Join(dir, "fs"), filepath.Join(dir, "apt.log")
	write := func(p, content string, mode os.FileMode) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(path, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range allCommands {
		if !slices.Contains(m.absent, c) {
			write(filepath.Join(path, c), "#!/bin/sh\nexit 0\n", 0o755)
		}
	}
	for _, f := range allFiles {
		if !slices.Contains(m.absent, f) {
			write(filepath.Join(fs, f), "", 0o755)
		}
	}
	if !m.noDebian {
		write(filepath.Join(fs, "etc/debian_version"), "12.11\n", 0o644)
		// Records each call; install puts m.provides in place, as the packages would.
		var install strings.Builder
		for _, p := range m.provides {
			target := filepath.Join(path, p)
			if strings.HasPrefix(p, "/") {
				target = filepath.Join(fs, p)
				if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			install.WriteString("\t: >" + target + " && " + chmod + " 755 " + target + "\n")
		}
		write(filepath.Join(path, "apt-get"), "#!"+bash+"\necho \"$*\" >>"+aptLog+"\necho \"apt-get $*\"\n"+
			"if [[ $1 == install ]]; then\n\t:\n"+install.String()+"fi\n", 0o755)
	}
	euid := "0"
	if m.notRoot {
		euid = "1000"
	}
	cmd := exec.Command(bash, append([]string{script}, profiles...)...)
	cmd.Env = append([]string{"PATH=" + path, "NDP_PACKAGES_FS=" + fs, "NDP_PACKAGES_EUID=" + euid}, m.env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err = cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String(), took: time.Since(start)}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		r.code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(aptLog); err == nil {
		r.apt = strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	}
	return r
}

func TestNothingMissing(t *testing.T) {
	for _, profiles := range [][]string{{"test"}, {"cluster"}, {"local-cluster"}, {"cluster", "local-cluster", "test"}} {
		r := run(t, machine{}, profiles...)
		if r.code != 0 || r.apt != nil {
			t.Errorf("%v: exit %d, apt-get called %q; want 0 and no call\n%s%s", profiles, r.code, r.apt, r.stdout, r.stderr)
		}
		if !strings.Contains(r.stdout, "everything needed is installed") {
			t.Errorf("%v: stdout %q does not say everything is installed", profiles, r.stdout)
		}
	}
}

// Each profile needs only its own: what another needs may be absent.
func TestProfilesNeedTheirOwn(t *testing.T) {
	for _, c := range []struct {
		profile string
		absent  []string
		env     []string
	}{
		{"test", []string{"containerd", "ctr", "runc", "iptables", "ip", "nsenter", "debootstrap", "socat", "mkfs.ext4", "/usr/lib/cni/bridge",
			"prometheus-node-exporter"}, nil},
		{"local-cluster", []string{"containerd", "runc", "qemu-system-x86_64", "qemu-img", "debootstrap", "socat", "/usr/lib/cni/bridge", "gcc",
			"prometheus", "promtool", "prometheus-alertmanager", "prometheus-node-exporter", "curl"}, nil},
		// Asked for the smaller scenario: no worker VMs, so no qemu, debootstrap or socat.
		{"cluster", []string{"qemu-system-x86_64", "qemu-img", "debootstrap", "mkfs.ext4", "socat", "prometheus", "promtool", "prometheus-alertmanager",
			"prometheus-node-exporter", "curl"}, []string{"NDP_CLUSTER_VMS=0"}},
	} {
		r := run(t, machine{absent: c.absent, env: c.env}, c.profile)
		if r.code != 0 || r.apt != nil {
			t.Errorf("%s without %v: exit %d, apt-get called %q; want 0 and no call\n%s%s", c.profile, c.absent, r.code, r.apt, r.stdout, r.stderr)
		}
	}
	// By default the cluster has its worker VMs: qemu and the rest are needed.
	vmTools := []string{"qemu-system-x86_64", "qemu-img", "debootstrap", "mkfs.ext4", "socat"}
	r := run(t, machine{absent: vmTools, notRoot: true}, "cluster")
	for _, p := range []string{"qemu-system-x86", "qemu-utils", "debootstrap", "e2fsprogs", "socat"} {
		if r.code == 0 || !strings.Contains(r.stderr, p) {
			t.Errorf("cluster (worker VMs by default) without %s: exit %d, message does not name it:\n%s", p, r.code, r.stderr)
		}
	}
}

// As root on Debian: apt-get update, then one install of exactly the
// missing packages, each once, after saying what and why.
func TestInstallsAsRootOnDebian(t *testing.T) {
	absent := []string{"containerd", "ctr", "/usr/lib/cni/bridge", "socat", "unshare", "nsenter"}
	r := run(t, machine{absent: absent, provides: absent}, "cluster", "test")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	want := []string{"update", "install -y --no-install-recommends util-linux containerd containernetworking-plugins socat"}
	if !slices.Equal(r.apt, want) {
		t.Errorf("apt-get called with\n  %q\nwant\n  %q", r.apt, want)
	}
	said := strings.Index(r.stdout, "installing them with apt-get")
	called := strings.Index(r.stdout, "apt-get update")
	if said < 0 || called < said {
		t.Errorf("the packages are not named before apt-get runs:\n%s", r.stdout)
	}
	for _, why := range []string{"util-linux: unshare, nsenter", "containerd: containerd, ctr", "containernetworking-plugins: /usr/lib/cni/bridge", "socat: socat"} {
		if i := strings.Index(r.stdout, why); i < 0 || i > called {
			t.Errorf("%q is not said before apt-get runs:\n%s", why, r.stdout)
		}
	}
}

// make test's rollout-gate test needs Debian's Prometheus and Alertmanager:
// the test profile installs them, saying why.
func TestTestInstallsPrometheus(t *testing.T) {
	absent := []string{"prometheus", "prometheus-alertmanager"}
	r := run(t, machine{absent: absent, provides: absent}, "test")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if want := []string{"update", "install -y --no-install-recommends prometheus prometheus-alertmanager"}; !slices.Equal(r.apt, want) {
		t.Errorf("apt-get called with\n  %q\nwant\n  %q", r.apt, want)
	}
	for _, why := range []string{"prometheus: prometheus (the rollout gates' test, a real Prometheus)",
		"prometheus-alertmanager: prometheus-alertmanager (the rollout gates' and node silences' tests, a real Alertmanager)"} {
		if !strings.Contains(r.stdout, why) {
			t.Errorf("%q is not said:\n%s", why, r.stdout)
		}
	}
}

// apt-get succeeding without the commands showing up is a failure, named.
func TestStillMissingAfterInstall(t *testing.T) {
	r := run(t, machine{absent: []string{"runc"}}, "cluster")
	if r.code == 0 || !strings.Contains(r.stderr, "still missing after apt-get install") || !strings.Contains(r.stderr, "runc") {
		t.Errorf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
}

// Not root, or not Debian: no apt-get, a non-zero exit within a second, and
// one message naming every missing package.
func TestStopsWhereItCannotInstall(t *testing.T) {
	absent := []string{"git", "containerd", "runc", "/usr/lib/cni/bridge", "qemu-img", "/lib/systemd/systemd"}
	wantPkgs := []string{"git", "systemd", "containerd", "runc", "containernetworking-plugins", "qemu-utils"}
	for _, c := range []struct {
		name string
		m    machine
		say  string
	}{
		{"not root", machine{absent: absent, notRoot: true}, "apt-get update && apt-get install -y --no-install-recommends " + strings.Join(wantPkgs, " ")},
		{"not Debian", machine{absent: absent, noDebian: true}, "This is not Debian"},
	} {
		r := run(t, c.m, "cluster")
		if r.code == 0 || r.apt != nil {
			t.Errorf("%s: exit %d, apt-get called %q; want non-zero and no call", c.name, r.code, r.apt)
		}
		if r.took > time.Second {
			t.Errorf("%s: took %v, want under a second", c.name, r.took)
		}
		if r.stdout != "" {
			t.Errorf("%s: stdout %q, want the one message on stderr only", c.name, r.stdout)
		}
		if !strings.HasPrefix(r.stderr, "packages (make cluster): these Debian packages are missing: "+strings.Join(wantPkgs, " ")+"\n") {
			t.Errorf("%s: the message does not start by naming every missing package:\n%s", c.name, r.stderr)
		}
		if !strings.Contains(r.stderr, c.say) {
			t.Errorf("%s: the message does not say %q:\n%s", c.name, c.say, r.stderr)
		}
	}
}

// Nothing missing but not root: the goals need root, said at once.
func TestNeedsRoot(t *testing.T) {
	r := run(t, machine{notRoot: true}, "local-cluster")
	if r.code == 0 || !strings.Contains(r.stderr, "packages (make local-cluster): needs root") {
		t.Errorf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
}

func TestUnknownProfile(t *testing.T) {
	if r := run(t, machine{}, "clusters"); r.code != 2 || !strings.Contains(r.stderr, "usage") {
		t.Errorf("exit %d, stderr %q; want 2 and the usage", r.code, r.stderr)
	}
	if r := run(t, machine{}); r.code != 2 {
		t.Errorf("no profile: exit %d, want 2", r.code)
	}
}

// The Makefile runs the check before anything builds, make -j too: as a
// user who cannot install, make -j cluster test stops with the check's
// message and starts nothing else.
func TestMakeChecksFirst(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make") // make test itself needs make: hack/packages.sh checks it
	}
	for goal, want := range map[string]string{"cluster": "hack/packages.sh cluster", "test": "hack/packages.sh test",
		"local-cluster": "hack/packages.sh local-cluster"} {
		cmd := exec.Command("make", "-n", goal)
		cmd.Dir, cmd.Env = "../..", makeEnv()
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("make -n %s: %v", goal, err)
		}
		if first, _, _ := strings.Cut(string(out), "\n"); first != want {
			t.Errorf("make -n %s: first command %q, want %q", goal, first, want)
		}
	}
	cmd := exec.Command("make", "-j8", "cluster", "test", "VMS=0")
	cmd.Dir = "../.."
	cmd.Env = append(makeEnv(), "NDP_PACKAGES_EUID=1000")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("make -j8 cluster test as a non-root user succeeded:\n%s", out)
	}
	if !strings.HasPrefix(string(out), "packages (make cluster VMS=0, make test): ") || strings.Contains(string(out), "go build") ||
		strings.Contains(string(out), "build-control-plane") {
		t.Errorf("make -j8 cluster test did not stop at the check first:\n%s", out)
	}
}

// makeEnv is this process's environment without what an enclosing make
// (make test) passes down, so the make run here reads the Makefile afresh.
func makeEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "NDP_CLUSTER_VMS", "PACKAGE_PROFILES", "VMS":
			continue
		}
		env = append(env, kv)
	}
	return env
}
