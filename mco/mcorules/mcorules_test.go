package mcorules

import (
	"encoding/base64"
	"maps"
	"slices"
	"strings"
	"testing"

	igntypes "github.com/coreos/ignition/v2/config/v3_5/types"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"

	"github.com/ndp-dev/ndp/machineconfig"
)

func ptr[T any](v T) *T { return &v }

func src(s string) *string {
	return ptr("data:text/plain;base64," + base64.StdEncoding.EncodeToString([]byte(s)))
}

func ignFile(path, contents string) igntypes.File {
	return igntypes.File{Node: igntypes.Node{Path: path}, FileEmbedded1: igntypes.FileEmbedded1{Contents: igntypes.Resource{Source: src(contents)}, Mode: ptr(0o644)}}
}

func ignUnit(name, contents string) igntypes.Unit {
	return igntypes.Unit{Name: name, Contents: ptr(contents), Enabled: ptr(true)}
}

// cfg is a rendered config with a core user holding one key.
func cfg(name string, edit ...func(c *machineconfig.Config)) *machineconfig.Config {
	c := &machineconfig.Config{Name: name,
		Spec: mcfgv1.MachineConfigSpec{OSImageURL: "quay.io/os@sha256:1", KernelArguments: []string{"a=1"}},
		Ignition: igntypes.Config{
			Ignition: igntypes.Ignition{Version: "3.5.0"},
			Passwd:   igntypes.Passwd{Users: []igntypes.PasswdUser{{Name: "core", SSHAuthorizedKeys: []igntypes.SSHAuthorizedKey{"ssh-ed25519 AAAA one"}}}},
			Storage: igntypes.Storage{Files: []igntypes.File{
				ignFile("/etc/chrony.conf", "server a\n"),
				ignFile("/etc/containers/policy.json", "{}"),
				ignFile(RegistriesConfPath, RegistriesBase),
			}},
			Systemd: igntypes.Systemd{Units: []igntypes.Unit{ignUnit("kubelet.service", "[Service]\n")}},
		}}
	for _, e := range edit {
		e(c)
	}
	return c
}

// RegistriesBase is a registries.conf as OpenShift writes it, with a
// digest-only mirror of quay.io: the base the tests edit (exported for
// the package's external tests too).
const RegistriesBase = `unqualified-search-registries = ["registry.access.redhat.com", "docker.io"]
short-name-mode = ""

[[registry]]
  prefix = ""
  location = "quay.io"

  [[registry.mirror]]
    location = "mirror-a.example.com"
    pull-from-mirror = "digest-only"
`

func setFile(path, contents string) func(*machineconfig.Config) {
	return func(c *machineconfig.Config) {
		for i := range c.Ignition.Storage.Files {
			if c.Ignition.Storage.Files[i].Path == path {
				c.Ignition.Storage.Files[i] = ignFile(path, contents)
				return
			}
		}
		c.Ignition.Storage.Files = append(c.Ignition.Storage.Files, ignFile(path, contents))
	}
}

func acts(s ...string) []Action {
	out := []Action{}
	for _, a := range s {
		t, svc, _ := strings.Cut(a, " ")
		out = append(out, Action{Type: operatorv1.NodeDisruptionPolicyStatusActionType(t), Service: svc})
	}
	return out
}

func specPolicies(files map[string][]operatorv1.NodeDisruptionPolicySpecAction, units map[string][]operatorv1.NodeDisruptionPolicySpecAction, ssh ...operatorv1.NodeDisruptionPolicySpecAction) Policies {
	var spec operatorv1.NodeDisruptionPolicyConfig
	for _, p := range slices.Sorted(maps.Keys(files)) {
		spec.Files = append(spec.Files, operatorv1.NodeDisruptionPolicySpecFile{Path: p, Actions: files[p]})
	}
	for _, u := range slices.Sorted(maps.Keys(units)) {
		spec.Units = append(spec.Units, operatorv1.NodeDisruptionPolicySpecUnit{Name: operatorv1.NodeDisruptionPolicyServiceName(u), Actions: units[u]})
	}
	spec.SSHKey.Actions = ssh
	return MergePolicies(spec)
}

func specRestart(svc string) operatorv1.NodeDisruptionPolicySpecAction {
	return operatorv1.NodeDisruptionPolicySpecAction{Type: operatorv1.RestartSpecAction, Restart: &operatorv1.RestartService{ServiceName: operatorv1.NodeDisruptionPolicyServiceName(svc)}}
}

func specOnly(t operatorv1.NodeDisruptionPolicySpecActionType) operatorv1.NodeDisruptionPolicySpecAction {
	return operatorv1.NodeDisruptionPolicySpecAction{Type: t}
}

func TestDecide(t *testing.T) {
	chrony := specPolicies(map[string][]operatorv1.NodeDisruptionPolicySpecAction{
		"/etc/chrony.conf": {specRestart("chronyd.service")},
		"/etc/":            {specOnly(operatorv1.DrainSpecAction)},
		"/etc/app":         {specOnly(operatorv1.NoneSpecAction)},
	}, map[string][]operatorv1.NodeDisruptionPolicySpecAction{
		"kubelet.service": {specOnly(operatorv1.DaemonReloadSpecAction), specRestart("kubelet.service")},
	})
	tests := []struct {
		name       string
		to         func(*machineconfig.Config)
		policies   *Policies
		singleNode bool
		actions    []Action
		drain      bool
		rule       string // the rule of the first Rules entry
	}{
		{name: "nothing changed", to: func(*machineconfig.Config) {}, actions: acts("None"), rule: RuleNothing},
		{name: "osImageURL", to: func(c *machineconfig.Config) { c.Spec.OSImageURL = "quay.io/os@sha256:2" }, actions: acts("Reboot"), drain: true, rule: RuleOSImageURL},
		{name: "kernel argument added", to: func(c *machineconfig.Config) { c.Spec.KernelArguments = append(c.Spec.KernelArguments, "b") }, actions: acts("Reboot"), drain: true, rule: RuleKernelArguments},
		{name: "kernel arguments reordered", to: func(c *machineconfig.Config) { c.Spec.KernelArguments = []string{"b", "a=1"} }, actions: acts("Reboot"), drain: true, rule: RuleKernelArguments},
		{name: "kernelType default spelled out", to: func(c *machineconfig.Config) { c.Spec.KernelType = "default" }, actions: acts("None"), rule: RuleNothing},
		{name: "kernelType unknown is default", to: func(c *machineconfig.Config) { c.Spec.KernelType = "bogus" }, actions: acts("None"), rule: RuleNothing},
		{name: "kernelType realtime", to: func(c *machineconfig.Config) { c.Spec.KernelType = "realtime" }, actions: acts("Reboot"), drain: true, rule: RuleKernelType},
		{name: "extension added", to: func(c *machineconfig.Config) { c.Spec.Extensions = []string{"usbguard"} }, actions: acts("Reboot"), drain: true, rule: RuleExtensions},
		{name: "fixed rule wins over a policy", policies: &chrony, to: func(c *machineconfig.Config) {
			c.Spec.OSImageURL = "x"
			setFile("/etc/chrony.conf", "server b\n")(c)
		}, actions: acts("Reboot"), drain: true, rule: RuleOSImageURL},
		{name: "file without policy", to: setFile("/etc/chrony.conf", "server b\n"), actions: acts("Reboot"), drain: true, rule: RuleNoPolicy},
		{name: "exact file policy", policies: &chrony, to: setFile("/etc/chrony.conf", "server b\n"), actions: acts("Restart chronyd.service"), rule: "file policy /etc/chrony.conf"},
		{name: "directory policy", policies: &chrony, to: setFile("/etc/other.conf", "x"), actions: acts("Drain"), drain: true, rule: "file policy /etc/"},
		{name: "longest parent wins", policies: &chrony, to: setFile("/etc/app/x.conf", "x"), actions: acts("None"), rule: "file policy /etc/app"},
		{name: "a prefix is not a parent", policies: &chrony, to: setFile("/etc/apps.conf", "x"), actions: acts("Drain"), drain: true, rule: "file policy /etc/"},
		{name: "policy.json reloads crio", to: setFile("/etc/containers/policy.json", `{"a":1}`), actions: acts("Reload crio.service"), rule: "file policy /etc/containers/policy.json"},
		{name: "file in registries.d reloads crio", to: setFile("/etc/containers/registries.d/x.yaml", "a: 1"), actions: acts("Reload crio.service"), rule: "file policy /etc/containers/registries.d"},
		{name: "pull secret", to: setFile("/var/lib/kubelet/config.json", "{}"), actions: acts("None"), rule: "file policy /var/lib/kubelet/config.json"},
		{name: "file mode only", to: func(c *machineconfig.Config) { c.Ignition.Storage.Files[1].Mode = ptr(0o600) }, actions: acts("Reload crio.service")},
		{name: "file removed", to: func(c *machineconfig.Config) { c.Ignition.Storage.Files = c.Ignition.Storage.Files[1:] }, actions: acts("Reboot"), drain: true, rule: RuleNoPolicy},
		{name: "None dropped beside a reload", to: func(c *machineconfig.Config) {
			setFile("/var/lib/kubelet/config.json", "{}")(c)
			setFile("/etc/containers/policy.json", `{"a":1}`)(c)
		}, actions: acts("Reload crio.service")},
		{name: "duplicates kept", to: func(c *machineconfig.Config) {
			setFile("/etc/crio/policies/a.json", "{}")(c)
			setFile("/etc/containers/policy.json", `{"a":1}`)(c)
		}, actions: acts("Reload crio.service", "Reload crio.service")},
		{name: "one file without policy reboots all", to: func(c *machineconfig.Config) {
			setFile("/etc/chrony.conf", "server b\n")(c)
			setFile("/etc/containers/policy.json", `{"a":1}`)(c)
		}, actions: acts("Reboot"), drain: true},
		{name: "unit without policy", to: func(c *machineconfig.Config) { c.Ignition.Systemd.Units[0].Contents = ptr("[Service]\nX=1\n") }, actions: acts("Reboot"), drain: true, rule: RuleNoPolicy},
		{name: "unit policy, exact name", policies: &chrony, to: func(c *machineconfig.Config) { c.Ignition.Systemd.Units[0].Enabled = ptr(false) }, actions: acts("DaemonReload", "Restart kubelet.service"), rule: "unit policy kubelet.service"},
		{name: "unit added", policies: &chrony, to: func(c *machineconfig.Config) {
			c.Ignition.Systemd.Units = append(c.Ignition.Systemd.Units, ignUnit("new.service", ""))
		}, actions: acts("Reboot"), drain: true, rule: RuleNoPolicy},
		{name: "ssh key: default None", to: func(c *machineconfig.Config) {
			c.Ignition.Passwd.Users[0].SSHAuthorizedKeys = append(c.Ignition.Passwd.Users[0].SSHAuthorizedKeys, "ssh-ed25519 AAAA two")
		}, actions: acts("None"), rule: "ssh key policy"},
		{name: "password hash: the ssh policy", policies: ptr(specPolicies(nil, nil, specOnly(operatorv1.DrainSpecAction))), to: func(c *machineconfig.Config) {
			c.Ignition.Passwd.Users[0].PasswordHash = ptr("$6$x")
		}, actions: acts("Drain"), drain: true, rule: "ssh key policy"},
		{name: "file order only: no action", to: func(c *machineconfig.Config) {
			f := c.Ignition.Storage.Files
			f[0], f[1] = f[1], f[0]
		}, actions: acts(), rule: RuleOrderOnly},
		{name: "unit order only beside a file", to: func(c *machineconfig.Config) {
			c.Ignition.Systemd.Units = append([]igntypes.Unit{ignUnit("a.service", "")}, c.Ignition.Systemd.Units...)
		}, actions: acts("Reboot"), drain: true},
		{name: "registries.conf safe: no drain", to: setFile(RegistriesConfPath, RegistriesBase+"\n  [[registry.mirror]]\n    location = \"m2\"\n    pull-from-mirror = \"digest-only\"\n"), actions: acts("Special"), rule: "file policy " + RegistriesConfPath},
		{name: "registries.conf unsafe: drain", to: setFile(RegistriesConfPath, "unqualified-search-registries = [\"registry.access.redhat.com\"]\n"), actions: acts("Special"), drain: true},
		{name: "registries.conf Special beside a reload", to: func(c *machineconfig.Config) {
			setFile(RegistriesConfPath, "# x\n"+RegistriesBase)(c)
			setFile("/etc/containers/policy.json", `{"a":1}`)(c)
		}, actions: acts("Reload crio.service", "Special")},
		{name: "single node never drains", singleNode: true, to: func(c *machineconfig.Config) { c.Spec.OSImageURL = "y" }, actions: acts("Reboot"), rule: RuleOSImageURL},
		{name: "policy with Reboot", policies: ptr(specPolicies(map[string][]operatorv1.NodeDisruptionPolicySpecAction{"/etc/chrony.conf": {specOnly(operatorv1.RebootSpecAction)}}, nil)),
			to: setFile("/etc/chrony.conf", "server b\n"), actions: acts("Reboot"), drain: true, rule: "file policy /etc/chrony.conf"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pol := Defaults()
			if tc.policies != nil {
				pol = *tc.policies
			}
			d, err := Decide(Input{From: cfg("old"), To: cfg("new", tc.to), Policies: pol, SingleNode: tc.singleNode})
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Refused) > 0 {
				t.Fatalf("refused: %v", d.Refused)
			}
			if !slices.Equal(d.Actions, tc.actions) || d.Drain != tc.drain || d.Reboot != slices.Contains(tc.actions, Action{Type: operatorv1.RebootStatusAction}) {
				t.Errorf("got %v drain=%t reboot=%t, want %v drain=%t", d.Actions, d.Drain, d.Reboot, tc.actions, tc.drain)
			}
			if tc.rule != "" && (len(d.Rules) == 0 || d.Rules[0].Rule != tc.rule) {
				t.Errorf("rules %+v, want the first decided by %q", d.Rules, tc.rule)
			}
			if d.Error != "" {
				t.Errorf("error %s", d.Error)
			}
		})
	}
}

func TestDecideRefuses(t *testing.T) {
	tests := []struct {
		name      string
		to        func(*machineconfig.Config)
		overrides []operatorv1.IrreconcilableValidationOverridesStorage
		field     string // "" = accepted
	}{
		{name: "fips", to: func(c *machineconfig.Config) { c.Spec.FIPS = true }, field: "spec.fips"},
		{name: "new directory", to: func(c *machineconfig.Config) {
			c.Ignition.Storage.Directories = []igntypes.Directory{{Node: igntypes.Node{Path: "/etc/d"}}}
		}, field: "spec.config.storage.directories"},
		{name: "nil to empty directories", to: func(c *machineconfig.Config) { c.Ignition.Storage.Directories = []igntypes.Directory{} }, field: "spec.config.storage.directories"},
		{name: "link added", to: func(c *machineconfig.Config) {
			c.Ignition.Storage.Links = []igntypes.Link{{Node: igntypes.Node{Path: "/etc/l"}, LinkEmbedded1: igntypes.LinkEmbedded1{Target: ptr("/etc/x")}}}
		}, field: "spec.config.storage.links"},
		{name: "disk", to: addDisk, field: "spec.config.storage.disks"},
		{name: "disk with override", to: addDisk, overrides: []operatorv1.IrreconcilableValidationOverridesStorage{operatorv1.IrreconcilableValidationOverridesStorageDisks}},
		{name: "disk with another override", to: addDisk, overrides: []operatorv1.IrreconcilableValidationOverridesStorage{operatorv1.IrreconcilableValidationOverridesStorageRaid}, field: "spec.config.storage.disks"},
		{name: "filesystem", to: func(c *machineconfig.Config) {
			c.Ignition.Storage.Filesystems = []igntypes.Filesystem{{Device: "/dev/sdb", Format: ptr("xfs"), Path: ptr("/var/x")}}
		}, field: "spec.config.storage.filesystems"},
		{name: "ignition kernel arguments", to: func(c *machineconfig.Config) {
			c.Ignition.KernelArguments.ShouldExist = []igntypes.KernelArgument{"x"}
		}, field: "spec.config.kernelArguments"},
		{name: "append", to: func(c *machineconfig.Config) {
			c.Ignition.Storage.Files[0].Append = []igntypes.Resource{{Source: src("x")}}
		}, field: "spec.config.storage.files[path=/etc/chrony.conf].append"},
		{name: "force file", to: setFile(ForceFilePath, ""), field: "spec.config.storage.files[path=/run/machine-config-daemon-force]"},
		{name: "setuid mode", to: func(c *machineconfig.Config) { c.Ignition.Storage.Files[0].Mode = ptr(0o4755) }, field: "spec.config.storage.files[path=/etc/chrony.conf].mode"},
		{name: "group", to: func(c *machineconfig.Config) { c.Ignition.Passwd.Groups = []igntypes.PasswdGroup{{Name: "g"}} }, field: "spec.config.passwd.groups"},
		{name: "non-core user", to: func(c *machineconfig.Config) {
			c.Ignition.Passwd.Users = append(c.Ignition.Passwd.Users, igntypes.PasswdUser{Name: "admin", SSHAuthorizedKeys: []igntypes.SSHAuthorizedKey{"k"}})
		}, field: "spec.config.passwd.users[name=admin]"},
		{name: "core without keys", to: func(c *machineconfig.Config) { c.Ignition.Passwd.Users[0].SSHAuthorizedKeys = nil }, field: "spec.config.passwd.users[name=core]"},
		{name: "core with a shell", to: func(c *machineconfig.Config) { c.Ignition.Passwd.Users[0].Shell = ptr("/bin/zsh") }, field: "spec.config.passwd.users[name=core]"},
		{name: "users removed", to: func(c *machineconfig.Config) { c.Ignition.Passwd.Users = nil }},
		{name: "password hash only", to: func(c *machineconfig.Config) {
			c.Ignition.Passwd.Users[0] = igntypes.PasswdUser{Name: "core", PasswordHash: ptr("$6$x")}
		}},
		{name: "links removed", to: func(c *machineconfig.Config) { c.Ignition.Storage.Links = nil }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			from := cfg("old")
			if tc.name == "links removed" {
				from.Ignition.Storage.Links = []igntypes.Link{{Node: igntypes.Node{Path: "/etc/l"}, LinkEmbedded1: igntypes.LinkEmbedded1{Target: ptr("/etc/x")}}}
			}
			d, err := Decide(Input{From: from, To: cfg("new", tc.to), Policies: Defaults(), Overrides: operatorv1.IrreconcilableValidationOverrides{Storage: tc.overrides}})
			if err != nil {
				t.Fatal(err)
			}
			if tc.field == "" {
				if len(d.Refused) > 0 {
					t.Fatalf("refused: %v", d.Refused)
				}
				return
			}
			if len(d.Refused) == 0 || !strings.HasPrefix(d.Refused[0], tc.field+":") {
				t.Fatalf("refused %q, want the first naming %s", d.Refused, tc.field)
			}
			if len(d.Actions) != 0 || d.Drain || d.Reboot {
				t.Errorf("a refused update has actions %v drain=%t reboot=%t", d.Actions, d.Drain, d.Reboot)
			}
		})
	}
}

func addDisk(c *machineconfig.Config) {
	c.Ignition.Storage.Disks = []igntypes.Disk{{Device: "/dev/sdb", WipeTable: ptr(true)}}
}

func TestOverriddenStorageIsNamed(t *testing.T) {
	d, err := Decide(Input{From: cfg("old"), To: cfg("new", addDisk), Policies: Defaults(),
		Overrides: operatorv1.IrreconcilableValidationOverrides{Storage: []operatorv1.IrreconcilableValidationOverridesStorage{operatorv1.IrreconcilableValidationOverridesStorageDisks}}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.Actions, acts("None")) || len(d.Rules) == 0 || d.Rules[0].Change != "storage.disks" {
		t.Errorf("got %v %+v, want None with storage.disks named first", d.Actions, d.Rules)
	}
}

func TestFromNilIsTheEmptyConfig(t *testing.T) {
	d, err := Decide(Input{To: cfg("new"), Policies: Defaults()})
	if err != nil {
		t.Fatal(err)
	}
	// The empty config has no users: adding core with keys is allowed; the
	// three files have policies only for two of them, so a reboot.
	if d.From != "mco-empty-mc" || len(d.Refused) > 0 || !d.Reboot || len(d.ChangedFiles) != 3 || len(d.ChangedUnits) != 1 || !d.SSHChanged {
		t.Errorf("got %+v", d)
	}
	if _, err := Decide(Input{From: cfg("old")}); err == nil {
		t.Error("no To: no error")
	}
}

func TestRegistriesConfThatDoesNotDecodeFailsTheUpdate(t *testing.T) {
	d, err := Decide(Input{From: cfg("old"), To: cfg("new", setFile(RegistriesConfPath, "[[registry]\n")), Policies: Defaults()})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(d.Error, "TOML") || d.Drain || !slices.Equal(d.Actions, acts("Special")) {
		t.Errorf("got error %q drain=%t actions %v", d.Error, d.Drain, d.Actions)
	}
}

func TestPasswdChangeNames(t *testing.T) {
	for _, tc := range []struct {
		to   func(*machineconfig.Config)
		want string
	}{
		{func(c *machineconfig.Config) {
			c.Ignition.Passwd.Users[0].SSHAuthorizedKeys = []igntypes.SSHAuthorizedKey{"k2"}
		}, "ssh keys"},
		{func(c *machineconfig.Config) { c.Ignition.Passwd.Users[0].PasswordHash = ptr("h") }, "password hash"},
		{func(c *machineconfig.Config) {
			c.Ignition.Passwd.Users[0].PasswordHash = ptr("h")
			c.Ignition.Passwd.Users[0].SSHAuthorizedKeys = nil
		}, "passwd"},
	} {
		if got := passwdChange(cfg("old"), cfg("new", tc.to)); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}

func TestDecisionString(t *testing.T) {
	for _, tc := range []struct {
		d    Decision
		want string
	}{
		{Decision{Actions: acts("Restart chronyd.service")}, "Restart chronyd.service (no drain)"},
		{Decision{Actions: acts("Special"), Drain: true}, "Special (reload crio) (drain)"},
		{Decision{Actions: acts()}, "no action (no drain)"},
		{Decision{Refused: []string{"spec.fips: x"}}, "refused: spec.fips: x"},
	} {
		if got := tc.d.String(); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}
