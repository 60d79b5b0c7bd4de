package v1

import (
	"path"
	"strings"
)

// Node annotations, with the MCO's names so that existing tooling reads
// ndp's nodes. The rollout controller writes desiredConfig; the node
// daemon writes currentConfig, state and reason.
const (
	// CurrentConfigAnnotation is the rendered config the node runs.
	CurrentConfigAnnotation = "machineconfiguration.openshift.io/currentConfig"
	// DesiredConfigAnnotation is the rendered config the node is sent to.
	DesiredConfigAnnotation = "machineconfiguration.openshift.io/desiredConfig"
	// StateAnnotation is the node daemon's state: one of the NodeState
	// values below.
	StateAnnotation = "machineconfiguration.openshift.io/state"
	// ReasonAnnotation explains a Degraded or Unreconcilable state.
	ReasonAnnotation = "machineconfiguration.openshift.io/reason"
)

// Node states (StateAnnotation).
const (
	// StateDone: the node runs its currentConfig and nothing is under way.
	StateDone = "Done"
	// StateWorking: the node daemon is executing a plan.
	StateWorking = "Working"
	// StateDegraded: a step of the plan failed; the reason names it.
	StateDegraded = "Degraded"
	// StateUnreconcilable: the target cannot be applied in place.
	StateUnreconcilable = "Unreconcilable"
)

// ExecutingPlanTo tells, from a node's annotations, whether its daemon is
// executing the plan to target: such a node keeps the plan it started with,
// whatever the policies become meanwhile.
func ExecutingPlanTo(nodeAnnotations map[string]string, target string) bool {
	return nodeAnnotations[StateAnnotation] == StateWorking && nodeAnnotations[DesiredConfigAnnotation] == target
}

// Labels and annotations of MachineConfigs.
const (
	// RoleLabel selects the MachineConfigs of a pool, as the MCO's pools do.
	RoleLabel = "machineconfiguration.openshift.io/role"
	// RenderedForLabel marks a rendered MachineConfig with its pool;
	// rendered configs are never sources of another rendering.
	RenderedForLabel = "ndp.dev/rendered-for"
	// SourcesAnnotation, on a rendered MachineConfig, maps change ids
	// ("file:/etc/chrony.conf", "unit:foo.service") to the source
	// MachineConfig that contributed them, so that a template owner's
	// policy can match on the source.
	SourcesAnnotation = "ndp.dev/sources"
	// GeneratedByControllerVersionAnnotation marks a MachineConfig written
	// by an MCO controller (the template, kubelet-config,
	// container-runtime-config controllers) and every rendered config.
	GeneratedByControllerVersionAnnotation = "machineconfiguration.openshift.io/generated-by-controller-version"
)

// MachineConfig conditions (status.conditions of a rendered config).
const (
	// ConditionPlanReady: every plan a node of the pool needs is computed.
	ConditionPlanReady = "PlanReady"
	// ConditionUnreconcilable: some node cannot move to this config in
	// place.
	ConditionUnreconcilable = "Unreconcilable"
)

// MachineConfigPool conditions ndp adds to openshift/api's.
const (
	// ConditionRegistriesDegraded: an image-mirror object is invalid and
	// registries.conf is left as it was.
	ConditionRegistriesDegraded = "RegistriesDegraded"
	// ConditionUnmanagedNodes: the pool's nodeSelector selects nodes that
	// no pool manages (a node in two custom pools, an invalid nodeSelector
	// of some pool: nodepool.ConflictError). They get no update until an
	// administrator fixes their labels or the selector.
	ConditionUnmanagedNodes = "UnmanagedNodes"
	// ConditionMCOPresent: the Machine Config Operator manages the
	// cluster's nodes (its ClusterOperator machine-config or its daemon's
	// DaemonSet exists). Both write the same rendered configs, pool targets
	// and node annotations, so ndp renders nothing, its rollout sends no
	// node anywhere and its daemons execute nothing until one of the two is
	// removed; the pool is Degraded meanwhile.
	ConditionMCOPresent = "MCOPresent"
	// ConditionRolloutHeld: a start that the pool's budget allows does not
	// happen now: a RolloutPolicy's window, gate, pacing or zone budget, or
	// a node's ndp.dev/hold annotation, holds it. The message says why and
	// when it can go ("waiting: outside the maintenance window, opens Sat
	// 02:00 Europe/Berlin for plans that reboot"; "held: node worker-3 by
	// annotation ndp.dev/hold"). Reported only for pools that some policy
	// selects or that had a node held.
	ConditionRolloutHeld = "RolloutHeld"
)

// PlanPendingReason is the reason of the MachineConfigNode condition
// UpdatePrepared while the target has no plan for the node's config yet.
const PlanPendingReason = "PlanPending"

// Host paths the node daemon itself owns. No MachineConfig may write or
// remove them: the planner refuses such a config (it is never planned),
// as the MCO refuses one that writes its own control files.
const (
	// DaemonStateDir holds ndp-daemon's journal, current config and backup.
	DaemonStateDir = "/etc/ndp"
	// MCOForceFile makes the MCO's daemon skip its checks; a config that
	// writes it is refused, whichever daemon runs.
	MCOForceFile = "/run/machine-config-daemon-force"
)

// DaemonControlPath reports whether a host path is one of the node daemon's
// control files: MCOForceFile, DaemonStateDir or anything beneath it.
func DaemonControlPath(p string) bool {
	p = path.Clean(p)
	return p == MCOForceFile || p == DaemonStateDir || strings.HasPrefix(p, DaemonStateDir+"/")
}
