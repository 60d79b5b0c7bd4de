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

// Before either mode's code runs, --mode=auto decides the mode (and then
// watches it) from the MCO's ClusterOperator and its daemon's DaemonSet,
// each by name (mcoguard.Guard): both modes' roles grant these reads.
// +kubebuilder:rbac:groups=config.openshift.io,resources=clusteroperators,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=daemonsets,verbs=get;list;watch,resourceNames=machine-config-daemon

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
	// The guard's events so far (its first sync, at least) are what the
	// mode was decided on: take them and look once; from then on every
	// event is a change. Saying so tells the operator why the container
	// may restart (and tests that the watch has looked).
	for len(w.changes) > 0 {
		<-w.changes
	}
	if err := w.check(); err != nil {
		return err
	}
	w.log.Info("watching the Machine Config Operator's presence (--mode=auto): when it changes, ndp-controller exits to restart in the other mode", "running", w.mode)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-w.changes:
		}
		if err := w.check(); err != nil {
			return err
		}
	}
}

// check fails (errModeChanged) when auto mode would now pick another mode
// than the one running.
func (w *modeWatch) check() error {
	v, err := w.guard.Verdict()
	if err != nil {
		return nil // not known: no decision on a guess
	}
	if now := decideMode(modeAuto, v); now != w.mode {
		found := "nothing"
		if len(v.Found) > 0 {
			found = strings.Join(v.Found, ", ")
		}
		w.log.Info("the Machine Config Operator's presence changed: exiting to restart as "+now, "running", w.mode, "found", found)
		return fmt.Errorf("%w: running as %s, the Machine Config Operator's objects are now: %s", errModeChanged, w.mode, found)
	}
	return nil
}
