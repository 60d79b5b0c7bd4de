package v1

import (
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MachineConfig is openshift/api's MachineConfig with a status: for a
// rendered config, the plan of every move to it that a node needs.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=machineconfigs,scope=Cluster,shortName=mc
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name=GeneratedByController,JSONPath=.metadata.annotations.machineconfiguration\.openshift\.io/generated-by-controller-version,type=string,description=Version of the controller that generated the machineconfig.
// +kubebuilder:printcolumn:name=IgnitionVersion,JSONPath=.spec.config.ignition.version,type=string,description=Version of the Ignition Config defined in the machineconfig.
// +kubebuilder:printcolumn:name=Plans,JSONPath=.status.postConfigActions[*].from,type=string,description=The configs this config has plans from.
// +kubebuilder:printcolumn:name=Age,JSONPath=.metadata.creationTimestamp,type=date
type MachineConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec mcfgv1.MachineConfigSpec `json:"spec"`
	// +optional
	Status MachineConfigStatus `json:"status,omitempty"`
}

// MachineConfigStatus holds the precomputed plans: the node daemon only
// executes a plan found here.
type MachineConfigStatus struct {
	// observedGeneration is the generation the plans were computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// postConfigActions holds one plan per config that a node moves from.
	// +optional
	// +listType=map
	// +listMapKey=from
	// +kubebuilder:validation:MaxItems=100
	PostConfigActions []PostConfigActions `json:"postConfigActions,omitempty"`

	// conditions: PlanReady, Unreconcilable.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// PostConfigActions is the plan of a move from one config to this one.
type PostConfigActions struct {
	// from is the rendered config the node runs before the move.
	// +required
	// +kubebuilder:validation:MinLength=1
	From string `json:"from"`

	// actions run in order after the files are written; [None] when
	// nothing is needed, [Reboot] alone when the node reboots.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	Actions []PlanAction `json:"actions"`

	// drain: the node is cordoned and drained before any file is written.
	Drain bool `json:"drain"`

	// reboot: the actions end in a reboot.
	Reboot bool `json:"reboot"`

	// reasons: each change, the policy that claimed it, and its actions.
	// +optional
	// +listType=atomic
	Reasons []PlanReason `json:"reasons,omitempty"`

	// policyRevision is the digest of the policy set that made the plan.
	// +required
	PolicyRevision string `json:"policyRevision"`

	// planHash digests from, to, actions, drain, reboot and the revision;
	// the node daemon verifies it before executing.
	// +required
	PlanHash string `json:"planHash"`
}

// PlanReason explains one change of a plan.
type PlanReason struct {
	// change describes the change, e.g. "file /etc/chrony.conf: added".
	Change string `json:"change"`
	// policy is the policy whose claim won the change; "(none)" when no
	// policy claimed it and it needs a reboot.
	Policy string `json:"policy"`
	// match is the path or directory the claim matched, if any.
	// +optional
	Match string `json:"match,omitempty"`
	// actions the claim asked for.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	Actions []PlanAction `json:"actions"`
	// detail is the policy's own explanation, if any.
	// +optional
	Detail string `json:"detail,omitempty"`
}

// PlanAction has the shape of openshift/api's NodeDisruptionPolicySpecAction
// without its CEL rules: plans are written by the controller from validated
// policies, and per-item CEL over every plan and reason of a status would
// exceed the API server's validation cost budget.
type PlanAction struct {
	// type: Reboot, Drain, Reload, Restart, DaemonReload, None, or ndp's
	// own PackageUpdate.
	// +required
	Type PlanActionType `json:"type"`
	// reload names the unit to reload when type is Reload.
	// +optional
	Reload *PlanService `json:"reload,omitempty"`
	// restart names the unit to restart when type is Restart.
	// +optional
	Restart *PlanService `json:"restart,omitempty"`
}

// PlanActionType is openshift/api's NodeDisruptionPolicySpecActionType
// and ndp's own PackageUpdate (PackageUpdateAction): a type of its own, as
// the openshift type's enum is part of its schema.
// +kubebuilder:validation:Enum=Reboot;Drain;Reload;Restart;DaemonReload;None;PackageUpdate
type PlanActionType string

// PlanService names a systemd unit.
type PlanService struct {
	// +required
	// +kubebuilder:validation:MaxLength=255
	ServiceName string `json:"serviceName"`
}

// MachineConfigList is a list of MachineConfig.
//
// +kubebuilder:object:root=true
type MachineConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MachineConfig `json:"items"`
}
