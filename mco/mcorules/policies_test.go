package mcorules

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	operatorv1 "github.com/openshift/api/operator/v1"

	"github.com/ndp-dev/ndp/internal/testkit"
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

// TestDefaultsAreTheReferenceMCOs checks Defaults against the reference
// MCO's list as MCO-BEHAVIOUR.md §1.5 gives it (from apihelpers.go
// defaultClusterPolicies, with file and line): every path, unit and the SSH
// key policy, with its actions, and nothing more.
func TestDefaultsAreTheReferenceMCOs(t *testing.T) {
	data, err := os.ReadFile(testkit.RequireMCORef(t, "MCO-BEHAVIOUR.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "### 1.5 Cluster default policy list")
	if !ok {
		t.Fatal("MCO-BEHAVIOUR.md has no section 1.5, the cluster default policy list")
	}
	section, _, _ = strings.Cut(section, "\n### ")
	text := func(as []operatorv1.NodeDisruptionPolicyStatusAction) string {
		var out []string
		for _, a := range statusActions(as) {
			out = append(out, strings.TrimSpace(string(a.Type)+" "+a.Service))
		}
		return strings.Join(out, ", ")
	}
	d := Defaults()
	want := map[string]string{} // "file PATH", "unit NAME", "sshkey": actions
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) != 4 || !strings.Contains(cells[1], "`") && !strings.Contains(cells[1], "SSH key") {
			continue
		}
		// "**Special** (status-only action; ...)", "Restart a, then Restart b"
		acts, _, _ := strings.Cut(strings.ReplaceAll(strings.TrimSpace(cells[2]), "**", ""), " (")
		acts = strings.ReplaceAll(acts, ", then ", ", ")
		subject := strings.TrimSpace(cells[1])
		switch {
		case strings.HasPrefix(subject, "SSH key"):
			want["sshkey"] = acts
		case strings.HasPrefix(subject, "unit "):
			want["unit "+strings.Trim(strings.TrimPrefix(subject, "unit "), "`")] = acts
		default:
			for i, part := range strings.Split(subject, "`") {
				if i%2 == 1 {
					want["file "+part] = acts
				}
			}
		}
	}
	got := map[string]string{"sshkey": text(d.SSHKey.Actions)}
	for _, f := range d.Files {
		got["file "+f.Path] = text(f.Actions)
	}
	for _, u := range d.Units {
		got["unit "+string(u.Name)] = text(u.Actions)
	}
	if len(want) < 10 {
		t.Fatalf("MCO-BEHAVIOUR.md §1.5 read as %v: the table's form changed?", want)
	}
	for k, w := range want {
		if g, ok := got[k]; g != w {
			t.Errorf("%s: Defaults has it %t with %q, MCO-BEHAVIOUR.md §1.5 says %q", k, ok, g, w)
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: Defaults has it (%s), MCO-BEHAVIOUR.md §1.5 does not", k, g)
		}
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

	// Over another list (another release's), which stays as it was.
	other := Policies{Files: []operatorv1.NodeDisruptionPolicyStatusFile{file("/etc/x", only(operatorv1.NoneStatusAction)), file("/etc/containers/policy.json", reload(serviceCrio))}}
	m = MergePoliciesOver(other, spec)
	if len(m.Files) != 3 || m.Files[0].Path != "/etc/x" || m.Files[1].Actions[0].Type != operatorv1.NoneStatusAction || m.Files[2].Path != "/etc/chrony.conf" || len(m.Units) != 2 {
		t.Errorf("over another list: %+v", m)
	}
	if other.Files[1].Actions[0].Type != operatorv1.ReloadStatusAction {
		t.Error("MergePoliciesOver changed the list it merged over")
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
