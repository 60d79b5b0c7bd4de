package testkit_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ndp-dev/ndp/internal/testkit"
)

func TestLastLines(t *testing.T) {
	if got := testkit.LastLines("a\nb\nc\n", 2); got != "b\nc" {
		t.Errorf("%q", got)
	}
}

func TestEventually(t *testing.T) {
	n := 0
	testkit.Eventually(t, "three polls", func() (bool, string) { n++; return n == 3, "" }, testkit.Every(time.Millisecond))
	if n != 3 {
		t.Errorf("polled %d times", n)
	}
	if testkit.FreePort(t) == 0 {
		t.Error("port 0")
	}
}

// recorder keeps what a check reports.
type recorder struct {
	testing.TB
	got []string
}

func (e *recorder) Helper() {}
func (e *recorder) Errorf(format string, args ...any) {
	e.got = append(e.got, fmt.Sprintf(format, args...))
}

func TestCheckContains(t *testing.T) {
	rec := &recorder{TB: t}
	testkit.CheckContains(rec, "text", "a b c", "a", "x", "b c", "y")
	want := []string{"text lacks \"x\":\na b c", "text lacks \"y\":\na b c"}
	if !slices.Equal(rec.got, want) {
		t.Errorf("reported %q, want %q", rec.got, want)
	}
}
