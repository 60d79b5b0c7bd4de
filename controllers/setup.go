package controllers

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ndp-dev/ndp/mco/mcoguard"
	"github.com/ndp-dev/ndp/planner/engine"
	"github.com/ndp-dev/ndp/policyset"
	"github.com/ndp-dev/ndp/render"
)

// LeaderElectionID is the lease ndp-controller replicas elect a leader with.
const LeaderElectionID = "ndp-controller.ndp.dev"

// SetupWithManager wires every ndp controller into mgr, sharing one active
// policy set compiled with engineOpts, and returns that set. ndp-controller and
// the cluster tests call it, so the tests run exactly the wiring that
// ships (opts tunes its timing).
//
// The render, registries, kubelet and container runtime config and rollout
// controllers stand down where the Machine Config Operator manages the
// nodes: they read opts.MCO, or, when nil, a guard made here and run by
// mgr.
func SetupWithManager(mgr ctrl.Manager, engineOpts engine.Options, opts Options) (*policyset.ActivePolicies, error) {
	active := policyset.NewActivePolicies(engineOpts)
	conds := NewPoolConditions()
	board := newRolloutBoard()
	// The plan, rollout and pool status controllers read each pool's nodes
	// from the cache's Node index (render.NewCachedPoolView).
	nodes, err := render.IndexNodeLabels(context.Background(), mgr.GetCache())
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
	for name, r := range map[string]interface{ SetupWithManager(ctrl.Manager) error }{
		"policy":                 &PolicyReconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("ndp-policy-controller"), Active: active, RetryRejected: opts.RetryRejected},
		"render":                 &RenderReconciler{MCO: mco, Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("ndp-render-controller"), Conditions: conds},
		"registries":             &RegistriesReconciler{MCO: mco, Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("ndp-registries-controller"), Conditions: conds},
		"kubeletconfig":          &KubeletConfigReconciler{MCO: mco, Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("ndp-kubeletconfig-controller")},
		"containerruntimeconfig": &ContainerRuntimeConfigReconciler{MCO: mco, Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("ndp-containerruntimeconfig-controller")},
		"plan":                   &PlanReconciler{Client: mgr.GetClient(), Nodes: nodes, Active: active},
		"rollout":                &RolloutReconciler{MCO: mco, Client: mgr.GetClient(), Nodes: nodes, Recorder: mgr.GetEventRecorder("ndp-rollout-controller"), Conditions: conds, Gates: opts.Gates, board: board},
		"rolloutpolicy":          &RolloutPolicyStatusReconciler{Client: mgr.GetClient(), Gates: opts.Gates, board: board},
		"poolstatus":             &PoolStatusReconciler{Client: mgr.GetClient(), Nodes: nodes, Recorder: mgr.GetEventRecorder("ndp-poolstatus-controller"), Conditions: conds},
		"operator":               &OperatorReconciler{Client: mgr.GetClient()},
	} {
		if err := r.SetupWithManager(mgr); err != nil {
			return nil, fmt.Errorf("setting up the %s controller: %w", name, err)
		}
	}
	return active, nil
}

// SetupAdvisorWithManager wires ndp's advisor beside the Machine Config
// Operator: the controllers that write only ndp's own objects (the policy
// controller, the forecast controller, the observer of the MCO's updates,
// which writes NodeHistories and Events). Nothing the MCO or the cluster
// version operator owns is written.
func SetupAdvisorWithManager(mgr ctrl.Manager, engineOpts engine.Options, opts Options) (*policyset.ActivePolicies, error) {
	active := policyset.NewActivePolicies(engineOpts)
	forecast := &ForecastReconciler{Client: mgr.GetClient(), Active: active}
	reconcilers := map[string]interface{ SetupWithManager(ctrl.Manager) error }{
		"policy":   &PolicyReconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("ndp-policy-controller"), Active: active, RetryRejected: opts.RetryRejected},
		"forecast": forecast,
		"observe":  &ObserveReconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("ndp-advisor"), Sources: forecast.PredictedSources},
	}
	switch opts.MCOEntries {
	case "", MCOEntriesOff:
	case MCOEntriesStatic, MCOEntriesPerUpdate:
		// Its own forecast calculator: the forecast controller's caches
		// are its own worker's.
		calc := &ForecastReconciler{Client: mgr.GetClient(), Active: active}
		calc.init()
		reconcilers["mcoentries"] = &MCOEntriesReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Active: active, Forecasts: calc,
			PerUpdate: opts.MCOEntries == MCOEntriesPerUpdate, Recorder: mgr.GetEventRecorder("ndp-mco-entries")}
	default:
		return nil, fmt.Errorf("--mco-entries must be %s, %s or %s, not %q", MCOEntriesOff, MCOEntriesStatic, MCOEntriesPerUpdate, opts.MCOEntries)
	}
	for name, r := range reconcilers {
		if err := r.SetupWithManager(mgr); err != nil {
			return nil, fmt.Errorf("setting up the %s controller: %w", name, err)
		}
	}
	return active, nil
}
