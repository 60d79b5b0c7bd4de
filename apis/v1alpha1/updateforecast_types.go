package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// UpdateForecastKind is the kind of an UpdateForecast.
const UpdateForecastKind = "UpdateForecast"

// UpdateForecastSpec names the update a forecast is about: the nodes of one
// pool that run one rendered config, moving to another. It is the
// forecast's identity (its name is derived from it) and never changes.
//
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable: it names the update the forecast is about"
type UpdateForecastSpec struct {
	// pool is the MachineConfigPool.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Pool string `json:"pool"`

	// from is the rendered MachineConfig the nodes run
	// (machineconfiguration.openshift.io/currentConfig).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	From string `json:"from"`

	// to is the rendered MachineConfig the pool moves to, named as the
	// MCO's render controller names it: predicted by ndp from the pool's
	// MachineConfigs, or the pool's spec.configuration.name once the MCO
	// has rendered it.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	To string `json:"to"`
}

// ForecastState says whether a forecast is still ahead of its nodes.
// +kubebuilder:validation:Enum=Pending;Superseded;Completed
type ForecastState string

const (
	// ForecastPending: nodes of the pool run from, and to is where the pool
	// moves to.
	ForecastPending ForecastState = "Pending"
	// ForecastSuperseded: the pool moves to another config now; the
	// forecast is kept as history.
	ForecastSuperseded ForecastState = "Superseded"
	// ForecastCompleted: no node of the pool runs from any more; the
	// forecast is kept as history.
	ForecastCompleted ForecastState = "Completed"
)

// ForecastAction is one post-config action: the MCO's status vocabulary
// (Special included, its registries.conf action) or ndp's plan's
// (PackageUpdate included).
type ForecastAction struct {
	// type of the action.
	// +required
	// +kubebuilder:validation:Enum=Reboot;Drain;Reload;Restart;DaemonReload;None;Special;PackageUpdate
	Type string `json:"type"`
	// service reloaded or restarted, for Reload and Restart.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	Service string `json:"service,omitempty"`
}

// MCORule says which of the MCO's rules decided one change.
type MCORule struct {
	// change: "file /etc/chrony.conf", "unit chronyd.service",
	// "ssh keys", "osImageURL"...
	// +kubebuilder:validation:MaxLength=4096
	Change string `json:"change"`
	// rule: the policy entry ("file policy /etc/containers/"), a fixed rule
	// ("osImageURL: always reboot") or "no node disruption policy".
	// +kubebuilder:validation:MaxLength=4096
	Rule string `json:"rule"`
	// actions the rule gives the change.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	Actions []ForecastAction `json:"actions,omitempty"`
	// detail: what the rule found, e.g. why a registries.conf change is
	// safe or not.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Detail string `json:"detail,omitempty"`
}

// MCOPolicySource says which of the MCO's policy lists the prediction used.
type MCOPolicySource struct {
	// from: "status" (MachineConfiguration cluster's status, current),
	// "spec" (its status is stale: the spec merged with the MCO's defaults,
	// as its operator will write it) or "defaults" (no MachineConfiguration).
	// +kubebuilder:validation:Enum=status;spec;defaults
	From string `json:"from"`
	// generation of MachineConfiguration cluster.
	// +optional
	Generation int64 `json:"generation,omitempty"`
	// observedGeneration of MachineConfiguration cluster's status.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// stale: the status is behind the spec. The MCO's daemon then waits for
	// its operator (up to 2 minutes per attempt, the node Degraded in
	// between); the prediction is what it does once the status is current.
	// +optional
	Stale bool `json:"stale,omitempty"`
}

// MCOForecast is what the Machine Config Operator's daemon will do.
type MCOForecast struct {
	// summary of the actions, as `kubectl get` shows them: "drain, Reboot",
	// "Restart chronyd.service", "Refused", "Fails".
	// +kubebuilder:validation:MaxLength=1024
	Summary string `json:"summary"`
	// error, when set, is why the MCO's daemon fails the update after
	// deciding its actions (a registries.conf that does not decode): the
	// nodes go Degraded, nothing is applied, and it retries.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Error string `json:"error,omitempty"`
	// refused lists why the MCO refuses the update: the nodes go
	// Unreconcilable and nothing is applied.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	Refused []string `json:"refused,omitempty"`
	// actions in the MCO's order, changes taken by path and name.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=1000
	Actions []ForecastAction `json:"actions,omitempty"`
	// drain: the nodes are cordoned and drained first.
	Drain bool `json:"drain"`
	// reboot: the nodes reboot.
	Reboot bool `json:"reboot"`
	// rules: for each changed file, unit and field, the rule that decided it.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=1000
	Rules []MCORule `json:"rules,omitempty"`
	// policySource: the MCO's policy list the prediction used.
	// +optional
	PolicySource *MCOPolicySource `json:"policySource,omitempty"`
}

// NDPRule says which NodeDisruptionPolicy decided one change in ndp's plan.
type NDPRule struct {
	// change, e.g. "file /etc/chrony.conf: modified".
	// +kubebuilder:validation:MaxLength=4096
	Change string `json:"change"`
	// policy: the NodeDisruptionPolicy whose claim won the change; "(none)"
	// when none claimed it (a reboot).
	// +kubebuilder:validation:MaxLength=253
	Policy string `json:"policy"`
	// match: the path or unit the claim matched.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Match string `json:"match,omitempty"`
	// actions the claim asked for.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	Actions []ForecastAction `json:"actions,omitempty"`
	// detail: the policy's own explanation.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Detail string `json:"detail,omitempty"`
}

// NDPForecast is ndp's own plan for the same update, with the active
// NodeDisruptionPolicies: what the cluster's policies would do.
type NDPForecast struct {
	// summary of the actions, as `kubectl get -o wide` shows them.
	// +kubebuilder:validation:MaxLength=1024
	Summary string `json:"summary"`
	// unreconcilable lists why the update cannot be applied in place.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	Unreconcilable []string `json:"unreconcilable,omitempty"`
	// actions in order.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=1000
	Actions []ForecastAction `json:"actions,omitempty"`
	Drain   bool             `json:"drain"`
	Reboot  bool             `json:"reboot"`
	// rules: for each change, the NodeDisruptionPolicy that decided it.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=1000
	Rules []NDPRule `json:"rules,omitempty"`
	// policyRevision: the active policy set's revision.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	PolicyRevision string `json:"policyRevision,omitempty"`
}

// UpdateForecastStatus is the forecast: the nodes, what the MCO will do
// and what ndp's policies would do.
type UpdateForecastStatus struct {
	// state: Pending, Superseded or Completed.
	// +optional
	State ForecastState `json:"state,omitempty"`

	// toSource: "predicted" (ndp rendered the pool's MachineConfigs as the
	// MCO will; the MCO has not yet) or "rendered" (the pool's
	// spec.configuration.name, the MCO's own rendering).
	// +optional
	// +kubebuilder:validation:Enum=predicted;rendered
	ToSource string `json:"toSource,omitempty"`

	// nodeCount: the pool's nodes that run from (the last count, once the
	// forecast is history).
	NodeCount int32 `json:"nodeCount"`

	// nodes: their names, sorted; at most 1000 are listed.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=1000
	Nodes []string `json:"nodes,omitempty"`

	// singleNode: the cluster's control plane is a single replica (or it
	// has one node): the MCO never drains there.
	// +optional
	SingleNode bool `json:"singleNode,omitempty"`

	// mco is what the Machine Config Operator's daemon will do.
	// +optional
	MCO *MCOForecast `json:"mco,omitempty"`

	// ndp is ndp's own plan with the active NodeDisruptionPolicies.
	// +optional
	NDP *NDPForecast `json:"ndp,omitempty"`

	// observed: what the nodes' updates were seen to do against this
	// forecast, node by node (from their NodeHistory).
	// +optional
	Observed *ForecastObserved `json:"observed,omitempty"`

	// conditions: Ready (the MCO's decision and ndp's plan are both there),
	// MCOPredicted, NDPPlanned, Current (True while pending; False,
	// reason Superseded or Completed, since it became history), and Agreed
	// (False, reason Mismatch, when a node did other than foretold).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Condition types and reasons of an UpdateForecast.
const (
	ForecastConditionReady        = "Ready"
	ForecastConditionMCOPredicted = "MCOPredicted"
	ForecastConditionNDPPlanned   = "NDPPlanned"
	ForecastConditionCurrent      = "Current"
	ForecastConditionAgreed       = "Agreed"
)

// ForecastObserved tallies the nodes whose update was checked against the
// forecast.
type ForecastObserved struct {
	Agreed         int32 `json:"agreed"`
	Mismatched     int32 `json:"mismatched"`
	PartlyObserved int32 `json:"partlyObserved"`
	InProgress     int32 `json:"inProgress"`
	// nodes: each node's verdict, sorted by node; at most 1000.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=1000
	Nodes []NodeVerdict `json:"nodes,omitempty"`
}

// NodeVerdict is one node's verdict on a forecast.
type NodeVerdict struct {
	// +kubebuilder:validation:MaxLength=253
	Node    string  `json:"node"`
	Verdict Verdict `json:"verdict"`
	// mismatches: the checks that contradict the forecast, e.g. "reboot:
	// foretold no, observed yes (boot id a1 → b2)".
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	// +kubebuilder:validation:items:MaxLength=1024
	Mismatches []string `json:"mismatches,omitempty"`
}

// UpdateForecast says, before the Machine Config Operator sends the first
// node, what updating the nodes of one pool from one rendered config to
// another will do: the MCO's decision, with the rule behind each change,
// and ndp's own plan beside it. ndp's advisor writes it; nothing executes it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=ufc;forecast,categories=ndp-all
// +kubebuilder:printcolumn:name=Pool,JSONPath=.spec.pool,type=string
// +kubebuilder:printcolumn:name=From,JSONPath=.spec.from,type=string,description=The rendered config the nodes run.
// +kubebuilder:printcolumn:name=To,JSONPath=.spec.to,type=string,description=The rendered config the pool moves to.
// +kubebuilder:printcolumn:name=Nodes,JSONPath=.status.nodeCount,type=integer,description=Nodes of the pool that run From.
// +kubebuilder:printcolumn:name=MCO Actions,JSONPath=.status.mco.summary,type=string,description=What the Machine Config Operator's daemon will do.
// +kubebuilder:printcolumn:name=Drain,JSONPath=.status.mco.drain,type=boolean,description=Whether the MCO drains the nodes.
// +kubebuilder:printcolumn:name=Reboot,JSONPath=.status.mco.reboot,type=boolean,description=Whether the MCO reboots the nodes.
// +kubebuilder:printcolumn:name=State,JSONPath=.status.state,type=string,priority=1,description="Pending, Superseded or Completed."
// +kubebuilder:printcolumn:name=NDP Actions,JSONPath=.status.ndp.summary,type=string,priority=1,description=What ndp's NodeDisruptionPolicies would do.
// +kubebuilder:printcolumn:name=Agreed,JSONPath=.status.observed.agreed,type=integer,priority=1,description=Nodes that did what was foretold.
// +kubebuilder:printcolumn:name=Mismatched,JSONPath=.status.observed.mismatched,type=integer,priority=1,description=Nodes that did otherwise.
// +kubebuilder:printcolumn:name=Age,JSONPath=.metadata.creationTimestamp,type=date
type UpdateForecast struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   UpdateForecastSpec   `json:"spec"`
	Status UpdateForecastStatus `json:"status,omitempty"`
}

// UpdateForecastList is a list of UpdateForecast.
//
// +kubebuilder:object:root=true
type UpdateForecastList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []UpdateForecast `json:"items"`
}
