package rolloutcontrol

import (
	"fmt"
	"sync"
	"time"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
)

// MaxHorizon is how far ahead a window's next opening is looked for: a
// window, or several policies' windows together, that do not open within
// it never open, and the messages say so.
const MaxHorizon = 5 * 366 * 24 * time.Hour

var weekdays = map[v1alpha1.Weekday]time.Weekday{
	"Sun": time.Sunday, "Mon": time.Monday, "Tue": time.Tuesday, "Wed": time.Wednesday,
	"Thu": time.Thursday, "Fri": time.Friday, "Sat": time.Saturday,
}

// window is a compiled MaintenanceWindow.
type window struct {
	field      string // "spec.windows[0]", for messages and errors
	name       string
	days       [7]bool // by time.Weekday
	start, end int     // minutes of the day; end may be 1440 (24:00)
	tz         string
	loc        *time.Location
	excl       [][2]time.Time // local dates, [first, last], as UTC midnights
	lastExcl   time.Time      // the day after the last excluded date, UTC midnight
	holds      Kinds
}

// locations caches time.LoadLocation, which reads the time zone database
// on every call: a pool's windows are looked at on every rollout step.
var locations sync.Map

func loadLocation(name string) (*time.Location, error) {
	if l, ok := locations.Load(name); ok {
		return l.(*time.Location), nil
	}
	l, err := time.LoadLocation(name)
	if err != nil {
		return nil, err
	}
	locations.Store(name, l)
	return l, nil
}

func parseClock(s string) (int, error) {
	var h, m int
	if len(s) != 5 || s[2] != ':' {
		return 0, fmt.Errorf("%q is not HH:MM", s)
	}
	if _, err := fmt.Sscanf(s, "%02d:%02d", &h, &m); err != nil {
		return 0, fmt.Errorf("%q is not HH:MM", s)
	}
	if (h > 23 || m > 59) && !(h == 24 && m == 0) {
		return 0, fmt.Errorf("%q is not a time of day", s)
	}
	return h*60 + m, nil
}

func parseDate(s string) (time.Time, error) {
	d, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not a date YYYY-MM-DD", s)
	}
	return d, nil
}

func compileWindow(w v1alpha1.MaintenanceWindow, field string) (window, error) {
	c := window{field: field, name: w.Name, tz: w.TimeZone, holds: holdsKinds(w.Holds)}
	fail := func(sub string, err error) (window, error) {
		return window{}, fmt.Errorf("%s.%s: %w", field, sub, err)
	}
	if c.tz == "" {
		c.tz = "UTC"
	}
	var err error
	if c.loc, err = loadLocation(c.tz); err != nil {
		return fail("timeZone", fmt.Errorf("unknown time zone %q", c.tz))
	}
	if c.start, err = parseClock(w.Start); err != nil || c.start == 24*60 {
		if err == nil {
			err = fmt.Errorf("%q: a window starts before 24:00", w.Start)
		}
		return fail("start", err)
	}
	if c.end, err = parseClock(w.End); err != nil {
		return fail("end", err)
	}
	if c.start == c.end {
		return fail("end", fmt.Errorf("equals start: a window that is always open is no window"))
	}
	if len(w.Days) == 0 {
		c.days = [7]bool{true, true, true, true, true, true, true}
	}
	for i, d := range w.Days {
		wd, ok := weekdays[d]
		if !ok {
			return fail(fmt.Sprintf("days[%d]", i), fmt.Errorf("%q is not a day (Mon ... Sun)", d))
		}
		c.days[wd] = true
	}
	for i, x := range w.Exclusions {
		first, err := parseDate(x.Start)
		if err != nil {
			return fail(fmt.Sprintf("exclusions[%d].start", i), err)
		}
		last := first
		if x.End != "" {
			if last, err = parseDate(x.End); err != nil {
				return fail(fmt.Sprintf("exclusions[%d].end", i), err)
			}
			if last.Before(first) {
				return fail(fmt.Sprintf("exclusions[%d].end", i), fmt.Errorf("%s is before start %s", x.End, x.Start))
			}
		}
		c.excl = append(c.excl, [2]time.Time{first, last})
		if after := last.AddDate(0, 0, 1); after.After(c.lastExcl) {
			c.lastExcl = after
		}
	}
	for i, h := range w.Holds {
		if h != v1alpha1.PlanAll && holdsKinds([]v1alpha1.PlanKind{h}) == 0 {
			return fail(fmt.Sprintf("holds[%d]", i), fmt.Errorf("%q is not a plan kind", h))
		}
	}
	return c, nil
}

// describe names the window in messages: its name, or its field.
func (w *window) describe() string {
	if w.name != "" {
		return "window " + w.name
	}
	return w.field
}

// wallTime is the instant a local date's wall-clock time (minutes since
// midnight, 1440 being the next midnight) happens in loc. A time the clock
// passes twice (the hour when daylight saving time ends) is its first
// passing; a time the clock skips (when it begins) is the instant of the
// jump: a window opens, or closes, as soon as the local time is past it.
func wallTime(day time.Time, minutes int, loc *time.Location) time.Time {
	naive := time.Date(day.Year(), day.Month(), day.Day(), 0, minutes, 0, 0, time.UTC)
	offsetAt := func(t time.Time) int { _, o := t.In(loc).Zone(); return o }
	before, after := offsetAt(naive.Add(-48*time.Hour)), offsetAt(naive.Add(48*time.Hour))
	var best time.Time
	for _, off := range []int{before, after, offsetAt(naive)} {
		u := naive.Add(-time.Duration(off) * time.Second)
		l := u.In(loc)
		if l.Year() == naive.Year() && l.YearDay() == naive.YearDay() && l.Hour() == naive.Hour() && l.Minute() == naive.Minute() &&
			(best.IsZero() || u.Before(best)) {
			best = u
		}
	}
	if !best.IsZero() {
		return best
	}
	// In a gap: the clock jumps from before it to after it. Find the jump.
	lo, hi := naive.Add(-time.Duration(after)*time.Second), naive.Add(-time.Duration(before)*time.Second)
	if !lo.Before(hi) {
		return time.Date(day.Year(), day.Month(), day.Day(), 0, minutes, 0, 0, loc) // not a plain gap: Go's choice
	}
	for hi.Sub(lo) > time.Second {
		mid := lo.Add(hi.Sub(lo) / 2).Truncate(time.Second)
		if offsetAt(mid) == after {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// interval is [Start, End).
type interval struct{ Start, End time.Time }

// openings are the window's openings that start on the local date day,
// less its exclusions, in order.
func (w *window) openings(day time.Time) []interval {
	if !w.days[day.Weekday()] {
		return nil
	}
	endDay := day
	if w.end <= w.start {
		endDay = day.AddDate(0, 0, 1)
	}
	iv := interval{wallTime(day, w.start, w.loc), wallTime(endDay, w.end, w.loc)}
	if !iv.End.After(iv.Start) {
		return nil // the clock skips the whole window that day
	}
	out := []interval{iv}
	for _, x := range w.excl {
		ex := interval{wallTime(x[0], 0, w.loc), wallTime(x[1].AddDate(0, 0, 1), 0, w.loc)}
		var next []interval
		for _, o := range out {
			if !ex.Start.Before(o.End) || !ex.End.After(o.Start) {
				next = append(next, o)
				continue
			}
			if o.Start.Before(ex.Start) {
				next = append(next, interval{o.Start, ex.Start})
			}
			if ex.End.Before(o.End) {
				next = append(next, interval{ex.End, o.End})
			}
		}
		out = next
	}
	return out
}

// at says whether the window is open at t; if not, when it next opens
// (zero: not within MaxHorizon).
func (w *window) at(t time.Time) (open bool, next time.Time) {
	lt := t.In(w.loc)
	day := time.Date(lt.Year(), lt.Month(), lt.Day(), 0, 0, 0, 0, time.UTC).AddDate(0, 0, -1) // yesterday's may span midnight
	// After its last exclusion a window opens within a week (a day later
	// for one that spans midnight), so the search ends there.
	stop := day.AddDate(0, 0, 10)
	if w.lastExcl.AddDate(0, 0, 10).After(stop) {
		stop = w.lastExcl.AddDate(0, 0, 10)
	}
	if limit := t.Add(MaxHorizon); stop.After(limit) {
		stop = limit
	}
	for ; !day.After(stop); day = day.AddDate(0, 0, 1) {
		for _, o := range w.openings(day) {
			if !t.Before(o.Start) && t.Before(o.End) {
				return true, time.Time{}
			}
			if o.Start.After(t) {
				if o.Start.Sub(t) > MaxHorizon {
					return false, time.Time{}
				}
				return false, o.Start
			}
		}
	}
	return false, time.Time{}
}

// windowSet is one policy's windows.
type windowSet []window

// at says, for a plan of kinds k, whether the policy's windows let it start
// at t: governed is false when no window holds any of k (it starts at
// once); else open when one of the windows that hold it is open, and, when
// none is, next is the earliest opening among them (zero: never within
// MaxHorizon) and by the window that opens then.
func (ws windowSet) at(k Kinds, t time.Time) (governed, open bool, next time.Time, by *window) {
	for i := range ws {
		w := &ws[i]
		if w.holds&k == 0 {
			continue
		}
		governed = true
		o, n := w.at(t)
		if o {
			return true, true, time.Time{}, nil
		}
		if !n.IsZero() && (next.IsZero() || n.Before(next)) {
			next, by = n, w
		}
	}
	return governed, !governed, next, by
}

// held is the kinds of k that some window of ws holds.
func (ws windowSet) held(k Kinds) Kinds {
	var h Kinds
	for i := range ws {
		h |= ws[i].holds & k
	}
	return h
}

// WindowVerdict is whether a plan may start now as far as the windows of
// all policies on a pool go: each policy that holds the plan's kinds must
// have one of its windows open.
type WindowVerdict struct {
	// Allowed: the plan may start now.
	Allowed bool
	// Governed: some window holds the plan (else it starts at once).
	Governed bool
	// Opens is when it may start, when not Allowed: the earliest time every
	// governing policy has a window open. Zero with Never.
	Opens time.Time
	// Never: no such time within MaxHorizon.
	Never bool
	// Kinds are the plan's kinds that the windows hold.
	Kinds Kinds
	// Zone is the time zone of the window that opens at Opens (for the
	// message); Window describes that window.
	Zone   *time.Location
	Window string
}

// checkWindows intersects the policies' windows for a plan of kinds k.
func checkWindows(sets []windowSet, k Kinds, now time.Time) WindowVerdict {
	v := WindowVerdict{}
	for _, s := range sets {
		v.Kinds |= s.held(k)
	}
	v.Governed = v.Kinds != 0
	if !v.Governed {
		v.Allowed = true
		return v
	}
	t := now
	// Each round moves t to the next opening of a policy closed at t; it
	// stops where all are open. Openings are at least minutes apart, so
	// the bound is generous.
	for round := 0; round < 100000; round++ {
		moved := false
		for _, s := range sets {
			_, open, next, by := s.at(k, t)
			if open {
				continue
			}
			if next.IsZero() || next.Sub(now) > MaxHorizon {
				v.Never = true
				return v
			}
			t, moved = next, true
			v.Zone, v.Window = by.loc, by.describe()
		}
		if !moved {
			v.Allowed = t.Equal(now)
			if !v.Allowed {
				v.Opens = t
			}
			return v
		}
	}
	v.Never = true
	return v
}

// CheckWindows says when a plan of kinds k may start under the policies'
// windows, from now: for the dry-run preview ("the change would start Sat
// 22:00 Europe/Berlin") and `kubectl ndp status`. WindowMessage words it.
func CheckWindows(policies []*Policy, k Kinds, now time.Time) WindowVerdict {
	sets := make([]windowSet, 0, len(policies))
	for _, p := range policies {
		sets = append(sets, p.windows)
	}
	return checkWindows(sets, k, now)
}

// WindowMessage is the verdict in words: "" when the plan may start now,
// else "waiting: outside the maintenance window, opens Sat 02:00
// Europe/Berlin for plans that reboot".
func WindowMessage(v WindowVerdict, now time.Time) string {
	if v.Allowed {
		return ""
	}
	return windowReason(v, now, "").String()
}
