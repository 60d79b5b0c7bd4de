package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// NodeHistoryKind is the kind of a NodeHistory.
const NodeHistoryKind = "NodeHistory"

// Bounds of a NodeHistory.
const (
	// NodeHistoryUpdates is how many updates a NodeHistory keeps, the
	// newest; older ones are dropped when a new one starts.
	NodeHistoryUpdates = 10
	// MaxUpdateChanges is how many changes one update lists; the rest are
	// counted in changesOmitted.
	MaxUpdateChanges = 50
	// MaxUpdateEvidence is how many evidence lines one update keeps.
	MaxUpdateEvidence = 40
)

// Executors of an update.
const (
	// ExecutorNDP: ndp-daemon ran the update from ndp's plan.
	ExecutorNDP = "ndp-daemon"
	// ExecutorMCO: the Machine Config Operator's daemon ran it; ndp's
	// advisor observed it.
	ExecutorMCO = "machine-config-daemon"
)

// UpdateResult says how an update ended.
// +kubebuilder:validation:Enum=InProgress;Done;Failed;Unreconcilable;Abandoned;Skipped
type UpdateResult string

const (
	// UpdateInProgress: the node was sent to the config and has not
	// reported it done.
	UpdateInProgress UpdateResult = "InProgress"
	// UpdateDone: the node runs the config.
	UpdateDone UpdateResult = "Done"
	// UpdateFailed: a step failed (ndp) or the node went Degraded (MCO).
	UpdateFailed UpdateResult = "Failed"
	// UpdateUnreconcilable: the update was refused before anything ran.
	UpdateUnreconcilable UpdateResult = "Unreconcilable"
	// UpdateAbandoned: the node was sent elsewhere before it reached the
	// config.
	UpdateAbandoned UpdateResult = "Abandoned"
	// UpdateSkipped: its drain ran out of its timeout under
	// onDrainTimeout Skip; the node stayed on its config, untouched.
	UpdateSkipped UpdateResult = "Skipped"
)

// Verdict compares what was foretold with what was observed (advisor).
// +kubebuilder:validation:Enum=Pending;Agreed;Mismatch;PartlyObserved
type Verdict string

const (
	// VerdictPending: the update has not finished.
	VerdictPending Verdict = "Pending"
	// VerdictAgreed: every foretold step was observed to happen, and
	// nothing else disruptive was.
	VerdictAgreed Verdict = "Agreed"
	// VerdictMismatch: at least one check contradicts the forecast.
	VerdictMismatch Verdict = "Mismatch"
	// VerdictPartlyObserved: nothing contradicts the forecast, but at
	// least one foretold step leaves no record to check (a restart the
	// MCO reports only in an Event that expired).
	VerdictPartlyObserved Verdict = "PartlyObserved"
)

// Observation of one check.
// +kubebuilder:validation:Enum=Yes;No;Unknown
type Observation string

const (
	ObservedYes     Observation = "Yes"
	ObservedNo      Observation = "No"
	ObservedUnknown Observation = "Unknown"
)

// CheckResult is the outcome of one check.
// +kubebuilder:validation:Enum=Agreed;Mismatch;NotObservable;Pending
type CheckResult string

const (
	CheckAgreed        CheckResult = "Agreed"
	CheckMismatch      CheckResult = "Mismatch"
	CheckNotObservable CheckResult = "NotObservable"
	CheckPending       CheckResult = "Pending"
)

// UpdateChange is one change of an update and what decided it.
type UpdateChange struct {
	// change, e.g. "file /etc/chrony.conf: modified", "unit
	// chronyd.service: enabled", "osImageURL".
	// +kubebuilder:validation:MaxLength=4096
	Change string `json:"change"`
	// machineConfigs the changed file or unit comes from (in the new
	// config; in the old one when it was removed).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=20
	MachineConfigs []string `json:"machineConfigs,omitempty"`
	// decidedBy: the NodeDisruptionPolicy whose claim won it ("policy
	// default", "(none)"), or the MCO's rule ("file policy /etc/containers/").
	// +kubebuilder:validation:MaxLength=4096
	DecidedBy string `json:"decidedBy"`
	// actions it was given.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	Actions []ForecastAction `json:"actions,omitempty"`
	// detail: the policy's or the rule's own explanation.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Detail string `json:"detail,omitempty"`
}

// UpdatePlan is what was to happen: ndp's plan (executor) or the MCO's
// forecast (advisor).
type UpdatePlan struct {
	// source: where the plan was read, e.g. "MachineConfig
	// rendered-worker-1a2b status" or "UpdateForecast worker-1a2b-3c4d".
	// +kubebuilder:validation:MaxLength=512
	Source string `json:"source"`
	// summary, e.g. "drain, Reboot".
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Summary string `json:"summary,omitempty"`
	// actions in order.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	Actions []ForecastAction `json:"actions,omitempty"`
	Drain   bool             `json:"drain"`
	Reboot  bool             `json:"reboot"`
	// policyRevision of the policy set that made ndp's plan.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	PolicyRevision string `json:"policyRevision,omitempty"`
}

// UpdateStep is one step that ran (executor: the daemon's journal) or was
// observed (advisor), in order.
type UpdateStep struct {
	// name: cordon, drain, backup, files, os, current-config, action,
	// reboot, uncordon.
	// +kubebuilder:validation:MaxLength=64
	Name string `json:"name"`
	// action of an action step.
	// +optional
	Action *ForecastAction `json:"action,omitempty"`
	// +optional
	Started *metav1.Time `json:"started,omitempty"`
	// +optional
	Finished *metav1.Time `json:"finished,omitempty"`
	// result: Running, Done, Failed, Observed, or Skipped (a drain given
	// up at its timeout, or a step of the host's other answer to a package
	// update).
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Result string `json:"result,omitempty"`
	// detail, e.g. the failure or what the observation rests on.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Detail string `json:"detail,omitempty"`
}

// UpdateCheck compares one foretold aspect of an update with what was
// observed (advisor).
type UpdateCheck struct {
	// what: "drain", "reboot", "reload crio.service", "restart
	// chronyd.service", "daemon-reload".
	// +kubebuilder:validation:MaxLength=512
	What string `json:"what"`
	// foretold: the forecast said it would happen.
	Foretold bool `json:"foretold"`
	// observed: whether it was seen to happen.
	Observed Observation `json:"observed"`
	Result   CheckResult `json:"result"`
	// evidence the observation rests on.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	// +kubebuilder:validation:items:MaxLength=1024
	Evidence []string `json:"evidence,omitempty"`
}

// BootIDs are the node's boot IDs (status.nodeInfo.bootID) when the update
// started and when it finished.
type BootIDs struct {
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Before string `json:"before,omitempty"`
	// +optional
	// +kubebuilder:validation:MaxLength=64
	After string `json:"after,omitempty"`
}

// NodeUpdate is one update of the node: from which rendered config to
// which, what changed and why, what was to happen, what happened.
type NodeUpdate struct {
	// from is the rendered config the node ran.
	// +kubebuilder:validation:MaxLength=253
	From string `json:"from"`
	// to is the rendered config it was sent to.
	// +kubebuilder:validation:MaxLength=253
	To string `json:"to"`
	// pool the node was in.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Pool string `json:"pool,omitempty"`
	// executor: ndp-daemon, or machine-config-daemon (observed by ndp's
	// advisor).
	// +kubebuilder:validation:Enum=ndp-daemon;machine-config-daemon
	Executor string      `json:"executor"`
	Started  metav1.Time `json:"started"`
	// +optional
	Finished *metav1.Time `json:"finished,omitempty"`
	Result   UpdateResult `json:"result"`
	// message: why it failed, was refused or abandoned.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Message string `json:"message,omitempty"`

	// changes between from and to, each with what decided it.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=50
	Changes []UpdateChange `json:"changes,omitempty"`
	// changesOmitted counts the changes not listed.
	// +optional
	ChangesOmitted int32 `json:"changesOmitted,omitempty"`

	// plan: what was to happen.
	// +optional
	Plan *UpdatePlan `json:"plan,omitempty"`
	// steps that ran or were observed, in order.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=120
	Steps []UpdateStep `json:"steps,omitempty"`
	// bootIDs before and after.
	// +optional
	BootIDs BootIDs `json:"bootIDs,omitempty"`

	// forecast is the UpdateForecast the update was checked against
	// (advisor).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Forecast string `json:"forecast,omitempty"`
	// mcoEntries are ndp's entries in the MCO's policy list the MCO was
	// foretold to use (advisor): those of the forecast's rules whose entry
	// in MachineConfiguration cluster's spec.nodeDisruptionPolicy ndp owns
	// (field manager ndp, ndp-controller --mco-entries), as "file
	// /etc/chrony.conf", "unit foo.service" or "sshkey". Set once, when the
	// update's forecast is read, from MachineConfiguration cluster as it
	// stood then (when the update started, unless its forecast came later).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=50
	// +kubebuilder:validation:items:MaxLength=4096
	MCOEntries []string `json:"mcoEntries,omitempty"`
	// checks: each foretold aspect against what was observed (advisor).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=110
	Checks []UpdateCheck `json:"checks,omitempty"`
	// verdict of the checks (advisor).
	// +optional
	Verdict Verdict `json:"verdict,omitempty"`
	// evidence seen while the update ran, in order (advisor): annotations,
	// MachineConfigNode conditions, Events. Observations are written as
	// they are made, so a restart of ndp loses none.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=40
	// +kubebuilder:validation:items:MaxLength=1024
	Evidence []string `json:"evidence,omitempty"`
}

// NodeHistoryStatus holds the node's last updates, newest first.
type NodeHistoryStatus struct {
	// updates, newest first; at most 10 are kept.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	Updates []NodeUpdate `json:"updates,omitempty"`
}

// NodeHistory records what one node went through in its last updates,
// newest first: from which rendered config to which, what changed and which
// policy or rule decided it, what was planned or foretold, what ran or was
// observed (drain, each action, reboot, boot IDs) and, beside the MCO,
// whether that was what was foretold. Its name is the node's; it is deleted
// with the node. ndp-daemon writes it (executor), or ndp's advisor, which
// watches the MCO's daemon work. `kubectl ndp why NODE` reads it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=nh,categories=ndp-all
// +kubebuilder:printcolumn:name=Pool,JSONPath=.status.updates[0].pool,type=string
// +kubebuilder:printcolumn:name=From,JSONPath=.status.updates[0].from,type=string,priority=1,description=The config the last update started from.
// +kubebuilder:printcolumn:name=To,JSONPath=.status.updates[0].to,type=string,description=The config of the last update.
// +kubebuilder:printcolumn:name=Result,JSONPath=.status.updates[0].result,type=string
// +kubebuilder:printcolumn:name=Plan,JSONPath=.status.updates[0].plan.summary,type=string,description="What the last update was to do: ndp's plan, or the MCO's forecast."
// +kubebuilder:printcolumn:name=Verdict,JSONPath=.status.updates[0].verdict,type=string,description=Beside the MCO: whether it did what was foretold.
// +kubebuilder:printcolumn:name=Executor,JSONPath=.status.updates[0].executor,type=string,priority=1
// +kubebuilder:printcolumn:name=Age,JSONPath=.metadata.creationTimestamp,type=date
type NodeHistory struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Status NodeHistoryStatus `json:"status,omitempty"`
}

// NodeHistoryList is a list of NodeHistory.
//
// +kubebuilder:object:root=true
type NodeHistoryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeHistory `json:"items"`
}

// NewNodeHistory is the empty NodeHistory of a node, as either writer
// creates it: named after the node and owned by it, so that it is deleted
// with the node. The Node is no controller of it, and does not wait for it
// (no blockOwnerDeletion: that would need rights on the Node's finalizers).
func NewNodeHistory(node string, uid types.UID) *NodeHistory {
	notController := false
	return &NodeHistory{ObjectMeta: metav1.ObjectMeta{Name: node, OwnerReferences: []metav1.OwnerReference{{
		APIVersion: "v1", Kind: "Node", Name: node, UID: uid, Controller: &notController,
	}}}}
}
