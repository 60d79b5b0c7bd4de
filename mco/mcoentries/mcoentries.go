// Package mcoentries computes the entries ndp keeps in the Machine Config
// Operator's own node disruption policy — spec.nodeDisruptionPolicy of the
// operator.openshift.io/v1 MachineConfiguration "cluster" — so that the
// MCO's daemon does ndp's plan (docs/openshift.md#ndps-policies-in-the-mco).
// It is the inverse of mcoimport.
//
// Two kinds of entry:
//   - Static: a declarative file, unit or sshkey entry of a cluster-wide
//     NodeDisruptionPolicy whose decision does not depend on the contents,
//     the pool or the node. It gives the MCO ndp's plan for every change it
//     matches, for as long as the policy stands.
//   - Per update: for one pending update (from → to), an exact entry for
//     each changed file, unit or the SSH keys whose ndp decision the MCO
//     would not otherwise make. Such an entry is only true of that
//     update's contents: it stands while the update runs, behind the
//     admission guard (Guard) that refuses any other change to its paths.
//
// Everything here is a pure function of policies, configs and the MCO's
// rules (mcorules, checked against the MCO's own code); writing the entries
// is the controllers' job.
package mcoentries

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	operatorv1 "github.com/openshift/api/operator/v1"

	"github.com/ndp-dev/ndp/mco/mcorules"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/policy"
)

// Entries are ndp's part of spec.nodeDisruptionPolicy.
type Entries = operatorv1.NodeDisruptionPolicyConfig

// FieldManager is the server-side apply field manager ndp writes its entries
// under: it owns exactly those list items, keyed by path and name.
const FieldManager = "ndp"

// Unexpressed is a decision of ndp's the MCO's API cannot be given.
type Unexpressed struct {
	// Policy is the NodeDisruptionPolicy whose claim it is ("" when it is
	// the update as a whole).
	Policy string `json:"policy,omitempty"`
	// Subject is what changes: "file /etc/kubernetes/kubelet.conf",
	// "unit foo.service", "sshkey", "osImageURL".
	Subject string `json:"subject"`
	// Reason says why the MCO cannot be told, in a sentence.
	Reason string `json:"reason"`
}

func (u Unexpressed) String() string {
	if u.Policy == "" {
		return u.Subject + ": " + u.Reason
	}
	return fmt.Sprintf("policy %s, %s: %s", u.Policy, u.Subject, u.Reason)
}

// toSpec turns actions into one valid MCO entry's list, reduced as both the
// MCO and ndp reduce the union of claims: Reboot alone absorbs everything,
// None is dropped beside anything else, duplicates keep their first place.
// Empty input is None: nothing to do.
func toSpec(in []policy.Action) []operatorv1.NodeDisruptionPolicySpecAction {
	out := []operatorv1.NodeDisruptionPolicySpecAction{}
	seen := map[string]bool{}
	for _, a := range in {
		if a.Type == policy.ActionReboot {
			return []operatorv1.NodeDisruptionPolicySpecAction{{Type: operatorv1.RebootSpecAction}}
		}
		if a.Type == policy.ActionNone {
			continue
		}
		k := key(a)
		if !seen[k] {
			seen[k] = true
			out = append(out, *a.DeepCopy())
		}
	}
	if len(out) == 0 {
		return []operatorv1.NodeDisruptionPolicySpecAction{{Type: operatorv1.NoneSpecAction}}
	}
	return out
}

// key is an action as text: "Restart chronyd.service".
func key(a policy.Action) string { return planner.FormatActions([]policy.Action{a}) }

// effect is what a list of actions does to a node, order aside: the MCO
// runs different files' actions in random order, so only the set counts.
type effect struct {
	reboot, drain bool
	services      string // sorted, deduplicated service actions
}

func (e effect) String() string {
	switch {
	case e.reboot && e.drain:
		return "drain and reboot"
	case e.reboot:
		return "reboot, no drain"
	case e.services == "" && e.drain:
		return "drain"
	case e.services == "":
		return "nothing"
	case e.drain:
		return "drain, " + e.services
	}
	return e.services
}

// effectOf is the effect of spec actions.
func effectOf(as []operatorv1.NodeDisruptionPolicySpecAction) effect {
	var e effect
	var svcs []string
	for _, a := range as {
		switch a.Type {
		case operatorv1.RebootSpecAction:
			e.reboot, e.drain = true, true
		case operatorv1.DrainSpecAction:
			e.drain = true
		case operatorv1.NoneSpecAction:
		default:
			svcs = append(svcs, key(a))
		}
	}
	if e.reboot {
		return effect{reboot: true, drain: true}
	}
	sort.Strings(svcs)
	e.services = strings.Join(slices.Compact(svcs), ", ")
	return e
}

// mcoEffect is the effect of the MCO's own actions; Special is its
// registries.conf rule: reload crio, and drain when the change is unsafe.
func mcoEffect(as []mcorules.Action, specialDrains bool) effect {
	var spec []operatorv1.NodeDisruptionPolicySpecAction
	for _, a := range as {
		switch a.Type {
		case operatorv1.SpecialStatusAction:
			spec = append(spec, policy.ReloadAction("crio.service"))
			if specialDrains {
				spec = append(spec, operatorv1.NodeDisruptionPolicySpecAction{Type: operatorv1.DrainSpecAction})
			}
		case operatorv1.ReloadStatusAction:
			spec = append(spec, policy.ReloadAction(a.Service))
		case operatorv1.RestartStatusAction:
			spec = append(spec, policy.RestartAction(a.Service))
		default:
			spec = append(spec, operatorv1.NodeDisruptionPolicySpecAction{Type: operatorv1.NodeDisruptionPolicySpecActionType(a.Type)})
		}
	}
	return effectOf(spec)
}

// DecisionEffect says what an MCO decision does to a node, as
// "drain and reboot", "Restart chronyd.service", "drain, Reload crio.service".
func DecisionEffect(d *mcorules.Decision) string {
	if len(d.Refused) > 0 {
		return "refused"
	}
	e := mcoEffect(d.Actions, d.Drain)
	e.drain = d.Drain
	return e.String()
}

// PlanEffect is the same for ndp's plan.
func PlanEffect(actions []policy.Action, drain, reboot bool) string {
	return planEffectOf(actions, drain, reboot).String()
}

// planEffectOf is what a plan's actions, drain and reboot do to a node (a
// single-node plan reboots without draining).
func planEffectOf(actions []policy.Action, drain, reboot bool) effect {
	e := effectOf(actions)
	if reboot || e.reboot {
		return effect{reboot: true, drain: drain}
	}
	e.drain = drain || e.drain
	return e
}

// Merge is base with extra's entries added: an entry of extra for a path
// (unit name) base has replaces it; extra's sshkey, when it has actions,
// replaces base's.
func Merge(base, extra Entries) Entries {
	out := *base.DeepCopy()
	for _, f := range extra.Files {
		if i := slices.IndexFunc(out.Files, func(x operatorv1.NodeDisruptionPolicySpecFile) bool { return x.Path == f.Path }); i >= 0 {
			out.Files[i] = *f.DeepCopy()
		} else {
			out.Files = append(out.Files, *f.DeepCopy())
		}
	}
	for _, u := range extra.Units {
		if i := slices.IndexFunc(out.Units, func(x operatorv1.NodeDisruptionPolicySpecUnit) bool { return x.Name == u.Name }); i >= 0 {
			out.Units[i] = *u.DeepCopy()
		} else {
			out.Units = append(out.Units, *u.DeepCopy())
		}
	}
	if len(extra.SSHKey.Actions) > 0 {
		out.SSHKey = *extra.SSHKey.DeepCopy()
	}
	return out
}

// Empty says whether e has no entry.
func Empty(e Entries) bool {
	return len(e.Files) == 0 && len(e.Units) == 0 && len(e.SSHKey.Actions) == 0
}

// Sorted is e with its files and units in path and name order, so that
// what is written does not move with map order.
func Sorted(e Entries) Entries {
	out := *e.DeepCopy()
	sort.Slice(out.Files, func(i, j int) bool { return out.Files[i].Path < out.Files[j].Path })
	sort.Slice(out.Units, func(i, j int) bool { return out.Units[i].Name < out.Units[j].Name })
	return out
}

// Subjects lists what e has entries for, as "file:/etc/x", "unit:x.service"
// and "sshkey" (the per-update guard's annotation holds these).
func Subjects(e Entries) []string {
	var out []string
	for _, f := range e.Files {
		out = append(out, "file:"+f.Path)
	}
	for _, u := range e.Units {
		out = append(out, "unit:"+string(u.Name))
	}
	if len(e.SSHKey.Actions) > 0 {
		out = append(out, "sshkey")
	}
	sort.Strings(out)
	return out
}
