package rolloutcontrol

import (
	"fmt"
	"time"
)

// ReasonKind says what holds a start.
type ReasonKind string

const (
	ReasonWindow       ReasonKind = "Window"        // outside a maintenance window
	ReasonNever        ReasonKind = "NoWindow"      // the windows never open (together)
	ReasonAlert        ReasonKind = "Alert"         // an alert that a gate selects is active
	ReasonQuery        ReasonKind = "Query"         // a gate's PromQL query is not empty or zero
	ReasonGateError    ReasonKind = "GateError"     // a gate could not be evaluated
	ReasonBlockingPod  ReasonKind = "BlockingPod"   // a pod that a gate selects exists
	ReasonHold         ReasonKind = "Hold"          // the node carries ndp.dev/hold
	ReasonSettle       ReasonKind = "Settle"        // pacing: the last node is settling
	ReasonDrainedPods  ReasonKind = "DrainedPods"   // pacing: pods drained from the last node are not Ready
	ReasonZoneBudget   ReasonKind = "ZoneBudget"    // the zone has its budget of nodes out
	ReasonNoPlan       ReasonKind = "NoPlan"        // the node's plan is not ready: its kinds are unknown
	ReasonInvalid      ReasonKind = "InvalidPolicy" // a policy on the pool is invalid: it holds the pool
	ReasonIgnored      ReasonKind = "OrderIgnored"  // a warning: another policy's order applies
	ReasonHalted       ReasonKind = "Halted"        // failures: haltAfter nodes of the pool failed
	ReasonDrainSkipped ReasonKind = "DrainSkipped"  // the node gave up its drain to the target (onDrainTimeout Skip)
)

// Reason is why a start does not happen now, or (a warning) why a gate
// that could not be evaluated did not hold it.
type Reason struct {
	Kind ReasonKind
	// Policy names the RolloutPolicy it comes from ("" for a node's hold).
	Policy string
	// Node, for a reason about one node.
	Node string
	// Detail is what holds, in words: "alert KubePodCrashLooping firing
	// (namespace=web)".
	Detail string
	// Until is when it lets go, when known (a window, the settle time).
	Until time.Time
}

// String is the reason as the pool's conditions and `kubectl ndp status`
// show it: "waiting: ...", or "held: ..." for a node's hold.
func (r Reason) String() string {
	switch r.Kind {
	case ReasonHold:
		return "held: " + r.Detail
	case ReasonDrainSkipped:
		return "skipped: " + r.Detail
	}
	s := "waiting: " + r.Detail
	if r.Kind == ReasonHalted {
		s = "halted: " + r.Detail
	}
	if r.Policy != "" && r.Kind != ReasonInvalid { // its detail names the policy
		s += fmt.Sprintf(" [rolloutpolicy %s]", r.Policy)
	}
	return s
}

// whenFormat is how an opening is told: "Sat 02:00 Europe/Berlin"; a date
// is added when it is a week or more away.
func when(t, now time.Time, loc *time.Location) string {
	if loc == nil {
		loc = time.UTC
	}
	lt := t.In(loc)
	name := loc.String()
	if name == "Local" || name == "" {
		name, _ = lt.Zone()
	}
	if t.Sub(now) >= 6*24*time.Hour {
		return lt.Format("Mon 2006-01-02 15:04 ") + name
	}
	return lt.Format("Mon 15:04 ") + name
}

// windowReason is the message for a plan outside the windows.
func windowReason(v WindowVerdict, now time.Time, node string) Reason {
	if v.Never {
		return Reason{Kind: ReasonNever, Node: node,
			Detail: fmt.Sprintf("the maintenance windows for %s never open together (none within %d days)", v.Kinds.Phrase(), int(MaxHorizon.Hours()/24))}
	}
	return Reason{Kind: ReasonWindow, Node: node, Until: v.Opens,
		Detail: fmt.Sprintf("outside the maintenance window, opens %s for %s", when(v.Opens, now, v.Zone), v.Kinds.Phrase())}
}
