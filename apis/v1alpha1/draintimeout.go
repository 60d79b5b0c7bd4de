package v1alpha1

import (
	"fmt"
	"strings"
	"time"
)

// A drain that PodDisruptionBudgets block for longer than its pool's
// failures.drainTimeout does what failures.onDrainTimeout says. The
// rollout controller decides it, ndp-daemon executes it: the controller
// writes the choice on the Node in the patch that sends it to its target,
// and the daemon journals it when it starts the update.
const (
	// DrainTimeoutAnnotation is the choice the node was sent with
	// (DrainTimeout.String); none: the drain waits as long as it must.
	DrainTimeoutAnnotation = "ndp.dev/drain-timeout"
	// DrainSkippedAnnotation is on a Node whose drain timed out under
	// Skip: the target config it gave up. ndp-daemon writes it, with its
	// desiredConfig set back to the config it runs; the rollout
	// controller does not send it to that target again. Removing it
	// (`kubectl ndp retry NODE`) makes the node a candidate again, and so
	// does a new target.
	DrainSkippedAnnotation = "ndp.dev/drain-skipped"
	// DrainSkippedReasonAnnotation says why, naming the pods still there.
	DrainSkippedReasonAnnotation = "ndp.dev/drain-skipped-reason"
	// DrainSkippedReason is the reason of the daemon's Event and Drained
	// condition for a skipped drain.
	DrainSkippedReason = "DrainSkipped"
)

// DrainTimeout is how long a drain may wait for PodDisruptionBudgets and
// what it does then.
type DrainTimeout struct {
	Timeout time.Duration
	Action  DrainTimeoutAction
}

// String is the annotation's value: "TIMEOUT;ACTION" ("30m0s;Skip").
func (d DrainTimeout) String() string {
	return d.Timeout.String() + ";" + string(d.Action)
}

// ParseDrainTimeout reads a DrainTimeoutAnnotation.
func ParseDrainTimeout(s string) (DrainTimeout, error) {
	t, a, ok := strings.Cut(s, ";")
	d, err := time.ParseDuration(t)
	act := DrainTimeoutAction(a)
	if !ok || err != nil || d <= 0 || (act != DrainTimeoutWait && act != DrainTimeoutSkip && act != DrainTimeoutDeletePods) {
		return DrainTimeout{}, fmt.Errorf("%s %q: not TIMEOUT;Wait, TIMEOUT;Skip or TIMEOUT;DeletePods with a positive duration", DrainTimeoutAnnotation, s)
	}
	return DrainTimeout{Timeout: d, Action: act}, nil
}
