package alertsilence

import (
	"time"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
)

// DefaultDuration is a silence's length when the policy gives none (the
// CRD's default).
const DefaultDuration = time.Hour

// Op is what to do with a node's silence.
type Op string

const (
	None   Op = ""
	Create Op = "Create"
	Extend Op = "Extend"
	Expire Op = "Expire"
)

// Input is one node, now.
type Input struct {
	Now time.Time
	// Disrupted: ndp is updating or rebooting the node on purpose (sent
	// to a config it does not run yet, at work, or granted a reboot) and
	// it has not failed.
	Disrupted bool
	// Spec is the silences of the first policy (by name) of the node's
	// pool that sets them; nil: none does.
	Spec *v1alpha1.NodeSilences
	// Record is the node's annotation; nil: no silence kept.
	Record *Record
}

// Action is the decision for one node.
type Action struct {
	Op Op
	// Until is the end of the silence to create or extend.
	Until time.Time
	// Call: Expire asks Alertmanager (false: the silence has ended by
	// itself, only the record goes).
	Call bool
	// Why says, for Expire and for a silence no longer extended, why.
	Why string
	// Next is when to look again though nothing changes (an extension is
	// due); zero: only when the node or its policy changes.
	Next time.Time
}

// Decide is what to do with one node's silence. A node disrupted on
// purpose whose pool's policy sets silences gets one, extended by
// Duration while less than half of it is left, never past maxDuration
// since the first; it is expired once the node is done (or failed), its
// policy no longer asks, or asks another Alertmanager (the next decision
// then creates one there).
func Decide(in Input) Action {
	r, s := in.Record, in.Spec
	if r != nil {
		why := ""
		switch {
		case !in.Disrupted:
			why = "the node is done"
		case s == nil:
			why = "no rollout policy of its pool asks for silences"
		case s.URL != r.URL:
			why = "its rollout policy's silences.url changed"
		}
		if why != "" {
			return Action{Op: Expire, Call: in.Now.Before(r.Until), Why: why}
		}
	}
	if !in.Disrupted || s == nil {
		return Action{}
	}
	d := DefaultDuration
	if s.Duration != nil && s.Duration.Duration > 0 {
		d = s.Duration.Duration
	}
	since := in.Now
	if r != nil {
		since = r.Since
	}
	until := in.Now.Add(d)
	if s.MaxDuration != nil && s.MaxDuration.Duration > 0 {
		until = minTime(until, since.Add(s.MaxDuration.Duration))
	}
	if r == nil {
		return Action{Op: Create, Until: until, Next: due(until, d, in.Now)}
	}
	if !until.After(r.Until) {
		return Action{Why: "maxDuration reached"} // not extended: ends at r.Until
	}
	if next := due(r.Until, d, in.Now); !next.IsZero() {
		return Action{Next: next}
	}
	return Action{Op: Extend, Until: until, Next: due(until, d, in.Now)}
}

// due is when a silence of length d that ends at until is to be extended:
// half of it left; zero when that is not after now.
func due(until time.Time, d time.Duration, now time.Time) time.Time {
	if t := until.Add(-d / 2); t.After(now) {
		return t
	}
	return time.Time{}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
