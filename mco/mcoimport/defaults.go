package mcoimport

import (
	operatorv1 "github.com/openshift/api/operator/v1"

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
// default for /etc/containers/registries.conf (pkg/apihelpers/apihelpers.go,
// defaultClusterPolicies), and means "reload CRI-O; drain unless the change
// is safe" (pkg/daemon/drain.go, isSafeContainerRegistryConfChanges;
// pkg/daemon/update.go runs a CRI-O reload for it).
const SpecialAction = operatorv1.NodeDisruptionPolicySpecActionType(operatorv1.SpecialStatusAction)

// RegistriesConf is the only path the MCO gives the Special action.
const RegistriesConf = registries.ConfPath

// defaultRule is one row of ndp's built-in default policy, in the MCO's
// terms: a path (or unit) and the actions a change of it gets when no other
// policy claims it.
type defaultRule struct {
	// path as policies/default/default.rego writes it ("/etc/crio/policies/").
	path    string
	actions []Action
	// describe replaces the actions in messages (the registries rule).
	describe string
}

func reload(s string) Action {
	return Action{Type: operatorv1.ReloadSpecAction, Reload: &operatorv1.ReloadService{ServiceName: operatorv1.NodeDisruptionPolicyServiceName(s)}}
}

func restart(s string) Action {
	return Action{Type: operatorv1.RestartSpecAction, Restart: &operatorv1.RestartService{ServiceName: operatorv1.NodeDisruptionPolicyServiceName(s)}}
}

var (
	actionNone   = []Action{{Type: operatorv1.NoneSpecAction}}
	actionReboot = []Action{{Type: operatorv1.RebootSpecAction}}
)

// defaultFiles are the file rules of ndp's default policy
// (policies/default/default.rego, docs/how-plans-are-decided.md, "The default policy"), which
// reproduce the MCO's defaultClusterPolicies (machine-config-operator
// pkg/apihelpers/apihelpers.go; paths from pkg/daemon/constants). The MCO
// writes its directories without a final "/" (constants.CrioPoliciesDir =
// "/etc/crio/policies"), ndp with one; both cover the directory and
// everything beneath it. TestDefaultsTableIsTheDefaultPolicy checks this
// table against the embedded default policy.
var defaultFiles = []defaultRule{
	{path: "/etc/mco/internal-registry-pull-secret.json", actions: actionNone},
	{path: "/var/lib/kubelet/config.json", actions: actionNone},
	{path: "/etc/nmstate/openshift/", actions: actionNone},
	{path: "/etc/machine-config-daemon/no-reboot/containers-gpg.pub", actions: []Action{reload("crio.service")}},
	{path: "/etc/containers/policy.json", actions: []Action{reload("crio.service")}},
	{path: "/etc/containers/registries.d/", actions: []Action{reload("crio.service")}},
	{path: "/etc/crio/policies/", actions: []Action{reload("crio.service")}},
	{path: "/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt", actions: []Action{restart("coreos-update-ca-trust.service"), restart("crio.service")}},
	{path: "/etc/kubernetes/credential-providers/", actions: []Action{restart("kubelet.service")}},
	{path: "/etc/systemd/system/kubelet.service.d/40-kubelet-crio-image-credential-provider.conf", actions: []Action{{Type: operatorv1.DaemonReloadSpecAction}, restart("kubelet.service")}},
	// The MCO's Special: ndp's registries rule (default.rego) reloads CRI-O
	// and drains first unless the change is safe, as the MCO does.
	{path: RegistriesConf, actions: []Action{{Type: SpecialAction}},
		describe: "ndp's default registries rule (Reload crio.service, after a drain unless the change is safe)"},
}

// defaultSSHKey: the MCO's default sshkey policy is None, and so is ndp's
// for SSH keys and the password hash.
var defaultSSHKey = actionNone

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
