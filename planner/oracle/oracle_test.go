package oracle

import (
	"reflect"
	"testing"

	"github.com/ndp-dev/ndp/planner/changeset"
	"github.com/ndp-dev/ndp/planner/policy"
	"github.com/ndp-dev/ndp/registries"
)

func fileChange(path string) changeset.Change {
	return changeset.Change{ID: "file:" + path, Kind: changeset.KindFile, Op: changeset.OpChanged, Path: path, Fields: []string{"contents"}}
}

func TestFileRule(t *testing.T) {
	crio := []policy.Action{policy.ReloadAction("crio.service")}
	for path, want := range map[string][]policy.Action{
		"/var/lib/kubelet/config.json":                        none,
		"/var/lib/kubelet/config.json.bak":                    reboot,
		"/etc/nmstate/openshift/a/b":                          none,
		"/etc/nmstate/openshift-other":                        reboot,
		"/etc/nmstate/openshift":                              none, // the entry's own path, as in the MCO
		"/etc/nmstate":                                        reboot,
		"/etc/crio/policies/x.json":                           crio,
		"/etc/crio/policiesX":                                 reboot,
		"/etc/containers/registries.d/x.yaml":                 crio,
		"/etc/containers/policy.json":                         crio,
		"/etc/containers/policy.json/x":                       crio, // beneath an entry without "/", as in the MCO
		"/etc/containers/policy.jsonx":                        reboot,
		"/etc/machine-config-daemon/no-reboot/other":          reboot,
		"/etc/kubernetes/credential-providers/ecr.yaml":       {policy.RestartAction("kubelet.service")},
		"/etc/kubernetes/credential-providers-extra/a.yaml":   reboot,
		"/etc/systemd/system/kubelet.service.d/10-other.conf": reboot,
		"/etc/chrony.conf":                                    reboot,
	} {
		cs := &changeset.ChangeSet{Changes: []changeset.Change{fileChange(path)}}
		if got := Decide(cs)[0].Actions; !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %v, want %v", path, got, want)
		}
	}
}

func TestRegistries(t *testing.T) {
	digest := registries.MirrorState{Location: "m.example.com/a", PullFromMirror: registries.PullFromMirrorDigestOnly}
	tag := registries.MirrorState{Location: "m.example.com/b", PullFromMirror: registries.PullFromMirrorTagOnly}
	for _, tc := range []struct {
		name string
		rc   *changeset.RegistriesChange
		want string
	}{
		{"nil", nil, RegistriesNone},
		{"empty", &changeset.RegistriesChange{}, RegistriesNone},
		{"unknown", &changeset.RegistriesChange{Unknown: "remote"}, RegistriesUnsafe},
		{"search appended", rc(registries.ConfigDiff{SearchChanged: true, SearchAppendedOnly: true}), RegistriesSafe},
		{"search reordered", rc(registries.ConfigDiff{SearchChanged: true, SearchReordered: true}), RegistriesUnsafe},
		{"idms added", rc(registries.ConfigDiff{RegistriesAdded: []registries.RegistryState{{Scope: "q.io/a", Mirrors: []registries.MirrorState{digest}}}}), RegistriesSafe},
		{"itms added", rc(registries.ConfigDiff{RegistriesAdded: []registries.RegistryState{{Scope: "q.io/a", Mirrors: []registries.MirrorState{digest, tag}}}}), RegistriesUnsafe},
		{"registry without mirrors", rc(registries.ConfigDiff{RegistriesAdded: []registries.RegistryState{{Scope: "q.io/a"}}}), RegistriesUnsafe},
		{"blocked registry", rc(registries.ConfigDiff{RegistriesAdded: []registries.RegistryState{{Scope: "q.io/a", Blocked: true, Mirrors: []registries.MirrorState{digest}}}}), RegistriesUnsafe},
		{"insecure registry", rc(registries.ConfigDiff{RegistriesAdded: []registries.RegistryState{{Scope: "q.io/a", Insecure: true, Mirrors: []registries.MirrorState{digest}}}}), RegistriesUnsafe},
		{"registry removed", rc(registries.ConfigDiff{RegistriesRemoved: []registries.RegistryState{{Scope: "q.io/a", Mirrors: []registries.MirrorState{digest}}}}), RegistriesUnsafe},
		{"registry changed", rc(registries.ConfigDiff{RegistriesChanged: []registries.RegistryChange{{Scope: "q.io/a", Fields: []string{"blocked"}}}}), RegistriesUnsafe},
		{"digest mirror added", rc(registries.ConfigDiff{MirrorsAdded: []registries.MirrorChange{{Scope: "q.io/a", Location: "m", PullFromMirror: "digest-only"}}}), RegistriesSafe},
		{"all mirror added", rc(registries.ConfigDiff{MirrorsAdded: []registries.MirrorChange{{Scope: "q.io/a", Location: "m", PullFromMirror: "all"}}}), RegistriesUnsafe},
		{"mirror removed", rc(registries.ConfigDiff{MirrorsRemoved: []registries.MirrorChange{{Scope: "q.io/a", Location: "m", PullFromMirror: "digest-only"}}}), RegistriesUnsafe},
		{"mirror changed", rc(registries.ConfigDiff{MirrorsChanged: []registries.MirrorChange{{Scope: "q.io/a", Location: "m", Fields: []string{"insecure"}}}}), RegistriesUnsafe},
		{"mirror made digest-only", rc(registries.ConfigDiff{MirrorsChanged: []registries.MirrorChange{{Scope: "q.io/a", Location: "m", PullFromMirror: "digest-only",
			Fields: []string{"pullFromMirror"}, Old: &registries.MirrorState{Location: "m", PullFromMirror: "all"}}}}), RegistriesSafe},
		{"mirror made digest-only and insecure", rc(registries.ConfigDiff{MirrorsChanged: []registries.MirrorChange{{Scope: "q.io/a", Location: "m", PullFromMirror: "digest-only", Insecure: true,
			Fields: []string{"insecure", "pullFromMirror"}, Old: &registries.MirrorState{Location: "m", PullFromMirror: "all"}}}}), RegistriesUnsafe},
		{"mirror no longer digest-only", rc(registries.ConfigDiff{MirrorsChanged: []registries.MirrorChange{{Scope: "q.io/a", Location: "m", PullFromMirror: "all",
			Fields: []string{"pullFromMirror"}, Old: &registries.MirrorState{Location: "m", PullFromMirror: "digest-only"}}}}), RegistriesUnsafe},
		{"mirror's namespace proxy changed", rc(registries.ConfigDiff{MirrorsChanged: []registries.MirrorChange{{Scope: "q.io/a", Location: "m", PullFromMirror: "digest-only", NamespaceProxy: "q.io",
			Fields: []string{"namespaceProxy"}, Old: &registries.MirrorState{Location: "m", PullFromMirror: "digest-only"}}}}), RegistriesUnsafe},
		{"registry added behind a namespace proxy", rc(registries.ConfigDiff{RegistriesAdded: []registries.RegistryState{{Scope: "q.io/a", NamespaceProxy: "q.io", Mirrors: []registries.MirrorState{digest}}}}), RegistriesUnsafe},
		{"mirrors reordered", rc(registries.ConfigDiff{MirrorsReordered: []string{"q.io/a"}}), RegistriesSafe},
		{"other changed", rc(registries.ConfigDiff{OtherChanged: []string{"short-name-mode"}}), RegistriesUnsafe},
	} {
		if got, _ := Registries(tc.rc); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, got, tc.want)
		}
	}
}

func rc(d registries.ConfigDiff) *changeset.RegistriesChange {
	return &changeset.RegistriesChange{ConfigDiff: d}
}

func TestPlan(t *testing.T) {
	crio := policy.ReloadAction("crio.service")
	kubelet := policy.RestartAction("kubelet.service")
	unsafe := &changeset.RegistriesChange{ConfigDiff: registries.ConfigDiff{OtherChanged: []string{"aliases"}}}
	for _, tc := range []struct {
		name        string
		cs          *changeset.ChangeSet
		want        []policy.Action
		drain, boot bool
	}{
		{"nothing", &changeset.ChangeSet{}, none, false, false},
		{"ssh keys", &changeset.ChangeSet{Changes: []changeset.Change{{ID: "sshkey", Kind: changeset.KindSSHKey, Op: changeset.OpChanged}}}, none, false, false},
		{"kargs", &changeset.ChangeSet{Changes: []changeset.Change{fileChange("/etc/containers/policy.json"), {ID: "os:kernelArguments", Kind: changeset.KindOS, Name: changeset.FieldKernelArguments}}}, reboot, true, true},
		{"unit", &changeset.ChangeSet{Changes: []changeset.Change{{ID: "unit:crio.service", Kind: changeset.KindUnit, Name: "crio.service"}}}, reboot, true, true},
		{"daemon-reload first", &changeset.ChangeSet{Changes: []changeset.Change{
			fileChange("/etc/containers/policy.json"),
			fileChange("/etc/kubernetes/credential-providers/a.yaml"),
			fileChange("/etc/systemd/system/kubelet.service.d/40-kubelet-crio-image-credential-provider.conf"),
		}}, []policy.Action{{Type: policy.ActionDaemonReload}, crio, kubelet}, false, false},
		{"unsafe registries", &changeset.ChangeSet{Registries: unsafe, Changes: []changeset.Change{fileChange(registries.ConfPath), fileChange("/etc/crio/policies/a")}}, []policy.Action{crio}, true, false},
		{"unsafe registries, single node", &changeset.ChangeSet{SingleNode: true, Registries: unsafe, Changes: []changeset.Change{fileChange(registries.ConfPath)}}, []policy.Action{crio}, false, false},
		{"unreconcilable", &changeset.ChangeSet{Unreconcilable: []changeset.Unreconcilable{{Field: "spec.fips"}}, Changes: []changeset.Change{fileChange("/etc/a")}}, []policy.Action{}, false, false},
	} {
		got, drain, boot := Plan(tc.cs)
		if !reflect.DeepEqual(got, tc.want) || drain != tc.drain || boot != tc.boot {
			t.Errorf("%s: got %v drain=%t reboot=%t, want %v drain=%t reboot=%t", tc.name, got, drain, boot, tc.want, tc.drain, tc.boot)
		}
	}
}
