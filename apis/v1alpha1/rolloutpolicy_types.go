package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// RolloutPolicyKind is the kind of a RolloutPolicy.
const RolloutPolicyKind = "RolloutPolicy"

// The per-node hold: a node that carries HoldAnnotation is never sent to a
// new config (a node that has started finishes). `kubectl ndp hold NODE`
// writes both annotations, `kubectl ndp release NODE` removes them.
const (
	// HoldAnnotation holds the node; its value is the reason, free text
	// ("" reads as "no reason given").
	HoldAnnotation = "ndp.dev/hold"
	// HoldByAnnotation names who held the node (a user, a tool); optional.
	HoldByAnnotation = "ndp.dev/hold-by"
)

// DrainedPodsAnnotation is on a Node: the pods its last update drained, by
// owner (JSON, DrainedPods). ndp-daemon writes it with the update's Done
// state (no request of its own); the rollout controller reads it when a
// policy's pacing waits for drained pods (waitForDrainedPodsReady). An
// update without a drain removes it.
const DrainedPodsAnnotation = "ndp.dev/drained-pods"

// UpdateDoneAnnotation is on a Node: when its last update completed
// (RFC 3339), written by ndp-daemon with the update's Done state. A
// policy's pacing counts its settle time from it, also across a restart of
// ndp-controller.
const UpdateDoneAnnotation = "ndp.dev/update-done-at"

// RebootTimeoutReason is the reason ndp-controller gives a node it marks
// Degraded because it did not come back from its reboot in time.
const RebootTimeoutReason = "RebootTimeout"

// MaxDrainedOwners bounds DrainedPods.Owners; the others are counted in More.
const MaxDrainedOwners = 50

// DrainedPods are the pods a drain evicted, by the controller that owns
// them, as the daemon listed them before the first eviction.
type DrainedPods struct {
	// at is when the drain started: a pod of the owner created since is
	// one of its replacements.
	At metav1.Time `json:"at"`
	// owners of the evicted pods.
	// +optional
	Owners []DrainedOwner `json:"owners,omitempty"`
	// unowned counts pods without a controller: deleted, nothing brings
	// them back, so nothing waits for them.
	// +optional
	Unowned int `json:"unowned,omitempty"`
	// more counts the owners beyond MaxDrainedOwners, not listed.
	// +optional
	More int `json:"more,omitempty"`
}

// DrainedOwner is one controller (ReplicaSet, StatefulSet, Job, ...) some
// of whose pods a drain evicted.
type DrainedOwner struct {
	// apiVersion of the owner ("apps/v1"); empty in records of older
	// daemons, read as the built-in kind of its name.
	// +optional
	APIVersion string    `json:"apiVersion,omitempty"`
	Kind       string    `json:"kind"`
	Namespace  string    `json:"namespace"`
	Name       string    `json:"name"`
	UID        types.UID `json:"uid"`
	// pods evicted.
	Pods int `json:"pods"`
}

// Bounds of a RolloutPolicy.
const (
	MaxWindows         = 20
	MaxExclusions      = 100
	MaxAlertNames      = 100
	MaxLabelMatchers   = 20
	MaxPolicyPools     = 100
	MaxPoolReasons     = 20
	MaxPoolHeldNodes   = 50
	MaxOrderPriorities = 50
	MaxSilenceMatchers = 20
)

// PlanKind is one thing a node's plan makes it go through, in the words of
// the plan (MachineConfig status.postConfigActions): its drain and reboot
// flags and its action types. A plan has several kinds at once: a plan
// that drains and restarts a unit is Drain and Restart; [None] without a
// drain is None.
// +kubebuilder:validation:Enum=Reboot;Drain;Restart;Reload;DaemonReload;None;All
type PlanKind string

const (
	// PlanReboot: the plan reboots the node.
	PlanReboot PlanKind = "Reboot"
	// PlanDrain: the plan cordons and drains the node.
	PlanDrain PlanKind = "Drain"
	// PlanRestart: the plan restarts a unit.
	PlanRestart PlanKind = "Restart"
	// PlanReload: the plan reloads a unit.
	PlanReload PlanKind = "Reload"
	// PlanDaemonReload: the plan reloads systemd's configuration.
	PlanDaemonReload PlanKind = "DaemonReload"
	// PlanNone: the plan writes files only.
	PlanNone PlanKind = "None"
	// PlanAll, in a window's holds only: every plan, whatever it does.
	PlanAll PlanKind = "All"
)

// Weekday is a day of the week, in the window's time zone.
// +kubebuilder:validation:Enum=Mon;Tue;Wed;Thu;Fri;Sat;Sun
type Weekday string

// RolloutPolicySpec says when and in what order the nodes of the selected
// pools may start an update. It only ever stops or delays starts: it never
// loosens a pool's maxUnavailable, and a node that has started finishes.
// +kubebuilder:validation:XValidation:rule="has(self.windows) || has(self.gates) || has(self.pacing) || has(self.order) || has(self.zoneBudget) || has(self.failures) || has(self.silences)",message="a rollout policy sets at least one of windows, gates, pacing, order, zoneBudget, failures, silences"
type RolloutPolicySpec struct {
	// poolSelector selects MachineConfigPools by their labels; {} selects
	// every pool. Several policies on one pool combine as the strictest.
	// +required
	PoolSelector metav1.LabelSelector `json:"poolSelector"`

	// windows are the maintenance windows. A plan that some window holds
	// (see holds) starts only while one of those windows is open; a plan no
	// window holds starts at once. No windows: no plan waits for one.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=20
	Windows []MaintenanceWindow `json:"windows,omitempty"`

	// gates hold every new start while they say no.
	// +optional
	Gates *RolloutGates `json:"gates,omitempty"`

	// pacing spaces the nodes out.
	// +optional
	Pacing *RolloutPacing `json:"pacing,omitempty"`

	// order is the order the nodes start in; unset: Zone.
	// +optional
	Order *RolloutOrder `json:"order,omitempty"`

	// zoneBudget is the most nodes of one zone (topology.kubernetes.io/zone;
	// nodes without it form one zone) out at once: a number, or a
	// percentage of the zone's nodes in the pool, rounded down, at least 1.
	// It only ever lowers the pool's maxUnavailable.
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=4
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 1 : self.matches('^[1-9][0-9]?%$|^100%$')",message="zoneBudget is a number >= 1 or a percentage 1%-100%"
	ZoneBudget *intstr.IntOrString `json:"zoneBudget,omitempty"`

	// failures says what the rollout does when nodes fail.
	// +optional
	Failures *RolloutFailures `json:"failures,omitempty"`

	// silences: while a node of the selected pools is updated or rebooted
	// on purpose, its own alerts are silenced in an Alertmanager. It never
	// holds a start.
	// +optional
	Silences *NodeSilences `json:"silences,omitempty"`
}

// SilenceAnnotation is on a Node while ndp-controller keeps an
// Alertmanager silence for it (JSON: the silence's id, the Alertmanager's
// URL, when it started and when it ends), so that a restarted controller
// extends or expires that silence instead of creating another.
const SilenceAnnotation = "ndp.dev/silence"

// SilenceNodePlaceholder in a silence matcher is the node's name (escaped
// as a regular expression in =~ and !~ matchers).
const SilenceNodePlaceholder = "{{node}}"

// SilenceMatcher is one Alertmanager matcher: a label name, one of
// = != =~ !~, and a double-quoted value (a regular expression, anchored,
// for =~ and !~), which may hold SilenceNodePlaceholder.
// +kubebuilder:validation:MaxLength=1024
// +kubebuilder:validation:XValidation:rule=`self.matches(r'^ *[a-zA-Z_][a-zA-Z0-9_]* *(=|!=|=~|!~) *"([^"\\]|\\.)*" *$')`,message=`a matcher is a label name, one of = != =~ !~, and a double-quoted value: node="{{node}}"`
type SilenceMatcher string

// NodeSilences silence a node's own alerts in an Alertmanager while the
// node is disrupted on purpose: from when it is sent to a new config (or
// granted the reboot it asked for) until it is done. Each silence ends by
// itself after duration and is extended while the node is still at it,
// so one left behind (a controller that stopped) ends on its own.
// +kubebuilder:validation:XValidation:rule="!has(self.maxDuration) || !has(self.duration) || duration(self.maxDuration) >= duration(self.duration)",message="maxDuration is shorter than duration"
type NodeSilences struct {
	// url of the Alertmanager's root ("http://alertmanager:9093"), as the
	// gates' alertmanager.url.
	// +required
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://`
	URL string `json:"url"`

	// matchers select the node's alerts, in Alertmanager's matcher syntax
	// (name, one of = != =~ !~, a quoted value); {{node}} is the node's
	// name: `instance=~"{{node}}(:[0-9]+)?"`, `node="{{node}}"`. An alert
	// is silenced when every matcher matches it.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=20
	Matchers []SilenceMatcher `json:"matchers"`

	// comment of the silences; "{{node}}" is the node's name. Unset:
	// "ndp: node NAME is being updated (pool POOL)".
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Comment string `json:"comment,omitempty"`

	// createdBy of the silences. Unset: "ndp".
	// +optional
	// +kubebuilder:validation:MaxLength=253
	CreatedBy string `json:"createdBy,omitempty"`

	// duration of each silence ("1h", 5m-24h): a silence is extended by
	// this much when less than half of it is left and the node is still
	// at it, and ends by itself this long after its last extension.
	// +optional
	// +kubebuilder:default="1h"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('5m') && duration(self) <= duration('24h')",message="duration is 5m to 24h"
	Duration *metav1.Duration `json:"duration,omitempty"`

	// maxDuration: the longest one update of a node is silenced, from its
	// first silence ("12h"); past it the silence is no longer extended, so
	// a node stuck in its update is heard from again. Unset: as long as the
	// update.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('5m')",message="maxDuration is at least 5m"
	MaxDuration *metav1.Duration `json:"maxDuration,omitempty"`
}

// RolloutFailures says what a rollout does when nodes fail: without it, a
// failed node only counts against the pool's maxUnavailable, and a drain
// that PodDisruptionBudgets block waits for as long as they do.
// +kubebuilder:validation:XValidation:rule="has(self.haltAfter) || has(self.rebootTimeout) || has(self.drainTimeout)",message="failures sets haltAfter, rebootTimeout, drainTimeout or several"
// +kubebuilder:validation:XValidation:rule="!has(self.onDrainTimeout) || has(self.drainTimeout)",message="onDrainTimeout needs drainTimeout"
type RolloutFailures struct {
	// haltAfter stops every new start of the pool while this many of its
	// nodes have failed: Degraded, whether their update failed or they did
	// not come back from a reboot in time. The pool goes on by itself once
	// fewer have (a node fixed, or taken out of the pool).
	// +optional
	// +kubebuilder:validation:Minimum=1
	HaltAfter *int32 `json:"haltAfter,omitempty"`
	// rebootTimeout: a node in the middle of its update that has not been
	// Ready for this long (its Ready condition's last transition: it went
	// down for its reboot, or died) is marked Degraded (reason
	// RebootTimeout, an Event), also while the pool is paused; if it comes
	// back later, its daemon goes on where it stopped ("15m").
	// +optional
	RebootTimeout *metav1.Duration `json:"rebootTimeout,omitempty"`
	// drainTimeout: a drain still blocked (PodDisruptionBudgets refuse
	// evictions) this long after it started does what onDrainTimeout says
	// ("30m"). It counts from the drain's start as the node's daemon
	// journaled it, also across a restart of the daemon. The rollout
	// controller hands it to each node it sends (annotation
	// ndp.dev/drain-timeout): a node keeps the choice it was sent with.
	// +optional
	DrainTimeout *metav1.Duration `json:"drainTimeout,omitempty"`
	// onDrainTimeout: Wait (unset: keep waiting, with a DrainTimeout
	// Warning Event on the Node), Skip (give up this node for this target:
	// uncordon it, leave it on the config it runs, nothing written, and go
	// on with the others; it is not sent again to this target), or
	// DeletePods (delete, without eviction, the pods still on the node,
	// each named in a DrainDeletedPod Event, and go on with the update).
	// +optional
	OnDrainTimeout DrainTimeoutAction `json:"onDrainTimeout,omitempty"`
}

// DrainTimeoutAction is what a drain that runs out of its drainTimeout
// does.
// +kubebuilder:validation:Enum=Wait;Skip;DeletePods
type DrainTimeoutAction string

const (
	// DrainTimeoutWait keeps waiting: a Warning Event says the timeout
	// ran out. A drain without a timeout waits too.
	DrainTimeoutWait DrainTimeoutAction = "Wait"
	// DrainTimeoutSkip gives the node up for this target: it is
	// uncordoned and stays on its config, untouched (the drain comes
	// before any write), marked DrainSkippedAnnotation; the rollout goes
	// on with the other nodes.
	DrainTimeoutSkip DrainTimeoutAction = "Skip"
	// DrainTimeoutDeletePods deletes the pods the drain could not evict
	// (a deletion ignores PodDisruptionBudgets), then the update goes on.
	DrainTimeoutDeletePods DrainTimeoutAction = "DeletePods"
)

// MaintenanceWindow is a weekly time of day, in a time zone, during which
// the plans it holds may start. A window whose end is not after its start
// spans midnight: it opens on its days at start and closes the next day at
// end. Times are wall-clock times: on a day the clock skips them (daylight
// saving), the window opens when the clock reaches them again, or not at
// all if it never does that day.
// +kubebuilder:validation:XValidation:rule="self.start != self.end",message="start and end are equal: a window that is always open is no window (leave the plan kinds out of holds instead)"
type MaintenanceWindow struct {
	// name names the window in messages; optional.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name,omitempty"`

	// days the window opens on (its start's day); unset: every day.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=7
	Days []Weekday `json:"days,omitempty"`

	// start is the local time the window opens, "HH:MM" (24 h).
	// +required
	// +kubebuilder:validation:Pattern=`^([01][0-9]|2[0-3]):[0-5][0-9]$`
	// +kubebuilder:validation:MaxLength=5
	Start string `json:"start"`

	// end is the local time it closes, "HH:MM", or "24:00"; at or before
	// start: the next day.
	// +required
	// +kubebuilder:validation:Pattern=`^(([01][0-9]|2[0-3]):[0-5][0-9]|24:00)$`
	// +kubebuilder:validation:MaxLength=5
	End string `json:"end"`

	// timeZone is an IANA time zone name ("Europe/Berlin"); unset: UTC.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:default="UTC"
	TimeZone string `json:"timeZone,omitempty"`

	// exclusions are local dates on which the window is closed, whatever
	// its days say: any part of an opening that falls on them.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	Exclusions []DateRange `json:"exclusions,omitempty"`

	// holds are the plans that wait for this window: a plan waits when it
	// has any of these kinds. Unset: plans that reboot or drain. [All]:
	// every plan.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=7
	// +kubebuilder:validation:XValidation:rule="!('All' in self) || size(self) == 1",message="All stands alone"
	Holds []PlanKind `json:"holds,omitempty"`
}

// DateRange is a range of local dates, both ends included.
// +kubebuilder:validation:XValidation:rule="!has(self.end) || self.end >= self.start",message="end is before start"
type DateRange struct {
	// start is the first date, "YYYY-MM-DD".
	// +required
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-[0-9]{2}-[0-9]{2}$`
	// +kubebuilder:validation:MaxLength=10
	Start string `json:"start"`
	// end is the last date, "YYYY-MM-DD"; unset: start alone.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-[0-9]{2}-[0-9]{2}$`
	// +kubebuilder:validation:MaxLength=10
	End string `json:"end,omitempty"`
}

// RolloutGates hold every new start of the selected pools while one says
// no. A gate that cannot be evaluated (unreachable, bad query) holds too,
// and says so, unless failOpen.
type RolloutGates struct {
	// prometheus: firing alerts and a PromQL query.
	// +optional
	Prometheus *PrometheusGate `json:"prometheus,omitempty"`

	// alertmanager: active alerts.
	// +optional
	Alertmanager *AlertmanagerGate `json:"alertmanager,omitempty"`

	// blockingPods: pods whose presence holds a start.
	// +optional
	BlockingPods *BlockingPodsGate `json:"blockingPods,omitempty"`

	// failOpen: a gate that cannot be evaluated lets nodes start (and
	// says so) instead of holding them. Default false.
	// +optional
	FailOpen bool `json:"failOpen,omitempty"`
}

// PrometheusGate asks a Prometheus.
// +kubebuilder:validation:XValidation:rule="has(self.alerts) || has(self.query)",message="a prometheus gate sets alerts, query or both"
type PrometheusGate struct {
	// url of the Prometheus HTTP API's root ("http://prometheus:9090").
	// +required
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://`
	URL string `json:"url"`

	// alerts: the alerts (Prometheus' /api/v1/alerts) that hold a start.
	// +optional
	Alerts *AlertSelector `json:"alerts,omitempty"`

	// query is a PromQL expression that holds every start while its
	// result has a sample whose value is not zero (empty lets them go).
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Query string `json:"query,omitempty"`
}

// AlertmanagerGate asks an Alertmanager for its alerts (/api/v2/alerts).
type AlertmanagerGate struct {
	// url of the Alertmanager's root ("http://alertmanager:9093").
	// +required
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://`
	URL string `json:"url"`

	// alerts: the alerts that hold a start.
	// +required
	Alerts AlertSelector `json:"alerts"`
}

// AlertSelector picks the alerts that hold a start: an alert holds when
// its name is one of names (or names is empty), every include matcher
// matches it, no exclude matcher matches it, and it is firing (or
// firingOnly is false).
type AlertSelector struct {
	// names are alert names (the alertname label); unset: every alert.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=253
	Names []string `json:"names,omitempty"`

	// include: every matcher must match the alert's labels.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=20
	Include []LabelMatcher `json:"include,omitempty"`

	// exclude: an alert that any matcher matches does not hold.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=20
	Exclude []LabelMatcher `json:"exclude,omitempty"`

	// firingOnly: only firing alerts hold; pending alerts (Prometheus) and
	// silenced or inhibited ones (Alertmanager) do not. Default true.
	// +optional
	// +kubebuilder:default=true
	FiringOnly *bool `json:"firingOnly,omitempty"`
}

// MatchOperator compares a label with a value, as PromQL's matchers do.
// +kubebuilder:validation:Enum=Equal;NotEqual;Regex;NotRegex
type MatchOperator string

const (
	MatchEqual    MatchOperator = "Equal"    // =
	MatchNotEqual MatchOperator = "NotEqual" // !=
	MatchRegex    MatchOperator = "Regex"    // =~, anchored at both ends
	MatchNotRegex MatchOperator = "NotRegex" // !~, anchored at both ends
)

// LabelMatcher matches one label of an alert; a missing label is "".
type LabelMatcher struct {
	// label is the label's name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Label string `json:"label"`
	// operator: Equal, NotEqual, Regex or NotRegex; unset: Equal.
	// +optional
	// +kubebuilder:default=Equal
	Operator MatchOperator `json:"operator,omitempty"`
	// value to compare with; a RE2 regular expression for Regex and
	// NotRegex.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Value string `json:"value,omitempty"`
}

// BlockingPodsScope says what a blocking pod holds.
// +kubebuilder:validation:Enum=Node;Cluster
type BlockingPodsScope string

const (
	// BlockingPodsNode: a matching pod holds the start of its own node.
	BlockingPodsNode BlockingPodsScope = "Node"
	// BlockingPodsCluster: a matching pod anywhere holds every start.
	BlockingPodsCluster BlockingPodsScope = "Cluster"
)

// BlockingPodsGate holds starts while pods it selects exist (not Succeeded
// or Failed).
type BlockingPodsGate struct {
	// selector selects the pods by their labels.
	// +required
	Selector metav1.LabelSelector `json:"selector"`
	// namespaceSelector selects their namespaces; unset: every namespace.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	// scope: Node (default) or Cluster.
	// +optional
	// +kubebuilder:default=Node
	Scope BlockingPodsScope `json:"scope,omitempty"`
}

// RolloutPacing spaces the nodes out: the next node starts only after the
// last one is done and settled.
type RolloutPacing struct {
	// settleAfter is how long after a node is done the next may start
	// ("10m").
	// +optional
	SettleAfter *metav1.Duration `json:"settleAfter,omitempty"`
	// waitForDrainedPodsReady: the next node starts only once the pods
	// drained from the last one are Ready again somewhere: for each
	// controller that owned some, as many of its pods created since the
	// drain are Ready as were evicted, or none of its pods is still on its
	// way (it was scaled down or deleted). Pods without a controller do
	// not come back and are not waited for.
	// +optional
	WaitForDrainedPodsReady bool `json:"waitForDrainedPodsReady,omitempty"`
}

// OrderBy names a rollout order.
// +kubebuilder:validation:Enum=Zone;OldestFirst;NewestFirst;LabelPriority
type OrderBy string

const (
	// OrderZone: one zone after another (by zone name), oldest first in a
	// zone, nodes without a zone last; ndp's order without a policy (the
	// MCO's).
	OrderZone OrderBy = "Zone"
	// OrderOldestFirst: by the node's creation, oldest first.
	OrderOldestFirst OrderBy = "OldestFirst"
	// OrderNewestFirst: by the node's creation, newest first.
	OrderNewestFirst OrderBy = "NewestFirst"
	// OrderLabelPriority: by the value of a node label, in the order of
	// priorities; nodes with another value or none last; ties in Zone
	// order.
	OrderLabelPriority OrderBy = "LabelPriority"
)

// RolloutOrder is the order nodes start in; ties are broken by name.
// +kubebuilder:validation:XValidation:rule="self.by != 'LabelPriority' || (has(self.label) && has(self.priorities))",message="LabelPriority needs label and priorities"
// +kubebuilder:validation:XValidation:rule="self.by == 'LabelPriority' || (!has(self.label) && !has(self.priorities))",message="label and priorities belong to LabelPriority"
type RolloutOrder struct {
	// by: Zone, OldestFirst, NewestFirst or LabelPriority.
	// +required
	By OrderBy `json:"by"`
	// label is the node label LabelPriority reads.
	// +optional
	// +kubebuilder:validation:MaxLength=317
	Label string `json:"label,omitempty"`
	// priorities are the label's values, first goes first.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=50
	// +kubebuilder:validation:items:MaxLength=63
	Priorities []string `json:"priorities,omitempty"`
}

// RolloutPolicyStatus is what the policy holds now.
type RolloutPolicyStatus struct {
	// observedGeneration is the generation the status is about.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Accepted (the spec is valid: time zones, dates, regular
	// expressions), Holding (some selected pool has a start held now).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// pools: per selected pool, what the policy holds now.
	// +optional
	// +listType=map
	// +listMapKey=pool
	// +kubebuilder:validation:MaxItems=100
	Pools []PoolRolloutStatus `json:"pools,omitempty"`
}

// Conditions of a RolloutPolicy.
const (
	// RolloutPolicyAccepted: the spec is valid and in force.
	RolloutPolicyAccepted = "Accepted"
	// RolloutPolicyHolding: some selected pool has a start held now.
	RolloutPolicyHolding = "Holding"
)

// PoolRolloutStatus is what a policy holds in one pool.
type PoolRolloutStatus struct {
	// pool is the MachineConfigPool's name.
	// +required
	Pool string `json:"pool"`
	// holding: a node of the pool that would start now does not.
	Holding bool `json:"holding"`
	// reasons say why, each naming what holds ("waiting: alert
	// KubePodCrashLooping firing (namespace=web)").
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=20
	Reasons []string `json:"reasons,omitempty"`
	// nextStart is when the held starts may go, when a window or pacing
	// says (gates give no time).
	// +optional
	NextStart *metav1.Time `json:"nextStart,omitempty"`
	// heldNodes are nodes held by annotation, up to 50.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=50
	HeldNodes []string `json:"heldNodes,omitempty"`
	// lastEvaluated is when the gates and windows were last looked at.
	// +optional
	LastEvaluated *metav1.Time `json:"lastEvaluated,omitempty"`
}

// RolloutPolicy says when and in what order the nodes of some pools may be
// disrupted: maintenance windows aware of what each node's plan does,
// alert and pod gates, pacing, order and a per-zone budget.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=rp,categories=ndp-all
// +kubebuilder:printcolumn:name=Holding,JSONPath=.status.conditions[?(@.type=="Holding")].status,type=string,description=Whether some selected pool has a start held now.
// +kubebuilder:printcolumn:name=Accepted,JSONPath=.status.conditions[?(@.type=="Accepted")].status,type=string,priority=1
// +kubebuilder:printcolumn:name=Age,JSONPath=.metadata.creationTimestamp,type=date
type RolloutPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   RolloutPolicySpec   `json:"spec"`
	Status RolloutPolicyStatus `json:"status,omitempty"`
}

// RolloutPolicyList is a list of RolloutPolicy.
//
// +kubebuilder:object:root=true
type RolloutPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RolloutPolicy `json:"items"`
}
