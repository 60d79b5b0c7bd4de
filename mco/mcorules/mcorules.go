// Package mcorules is the Machine Config Operator's update decision, as
// facts: what the MCO's node daemon does when a node moves from one rendered
// MachineConfig to another, under the cluster's node disruption policies
// (the MCO's defaults merged with MachineConfiguration cluster's
// spec.nodeDisruptionPolicy). ndp's planner decides what ndp does; this
// decides what the MCO does, for the advisor (docs/design.md). The CLI
// (ndp plan --mco), the admission webhook and the forecast controller all
// call Decide. No MCO code is linked or copied: the rules are restated
// from ../shared/mco-ref/MCO-BEHAVIOUR.md and checked against the MCO's own
// code (mco-decide) by the agreement tests.
//
// The reference is machine-config-operator 7ff337a4 (pkg/daemon/update.go,
// drain.go; pkg/controller/common/reconcile.go, helpers.go;
// pkg/apihelpers/apihelpers.go), with the IrreconcilableMachineConfig
// feature gate on (the Default feature set there), on the
// NodeDisruptionPolicy path (every update but a node's first boot).
//
// Not modelled, because no API object shows them: the node's force file
// /run/machine-config-daemon-force (a present file makes any update a
// reboot), the node's on-disk FIPS state (taken to be what From says),
// on-cluster layering (OCL images compared instead of osImageURL) and
// HyperShift (always the legacy path).
//
// Known differences of the inputs, not of the rules: configs are parsed by
// machineconfig (Ignition 3.x only; the MCO also converts a 2.x config, and
// fails on a MachineConfig without spec.config, which is an empty config
// here). registries.conf is decoded with BurntSushi/toml 1.6 into
// go.podman.io/image 5.42's types where the MCO links toml 1.5 (TOML 1.0)
// and containers/image 5.35: TOML 1.1-only syntax is refused here as there
// (toml11Syntax), but a namespace-proxy key of the wrong type, or a key
// that toml 1.6 newly finds defined twice, fails here and not in the MCO.
package mcorules

import (
	"errors"
	"path"
	"reflect"
	"slices"
	"sort"
	"strings"

	igntypes "github.com/coreos/ignition/v2/config/v3_5/types"
	operatorv1 "github.com/openshift/api/operator/v1"

	"github.com/ndp-dev/ndp/machineconfig"
)

// Action is one of the MCO's post-config actions, in its status vocabulary
// (Special included: the MCO's registries.conf rule, `systemctl reload
// crio`, with a drain only for an unsafe change).
type Action struct {
	Type operatorv1.NodeDisruptionPolicyStatusActionType `json:"type"`
	// Service of a Reload or Restart.
	Service string `json:"service,omitempty"`
}

func (a Action) String() string {
	if a.Type == operatorv1.SpecialStatusAction {
		return "Special (reload crio)"
	}
	if a.Service != "" {
		return string(a.Type) + " " + a.Service
	}
	return string(a.Type)
}

// Policies is the MCO's merged cluster policy list: what its operator
// writes to MachineConfiguration cluster's
// status.nodeDisruptionPolicyStatus.clusterPolicies and its daemon reads.
type Policies = operatorv1.NodeDisruptionPolicyClusterStatus

// PolicySource says which policy list a decision used, and why.
type PolicySource struct {
	// From is "status" (MachineConfiguration cluster's status, current),
	// "spec" (its status is stale, or the object never was stored: the
	// spec merged with the defaults, as the operator will write it) or
	// "defaults" (no MachineConfiguration).
	From string `json:"from"`
	// Generation and ObservedGeneration of MachineConfiguration cluster.
	Generation         int64 `json:"generation,omitempty"`
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Stale: status.observedGeneration is behind metadata.generation. The
	// MCO's daemon then waits up to 2 minutes per attempt for the operator
	// and, if it is still stale, marks the node Degraded and retries; the
	// decision is what it does once the operator has caught up (the merged
	// spec is what the operator writes).
	Stale bool `json:"stale,omitempty"`
}

// Input is one question: a node moving From → To.
type Input struct {
	// From is the node's current rendered config; nil is the MCO's empty
	// config (a node that has none yet).
	From, To *machineconfig.Config
	Policies Policies
	// SingleNode: the cluster's control plane is a single replica; the MCO
	// never drains there.
	SingleNode bool
	// Overrides is MachineConfiguration cluster's
	// spec.irreconcilableValidationOverrides (OverridesOf): the storage
	// sections whose changes the MCO lets through (and does not apply to
	// existing nodes).
	Overrides operatorv1.IrreconcilableValidationOverrides
}

// Rule says what decided one change.
type Rule struct {
	// Change is the change, as ndp's reasons name it ("file
	// /etc/chrony.conf", "unit chronyd.service", "ssh keys", "osImageURL").
	Change string `json:"change"`
	// Rule is the MCO rule that decided it: a policy entry ("file policy
	// /etc/containers/"), a fixed rule ("osImageURL: always reboot") or
	// "no node disruption policy".
	Rule    string   `json:"rule"`
	Actions []Action `json:"actions"`
	// Detail adds what the rule found, e.g. why a registries.conf change
	// is safe or not.
	Detail string `json:"detail,omitempty"`
}

// Decision is what the MCO does for one update.
type Decision struct {
	From string `json:"from"`
	To   string `json:"to"`
	// Refused, when not empty, lists why the MCO refuses the update (its
	// reconcilability check): the node goes Unreconcilable and nothing is
	// applied. The first is the reason the MCO reports; the others it
	// would report once that one is fixed.
	Refused []string `json:"refused,omitempty"`
	// Actions in the MCO's order, changes taken by path and name (the MCO
	// itself orders different files' actions at random, and keeps
	// duplicates).
	Actions []Action `json:"actions"`
	Drain   bool     `json:"drain"`
	Reboot  bool     `json:"reboot"`
	Rules   []Rule   `json:"rules"`
	// ChangedFiles, ChangedUnits and SSHChanged are what the MCO's daemon
	// sees as changed.
	ChangedFiles []string `json:"changedFiles"`
	ChangedUnits []string `json:"changedUnits"`
	SSHChanged   bool     `json:"sshChanged"`
	// Error, when set, is why the MCO's daemon fails this update after
	// deciding its actions (registries.conf that does not decode): the
	// node goes Degraded, nothing is applied, and it retries.
	Error string `json:"error,omitempty"`
}

// Fixed rules: the spec fields whose change always reboots, whatever the
// policies say (update.go calculatePostConfigChangeNodeDisruptionAction).
const (
	RuleOSImageURL      = "osImageURL: always reboot"
	RuleKernelArguments = "kernelArguments: always reboot"
	RuleFIPS            = "fips: always reboot"
	RuleKernelType      = "kernelType: always reboot"
	RuleExtensions      = "extensions: always reboot"
	// RuleNoPolicy: a changed file or unit no policy entry covers reboots.
	RuleNoPolicy = "no node disruption policy"
	// RuleNothing: no file, unit or passwd change (nor a fixed one).
	RuleNothing = "no change to files, units or passwd"
	// RuleOrderOnly: the file or unit list differs only in order; the MCO
	// finds no changed entry and takes no action at all.
	RuleOrderOnly = "only the order of entries changed"
)

// MCO paths and names the rules use (pkg/daemon/constants).
const (
	RegistriesConfPath = "/etc/containers/registries.conf"
	ForceFilePath      = "/run/machine-config-daemon-force"
	CoreUser           = "core"
	// kernel types the MCO tells apart; anything else is the default.
	kernelTypeRealtime = "realtime"
	kernelType64k      = "64k-pages"
	kernelTypeDefault  = "default"
)

// emptyConfig is the MCO's stand-in for a node without a config
// (canonicalizeEmptyMC): Ignition 3.5.0 with nothing in it.
func emptyConfig() *machineconfig.Config {
	return &machineconfig.Config{Name: "mco-empty-mc", Ignition: igntypes.Config{Ignition: igntypes.Ignition{Version: igntypes.MaxVersion.String()}}}
}

// diff is the MCO daemon's machineConfigDiff.
type diff struct {
	osUpdate, kargs, fips, kernelType, extensions bool
	passwd, files, units                          bool
}

// newDiff is the MCO's machineConfigDiff of from and to. changedFiles and
// changedUnits, known already, spare comparing the whole lists when an
// entry changed: only an order-only change needs that comparison.
func newDiff(from, to *machineconfig.Config, changedFiles, changedUnits []string) diff {
	o, n := &from.Spec, &to.Spec
	return diff{
		osUpdate:   o.OSImageURL != n.OSImageURL,
		kargs:      !(len(o.KernelArguments) == 0 && len(n.KernelArguments) == 0) && !reflect.DeepEqual(o.KernelArguments, n.KernelArguments),
		fips:       o.FIPS != n.FIPS,
		kernelType: canonicalKernelType(o.KernelType) != canonicalKernelType(n.KernelType),
		extensions: !(len(o.Extensions) == 0 && len(n.Extensions) == 0) && !reflect.DeepEqual(o.Extensions, n.Extensions),
		passwd:     !reflect.DeepEqual(from.Ignition.Passwd, to.Ignition.Passwd),
		files:      len(changedFiles) > 0 || !reflect.DeepEqual(from.Ignition.Storage.Files, to.Ignition.Storage.Files),
		units:      len(changedUnits) > 0 || !reflect.DeepEqual(from.Ignition.Systemd.Units, to.Ignition.Systemd.Units),
	}
}

func canonicalKernelType(t string) string {
	switch t {
	case kernelTypeRealtime, kernelType64k:
		return t
	}
	return kernelTypeDefault
}

// changedFiles is the MCO's file diff: paths removed, added, or whose whole
// Ignition entry differs (contents, mode, overwrite, user, group, ...).
// A path given twice counts by its last entry, as the MCO's map does.
func changedFiles(from, to *igntypes.Config) []string {
	o, n := from.Storage.Files, to.Storage.Files
	return changed(len(o), len(n),
		func(i int) string { return o[i].Path }, func(j int) string { return n[j].Path },
		func(i, j int) bool { return reflect.DeepEqual(&o[i], &n[j]) })
}

// changedUnits is the MCO's unit diff by exact name: added, removed, or
// any difference in the unit (contents, enabled, mask, dropins).
func changedUnits(from, to *igntypes.Config) []string {
	o, n := from.Systemd.Units, to.Systemd.Units
	return changed(len(o), len(n),
		func(i int) string { return o[i].Name }, func(j int) string { return n[j].Name },
		func(i, j int) bool { return reflect.DeepEqual(&o[i], &n[j]) })
}

// changed lists, sorted, the keys only in the old list, only in the new,
// or in both with different entries (the last entry of a key counts).
func changed(nOld, nNew int, oldKey, newKey func(int) string, equal func(i, j int) bool) []string {
	old := make(map[string]int, nOld)
	for i := range nOld {
		old[oldKey(i)] = i
	}
	cur := make(map[string]int, nNew)
	for j := range nNew {
		cur[newKey(j)] = j
	}
	out := []string{}
	for k := range old {
		if _, ok := cur[k]; !ok {
			out = append(out, k)
		}
	}
	for k, j := range cur {
		if i, ok := old[k]; !ok || !equal(i, j) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// For is the question for a node moving from → to in a cluster with this
// MachineConfiguration cluster (nil: none), with the policy list and the
// irreconcilable overrides the MCO's daemon would use; PolicySource says
// which list that is.
func For(from, to *machineconfig.Config, mc *operatorv1.MachineConfiguration, singleNode bool) (Input, PolicySource) {
	pols, src := PoliciesOf(mc)
	return Input{From: from, To: to, Policies: pols, SingleNode: singleNode, Overrides: OverridesOf(mc)}, src
}

// Decide is what the MCO does for in. An error is bad input (no To).
func Decide(in Input) (*Decision, error) {
	if in.To == nil {
		return nil, errors.New("mcorules: no target config (Input.To)")
	}
	from, to := in.From, in.To
	if from == nil {
		from = emptyConfig()
	}
	d := &Decision{From: from.Name, To: to.Name, Actions: []Action{}, Rules: []Rule{}}
	d.ChangedFiles = changedFiles(&from.Ignition, &to.Ignition)
	d.ChangedUnits = changedUnits(&from.Ignition, &to.Ignition)
	df := newDiff(from, to, d.ChangedFiles, d.ChangedUnits)
	d.SSHChanged = df.passwd

	if d.Refused = refusals(from, to, in.Overrides); len(d.Refused) > 0 {
		return d, nil
	}
	d.Rules = append(d.Rules, overridden(from, to, in.Overrides)...)

	var actions []Action
	switch {
	case df.osUpdate || df.kargs || df.fips || df.kernelType || df.extensions:
		actions = []Action{{Type: operatorv1.RebootStatusAction}}
		d.Rules = append(d.Rules, fixedRules(df, d, from, to)...)
	case !df.files && !df.units && !df.passwd:
		actions = []Action{{Type: operatorv1.NoneStatusAction}}
		d.Rules = append(d.Rules, Rule{Change: "nothing", Rule: RuleNothing, Actions: actions})
	default:
		var rules []Rule
		actions, rules = fromPolicies(df.passwd, d.ChangedFiles, d.ChangedUnits, in.Policies, from, to)
		d.Rules = append(d.Rules, rules...)
		if df.files && len(d.ChangedFiles) == 0 {
			d.Rules = append(d.Rules, Rule{Change: "file order", Rule: RuleOrderOnly, Actions: []Action{}})
		}
		if df.units && len(d.ChangedUnits) == 0 {
			d.Rules = append(d.Rules, Rule{Change: "unit order", Rule: RuleOrderOnly, Actions: []Action{}})
		}
	}
	d.Actions = actions
	d.Reboot = hasAny(actions, operatorv1.RebootStatusAction)

	switch {
	case hasAny(actions, operatorv1.RebootStatusAction, operatorv1.DrainStatusAction):
		d.Drain = true
	case hasAny(actions, operatorv1.SpecialStatusAction):
		safe, why, err := registriesChangeSafe(&from.Ignition, &to.Ignition)
		if err != nil {
			d.Error = err.Error()
			break
		}
		d.Drain = !safe
		for i := range d.Rules {
			if hasAny(d.Rules[i].Actions, operatorv1.SpecialStatusAction) {
				d.Rules[i].Detail = why
			}
		}
	}
	if in.SingleNode {
		d.Drain = false
	}
	return d, nil
}

// fixedRules names every fixed-rule field that changed; the files, units
// and passwd changes beside them are decided by the first of those rules
// (the MCO does not consult the policies then).
func fixedRules(df diff, d *Decision, from, to *machineconfig.Config) []Rule {
	reboot := []Action{{Type: operatorv1.RebootStatusAction}}
	var out []Rule
	add := func(on bool, change, rule string) {
		if on {
			out = append(out, Rule{Change: change, Rule: rule, Actions: reboot})
		}
	}
	add(df.osUpdate, "osImageURL", RuleOSImageURL)
	add(df.kargs, "kernelArguments", RuleKernelArguments)
	add(df.fips, "fips", RuleFIPS)
	add(df.kernelType, "kernelType", RuleKernelType)
	add(df.extensions, "extensions", RuleExtensions)
	first := out[0].Rule + " (policies not consulted)"
	for _, p := range d.ChangedFiles {
		out = append(out, Rule{Change: "file " + p, Rule: first, Actions: reboot})
	}
	for _, u := range d.ChangedUnits {
		out = append(out, Rule{Change: "unit " + u, Rule: first, Actions: reboot})
	}
	if df.passwd {
		out = append(out, Rule{Change: passwdChange(from, to), Rule: first, Actions: reboot})
	}
	return out
}

// fromPolicies is the MCO's policy lookup: each changed file by its
// longest matching policy path, each changed unit by exact name, the SSH
// policy on any passwd change; a change without a policy reboots; then the
// reduction (Reboot alone wins; None dropped beside anything else; only
// None gives one None).
func fromPolicies(passwd bool, files, units []string, pol Policies, from, to *machineconfig.Config) ([]Action, []Rule) {
	var actions []Action
	var rules []Rule
	reboot := false
	for _, p := range files {
		e, ok := closestFilePolicy(p, pol.Files)
		if !ok {
			reboot = true
			rules = append(rules, Rule{Change: "file " + p, Rule: RuleNoPolicy, Actions: []Action{{Type: operatorv1.RebootStatusAction}}})
			continue
		}
		a := statusActions(e.Actions)
		actions = append(actions, a...)
		rules = append(rules, Rule{Change: "file " + p, Rule: "file policy " + e.Path, Actions: a})
	}
	for _, u := range units {
		i := slices.IndexFunc(pol.Units, func(e operatorv1.NodeDisruptionPolicyStatusUnit) bool { return string(e.Name) == u })
		if i < 0 {
			reboot = true
			rules = append(rules, Rule{Change: "unit " + u, Rule: RuleNoPolicy, Actions: []Action{{Type: operatorv1.RebootStatusAction}}})
			continue
		}
		a := statusActions(pol.Units[i].Actions)
		actions = append(actions, a...)
		rules = append(rules, Rule{Change: "unit " + u, Rule: "unit policy " + string(pol.Units[i].Name), Actions: a})
	}
	if passwd {
		a := statusActions(pol.SSHKey.Actions)
		actions = append(actions, a...)
		rules = append(rules, Rule{Change: passwdChange(from, to), Rule: "ssh key policy", Actions: a})
	}
	if reboot || hasAny(actions, operatorv1.RebootStatusAction) {
		return []Action{{Type: operatorv1.RebootStatusAction}}, rules
	}
	if hasAny(actions, operatorv1.NoneStatusAction) {
		if !hasAny(actions, operatorv1.DrainStatusAction, operatorv1.ReloadStatusAction, operatorv1.RestartStatusAction, operatorv1.DaemonReloadStatusAction, operatorv1.SpecialStatusAction) {
			return []Action{{Type: operatorv1.NoneStatusAction}}, rules
		}
		actions = slices.DeleteFunc(actions, func(a Action) bool { return a.Type == operatorv1.NoneStatusAction })
	}
	if actions == nil {
		actions = []Action{}
	}
	return actions, rules
}

// FilePolicy is the policy entry the MCO's daemon decides a changed file
// by (its longest matching path); ok is false when none matches and the
// change reboots.
func FilePolicy(p string, pol Policies) (e operatorv1.NodeDisruptionPolicyStatusFile, ok bool) {
	return closestFilePolicy(p, pol.Files)
}

// UnitPolicy is the policy entry of a changed unit (its exact name).
func UnitPolicy(name string, pol Policies) (operatorv1.NodeDisruptionPolicyStatusUnit, bool) {
	i := slices.IndexFunc(pol.Units, func(e operatorv1.NodeDisruptionPolicyStatusUnit) bool { return string(e.Name) == name })
	if i < 0 {
		return operatorv1.NodeDisruptionPolicyStatusUnit{}, false
	}
	return pol.Units[i], true
}

// StatusActions are a policy entry's actions as decisions carry them.
func StatusActions(in []operatorv1.NodeDisruptionPolicyStatusAction) []Action {
	return statusActions(in)
}

// closestFilePolicy is the MCO's file policy match: the policy path equals
// the changed path, or the changed path lies under it as a directory; the
// longest policy path wins, the first of equally long ones.
func closestFilePolicy(p string, files []operatorv1.NodeDisruptionPolicyStatusFile) (operatorv1.NodeDisruptionPolicyStatusFile, bool) {
	var best operatorv1.NodeDisruptionPolicyStatusFile
	bestLen := 0 // an empty policy path never matches
	for _, e := range files {
		if (p == e.Path || under(e.Path, p)) && len(e.Path) > bestLen {
			best, bestLen = e, len(e.Path)
		}
	}
	return best, bestLen > 0
}

// under: target lies below dir, both cleaned ("/etc/containers/" covers
// "/etc/containers/a", not "/etc/containers" itself nor "/etc/containersx").
func under(dir, target string) bool {
	return strings.HasPrefix(path.Clean(target), path.Clean(dir)+"/")
}

func hasAny(actions []Action, types ...operatorv1.NodeDisruptionPolicyStatusActionType) bool {
	for _, a := range actions {
		if slices.Contains(types, a.Type) {
			return true
		}
	}
	return false
}

// statusActions converts a policy entry's actions, keeping their order.
func statusActions(in []operatorv1.NodeDisruptionPolicyStatusAction) []Action {
	out := make([]Action, 0, len(in))
	for _, a := range in {
		out = append(out, actionOf(a))
	}
	return out
}

func actionOf(a operatorv1.NodeDisruptionPolicyStatusAction) Action {
	out := Action{Type: a.Type}
	switch {
	case a.Type == operatorv1.ReloadStatusAction && a.Reload != nil:
		out.Service = string(a.Reload.ServiceName)
	case a.Type == operatorv1.RestartStatusAction && a.Restart != nil:
		out.Service = string(a.Restart.ServiceName)
	}
	return out
}

// passwdChange names a passwd change as ndp's reasons do: the SSH keys,
// the password hash, or the passwd section as a whole.
func passwdChange(from, to *machineconfig.Config) string {
	keys := map[string][]igntypes.SSHAuthorizedKey{}
	hash := map[string]*string{}
	for _, u := range from.Ignition.Passwd.Users {
		keys["old/"+u.Name], hash["old/"+u.Name] = u.SSHAuthorizedKeys, u.PasswordHash
	}
	sshKeys, pw := false, false
	names := map[string]bool{}
	for _, u := range from.Ignition.Passwd.Users {
		names[u.Name] = true
	}
	for _, u := range to.Ignition.Passwd.Users {
		names[u.Name] = true
	}
	for n := range names {
		var nk []igntypes.SSHAuthorizedKey
		var nh *string
		for _, u := range to.Ignition.Passwd.Users {
			if u.Name == n {
				nk, nh = u.SSHAuthorizedKeys, u.PasswordHash
			}
		}
		if !slices.Equal(keys["old/"+n], nk) {
			sshKeys = true
		}
		if deref(hash["old/"+n]) != deref(nh) {
			pw = true
		}
	}
	switch {
	case sshKeys && !pw:
		return "ssh keys"
	case pw && !sshKeys:
		return "password hash"
	}
	return "passwd"
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// String is the one-line summary: "Restart chronyd.service (no drain)".
func (d *Decision) String() string {
	if len(d.Refused) > 0 {
		return "refused: " + d.Refused[0]
	}
	s := FormatActions(d.Actions)
	if s == "" {
		s = "no action"
	}
	if d.Drain {
		return s + " (drain)"
	}
	return s + " (no drain)"
}

// FormatActions is "Reload crio.service, Restart kubelet.service".
func FormatActions(actions []Action) string {
	var s string
	for i, a := range actions {
		if i > 0 {
			s += ", "
		}
		s += a.String()
	}
	return s
}
