package framework

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// A wait that follows progress: a node's update under TCG on a loaded
// machine can take many times its quiet duration, so a fixed total fails
// runs that were slow but moving. Instead the wait goes on while what it
// waits on keeps changing, and ends early when it stops changing for the
// stall bound or shows a failure, saying which and what last moved. A
// generous ceiling remains, so that nothing moving forever (a console
// spinning, a loop) hangs the run.

// Bounds of a progress-following wait.
const (
	// stallBound: no new progress for this long ends the wait. The
	// issue's promise: a scenario that stops fails within a minute. The
	// signals (the VM's console, the node's steps, events and pods) leave
	// no quiet gap this long in an update that is moving; where one is
	// quiet by design (a drain held by a budget, whose next attempt comes
	// after 90 s), the scenario waits for that phase with its own
	// condition.
	stallBound = 60 * time.Second
	// ceilingPerNode and minCeiling: the wait's total, whatever moves.
	ceilingPerNode = 10 * time.Minute
	minCeiling     = 20 * time.Minute
)

// observation is what the thing waited on showed at one time.
type observation struct {
	// progress: signal name -> what it shows now; a change of any value is
	// progress. A signal absent this time (its read failed) is unknown and
	// keeps its last value: a failed read is neither progress nor stall.
	progress map[string]string
	// failed: it went wrong, and why ("" while it has not).
	failed string
	// done: what was waited for is there.
	done bool
}

// waitVerdict is a progress wait's answer to an observation.
type waitVerdict int

const (
	waitContinue waitVerdict = iota
	waitDone
	waitStalled // no progress for the stall bound
	waitFailed  // the thing waited on went wrong
	waitCeiling // progressing, but past the ceiling
)

func (v waitVerdict) String() string {
	return [...]string{"continue", "done", "stalled", "failed", "ceiling"}[v]
}

// progressWait judges a sequence of observations: the pure core of
// followProgress, its clock the observations' times.
type progressWait struct {
	what           string
	stall, ceiling time.Duration
	start          time.Time
	seen           map[string]string // every signal's last known value
	lastAt         time.Time         // when progress was last seen (start at first)
	lastChange     []string          // what changed then: "signal: old -> new"
}

func newProgressWait(what string, start time.Time, stall, ceiling time.Duration) *progressWait {
	return &progressWait{what: what, stall: stall, ceiling: ceiling, start: start, lastAt: start, seen: map[string]string{}}
}

// observe takes the observation o made at now and answers whether to go
// on; for any other answer than waitContinue and waitDone, with the error
// to end the wait with. It also returns the signals that changed.
func (p *progressWait) observe(now time.Time, o observation) (waitVerdict, []string, error) {
	var changed []string
	for _, k := range slices.Sorted(maps.Keys(o.progress)) {
		v := o.progress[k]
		old, known := p.seen[k]
		if known && old == v {
			continue
		}
		p.seen[k] = v
		if known {
			changed = append(changed, fmt.Sprintf("%s: %s -> %s", k, show(old), show(v)))
		} else {
			changed = append(changed, fmt.Sprintf("%s: %s", k, show(v)))
		}
	}
	// The first sight of a signal is progress too: the wait's baseline,
	// or a thing that newly exists (a pod, an event).
	if len(changed) > 0 {
		p.lastAt, p.lastChange = now, changed
	}
	switch {
	case o.done:
		return waitDone, changed, nil
	case o.failed != "":
		return waitFailed, changed, fmt.Errorf("waiting for %s: failed after %s: %s (%s)", p.what, p.since(now, p.start), o.failed, p.last(now))
	case now.Sub(p.lastAt) >= p.stall:
		return waitStalled, changed, fmt.Errorf("waiting for %s: no progress for %s, %s after it started (%s)", p.what, p.since(now, p.lastAt), p.since(now, p.start), p.last(now))
	case now.Sub(p.start) >= p.ceiling:
		return waitCeiling, changed, fmt.Errorf("waiting for %s: not within %s, though still progressing (%s)", p.what, p.ceiling, p.last(now))
	}
	return waitContinue, changed, nil
}

// last says what the last progress was and when.
func (p *progressWait) last(now time.Time) string {
	if len(p.lastChange) == 0 {
		return "no signal seen"
	}
	return fmt.Sprintf("last progress %s ago: %s", p.since(now, p.lastAt), strings.Join(p.lastChange, "; "))
}

func (p *progressWait) since(now, t time.Time) time.Duration { return now.Sub(t).Round(time.Second) }

// show quotes a signal's value for a message; long values are cut.
func show(v string) string {
	if len(v) > 160 {
		v = v[:157] + "..."
	}
	return fmt.Sprintf("%q", v)
}

// ceilingFor is the ceiling of a wait on n nodes' updates.
func ceilingFor(n int) time.Duration { return max(minCeiling, time.Duration(n)*ceilingPerNode) }
