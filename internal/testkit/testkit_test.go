package testkit_test

import (
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
