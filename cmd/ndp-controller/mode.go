package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/ndp-dev/ndp/mco/mcoguard"
)

// The modes (--mode).
const (
	modeAuto     = "auto"
	modeExecutor = "executor"
	modeAdvisor  = "advisor"
)

// advisorPreviewDeadline is the previews' deadline as advisor: below the
// advisor install's webhook timeout (3 s), so that a slow preview answers
// without its warnings instead of holding the MCO's writers.
const advisorPreviewDeadline = 2500 * time.Millisecond

// exitModeChanged is the exit status when auto mode's decision no longer
// holds (the Deployment restarts the container).
const exitModeChanged = 3

var errModeChanged = errors.New("the mode decided at start no longer holds")

func validMode(m string) bool { return m == modeAuto || m == modeExecutor || m == modeAdvisor }

// decideMode resolves the mode flag: auto is advisor where the Machine
// Config Operator manages the nodes, executor elsewhere; the others are
// themselves.
func decideMode(flag string, v mcoguard.Verdict) string {
	if flag != modeAuto {
		return flag
	}
	if v.StandDown {
		return modeAdvisor
	}
	return modeExecutor
}

// modeWatch ends the manager (errModeChanged) when auto mode, run again,
// would pick another mode than the one running: the MCO came or went.
// Every replica runs it.
type modeWatch struct {
	guard   *mcoguard.Guard
	changes <-chan event.GenericEvent
	mode    string
	log     logr.Logger
}

func (w *modeWatch) NeedLeaderElection() bool { return false }

func (w *modeWatch) Start(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-w.changes:
		}
		v, err := w.guard.Verdict()
		if err != nil {
			continue // not known: no decision on a guess
		}
		if now := decideMode(modeAuto, v); now != w.mode {
			found := "nothing"
			if len(v.Found) > 0 {
				found = strings.Join(v.Found, ", ")
			}
			w.log.Info("the Machine Config Operator's presence changed: exiting to restart as "+now, "running", w.mode, "found", found)
			return fmt.Errorf("%w: running as %s, the Machine Config Operator's objects are now: %s", errModeChanged, w.mode, found)
		}
	}
}
