package rolloutcontrol

import (
	"strings"
	"testing"
	"time"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
)

func utc(s string) time.Time {
	t, err := time.Parse("2006-01-02 15:04", s)
	if err != nil {
		panic(err)
	}
	return t
}

func win(days, start, end, tz string, mods ...func(*v1alpha1.MaintenanceWindow)) v1alpha1.MaintenanceWindow {
	w := v1alpha1.MaintenanceWindow{Start: start, End: end, TimeZone: tz}
	if days != "" {
		for _, d := range strings.Split(days, ",") {
			w.Days = append(w.Days, v1alpha1.Weekday(d))
		}
	}
	for _, m := range mods {
		m(&w)
	}
	return w
}

func excluding(ranges ...string) func(*v1alpha1.MaintenanceWindow) {
	return func(w *v1alpha1.MaintenanceWindow) {
		for _, r := range ranges {
			from, to, _ := strings.Cut(r, "..")
			w.Exclusions = append(w.Exclusions, v1alpha1.DateRange{Start: from, End: to})
		}
	}
}

func holding(kinds ...v1alpha1.PlanKind) func(*v1alpha1.MaintenanceWindow) {
	return func(w *v1alpha1.MaintenanceWindow) { w.Holds = kinds }
}

func compileSets(t *testing.T, policies ...[]v1alpha1.MaintenanceWindow) []windowSet {
	t.Helper()
	var sets []windowSet
	for _, ws := range policies {
		p, err := Compile(&v1alpha1.RolloutPolicy{Spec: v1alpha1.RolloutPolicySpec{Windows: ws}})
		if err != nil {
			t.Fatal(err)
		}
		sets = append(sets, p.windows)
	}
	return sets
}

// The dates: 2026-11-26 is a Thursday. Europe/Berlin's summer time begins
// 2026-03-29 at 02:00 (to 03:00) and ends 2026-10-25 at 03:00 (to 02:00);
// America/New_York's ends 2026-11-01 at 02:00 (to 01:00).
func TestWindows(t *testing.T) {
	type W = []v1alpha1.MaintenanceWindow
	for _, c := range []struct {
		name     string
		policies []W
		kinds    Kinds
		now      string // UTC
		allowed  bool
		governed bool   // when allowed
		opens    string // UTC, when not allowed; "never"
		message  string // a part of the message, when not allowed
	}{
		{name: "before a weekly window", policies: []W{{win("Sat", "02:00", "05:00", "Europe/Berlin")}}, kinds: KindReboot | KindDrain,
			now: "2026-11-26 17:00", opens: "2026-11-28 01:00", message: "outside the maintenance window, opens Sat 02:00 Europe/Berlin for plans that reboot or drain"},
		{name: "inside it", policies: []W{{win("Sat", "02:00", "05:00", "Europe/Berlin")}}, kinds: KindReboot,
			now: "2026-11-28 01:30", allowed: true, governed: true},
		{name: "at its start", policies: []W{{win("Sat", "02:00", "05:00", "Europe/Berlin")}}, kinds: KindReboot,
			now: "2026-11-28 01:00", allowed: true, governed: true},
		{name: "at its end: closed, next week", policies: []W{{win("Sat", "02:00", "05:00", "Europe/Berlin")}}, kinds: KindReboot,
			now: "2026-11-28 04:00", opens: "2026-12-05 01:00", message: "opens Sat 2026-12-05 02:00 Europe/Berlin for plans that reboot"},
		{name: "a restart is not held by a reboot window", policies: []W{{win("Sat", "02:00", "05:00", "Europe/Berlin")}}, kinds: KindRestart,
			now: "2026-11-26 17:00", allowed: true},
		{name: "a file-only plan is not held by default", policies: []W{{win("Sat", "02:00", "05:00", "UTC")}}, kinds: KindNone,
			now: "2026-11-26 17:00", allowed: true},
		{name: "All holds a file-only plan", policies: []W{{win("Sat", "02:00", "05:00", "UTC", holding(v1alpha1.PlanAll))}}, kinds: KindNone,
			now: "2026-11-26 17:00", opens: "2026-11-28 02:00", message: "for plans that only write files"},
		{name: "holds Restart: a plan that drains and restarts waits", policies: []W{{win("", "01:00", "02:00", "UTC", holding(v1alpha1.PlanRestart))}},
			kinds: KindDrain | KindRestart, now: "2026-11-26 17:00", opens: "2026-11-27 01:00", message: "opens Fri 01:00 UTC for plans that restart a unit"},
		{name: "every day (no days)", policies: []W{{win("", "22:00", "23:00", "UTC")}}, kinds: KindReboot,
			now: "2026-11-26 23:00", opens: "2026-11-27 22:00"},
		{name: "midnight-spanning, after midnight: open", policies: []W{{win("Fri", "22:00", "02:00", "UTC")}}, kinds: KindReboot,
			now: "2026-11-28 01:59", allowed: true, governed: true},
		{name: "midnight-spanning, at its end", policies: []W{{win("Fri", "22:00", "02:00", "UTC")}}, kinds: KindReboot,
			now: "2026-11-28 02:00", opens: "2026-12-04 22:00"},
		{name: "end 24:00", policies: []W{{win("Thu", "20:00", "24:00", "UTC")}}, kinds: KindReboot,
			now: "2026-11-26 23:59", allowed: true, governed: true},
		{name: "end 24:00, at midnight", policies: []W{{win("Thu", "20:00", "24:00", "UTC")}}, kinds: KindReboot,
			now: "2026-11-27 00:00", opens: "2026-12-03 20:00"},
		{name: "DST begins: a window the clock skips does not open that day", policies: []W{{win("", "02:00", "03:00", "Europe/Berlin")}}, kinds: KindReboot,
			now: "2026-03-29 00:00", opens: "2026-03-30 00:00"},
		{name: "DST begins: a start the clock skips opens at the jump", policies: []W{{win("", "02:30", "04:00", "Europe/Berlin")}}, kinds: KindReboot,
			now: "2026-03-29 00:30", opens: "2026-03-29 01:00"},
		{name: "DST begins: the window is an hour shorter", policies: []W{{win("", "01:00", "04:00", "Europe/Berlin")}}, kinds: KindReboot,
			now: "2026-03-29 02:00", opens: "2026-03-29 23:00" /* closed at 04:00 CEST = 02:00 UTC; opens 01:00 CEST */},
		{name: "DST ends: an hour the clock passes twice opens at its first passing", policies: []W{{win("", "02:30", "02:45", "Europe/Berlin")}}, kinds: KindReboot,
			now: "2026-10-25 00:00", opens: "2026-10-25 00:30"},
		{name: "DST ends: not at its second passing", policies: []W{{win("", "02:30", "02:45", "Europe/Berlin")}}, kinds: KindReboot,
			now: "2026-10-25 01:35", opens: "2026-10-26 01:30"},
		{name: "DST ends: the window is an hour longer", policies: []W{{win("", "01:00", "04:00", "Europe/Berlin")}}, kinds: KindReboot,
			now: "2026-10-25 02:30", allowed: true, governed: true},
		{name: "New York, DST ends", policies: []W{{win("Sun", "01:30", "03:00", "America/New_York")}}, kinds: KindReboot,
			now: "2026-10-31 12:00", opens: "2026-11-01 05:30", message: "Sun 01:30 America/New_York"},
		{name: "Auckland: the local day is ahead of UTC's", policies: []W{{win("Fri", "01:00", "03:00", "Pacific/Auckland")}}, kinds: KindReboot,
			now: "2026-11-26 13:30", allowed: true, governed: true},
		{name: "an excluded date skips that week", policies: []W{{win("Sat", "02:00", "05:00", "Europe/Berlin", excluding("2026-11-28"))}}, kinds: KindReboot,
			now: "2026-11-26 17:00", opens: "2026-12-05 01:00"},
		{name: "an exclusion cuts a midnight-spanning opening", policies: []W{{win("Fri", "22:00", "02:00", "UTC", excluding("2026-11-28"))}}, kinds: KindReboot,
			now: "2026-11-28 00:30", opens: "2026-12-04 22:00"},
		{name: "before the cut: open", policies: []W{{win("Fri", "22:00", "02:00", "UTC", excluding("2026-11-28"))}}, kinds: KindReboot,
			now: "2026-11-27 23:30", allowed: true, governed: true},
		{name: "an exclusion range, in the window's zone", policies: []W{{win("", "02:00", "03:00", "Europe/Berlin", excluding("2026-12-20..2027-01-06"))}}, kinds: KindReboot,
			now: "2026-12-19 02:00", opens: "2027-01-07 01:00", message: "opens Thu 2027-01-07 02:00 Europe/Berlin"},
		{name: "excluded for over five years: never", policies: []W{{win("", "02:00", "03:00", "UTC", excluding("2026-01-01..2035-12-31"))}}, kinds: KindReboot,
			now: "2026-11-26 17:00", opens: "never", message: "never open together"},
		{name: "two windows of a policy: the earlier opening", policies: []W{{win("Sat", "02:00", "05:00", "UTC"), win("Fri", "03:00", "04:00", "UTC")}}, kinds: KindReboot,
			now: "2026-11-26 17:00", opens: "2026-11-27 03:00"},
		{name: "two windows of a policy: either open lets it go", policies: []W{{win("Sat", "02:00", "05:00", "UTC"), win("Thu", "16:00", "18:00", "UTC")}}, kinds: KindReboot,
			now: "2026-11-26 17:00", allowed: true, governed: true},
		{name: "two policies intersect", policies: []W{{win("Sat", "00:00", "06:00", "UTC")}, {win("Sat", "04:00", "08:00", "UTC")}}, kinds: KindReboot,
			now: "2026-11-26 17:00", opens: "2026-11-28 04:00"},
		{name: "two policies, one open: waits for the other", policies: []W{{win("Thu", "16:00", "18:00", "UTC")}, {win("Sat", "04:00", "08:00", "UTC")}}, kinds: KindReboot,
			now: "2026-11-26 17:00", opens: "never"},
		{name: "two policies across time zones", policies: []W{{win("Sat", "02:00", "06:00", "Europe/Berlin")}, {win("Fri", "20:00", "02:00", "America/New_York")}}, kinds: KindReboot,
			now: "2026-11-26 17:00", opens: "2026-11-28 01:00"},
		{name: "two policies, disjoint days: never", policies: []W{{win("Sat", "00:00", "06:00", "UTC")}, {win("Sun", "00:00", "06:00", "UTC")}}, kinds: KindReboot,
			now: "2026-11-26 17:00", opens: "never"},
		{name: "a policy that holds other kinds does not narrow", policies: []W{{win("Sat", "00:00", "06:00", "UTC")}, {win("Sun", "00:00", "06:00", "UTC", holding(v1alpha1.PlanRestart))}}, kinds: KindReboot,
			now: "2026-11-26 17:00", opens: "2026-11-28 00:00"},
	} {
		t.Run(c.name, func(t *testing.T) {
			now := utc(c.now)
			v := checkWindows(compileSets(t, c.policies...), c.kinds, now)
			if v.Allowed != c.allowed {
				t.Fatalf("allowed %v, want %v (%+v)", v.Allowed, c.allowed, v)
			}
			if c.allowed {
				if v.Governed != c.governed {
					t.Errorf("governed %v, want %v", v.Governed, c.governed)
				}
				return
			}
			if c.opens == "never" {
				if !v.Never {
					t.Errorf("opens %s, want never", v.Opens)
				}
			} else if !v.Opens.Equal(utc(c.opens)) {
				t.Errorf("opens %s, want %s UTC", v.Opens.UTC(), c.opens)
			}
			msg := windowReason(v, now, "n").String()
			if !strings.HasPrefix(msg, "waiting: ") || !strings.Contains(msg, c.message) {
				t.Errorf("message %q, want one with %q", msg, c.message)
			}
		})
	}
}

func TestWallTime(t *testing.T) {
	berlin, _ := time.LoadLocation("Europe/Berlin")
	lordHowe, _ := time.LoadLocation("Australia/Lord_Howe") // half-hour shifts
	day := func(s string) time.Time { d, _ := time.Parse(time.DateOnly, s); return d }
	for _, c := range []struct {
		day     string
		minutes int
		loc     *time.Location
		want    string // UTC
	}{
		{"2026-11-28", 120, berlin, "2026-11-28 01:00"},
		{"2026-11-28", 1440, berlin, "2026-11-28 23:00"},  // 24:00 is the next midnight
		{"2026-03-29", 150, berlin, "2026-03-29 01:00"},   // 02:30 skipped: the jump
		{"2026-03-29", 180, berlin, "2026-03-29 01:00"},   // 03:00 CEST is the jump too
		{"2026-10-25", 150, berlin, "2026-10-25 00:30"},   // 02:30 twice: the first
		{"2026-10-04", 135, lordHowe, "2026-10-03 15:30"}, // 02:15 skipped (02:00 → 02:30 +11): the jump at 15:30 UTC
	} {
		if got := wallTime(day(c.day), c.minutes, c.loc); !got.Equal(utc(c.want)) {
			t.Errorf("wallTime(%s, %d, %s) = %s, want %s UTC", c.day, c.minutes, c.loc, got.UTC(), c.want)
		}
	}
}

func TestKinds(t *testing.T) {
	for _, c := range []struct {
		k      Kinds
		phrase string
	}{
		{KindReboot, "plans that reboot"},
		{KindReboot | KindDrain, "plans that reboot or drain"},
		{KindDrain | KindRestart | KindReload, "plans that drain, restart a unit or reload a unit"},
		{KindAll, "every plan"},
		{0, "no plan"},
	} {
		if got := c.k.Phrase(); got != c.phrase {
			t.Errorf("%v: %q, want %q", c.k, got, c.phrase)
		}
	}
	if got := holdsKinds(nil); got != KindReboot|KindDrain {
		t.Errorf("default holds: %v", got)
	}
	if got := holdsKinds([]v1alpha1.PlanKind{v1alpha1.PlanAll}); got != KindAll {
		t.Errorf("All: %v", got)
	}
}
