package controllers

import (
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ndp-dev/ndp/controllers/advisor"
	"github.com/ndp-dev/ndp/controllers/executor"
	"github.com/ndp-dev/ndp/controllers/nodedisruptionpolicy"
	"github.com/ndp-dev/ndp/mco/mcoguard"
	"github.com/ndp-dev/ndp/planner/engine"
	"github.com/ndp-dev/ndp/policyset"
)

// LeaderElectionID is the lease ndp-controller replicas elect a leader with.
const LeaderElectionID = "ndp-controller.ndp.dev"

// SetupWithManager wires ndp's executor into mgr: the policy controller
// and the executor's controllers (package executor), sharing one active
// policy set compiled with engineOpts, and returns that set. ndp-controller
// and the cluster tests call it, so the tests run exactly the wiring that
// ships (opts tunes its timing).
//
// The executor's controllers stand down where the Machine Config Operator
// manages the nodes: they read opts.MCO, or, when nil, a guard made here
// and run by mgr.
func SetupWithManager(mgr ctrl.Manager, engineOpts engine.Options, opts Options) (*policyset.ActivePolicies, error) {
	active, err := setupPolicies(mgr, engineOpts, opts)
	if err != nil {
		return nil, err
	}
	mco := opts.MCO
	if mco == nil {
		if mco, err = mcoguard.NewGuardForConfig(mgr.GetConfig()); err != nil {
			return nil, err
		}
		if err := mgr.Add(mco); err != nil {
			return nil, err
		}
	}
	return active, executor.SetupWithManager(mgr, active, mco, opts.Gates)
}

// SetupAdvisorWithManager wires ndp's advisor beside the Machine Config
// Operator: the policy controller and the advisor's controllers (package
// advisor), which write only ndp's own objects (and, with opts.MCOEntries,
// the MCO's node disruption policy). Nothing else the MCO or the cluster
// version operator owns is written.
func SetupAdvisorWithManager(mgr ctrl.Manager, engineOpts engine.Options, opts Options) (*policyset.ActivePolicies, error) {
	active, err := setupPolicies(mgr, engineOpts, opts)
	if err != nil {
		return nil, err
	}
	return active, advisor.SetupWithManager(mgr, active, opts.MCOEntries)
}

// setupPolicies makes the active policy set both modes plan with and the
// policy controller that keeps it.
func setupPolicies(mgr ctrl.Manager, engineOpts engine.Options, opts Options) (*policyset.ActivePolicies, error) {
	active := policyset.NewActivePolicies(engineOpts)
	r := &nodedisruptionpolicy.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("ndp-policy-controller"), Active: active, RetryRejected: opts.RetryRejected}
	if err := r.SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the policy controller: %w", err)
	}
	return active, nil
}
