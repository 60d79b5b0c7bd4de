// Package mcorules is the Machine Config Operator's update decision, as
// facts: what the MCO's node daemon does when a node moves from one rendered
// MachineConfig to another, under the cluster's node disruption policies
// (the MCO's defaults merged with MachineConfiguration cluster's
// spec.nodeDisruptionPolicy). ndp's planner decides what ndp does; this
// decides what the MCO does, for the advisor (docs/design.md). The CLI
// (ndp plan --mco), the admission webhook and the forecast controller all
// call Decide. No MCO code is linked or copied: the rules are restated
// from ../shared/mco-ref/MCO-BEHAVIOUR.md and checked against the MCO's own
// code (mco-decide) by the agreement test.
package mcorules

import (
	"errors"

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

// Policies is the MCO's merged cluster policy list: what its operator
// writes to MachineConfiguration cluster's
// status.nodeDisruptionPolicyStatus.clusterPolicies and its daemon reads.
type Policies = operatorv1.NodeDisruptionPolicyClusterStatus

// PolicySource says which policy list a decision used, and why.
type PolicySource struct {
	// From is "status" (MachineConfiguration cluster's status, current),
	// "spec" (its status is stale: the spec merged with the defaults, as
	// the operator will write it) or "defaults" (no MachineConfiguration).
	From string `json:"from"`
	// Generation and ObservedGeneration of MachineConfiguration cluster.
	Generation         int64 `json:"generation,omitempty"`
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Stale: status.observedGeneration is behind metadata.generation. The
	// MCO's daemon then waits up to 2 minutes per attempt for the operator
	// and, if it is still stale, marks the node Degraded and retries.
	Stale bool `json:"stale,omitempty"`
}

// Input is one question: a node moving From → To.
type Input struct {
	From, To *machineconfig.Config
	Policies Policies
	// SingleNode: the cluster's control plane is a single replica; the MCO
	// never drains there.
	SingleNode bool
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
}

// Decision is what the MCO does for one update.
type Decision struct {
	From string `json:"from"`
	To   string `json:"to"`
	// Refused, when not empty, lists why the MCO refuses the update (its
	// reconcilability check): the node goes Unreconcilable and nothing is
	// applied.
	Refused []string `json:"refused,omitempty"`
	// Actions in the MCO's order, changes taken by path and name (the MCO
	// itself orders different files' actions at random).
	Actions []Action `json:"actions"`
	Drain   bool     `json:"drain"`
	Reboot  bool     `json:"reboot"`
	Rules   []Rule   `json:"rules"`
	// ChangedFiles, ChangedUnits and SSHChanged are what the MCO's daemon
	// sees as changed.
	ChangedFiles []string `json:"changedFiles"`
	ChangedUnits []string `json:"changedUnits"`
	SSHChanged   bool     `json:"sshChanged"`
}

// ErrNotImplemented is returned until the rules land.
var ErrNotImplemented = errors.New("mcorules: not implemented yet")

// Defaults is the MCO's default cluster policy list.
func Defaults() Policies { return Policies{} }

// MergePolicies merges a MachineConfiguration's spec.nodeDisruptionPolicy
// with the defaults, as the MCO's operator does.
func MergePolicies(spec operatorv1.NodeDisruptionPolicyConfig) Policies { return Defaults() }

// PoliciesOf is the policy list the MCO's daemon would use with this
// MachineConfiguration cluster (nil: none exists).
func PoliciesOf(mc *operatorv1.MachineConfiguration) (Policies, PolicySource) {
	return Defaults(), PolicySource{From: "defaults"}
}

// Decide is what the MCO does for in.
func Decide(in Input) (*Decision, error) { return nil, ErrNotImplemented }
