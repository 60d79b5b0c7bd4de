package main

import (
	"testing"

	"github.com/ndp-dev/ndp/mco/mcoguard"
)

func TestDecideMode(t *testing.T) {
	present := mcoguard.Decide(mcoguard.Observed{ClusterOperator: true})
	daemonOnly := mcoguard.Decide(mcoguard.Observed{DaemonSet: true})
	absent := mcoguard.Decide(mcoguard.Observed{})
	for _, tc := range []struct {
		flag string
		v    mcoguard.Verdict
		want string
	}{
		{modeAuto, present, modeAdvisor},
		{modeAuto, daemonOnly, modeAdvisor},
		{modeAuto, absent, modeExecutor},
		// Explicit modes are not second-guessed: the executor stands down
		// beside the MCO itself, the advisor writes nothing it owns.
		{modeExecutor, present, modeExecutor},
		{modeAdvisor, absent, modeAdvisor},
	} {
		if got := decideMode(tc.flag, tc.v); got != tc.want {
			t.Errorf("decideMode(%s, found %v) = %s, want %s", tc.flag, tc.v.Found, got, tc.want)
		}
	}
	for m, ok := range map[string]bool{"auto": true, "executor": true, "advisor": true, "": false, "Advisor": false} {
		if validMode(m) != ok {
			t.Errorf("validMode(%q) = %t", m, !ok)
		}
	}
}
