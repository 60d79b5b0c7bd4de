// Package executor holds the controllers that run where ndp manages the
// nodes itself (the executor mode, no Machine Config Operator): the render,
// registries, kubelet and container runtime config controllers, the plan,
// rollout, rollout policy and pool status controllers, and the
// ClusterOperator's status. Each stands down while the MCO manages the
// nodes (mcoguard.Guard).
package executor

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ndp-dev/ndp/mco/mcoguard"
	"github.com/ndp-dev/ndp/policyset"
	"github.com/ndp-dev/ndp/render"
)

// SetupWithManager wires the executor's controllers into mgr, planning
// with active; mco says whether the MCO manages the nodes, gates evaluates
// RolloutPolicies' gates (nil: never evaluated, so they hold their pools).
func SetupWithManager(mgr ctrl.Manager, active *policyset.ActivePolicies, mco *mcoguard.Guard, gates GateSource) error {
	conds := NewPoolConditions()
	board := newRolloutBoard()
	// The plan, rollout and pool status controllers read each pool's nodes
	// from the cache's Node index (render.NewCachedPoolView).
	nodes, err := render.IndexNodeLabels(context.Background(), mgr.GetCache())
	if err != nil {
		return err
	}
	for name, r := range map[string]interface{ SetupWithManager(ctrl.Manager) error }{
		"render":                 &RenderReconciler{MCO: mco, Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("ndp-render-controller"), Conditions: conds},
		"registries":             &RegistriesReconciler{MCO: mco, Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("ndp-registries-controller"), Conditions: conds},
		"kubeletconfig":          &generatedConfigs{MCO: mco, Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("ndp-kubeletconfig-controller"), kind: kubeletConfigs},
		"containerruntimeconfig": &generatedConfigs{MCO: mco, Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("ndp-containerruntimeconfig-controller"), kind: containerRuntimeConfigs},
		"plan":                   &PlanReconciler{Client: mgr.GetClient(), Nodes: nodes, Active: active},
		"rollout":                &RolloutReconciler{MCO: mco, Client: mgr.GetClient(), Nodes: nodes, Recorder: mgr.GetEventRecorder("ndp-rollout-controller"), Conditions: conds, Gates: gates, board: board},
		"rolloutpolicy":          &RolloutPolicyStatusReconciler{Client: mgr.GetClient(), Gates: gates, board: board},
		"poolstatus":             &PoolStatusReconciler{Client: mgr.GetClient(), Nodes: nodes, Recorder: mgr.GetEventRecorder("ndp-poolstatus-controller"), Conditions: conds},
		"operator":               &OperatorReconciler{Client: mgr.GetClient()},
		"silence":                &SilenceReconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("ndp-silence-controller")},
	} {
		if err := r.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("setting up the %s controller: %w", name, err)
		}
	}
	return nil
}
