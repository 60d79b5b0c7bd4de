package osupdate

import (
	"context"
	"strings"
	"testing"
)

// Which host applies which OS change, and what the refusal says.
func TestConfigUpdater(t *testing.T) {
	base := Config{OSImageURL: "quay.io/os:1", KernelArguments: []string{"a"}}
	image := base
	image.OSImageURL = "quay.io/os:2"
	kargs := base
	kargs.KernelArguments = []string{"a", "b"}
	for _, tc := range []struct {
		name  string
		u     ConfigUpdater
		host  map[string]string // the host's files, for the updater Choose finds
		to    Config
		calls []string
		err   string
	}{
		{name: "rpm-ostree: an image", u: ConfigUpdater{Named: KindRpmOstree}, to: image,
			calls: []string{"/usr/bin/rpm-ostree rebase --experimental ostree-unverified-registry:quay.io/os:2"}},
		{name: "bootc: an image", u: ConfigUpdater{Named: KindBootc}, to: image,
			calls: []string{"/usr/bin/bootc status --json", "/usr/bin/bootc switch --retain quay.io/os:2", "/usr/bin/bootc status --json"}},
		{name: "bootc: kernel arguments refused", u: ConfigUpdater{Named: KindBootc}, to: kargs,
			err: "the config changes kernelArguments: a bootc host (--os-updater=bootc) takes them from its image"},
		{name: "apt: an image refused", host: map[string]string{"etc/os-release": "ID=debian\n", "usr/bin/apt-get": "", "usr/bin/dpkg": ""}, to: image,
			err: "the config changes osImageURL, which the apt updater of this host (/etc/os-release ID=debian (dpkg and apt-get present)) cannot apply"},
		{name: "the host names rpm-ostree", host: map[string]string{"etc/os-release": "ID=debian\n", "usr/bin/apt-get": "", "usr/bin/dpkg": "", "etc/ndp/os-updater": "rpm-ostree\n"}, to: image,
			calls: []string{"/usr/bin/rpm-ostree rebase --experimental ostree-unverified-registry:quay.io/os:2"}},
		{name: "the host names an unknown updater", host: map[string]string{"etc/ndp/os-updater": "yum\n"}, to: image,
			err: `/etc/ndp/os-updater: unknown OS updater "yum"`},
		{name: "apt: no OS change, nothing run", u: ConfigUpdater{Named: KindApt}, to: base},
		{name: "kernel type default spelled out is no change", u: ConfigUpdater{Named: KindFlatcar}, to: Config{OSImageURL: base.OSImageURL, KernelArguments: base.KernelArguments, KernelType: "default"}},
		{name: "no updater", host: map[string]string{"etc/os-release": "ID=alpine\n"}, to: kargs,
			err: `the config changes kernelArguments, but this host has no OS updater: no OS updater for host ID="alpine"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := (&scripted{}).on("/usr/bin/rpm-ostree rebase --experimental ostree-unverified-registry:quay.io/os:2", "", nil).
				on("/usr/bin/bootc status --json", bootcStatus(""), nil).on("/usr/bin/bootc status --json", bootcStatus(staged("quay.io/os:2", false)), nil).
				on("/usr/bin/bootc switch --retain quay.io/os:2", "", nil)
			tc.u.Runner, tc.u.Root = r, t.TempDir()
			for p, content := range tc.host {
				write(t, tc.u.Root, p, content)
			}
			checkErr := tc.u.Check(base, tc.to)
			o, err := tc.u.Apply(context.Background(), base, tc.to)
			if tc.err != "" {
				if checkErr == nil || err == nil || !strings.Contains(err.Error(), tc.err) || len(r.calls) > 0 {
					t.Fatalf("Check %v, Apply %v after %q; want %q and no command", checkErr, err, r.calls, tc.err)
				}
				return
			}
			if checkErr != nil || err != nil {
				t.Fatal(checkErr, err)
			}
			if strings.Join(r.calls, "\n") != strings.Join(tc.calls, "\n") {
				t.Errorf("commands %q, want %q", r.calls, tc.calls)
			}
			if o.Reboot != (len(tc.calls) > 0) {
				t.Errorf("outcome %+v", o)
			}
		})
	}
}
