// Package oracle is a plain-Go reference implementation of ndp's default
// policy (docs/design.md#the-default-policy: the defaults table and the registries.conf safety
// rule). It exists only so that tests and benchmarks can check the Rego
// planner against something written independently and obviously: it shares
// nothing with policies/ but the change set it reads and planner.Normalize.
package oracle

import (
	"path/filepath"
	"slices"

	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/changeset"
	"github.com/ndp-dev/ndp/planner/policy"
	"github.com/ndp-dev/ndp/registries"
)

// Decision is what the default rules give one change.
type Decision struct {
	Change  string // the change's ID
	Rule    string // the row of the defaults table that decided it
	Actions []policy.Action
}

// Rules, as named in decisions; a files-table rule is "path " + its key.
const (
	RuleOS         = "os field"
	RuleUser       = "ssh keys / password hash"
	RuleLUKS       = "storage.luks"
	RuleUnclaimed  = "unclaimed"
	RuleRegistries = "registries.conf: " // + a verdict
	rulePath       = "path "
)

// Verdicts on a registries.conf change.
const (
	RegistriesNone   = "no semantic change"
	RegistriesSafe   = "safe"
	RegistriesUnsafe = "unsafe"
)

var (
	reboot = []policy.Action{{Type: policy.ActionReboot}}
	none   = []policy.Action{{Type: policy.ActionNone}}
	// packageUpdate: not the MCO's (its nodes have no apt), ndp's default.
	packageUpdate = []policy.Action{{Type: policy.ActionPackageUpdate}}
)

// fileRules is the files part of the defaults table. A key covers its own
// path and every path below it; a final "/" only says it is a directory.
var fileRules = map[string][]policy.Action{
	"/etc/mco/internal-registry-pull-secret.json":             none,
	"/var/lib/kubelet/config.json":                            none,
	"/etc/nmstate/openshift/":                                 none,
	"/etc/machine-config-daemon/no-reboot/containers-gpg.pub": {policy.ReloadAction("crio.service")},
	"/etc/containers/policy.json":                             {policy.ReloadAction("crio.service")},
	"/etc/containers/registries.d/":                           {policy.ReloadAction("crio.service")},
	"/etc/crio/policies/":                                     {policy.ReloadAction("crio.service")},
	"/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt": {
		policy.RestartAction("coreos-update-ca-trust.service"),
		policy.RestartAction("crio.service"),
	},
	"/etc/kubernetes/credential-providers/": {policy.RestartAction("kubelet.service")},
	"/etc/systemd/system/kubelet.service.d/40-kubelet-crio-image-credential-provider.conf": {
		{Type: policy.ActionDaemonReload},
		policy.RestartAction("kubelet.service"),
	},
	"/etc/apt/sources.list":    packageUpdate,
	"/etc/apt/sources.list.d/": packageUpdate,
	"/etc/apt/preferences":     packageUpdate,
	"/etc/apt/preferences.d/":  packageUpdate,
	"/etc/flatcar/update.conf": packageUpdate,
}

// osRebootFields are the OS fields whose change needs a reboot.
var osRebootFields = map[string]bool{
	changeset.FieldOSImageURL:                     true,
	changeset.FieldBaseOSExtensionsContainerImage: true,
	changeset.FieldKernelArguments:                true,
	changeset.FieldExtensions:                     true,
	changeset.FieldKernelType:                     true,
}

// Plan gives the default policy's plan for a change set: each change's
// actions in change-set order, merged by planner.Normalize. An
// unreconcilable change set has no plan (no actions).
func Plan(cs *changeset.ChangeSet) (actions []policy.Action, drain, reboot bool) {
	if len(cs.Unreconcilable) > 0 {
		return []policy.Action{}, false, false
	}
	var all []policy.Action
	for _, d := range Decide(cs) {
		all = append(all, d.Actions...)
	}
	return planner.Normalize(all, cs.SingleNode)
}

// Decide gives each change of the set its actions under the default rules,
// in change-set order.
func Decide(cs *changeset.ChangeSet) []Decision {
	out := make([]Decision, 0, len(cs.Changes))
	for i := range cs.Changes {
		c := &cs.Changes[i]
		rule, actions := decide(cs, c)
		out = append(out, Decision{Change: c.ID, Rule: rule, Actions: actions})
	}
	return out
}

func decide(cs *changeset.ChangeSet, c *changeset.Change) (string, []policy.Action) {
	switch c.Kind {
	case changeset.KindOS:
		if osRebootFields[c.Name] {
			return RuleOS, reboot
		}
	case changeset.KindSSHKey, changeset.KindPassword:
		return RuleUser, none
	case changeset.KindStorage:
		if c.Name == changeset.StorageLUKS {
			return RuleLUKS, none
		}
	case changeset.KindFile:
		if c.Path == registries.ConfPath {
			verdict, actions := Registries(cs.Registries)
			return RuleRegistries + verdict, actions
		}
		if key, actions, ok := fileRule(c.Path); ok {
			return rulePath + key, actions
		}
	}
	return RuleUnclaimed, reboot
}

// fileRule finds the most specific entry of the files table for a path, as
// the MCO's FindClosestFilePolicyPathMatch does: walk up from the path
// itself, one directory at a time, and take the first entry found, whether
// its key is written with a final "/" or not.
func fileRule(path string) (key string, actions []policy.Action, ok bool) {
	for p := path; ; p = filepath.Dir(p) {
		for _, k := range []string{p, p + "/"} {
			if a, found := fileRules[k]; found {
				return k, a, true
			}
		}
		if p == "/" {
			return "", nil, false
		}
	}
}

// Registries decides a registries.conf change from its semantic diff: None
// when nothing that CRI-O uses changed, a reload of CRI-O when the change
// is safe, and a drain first when it is not. nil (no diff computed) is
// taken as no semantic change, as the Rego rule does.
func Registries(rc *changeset.RegistriesChange) (verdict string, actions []policy.Action) {
	if rc == nil {
		rc = &changeset.RegistriesChange{}
	}
	switch {
	case rc.Unknown == "" && !semanticChange(rc.ConfigDiff):
		return RegistriesNone, none
	case rc.Unknown == "" && safe(rc.ConfigDiff):
		return RegistriesSafe, []policy.Action{policy.ReloadAction("crio.service")}
	default:
		return RegistriesUnsafe, []policy.Action{policy.ReloadAction("crio.service"), {Type: policy.ActionDrain}}
	}
}

func semanticChange(d registries.ConfigDiff) bool {
	return d.SearchChanged ||
		len(d.RegistriesAdded)+len(d.RegistriesRemoved)+len(d.RegistriesChanged) > 0 ||
		len(d.MirrorsAdded)+len(d.MirrorsRemoved)+len(d.MirrorsChanged)+len(d.MirrorsReordered) > 0 ||
		len(d.OtherChanged) > 0
}

// safe is the rule of docs/design.md#the-registries-safety-rule: the change only appends search registries,
// adds digest-only ways to pull, or makes existing mirrors digest-only.
// Reordering mirrors is safe.
func safe(d registries.ConfigDiff) bool {
	if d.SearchChanged && !d.SearchAppendedOnly {
		return false
	}
	if len(d.RegistriesRemoved) > 0 || len(d.RegistriesChanged) > 0 ||
		len(d.MirrorsRemoved) > 0 || len(d.OtherChanged) > 0 {
		return false
	}
	for _, m := range d.MirrorsChanged {
		// As the MCO: an existing mirror made digest-only is only used
		// for less; any other change of a mirror is not safe.
		if !slices.Equal(m.Fields, []string{"pullFromMirror"}) || m.PullFromMirror != registries.PullFromMirrorDigestOnly {
			return false
		}
	}
	for _, r := range d.RegistriesAdded {
		// A location other than the scope, or a namespace proxy, redirects
		// every pull, tags too.
		if len(r.Mirrors) == 0 || r.Blocked || r.Insecure || (r.Location != "" && r.Location != r.Scope) || r.NamespaceProxy != "" {
			return false
		}
		for _, m := range r.Mirrors {
			if m.PullFromMirror != registries.PullFromMirrorDigestOnly {
				return false
			}
		}
	}
	for _, m := range d.MirrorsAdded {
		if m.PullFromMirror != registries.PullFromMirrorDigestOnly {
			return false
		}
	}
	return true
}
