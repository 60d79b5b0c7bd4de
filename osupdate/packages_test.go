package osupdate

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// Which hosts update their packages with which tool, and what a host
// without packages of its own says.
func TestPackageUpdater(t *testing.T) {
	debian := map[string]string{"etc/os-release": "ID=debian\n", "usr/bin/apt-get": "", "usr/bin/dpkg": ""}
	withFile := func(m map[string]string, k, v string) map[string]string {
		out := map[string]string{k: v}
		for a, b := range m {
			out[a] = b
		}
		return out
	}
	needReboot := "CURRENT_OP=UPDATE_STATUS_UPDATED_NEED_REBOOT\nNEW_VERSION=4081.2.1\n"
	for _, tc := range []struct {
		name   string
		named  Kind
		host   map[string]string
		reboot string // the outcome's RequestedBy, Flatcar's
		err    string
	}{
		{name: "debian", host: debian},
		{name: "a Debian host whose OS fields the rpm-ostree stand-in takes", host: withFile(debian, "etc/ndp/os-updater", "rpm-ostree\n")},
		{name: "flatcar", host: map[string]string{"etc/os-release": "ID=flatcar\n"}, reboot: "update_engine: Flatcar 4081.2.1 written to the other USR partition"},
		{name: "named flatcar", named: KindFlatcar, reboot: "update_engine: Flatcar 4081.2.1 written to the other USR partition"},
		{name: "coreos has none", host: map[string]string{"etc/os-release": "ID=rhcos\nVARIANT_ID=coreos\n", "run/ostree-booted": "", "usr/bin/rpm-ostree": ""},
			err: "this host's updater is rpm-ostree (ostree-booted CoreOS (ID=rhcos VARIANT_ID=coreos)), whose packages come with its OS image"},
		{name: "no updater", host: map[string]string{"etc/os-release": "ID=alpine\n"},
			err: `this host has no package updater: no OS updater for host ID="alpine"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := (&scripted{}).on("/usr/bin/update_engine_client -status", needReboot, nil)
			u := PackageUpdater{Root: t.TempDir(), Named: tc.named, Runner: r}
			for p, content := range tc.host {
				write(t, u.Root, p, content)
			}
			err := u.Check()
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Check: %v, want %q", err, tc.err)
				}
				if _, err := u.Apply(context.Background()); err == nil || len(r.calls) > 0 {
					t.Fatalf("Apply: %v after %q; want the refusal and no command", err, r.calls)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.reboot == "" {
				return // apt's command lines: TestAptApply
			}
			o, err := u.Apply(context.Background())
			if err != nil || !o.Reboot || strings.Join(o.RequestedBy, ",") != tc.reboot {
				t.Fatalf("Apply = %+v, %v; want a reboot requested by %q", o, err, tc.reboot)
			}
		})
	}
}

func TestOutcomeSummary(t *testing.T) {
	up := []PackageChange{{Name: "ndp-demo-kernel", From: "1", To: "2"}, {Name: "ndp-demo-svc", From: "1", To: "2"}}
	for _, tc := range []struct {
		o    Outcome
		want string
	}{
		{Outcome{}, "no package changed; no reboot and no restart needed"},
		{Outcome{Changes: up, Reboot: true, RequestedBy: []string{"ndp-demo-kernel"}},
			"2 package(s): ndp-demo-kernel 1 -> 2, ndp-demo-svc 1 -> 2; a reboot asked for by ndp-demo-kernel"},
		{Outcome{Changes: up[1:], Restart: []string{"ndp-demo.service"}},
			"1 package(s): ndp-demo-svc 1 -> 2; no reboot needed; restart ndp-demo.service (needrestart)"},
		{Outcome{Changes: slices.Repeat(up[:1], 12)}, "12 package(s): " + strings.Repeat("ndp-demo-kernel 1 -> 2, ", 10) + "and 2 more; no reboot and no restart needed"},
	} {
		if got := tc.o.Summary(); got != tc.want {
			t.Errorf("Summary() = %q, want %q", got, tc.want)
		}
	}
}

// Host commands find the host's tools whatever the daemon's own PATH
// (its image sets PATH=/): dpkg and needrestart call others by name.
func TestHostRunnerSetsTheHostsPath(t *testing.T) {
	t.Setenv("PATH", "/")
	out, err := HostRunner{}.Run(context.Background(), Command{Args: []string{"/bin/sh", "-c", "echo $PATH"}})
	if err != nil || !strings.Contains(string(out), "/usr/sbin:/usr/bin:/sbin:/bin") {
		t.Fatalf("PATH in a host command: %q, %v", out, err)
	}
}
