package mcorules

import (
	"reflect"
	"slices"
	"testing"

	operatorv1 "github.com/openshift/api/operator/v1"
)

func TestDefaults(t *testing.T) {
	d := Defaults()
	var paths []string
	for _, f := range d.Files {
		paths = append(paths, f.Path)
	}
	want := []string{
		"/var/lib/kubelet/config.json",
		"/etc/machine-config-daemon/no-reboot/containers-gpg.pub",
		"/etc/containers/policy.json",
		"/etc/containers/registries.conf",
		"/etc/containers/registries.d",
		"/etc/crio/policies",
		"/etc/nmstate/openshift",
		"/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt",
		"/etc/kubernetes/credential-providers",
		"/etc/systemd/system/kubelet.service.d/40-kubelet-crio-image-credential-provider.conf",
		"/etc/iri-registry",
		"/usr/local/bin/load-registry-image.sh",
		"/etc/pki/ca-trust/source/anchors/iri-root-ca.crt",
	}
	if !slices.Equal(paths, want) {
		t.Errorf("default paths:\n%q\nwant\n%q", paths, want)
	}
	if got := FormatActions(statusActions(d.Files[7].Actions)); got != "Restart coreos-update-ca-trust.service, Restart crio.service" {
		t.Errorf("user CA bundle: %s", got)
	}
	if len(d.Units) != 1 || d.Units[0].Name != "iri-registry.service" || FormatActions(statusActions(d.SSHKey.Actions)) != "None" {
		t.Errorf("units %v ssh %v", d.Units, d.SSHKey)
	}
	// Each call is a fresh copy: a caller's edit does not leak.
	d.Files[0].Actions[0].Type = operatorv1.RebootStatusAction
	if Defaults().Files[0].Actions[0].Type != operatorv1.NoneStatusAction {
		t.Error("Defaults shares its slices")
	}
}

func TestMergePolicies(t *testing.T) {
	none := []operatorv1.NodeDisruptionPolicySpecAction{specOnly(operatorv1.NoneSpecAction)}
	spec := operatorv1.NodeDisruptionPolicyConfig{
		Files: []operatorv1.NodeDisruptionPolicySpecFile{
			{Path: "/etc/chrony.conf", Actions: []operatorv1.NodeDisruptionPolicySpecAction{specRestart("chronyd.service")}},
			{Path: "/etc/containers/policy.json", Actions: none},
		},
		Units: []operatorv1.NodeDisruptionPolicySpecUnit{
			{Name: "iri-registry.service", Actions: none},
			{Name: "chronyd.service", Actions: []operatorv1.NodeDisruptionPolicySpecAction{specOnly(operatorv1.DaemonReloadSpecAction)}},
		},
	}
	m := MergePolicies(spec)
	def := Defaults()
	if len(m.Files) != len(def.Files)+1 || m.Files[2].Path != "/etc/containers/policy.json" || m.Files[2].Actions[0].Type != operatorv1.NoneStatusAction {
		t.Errorf("policy.json not replaced in place: %+v", m.Files[2])
	}
	if last := m.Files[len(m.Files)-1]; last.Path != "/etc/chrony.conf" || last.Actions[0].Restart.ServiceName != "chronyd.service" {
		t.Errorf("chrony not appended: %+v", last)
	}
	if len(m.Units) != 2 || m.Units[0].Actions[0].Type != operatorv1.NoneStatusAction || m.Units[1].Name != "chronyd.service" {
		t.Errorf("units %+v", m.Units)
	}
	if !reflect.DeepEqual(m.SSHKey, def.SSHKey) {
		t.Errorf("ssh replaced by an empty user policy: %+v", m.SSHKey)
	}
	spec.SSHKey.Actions = []operatorv1.NodeDisruptionPolicySpecAction{specOnly(operatorv1.DrainSpecAction)}
	if m := MergePolicies(spec); len(m.SSHKey.Actions) != 1 || m.SSHKey.Actions[0].Type != operatorv1.DrainStatusAction {
		t.Errorf("ssh %+v", m.SSHKey)
	}
	if !reflect.DeepEqual(MergePolicies(operatorv1.NodeDisruptionPolicyConfig{}), def) {
		t.Error("an empty spec does not merge to the defaults")
	}
}

func TestPoliciesOf(t *testing.T) {
	status := Policies{Files: []operatorv1.NodeDisruptionPolicyStatusFile{file("/etc/x", only(operatorv1.NoneStatusAction))}}
	mc := func(gen, observed int64) *operatorv1.MachineConfiguration {
		m := &operatorv1.MachineConfiguration{}
		m.Generation = gen
		m.Status.ObservedGeneration = observed
		m.Status.NodeDisruptionPolicyStatus.ClusterPolicies = status
		m.Spec.NodeDisruptionPolicy.Files = []operatorv1.NodeDisruptionPolicySpecFile{{Path: "/etc/y", Actions: []operatorv1.NodeDisruptionPolicySpecAction{specOnly(operatorv1.DrainSpecAction)}}}
		return m
	}
	for _, tc := range []struct {
		name   string
		mc     *operatorv1.MachineConfiguration
		from   string
		stale  bool
		policy string // a path the list holds
	}{
		{"none", nil, "defaults", false, RegistriesConfPath},
		{"current status", mc(3, 3), "status", false, "/etc/x"},
		{"stale status", mc(4, 3), "spec", true, "/etc/y"},
		{"never stored", mc(0, 0), "spec", false, "/etc/y"},
	} {
		p, src := PoliciesOf(tc.mc)
		if src.From != tc.from || src.Stale != tc.stale || indexFile(p.Files, tc.policy) < 0 {
			t.Errorf("%s: %+v %v", tc.name, src, p.Files)
		}
	}
}

func TestClosestFilePolicy(t *testing.T) {
	files := []operatorv1.NodeDisruptionPolicyStatusFile{
		file("/etc", only(operatorv1.DrainStatusAction)),
		file("/etc/containers/", only(operatorv1.NoneStatusAction)),
		file("/etc/containers", only(operatorv1.RebootStatusAction)),
		file("/", only(operatorv1.DaemonReloadStatusAction)),
		file("", only(operatorv1.DaemonReloadStatusAction)),
	}
	for _, tc := range []struct{ path, want string }{
		{"/etc/containers/a", "/etc/containers/"}, // longer as written, first of the two
		{"/etc/containers", "/etc/containers"},    // exact: "/etc/containers/" does not cover itself
		{"/etc/containersx", "/etc"},
		{"/etc", "/etc"},
		{"/var/x", ""}, // "/" covers nothing but itself
		{"/", "/"},
	} {
		e, ok := closestFilePolicy(tc.path, files)
		if (tc.want == "") == ok || (ok && e.Path != tc.want) {
			t.Errorf("%s: got %q %t, want %q", tc.path, e.Path, ok, tc.want)
		}
	}
}

func TestFor(t *testing.T) {
	mc := &operatorv1.MachineConfiguration{}
	mc.Spec.IrreconcilableValidationOverrides.Storage = []operatorv1.IrreconcilableValidationOverridesStorage{operatorv1.IrreconcilableValidationOverridesStorageDisks}
	mc.Spec.NodeDisruptionPolicy.SSHKey.Actions = []operatorv1.NodeDisruptionPolicySpecAction{specOnly(operatorv1.DrainSpecAction)}
	in, src := For(cfg("old"), cfg("new", addDisk), mc, true)
	if src.From != "spec" || !in.SingleNode || len(in.Overrides.Storage) != 1 || in.Policies.SSHKey.Actions[0].Type != operatorv1.DrainStatusAction {
		t.Fatalf("got %+v %+v", in, src)
	}
	if d, err := Decide(in); err != nil || len(d.Refused) > 0 {
		t.Errorf("the overridden disk change: %v %+v", err, d)
	}
	if in, src := For(cfg("old"), cfg("new"), nil, false); src.From != "defaults" || len(in.Overrides.Storage) != 0 || !reflect.DeepEqual(in.Policies, Defaults()) {
		t.Errorf("nil: %+v %+v", in, src)
	}
}
