package v1alpha1

import (
	operatorv1 "github.com/openshift/api/operator/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Kind is the kind of a NodeDisruptionPolicy.
const Kind = "NodeDisruptionPolicy"

// Priorities: the embedded defaults are 0 so any user policy for the same
// path overrides them; a user policy without a priority gets 100.
const (
	DefaultsPriority    int32 = 0
	UserDefaultPriority int32 = 100
)

// NodeDisruptionPolicySpec holds the rules of one policy. Declarative entries
// and Rego are one mechanism: declarative entries are data for a built-in
// Rego rule, so both claim changes the same way.
type NodeDisruptionPolicySpec struct {
	// priority breaks ties between equally specific claims of different
	// policies: the higher wins. The built-in defaults have priority 0.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000000
	Priority *int32 `json:"priority,omitempty"`

	// poolSelector restricts the policy to MachineConfigPools whose labels
	// match. Empty or absent means every pool.
	// +optional
	PoolSelector *metav1.LabelSelector `json:"poolSelector,omitempty"`

	// files maps file paths (an exact path, or a directory ending in "/")
	// to the actions a change of such a file needs.
	// +optional
	// +listType=map
	// +listMapKey=path
	// +kubebuilder:validation:MaxItems=100
	Files []operatorv1.NodeDisruptionPolicySpecFile `json:"files,omitempty"`

	// units maps systemd unit names to the actions a change of the unit needs.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=100
	Units []operatorv1.NodeDisruptionPolicySpecUnit `json:"units,omitempty"`

	// sshkey gives the actions for a change of the core user's SSH keys.
	// +optional
	SSHKey *operatorv1.NodeDisruptionPolicySpecSSHKey `json:"sshkey,omitempty"`

	// rego is a Rego v1 module whose package is under "ndp.policy." and
	// whose "claims" rule claims changes of the change set.
	// +optional
	// +kubebuilder:validation:MaxLength=262144
	Rego string `json:"rego,omitempty"`

	// regoTests are Rego tests for the rego module; the policy is not
	// accepted unless they pass.
	// +optional
	// +kubebuilder:validation:MaxLength=262144
	RegoTests string `json:"regoTests,omitempty"`

	// bundleRef points at an OPA bundle shipped by a template owner in a
	// ConfigMap; its modules and tests join this policy's.
	// +optional
	BundleRef *BundleReference `json:"bundleRef,omitempty"`
}

// BundleReference locates an OPA bundle (.tar.gz) in a ConfigMap's
// binaryData and, optionally, the key its signature must verify with.
type BundleReference struct {
	// namespace of the ConfigMap.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`

	// name of the ConfigMap.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// key of the bundle in the ConfigMap's binaryData.
	// +optional
	// +kubebuilder:default="bundle.tar.gz"
	Key string `json:"key,omitempty"`

	// publicKey is a PEM-encoded public key (RSA or ECDSA). When set, the
	// bundle must carry a signature (.signatures.json) made with the
	// matching private key over every file, or it is rejected.
	// +optional
	// +kubebuilder:validation:MaxLength=16384
	PublicKey string `json:"publicKey,omitempty"`
}

// NodeDisruptionPolicyStatus reports whether the policy compiled, passed its
// tests and is in force.
type NodeDisruptionPolicyStatus struct {
	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Accepted, Active, Degraded.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// revision is the digest of what is active; plans record it.
	// +optional
	Revision string `json:"revision,omitempty"`

	// rules counts the active rules: declarative entries plus the "claims"
	// rules of the Rego modules.
	// +optional
	Rules int32 `json:"rules,omitempty"`

	// activeSpec is the spec of the generation in force. When the current
	// generation is rejected, a restarted controller activates this one
	// again instead of losing the last good revision.
	// +optional
	ActiveSpec *NodeDisruptionPolicySpec `json:"activeSpec,omitempty"`

	// mco says what ndp keeps of this policy in the Machine Config
	// Operator's own node disruption policy (MachineConfiguration cluster
	// spec.nodeDisruptionPolicy), where ndp-controller runs with
	// --mco-entries; absent otherwise.
	// +optional
	MCO *PolicyMCOStatus `json:"mco,omitempty"`
}

// PolicyMCOStatus says which of a policy's decisions the MCO is given.
type PolicyMCOStatus struct {
	// state is Written (each of its declarative entries is in the MCO's
	// list), Partial (some are; notExpressed and conflicts say why not the
	// others), NotWritten (none is) or None (the policy has no declarative
	// entry: Rego alone is never expressible statically).
	// +kubebuilder:validation:Enum=Written;Partial;NotWritten;None
	State string `json:"state"`

	// entries ndp keeps for this policy: "file /etc/chrony.conf: Restart
	// chronyd.service".
	// +optional
	// +listType=atomic
	Entries []string `json:"entries,omitempty"`

	// notExpressed lists what of the policy the MCO's API cannot be told,
	// and why (its Rego reads the contents, it is for some pools only, the
	// API's limits).
	// +optional
	// +listType=atomic
	NotExpressed []string `json:"notExpressed,omitempty"`

	// conflicts lists entries that an administrator's own entry for the
	// same path or unit holds otherwise: ndp never overwrites those.
	// +optional
	// +listType=atomic
	Conflicts []string `json:"conflicts,omitempty"`

	// updateEntries lists the per-update entries standing for pending
	// updates whose changes this policy decided.
	// +optional
	// +listType=atomic
	UpdateEntries []string `json:"updateEntries,omitempty"`
}

// PolicyMCOStatus states.
const (
	MCOEntriesWritten    = "Written"
	MCOEntriesPartial    = "Partial"
	MCOEntriesNotWritten = "NotWritten"
	MCOEntriesNone       = "None"
)

// Condition types of a NodeDisruptionPolicy.
const (
	// ConditionAccepted: the current generation compiled and its tests
	// passed.
	ConditionAccepted = "Accepted"
	// ConditionActive: a revision of the policy is in force (the current
	// generation, or the last good one when the current is rejected).
	ConditionActive = "Active"
	// ConditionDegraded: the current generation is rejected.
	ConditionDegraded = "Degraded"
)

// NodeDisruptionPolicy says which actions a node needs to apply a change of
// its configuration.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=ndp,categories=ndp-all
// +kubebuilder:printcolumn:name=Priority,JSONPath=.spec.priority,type=integer,description=Ties between equally specific claims go to the higher priority (unset is 100).
// +kubebuilder:printcolumn:name=Rules,JSONPath=.status.rules,type=integer,description=Active declarative entries and Rego claims rules.
// +kubebuilder:printcolumn:name=Accepted,JSONPath=.status.conditions[?(@.type=="Accepted")].status,type=string,description=Whether the current generation compiled and passed its tests.
// +kubebuilder:printcolumn:name=Age,JSONPath=.metadata.creationTimestamp,type=date
type NodeDisruptionPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   NodeDisruptionPolicySpec   `json:"spec,omitempty"`
	Status NodeDisruptionPolicyStatus `json:"status,omitempty"`
}

// EffectivePriority is spec.priority, or the user default when unset.
func (p *NodeDisruptionPolicy) EffectivePriority() int32 {
	if p.Spec.Priority == nil {
		return UserDefaultPriority
	}
	return *p.Spec.Priority
}

// NodeDisruptionPolicyList is a list of NodeDisruptionPolicy.
//
// +kubebuilder:object:root=true
type NodeDisruptionPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeDisruptionPolicy `json:"items"`
}

var _ runtime.Object = &NodeDisruptionPolicy{}
