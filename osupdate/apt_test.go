package osupdate

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const simulation = `NOTE: This is only a simulation!
Reading package lists...
Building dependency tree...
Reading state information...
Calculating upgrade...
The following packages will be upgraded:
  libssl3 openssl
2 upgraded, 1 newly installed, 1 to remove and 0 not upgraded.
Inst libssl3 [3.0.11-1~deb12u1] (3.0.13-1~deb12u1 Debian-Security:12/stable-security [amd64])
Inst openssl [3.0.11-1~deb12u1] (3.0.13-1~deb12u1 Debian-Security:12/stable-security [amd64])
Inst linux-image-6.1.0-18-amd64 (6.1.76-1 Debian:12.5/stable [amd64])
Remv oldpkg [1.0]
Conf libssl3 (3.0.13-1~deb12u1 Debian-Security:12/stable-security [amd64])
Conf openssl (3.0.13-1~deb12u1 Debian-Security:12/stable-security [amd64])
`

func TestParseAptSimulation(t *testing.T) {
	got, err := ParseAptSimulation([]byte(simulation))
	if err != nil {
		t.Fatal(err)
	}
	want := []PackageChange{
		{Name: "libssl3", From: "3.0.11-1~deb12u1", To: "3.0.13-1~deb12u1"},
		{Name: "openssl", From: "3.0.11-1~deb12u1", To: "3.0.13-1~deb12u1"},
		{Name: "linux-image-6.1.0-18-amd64", To: "6.1.76-1"},
		{Name: "oldpkg", From: "1.0"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("changes (-want +got):\n%s", d)
	}
	if s := got[0].String() + "; " + got[2].String() + "; " + got[3].String(); s != "libssl3 3.0.11-1~deb12u1 -> 3.0.13-1~deb12u1; linux-image-6.1.0-18-amd64 6.1.76-1 (new); oldpkg 1.0 (removed)" {
		t.Errorf("String: %s", s)
	}
	for _, bad := range []string{"Inst\n", "Inst foo\n", "Inst foo [1.0]\n", "Inst foo [1.0] 2.0\n", "Remv\n"} {
		if _, err := ParseAptSimulation([]byte("Reading...\n" + bad)); err == nil || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("%q: error %v, want one naming line 2", bad, err)
		}
	}
}

func TestParseDpkgStatus(t *testing.T) {
	out := "ii \tapt\t2.6.1\niF \tchrony\t4.3-2+deb12u1\nrc \told\t1.0\niU \tlibfoo:i386\t2.0\niiR\tbroken\t1\nhi \theld\t3\n"
	pkgs, err := ParseDpkgStatus([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) != 6 || pkgs[1] != (DpkgPackage{Name: "chrony", Version: "4.3-2+deb12u1", Want: 'i', Status: 'F', Err: ' '}) {
		t.Errorf("packages: %+v", pkgs)
	}
	if got, want := Interrupted(pkgs), []string{"chrony", "libfoo:i386", "broken"}; !slices.Equal(got, want) {
		t.Errorf("Interrupted = %q, want %q", got, want)
	}
	for _, bad := range []string{"ii apt 2.6.1", "xi \tapt\t1", "iX \tapt\t1", "ii \t\t1", "iiZ\tapt\t1"} {
		if _, err := ParseDpkgStatus([]byte("ii \tok\t1\n" + bad + "\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("%q: error %v, want one naming line 2", bad, err)
		}
	}
}

func TestParseNeedrestart(t *testing.T) {
	out := `NEEDRESTART-VER: 3.6
NEEDRESTART-KCUR: 6.1.0-17-amd64
NEEDRESTART-KEXP: 6.1.0-18-amd64
NEEDRESTART-KSTA: 3
NEEDRESTART-UCSTA: 1
NEEDRESTART-SVC: ssh.service
NEEDRESTART-SVC: chrony.service
NEEDRESTART-SVC: chrony.service
NEEDRESTART-CONT: LXC web1
NEEDRESTART-SESS: root @ session #28017
Failed to check for processor microcode upgrades.
`
	got, err := ParseNeedrestart([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	want := Needrestart{Version: "3.6", KernelCurrent: "6.1.0-17-amd64", KernelExpected: "6.1.0-18-amd64", KernelStatus: KernelVersionUpgrade,
		MicrocodeStatus: MicrocodeCurrent, Services: []string{"chrony.service", "ssh.service"}, Containers: []string{"LXC web1"}, Sessions: []string{"root @ session #28017"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("report (-want +got):\n%s", d)
	}
	for _, bad := range []string{"NEEDRESTART-KSTA: three", "NEEDRESTART-SVC:", "NEEDRESTART-UCSTA: -1", "NEEDRESTART-VER"} {
		if _, err := ParseNeedrestart([]byte("NEEDRESTART-VER: 3.6\n" + bad)); err == nil || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("%q: error %v, want one naming line 2", bad, err)
		}
	}
}

func TestAptOutcome(t *testing.T) {
	svc := []string{"chrony.service"}
	for _, tc := range []struct {
		name     string
		required bool
		pkgs     []string
		nr       Needrestart
		want     Outcome
	}{
		{name: "nothing asked", nr: Needrestart{KernelStatus: KernelCurrent}, want: Outcome{}},
		{name: "services only: restarted, no reboot", nr: Needrestart{KernelStatus: KernelCurrent, Services: svc}, want: Outcome{Restart: svc}},
		{name: "a package asked", required: true, pkgs: []string{"linux-image-6.1.0-18-amd64"}, nr: Needrestart{Services: svc},
			want: Outcome{Reboot: true, RequestedBy: []string{"linux-image-6.1.0-18-amd64"}, Restart: svc}},
		{name: "asked without naming a package", required: true, want: Outcome{Reboot: true, RequestedBy: []string{"/var/run/reboot-required"}}},
		{name: "a newer kernel installed", nr: Needrestart{KernelStatus: KernelABIUpgrade, KernelCurrent: "a", KernelExpected: "b"},
			want: Outcome{Reboot: true, RequestedBy: []string{"kernel a running, b installed"}}},
		{name: "microcode", nr: Needrestart{MicrocodeStatus: MicrocodeObsolete}, want: Outcome{Reboot: true, RequestedBy: []string{"processor microcode updated"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, AptOutcome(tc.required, tc.pkgs, tc.nr)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
	if got := ParseRebootRequiredPkgs([]byte("libc6\nlinux-image-amd64\n\nlibc6\n")); !slices.Equal(got, []string{"libc6", "linux-image-amd64"}) {
		t.Errorf("ParseRebootRequiredPkgs = %q", got)
	}
}

// The command lines Apply runs, in order, against the answers a Debian
// host gives.
func TestAptApply(t *testing.T) {
	const (
		query    = "/usr/bin/dpkg-query -W -f ${db:Status-Abbrev}\t${binary:Package}\t${Version}\n"
		lock     = "-o DPkg::Lock::Timeout=30"
		update   = "/usr/bin/apt-get " + lock + " update"
		upgrade  = "/usr/bin/apt-get " + lock + " -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold --allow-downgrades -y"
		simulate = upgrade + " --simulate dist-upgrade"
		install  = upgrade + " dist-upgrade"
		nr       = "/usr/sbin/needrestart -b -r l"
		env      = "DEBIAN_FRONTEND=noninteractive NEEDRESTART_SUSPEND=1 "
	)
	for _, tc := range []struct {
		name        string
		dpkg        string
		sim         string
		failInstall error
		needrestart string // "" where it is not installed
		pkgs        string // reboot-required.pkgs; "-" for no reboot-required
		wantCalls   []string
		want        Outcome
		err         string
	}{
		{name: "nothing to upgrade", dpkg: "ii \tapt\t2.6.1\n", sim: "0 upgraded, 0 newly installed\n", pkgs: "-",
			wantCalls: []string{query, env + update, env + simulate}},
		{name: "a library: its services restarted", dpkg: "ii \tlibssl3\t3.0.11\n", sim: simulation, pkgs: "-",
			needrestart: "NEEDRESTART-VER: 3.6\nNEEDRESTART-KSTA: 1\nNEEDRESTART-SVC: chrony.service\n",
			wantCalls:   []string{query, env + update, env + simulate, env + install, nr},
			want:        Outcome{Restart: []string{"chrony.service"}}},
		{name: "a kernel: a reboot, the package named", dpkg: "ii \tapt\t2.6.1\n", sim: simulation, pkgs: "linux-image-6.1.0-18-amd64\n",
			wantCalls: []string{query, env + update, env + simulate, env + install},
			want:      Outcome{Reboot: true, RequestedBy: []string{"linux-image-6.1.0-18-amd64"}}},
		{name: "a dpkg run left half done is finished first", dpkg: "ii \tapt\t2.6.1\niF \tchrony\t4.3\n", sim: "", pkgs: "-",
			wantCalls: []string{query, env + "/usr/bin/dpkg --configure -a --force-confdef --force-confold", env + update, env + simulate}},
		{name: "dpkg's lock held past the timeout", dpkg: "ii \tapt\t2.6.1\n", sim: simulation, pkgs: "-",
			failInstall: errors.New("E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 812 (unattended-upgr)"),
			wantCalls:   []string{query, env + update, env + simulate, env + install}, err: "held by process 812 (unattended-upgr)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			r := (&scripted{}).on(query, tc.dpkg, nil).
				on(update, "", nil).on(simulate, tc.sim, nil).on(install, "", tc.failInstall).
				on("/usr/bin/dpkg --configure -a --force-confdef --force-confold", "", nil)
			if tc.needrestart != "" {
				write(t, root, "usr/sbin/needrestart", "")
				r.on(nr, tc.needrestart, nil)
			}
			// Debian's /var/run is an absolute link to /run: it resolves
			// inside the host root.
			if err := os.MkdirAll(filepath.Join(root, "var"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("/run", filepath.Join(root, "var", "run")); err != nil {
				t.Fatal(err)
			}
			if tc.pkgs != "-" {
				write(t, root, "run/reboot-required", "*** System restart required ***\n")
				write(t, root, "run/reboot-required.pkgs", tc.pkgs)
			}
			a := Apt{Runner: r, Root: root, LockTimeout: 30 * time.Second}
			got, err := a.Apply(context.Background())
			if d := cmp.Diff(tc.wantCalls, r.calls); d != "" {
				t.Errorf("commands (-want +got):\n%s", d)
			}
			if wantError(t, err, tc.err) {
				return
			}
			got.Changes = nil
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("outcome (-want +got):\n%s", d)
			}
		})
	}
	if got := (Apt{}).Steps()[1].String(); got != "DEBIAN_FRONTEND=noninteractive NEEDRESTART_SUSPEND=1 /usr/bin/apt-get -o DPkg::Lock::Timeout=600 update" {
		t.Errorf("the default lock timeout: %s", got)
	}
}
