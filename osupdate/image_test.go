package osupdate

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// rpm-ostree's command lines for each kind of change, in the order the
// MCO's daemon runs them: image, kernel arguments, extensions, kernel type.
func TestRpmOstreeSteps(t *testing.T) {
	const ro = "/usr/bin/rpm-ostree "
	base := Config{OSImageURL: "quay.io/os@sha256:a", KernelArguments: []string{"a=1", "b"}, Extensions: []string{"usbguard"}}
	for _, tc := range []struct {
		name string
		to   func(c Config) Config
		want []string
	}{
		{name: "nothing", to: func(c Config) Config { return c }},
		{name: "kernel type default spelled out", to: func(c Config) Config { c.KernelType = "default"; return c }},
		{name: "image", to: func(c Config) Config { c.OSImageURL = "quay.io/os@sha256:b"; return c },
			want: []string{ro + "rebase --experimental ostree-unverified-registry:quay.io/os@sha256:b"}},
		{name: "kernel arguments reordered", to: func(c Config) Config { c.KernelArguments = []string{"b", "a=1"}; return c },
			want: []string{ro + "kargs --delete-if-present=a=1 --delete-if-present=b --append-if-missing=b --append-if-missing=a=1"}},
		{name: "extensions", to: func(c Config) Config { c.Extensions = []string{"kerberos", "kernel-devel"}; return c },
			want: []string{ro + "update --install=kerberos --install=kernel-devel --uninstall=usbguard"}},
		{name: "realtime", to: func(c Config) Config { c.KernelType = "realtime"; return c },
			want: []string{ro + "override remove kernel kernel-core kernel-modules kernel-modules-core kernel-modules-extra --install=kernel-rt-core --install=kernel-rt-modules --install=kernel-rt-modules-extra"}},
		{name: "everything", to: func(Config) Config {
			return Config{OSImageURL: "quay.io/os@sha256:c", KernelType: "64k-pages"}
		}, want: []string{
			ro + "rebase --experimental ostree-unverified-registry:quay.io/os@sha256:c",
			ro + "kargs --delete-if-present=a=1 --delete-if-present=b",
			ro + "update --uninstall=usbguard",
			ro + "override remove kernel kernel-core kernel-modules kernel-modules-core kernel-modules-extra --install=kernel-64k-core --install=kernel-64k-modules --install=kernel-64k-modules-extra",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &scripted{}
			for _, w := range tc.want {
				r.on(w, "", nil)
			}
			o, err := RpmOstree{Runner: r}.Apply(context.Background(), base, tc.to(base))
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, r.calls); d != "" {
				t.Errorf("commands (-want +got):\n%s", d)
			}
			if o.Reboot != (len(tc.want) > 0) {
				t.Errorf("reboot %v after %d commands: only a reboot finalizes what rpm-ostree stages", o.Reboot, len(tc.want))
			}
		})
	}
	back := Config{KernelType: "realtime"}
	if got := (RpmOstree{}).Steps(back, Config{}); len(got) != 1 || !strings.HasPrefix(got[0].String(), ro+"override reset kernel ") {
		t.Errorf("back to the default kernel: %v", got)
	}
}

const rpmOstreeStatus = `{
  "deployments": [
    {"id": "rhcos-b", "osname": "rhcos", "checksum": "bbb", "version": "417.94.202410", "booted": false, "staged": true,
     "container-image-reference": "ostree-unverified-registry:quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:bbb", "requested-packages": ["usbguard"]},
    {"id": "rhcos-a", "osname": "rhcos", "checksum": "aaa", "version": "417.94.202409", "booted": true, "staged": false,
     "container-image-reference": "ostree-unverified-registry:quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:aaa"}
  ],
  "transaction": null, "cached-update": null, "update-driver": null
}`

func TestParseRpmOstreeStatus(t *testing.T) {
	s, err := ParseRpmOstreeStatus([]byte(rpmOstreeStatus))
	if err != nil {
		t.Fatal(err)
	}
	if b, st := s.Booted(), s.Staged(); b == nil || b.ID != "rhcos-a" || st == nil || st.ID != "rhcos-b" ||
		st.Image() != "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:bbb" || st.RequestedPackages[0] != "usbguard" {
		t.Errorf("booted %+v, staged %+v", b, st)
	}
	for in, want := range map[string]string{
		`{"deployments": [{"id": "a", "booted": false}]}`: "no booted deployment among 1",
		`{"deployments": `: "unexpected end of JSON input",
	} {
		if _, err := ParseRpmOstreeStatus([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", in, err, want)
		}
	}
}

func TestParseUpdateEngineStatus(t *testing.T) {
	out := "I1129 12:00:00.000 update_engine_client.cc:245] Querying Update Engine status...\nLAST_CHECKED_TIME=1732880000\nPROGRESS=1.000000\nCURRENT_OP=UPDATE_STATUS_UPDATED_NEED_REBOOT\nNEW_VERSION=4081.2.1\nNEW_SIZE=465810563\n"
	got, err := ParseUpdateEngineStatus([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	if want := (UpdateEngineStatus{Op: UpdateEngineNeedReboot, NewVersion: "4081.2.1", Progress: 1, NewSize: 465810563, LastChecked: 1732880000}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	for in, want := range map[string]string{
		"PROGRESS=0.5\n":    "no CURRENT_OP",
		"CURRENT_OP=IDLE\n": `line 1: CURRENT_OP "IDLE"`,
		"CURRENT_OP=UPDATE_STATUS_IDLE\nNEW_SIZE=big\n": `line 2: NEW_SIZE="big": not a number`,
	} {
		if _, err := ParseUpdateEngineStatus([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", in, err, want)
		}
	}
}

// update_engine through a download to a written update, one already
// written, no update offered, and a failure.
func TestFlatcarApply(t *testing.T) {
	const (
		check  = "/usr/bin/update_engine_client -check_for_update"
		status = "/usr/bin/update_engine_client -status"
	)
	st := func(op string) string { return "CURRENT_OP=" + op + "\nNEW_VERSION=4081.2.1\nPROGRESS=0.5\n" }
	for _, tc := range []struct {
		name     string
		statuses []string
		want     []string
		reboot   bool
		err      string
	}{
		{name: "downloaded, then written", statuses: []string{st("UPDATE_STATUS_IDLE"), st("UPDATE_STATUS_DOWNLOADING"), st("UPDATE_STATUS_FINALIZING"), st(UpdateEngineNeedReboot)},
			want: []string{status, check, status, status, status}, reboot: true},
		{name: "already written (resumed after a crash)", statuses: []string{st(UpdateEngineNeedReboot), st(UpdateEngineNeedReboot)},
			want: []string{status, status}, reboot: true},
		{name: "nothing offered", statuses: []string{st("UPDATE_STATUS_IDLE"), st("UPDATE_STATUS_CHECKING_FOR_UPDATE"), st("UPDATE_STATUS_IDLE")},
			want: []string{status, check, status, status}},
		{name: "failed", statuses: []string{st("UPDATE_STATUS_IDLE"), st(UpdateEngineReportingError)},
			want: []string{status, check, status}, err: UpdateEngineReportingError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := (&scripted{}).on(check, "", nil)
			for _, s := range tc.statuses {
				r.on(status, s, nil)
			}
			f := Flatcar{Runner: r, Wait: func(context.Context) error { return nil }}
			o, err := f.Apply(context.Background())
			if d := cmp.Diff(tc.want, r.calls); d != "" {
				t.Errorf("commands (-want +got):\n%s", d)
			}
			if wantError(t, err, tc.err) {
				return
			}
			if o.Reboot != tc.reboot {
				t.Fatalf("outcome %+v, %v; want reboot %v", o, err, tc.reboot)
			}
		})
	}
	stop := errors.New("context ended")
	f := Flatcar{Runner: (&scripted{}).on(check, "", nil).on(status, st("UPDATE_STATUS_DOWNLOADING"), nil), Wait: func(context.Context) error { return stop }}
	if _, err := f.Apply(context.Background()); !errors.Is(err, stop) || !strings.Contains(err.Error(), "progress 50%") {
		t.Errorf("a wait cut short: %v", err)
	}
}

func bootcStatus(staged string) string {
	if staged == "" {
		staged = "null"
	}
	return `{"apiVersion": "org.containers.bootc/v1", "kind": "BootcHost", "metadata": {"name": "host"},
  "spec": {"image": {"image": "quay.io/example/node:1", "transport": "registry"}},
  "status": {"staged": ` + staged + `,
    "booted": {"image": {"image": {"image": "quay.io/example/node:1", "transport": "registry"}, "version": "1", "imageDigest": "sha256:aaa"},
      "cachedUpdate": null, "incompatible": false, "pinned": false, "softRebootCapable": false, "store": "ostreeContainer"},
    "rollback": null, "rollbackQueued": false, "type": "bootcHost"}}`
}

func staged(image string, soft bool) string {
	s := "false"
	if soft {
		s = "true"
	}
	return `{"image": {"image": {"image": "` + image + `", "transport": "registry"}, "version": "2", "imageDigest": "sha256:bbb"}, "softRebootCapable": ` + s + `}`
}

func TestBootcApply(t *testing.T) {
	const (
		status = "/usr/bin/bootc status --json"
		other  = "quay.io/example/node:2"
	)
	for _, tc := range []struct {
		name, to, after string
		want            []string
		outcome         Outcome
	}{
		{name: "another image, a new kernel: reboot", to: other, after: staged(other, false),
			want:    []string{status, "/usr/bin/bootc switch --retain " + other, status},
			outcome: Outcome{Reboot: true, RequestedBy: []string{"bootc: " + other + " sha256:bbb staged"}}},
		{name: "another image, the same kernel: soft reboot", to: other, after: staged(other, true),
			want:    []string{status, "/usr/bin/bootc switch --retain " + other, status},
			outcome: Outcome{SoftReboot: true, RequestedBy: []string{"bootc: " + other + " sha256:bbb staged"}}},
		{name: "the same reference: upgrade, nothing newer", to: "quay.io/example/node:1",
			want: []string{status, "/usr/bin/bootc upgrade", status}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := (&scripted{}).on(status, bootcStatus(""), nil).on(status, bootcStatus(tc.after), nil).
				on("/usr/bin/bootc switch --retain "+other, "", nil).on("/usr/bin/bootc upgrade", "", nil)
			o, err := Bootc{Runner: r}.Apply(context.Background(), tc.to)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, r.calls); d != "" {
				t.Errorf("commands (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.outcome, o); d != "" {
				t.Errorf("outcome (-want +got):\n%s", d)
			}
		})
	}
	for in, want := range map[string]string{
		`{"apiVersion": "org.containers.bootc/v1", "kind": "BootcHost", "status": {"booted": null}}`: "no booted deployment",
		`{"kind": "Host"}`: `kind "Host", not BootcHost`,
		`[`:                "unexpected end of JSON input",
	} {
		if _, err := ParseBootcStatus([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", in, err, want)
		}
	}
}
