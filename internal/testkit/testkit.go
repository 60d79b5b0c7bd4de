// Package testkit is what ndp's test suites share: waits, free ports, a
// process's last log lines, the envtest control plane (on top of
// internal/controlplane, which the non-test tools use too), MachineConfig
// files read (ReadConfig, ReadMachineConfig), where the MCO's reference
// tools are (MCORef, RealConfigs) and the MCO's own decision
// (MCODecide). Its MachineConfig, MachineConfiguration and Ignition
// builders are in testkit/builder, its small policies and default planner
// in testkit/policytest.
package testkit

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ndp-dev/ndp/internal/controlplane"
)

// Patience bounds every wait: controllers and daemons act within seconds,
// but a loaded 2-core machine is slow, and a wait that holds returns as soon
// as it does (a cluster test once failed after 20s on a loaded machine).
const Patience = 2 * time.Minute

// Interval is how often a wait polls.
const Interval = 100 * time.Millisecond

// WaitOption changes one wait's bounds.
type WaitOption func(*wait)

type wait struct{ timeout, interval time.Duration }

// Within bounds a wait by d instead of Patience.
func Within(d time.Duration) WaitOption { return func(w *wait) { w.timeout = d } }

// Every polls every d instead of Interval.
func Every(d time.Duration) WaitOption { return func(w *wait) { w.interval = d } }

// Eventually polls cond until it holds, failing the test after Patience (or
// Within) with what it waited for and cond's last observation.
func Eventually(t testing.TB, what string, cond func() (ok bool, observed string), opts ...WaitOption) {
	t.Helper()
	w := wait{timeout: Patience, interval: Interval}
	for _, o := range opts {
		o(&w)
	}
	deadline := time.Now().Add(w.timeout)
	for {
		ok, observed := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			if observed == "" {
				t.Fatalf("after %s: %s", w.timeout, what)
			}
			t.Fatalf("after %s: %s (last: %s)", w.timeout, what, observed)
		}
		time.Sleep(w.interval)
	}
}

// Until is Eventually for a condition with nothing to report.
func Until(t testing.TB, what string, cond func() bool, opts ...WaitOption) {
	t.Helper()
	Eventually(t, what, func() (bool, string) { return cond(), "" }, opts...)
}

// FreePort is a TCP port free on loopback right now.
func FreePort(t testing.TB) int {
	t.Helper()
	port, err := controlplane.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// LastLines is the last n lines of a process's output (without a final
// empty line), for a failing test's log.
func LastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Terminate stops a process a test started: SIGTERM, then, if it has not
// exited (closed done) within grace, SIGKILL; it returns once it exited.
func Terminate(p *os.Process, done <-chan struct{}, grace time.Duration) {
	_ = p.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(grace):
		_ = p.Kill()
		<-done
	}
}

// WithoutCommentLines is s without its lines that start with "#" (an
// import's YAML without the report's comments).
func WithoutCommentLines(s string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if !strings.HasPrefix(l, "#") {
			b.WriteString(l)
		}
	}
	return b.String()
}

// CheckContains fails the test, and goes on, for each of wants that got
// lacks; what names got in the message ("text", "stderr").
func CheckContains(t testing.TB, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, got)
		}
	}
}
