package osupdate

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseOSRelease(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     map[string]string
		err      string
	}{
		{name: "Debian", in: "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nNAME=\"Debian GNU/Linux\"\nVERSION_ID=\"12\"\nID=debian\n",
			want: map[string]string{"PRETTY_NAME": "Debian GNU/Linux 12 (bookworm)", "NAME": "Debian GNU/Linux", "VERSION_ID": "12", "ID": "debian"}},
		{name: "comments, blanks, single quotes, escapes", in: "# a comment\n\nID=rhcos\nID_LIKE='rhel fedora'\nNAME=\"a \\\"b\\\" \\$c\"\n",
			want: map[string]string{"ID": "rhcos", "ID_LIKE": "rhel fedora", "NAME": `a "b" $c`}},
		{name: "not an assignment", in: "ID=debian\nbookworm\n", err: "line 2: not KEY=value"},
		{name: "unquoted space", in: "NAME=Debian GNU\n", err: "line 1: NAME: value \"Debian GNU\" needs quoting"},
		{name: "unescaped quote", in: "NAME=\"a\"b\"\n", err: "line 1: NAME: unescaped"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseOSRelease(strings.NewReader(tc.in))
			if wantError(t, err, tc.err) {
				return
			}
			if !maps.Equal(got, tc.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

// Each kind of host by its files alone.
func TestDetect(t *testing.T) {
	for _, tc := range []struct {
		name      string
		osRelease string
		libOnly   bool // os-release only in /usr/lib
		files     []string
		want      Kind
		err       string
	}{
		{name: "Debian", osRelease: "ID=debian\n", files: []string{"usr/bin/apt-get", "usr/bin/dpkg"}, want: KindApt},
		{name: "Ubuntu", osRelease: "ID=ubuntu\nID_LIKE=debian\n", files: []string{"usr/bin/apt-get", "usr/bin/dpkg"}, want: KindApt},
		{name: "a Debian derivative", osRelease: "ID=raspbian\nID_LIKE=debian\n", files: []string{"usr/bin/apt-get", "usr/bin/dpkg"}, want: KindApt},
		{name: "Debian without apt", osRelease: "ID=debian\n", files: []string{"usr/bin/dpkg"}, err: "no /usr/bin/apt-get"},
		{name: "Flatcar", osRelease: "ID=flatcar\nID_LIKE=coreos\n", want: KindFlatcar},
		{name: "RHEL CoreOS with bootc too", osRelease: "ID=rhcos\nVARIANT_ID=coreos\n", files: []string{"run/ostree-booted", "usr/bin/rpm-ostree", "usr/bin/bootc"}, want: KindRpmOstree},
		{name: "Fedora CoreOS", osRelease: "ID=fedora\nVARIANT_ID=coreos\n", libOnly: true, files: []string{"run/ostree-booted", "usr/bin/rpm-ostree"}, want: KindRpmOstree},
		{name: "a bootc image", osRelease: "ID=centos\nID_LIKE=\"rhel fedora\"\n", files: []string{"run/ostree-booted", "usr/bin/rpm-ostree", "usr/bin/bootc"}, want: KindBootc},
		{name: "ostree without bootc", osRelease: "ID=fedora\nVARIANT_ID=iot\n", files: []string{"run/ostree-booted", "usr/bin/rpm-ostree"}, want: KindRpmOstree},
		{name: "ostree without tools", osRelease: "ID=fedora\n", files: []string{"run/ostree-booted"}, err: "neither rpm-ostree nor bootc"},
		{name: "package-mode Fedora", osRelease: "ID=fedora\n", files: []string{"usr/bin/rpm-ostree"}, err: `no OS updater for host ID="fedora"`},
		{name: "no os-release", err: "neither /etc/os-release nor /usr/lib/os-release"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if tc.osRelease != "" {
				p := "etc/os-release"
				if tc.libOnly {
					p = "usr/lib/os-release"
				}
				write(t, root, p, tc.osRelease)
			}
			for _, f := range tc.files {
				write(t, root, f, "")
			}
			d, err := Detect(root)
			if wantError(t, err, tc.err) {
				return
			}
			if d.Kind != tc.want || d.Reason == "" {
				t.Fatalf("Detect = %+v, %v; want %s with a reason", d, err, tc.want)
			}
		})
	}
}

func TestParseKind(t *testing.T) {
	for in, want := range map[string]Kind{"": "", "auto": "", "apt": KindApt, "bootc": KindBootc, "flatcar": KindFlatcar, "rpm-ostree": KindRpmOstree} {
		if got, err := ParseKind(in); err != nil || got != want {
			t.Errorf("ParseKind(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseKind("yum"); err == nil || !strings.Contains(err.Error(), `"yum"`) {
		t.Errorf("ParseKind(yum): %v", err)
	}
}

func write(t *testing.T, root, p, content string) {
	t.Helper()
	p = filepath.Join(root, p)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
}
