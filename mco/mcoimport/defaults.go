package mcoimport

import (
	"slices"

	operatorv1 "github.com/openshift/api/operator/v1"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/mco/mcorules"
	"github.com/ndp-dev/ndp/planner/changeset"
	"github.com/ndp-dev/ndp/registries"
)

// Action is one NodeDisruptionPolicy action, openshift/api's shape.
type Action = operatorv1.NodeDisruptionPolicySpecAction

// SpecialAction is the MCO's internal action type. openshift/api keeps it
// out of NodeDisruptionPolicySpecActionType ("They are not part of the
// NodeDisruptionPolicyConfig object and cannot be set by the user",
// operator/v1 types_machineconfiguration.go): it appears only in
// status.nodeDisruptionPolicyStatus.clusterPolicies, on the MCO's own
// default for /etc/containers/registries.conf (mcorules.Defaults), and
// means "reload CRI-O; drain unless the change is safe" (pkg/daemon/drain.go,
// isSafeContainerRegistryConfChanges; pkg/daemon/update.go runs a CRI-O
// reload for it).
const SpecialAction = operatorv1.NodeDisruptionPolicySpecActionType(operatorv1.SpecialStatusAction)

// RegistriesConf is the only path the MCO gives the Special action.
const RegistriesConf = registries.ConfPath

// ndp's defaults are not the MCO's. ndp's built-in default policy
// (policies/default/default.rego, docs/how-plans-are-decided.md "The
// default policy") follows the list of an MCO release before the reference
// one (the list the OpenShift documentation gives, with the internal
// registry's pull secret). The list changes between releases
// (../shared/mco-ref/MCO-BEHAVIOUR.md §1.5): the reference MCO's
// (mcorules.Defaults, the one copy of the MCO's list) has dropped one
// entry of it and added four. The lists below are those differences,
// which ndpDefaults applies; TestNDPDefaultsAreTheDefaultPolicy and
// TestNDPDefaultsDiffer check them against the embedded default policy
// and the MCO's list.
var (
	// mcoOnlyFiles and mcoOnlyUnits: the reference MCO's defaults for its
	// iri-registry files and unit, which ndp's default policy has no rule
	// for. Under ndp's defaults a change of them reboots, where the
	// reference MCO restarts a service, so an imported entry for them is
	// never covered by ndp's defaults.
	mcoOnlyFiles = []string{"/etc/iri-registry", "/usr/local/bin/load-registry-image.sh", "/etc/pki/ca-trust/source/anchors/iri-root-ca.crt"}
	mcoOnlyUnits = []string{"iri-registry.service"}
)

// ndpOnlyFiles: the internal registry's pull secret, None in ndp's
// defaults as in the earlier MCO that writes the file; the reference MCO
// has no entry for it (a change there reboots). First, as in that MCO's
// list. Last, the package sources of Debian, Ubuntu and Flatcar hosts,
// which the MCO's nodes do not have: ndp's own PackageUpdate, an action
// no MCO list holds.
func ndpOnlyFiles() []operatorv1.NodeDisruptionPolicyStatusFile {
	out := []operatorv1.NodeDisruptionPolicyStatusFile{{
		Path:    "/etc/mco/internal-registry-pull-secret.json",
		Actions: []operatorv1.NodeDisruptionPolicyStatusAction{{Type: operatorv1.NoneStatusAction}},
	}}
	for _, p := range []string{"/etc/apt/sources.list", "/etc/apt/sources.list.d", "/etc/apt/preferences", "/etc/apt/preferences.d", "/etc/flatcar/update.conf"} {
		out = append(out, operatorv1.NodeDisruptionPolicyStatusFile{Path: p,
			Actions: []operatorv1.NodeDisruptionPolicyStatusAction{{Type: operatorv1.NodeDisruptionPolicyStatusActionType(ndpmcv1.PackageUpdateAction)}}})
	}
	return out
}

// ndpDefaults is ndp's built-in default policy written as an MCO policy
// list: the reference MCO's defaults with ndp's differences. It is also
// the list of the earlier MCO release ndp's defaults follow. Two more
// differences are not in the list: ndp's default registries rule, which
// the list writes as the MCO's Special, decides some changes otherwise
// than the MCO (the table of docs/how-plans-are-decided.md: it drains in
// more cases, and a change without meaning is no change); and ndp writes
// directories with a final "/" ("/etc/crio/policies/"), the MCO without,
// which changes nothing: in both a path covers itself and everything
// beneath it (changeset.Covers).
func ndpDefaults() mcorules.Policies {
	p := mcorules.Defaults()
	p.Files = slices.DeleteFunc(p.Files, func(f operatorv1.NodeDisruptionPolicyStatusFile) bool { return slices.Contains(mcoOnlyFiles, f.Path) })
	p.Files = append(ndpOnlyFiles(), p.Files...)
	p.Units = slices.DeleteFunc(p.Units, func(u operatorv1.NodeDisruptionPolicyStatusUnit) bool {
		return slices.Contains(mcoOnlyUnits, string(u.Name))
	})
	return p
}

// defaultRule is one file rule of ndp's defaults, as the importer compares
// entries with it: a path and the actions a change of it gets when no
// other policy claims it.
type defaultRule struct {
	path    string
	actions []Action
	// describe replaces the actions in messages (the registries rule).
	describe string
}

var (
	actionNone   = []Action{{Type: operatorv1.NoneSpecAction}}
	actionReboot = []Action{{Type: operatorv1.RebootSpecAction}}
)

// defaultFiles and defaultSSHKey are ndpDefaults' file rules and SSH key
// policy (None, for SSH keys and the password hash, in ndp as in the MCO).
var (
	defaultFiles  = fileRules(ndpDefaults())
	defaultSSHKey = specActions(ndpDefaults().SSHKey.Actions)
)

func fileRules(p mcorules.Policies) []defaultRule {
	out := make([]defaultRule, 0, len(p.Files))
	for _, f := range p.Files {
		d := defaultRule{path: f.Path, actions: specActions(f.Actions)}
		if f.Path == RegistriesConf {
			// The MCO's Special: ndp's registries rule (default.rego)
			// reloads CRI-O and drains first unless the change is safe.
			d.describe = "ndp's default registries rule (Reload crio.service, after a drain unless the change is safe)"
		}
		out = append(out, d)
	}
	return out
}

// specActions are a policy list's actions in the shape of entries (Special
// kept as SpecialAction).
func specActions(in []operatorv1.NodeDisruptionPolicyStatusAction) []Action {
	out := make([]Action, 0, len(in))
	for _, a := range in {
		out = append(out, Action{Type: operatorv1.NodeDisruptionPolicySpecActionType(a.Type), Reload: a.Reload, Restart: a.Restart})
	}
	return out
}

// defaultFor is the default file rule for exactly this path (written with
// or without a final "/"), if any.
func defaultFor(path string) (defaultRule, bool) {
	for _, d := range defaultFiles {
		if changeset.PathKey(d.path) == changeset.PathKey(path) {
			return d, true
		}
	}
	return defaultRule{}, false
}
