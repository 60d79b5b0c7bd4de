package mcoimport

import (
	operatorv1 "github.com/openshift/api/operator/v1"

	"github.com/ndp-dev/ndp/mco/mcorules"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/policy"
)

// DecisionPlan is what the MCO decided (mcorules.Decide, or mco-decide's
// output in its shape) in the terms of ndp's plans, to set the two side by
// side: Special as the CRI-O reload the MCO runs for it, the decision's own
// drain and reboot, and its actions normalised as a plan's are
// (planner.Normalize: None only when alone, each action once, DaemonReload
// before the services), since the MCO runs different files' actions in
// random order and keeps duplicates. A refused decision has no plan: the
// caller checks d.Refused first.
func DecisionPlan(d *mcorules.Decision) (actions []Action, drain, reboot bool) {
	in := make([]Action, 0, len(d.Actions))
	for _, a := range d.Actions {
		var s Action
		switch a.Type {
		case operatorv1.SpecialStatusAction:
			s = policy.ReloadAction(registriesService)
		case operatorv1.ReloadStatusAction:
			s = policy.ReloadAction(a.Service)
		case operatorv1.RestartStatusAction:
			s = policy.RestartAction(a.Service)
		default:
			s = Action{Type: operatorv1.NodeDisruptionPolicySpecActionType(a.Type)}
		}
		in = append(in, s)
	}
	actions, _, _ = planner.Normalize(in, false)
	return actions, d.Drain, d.Reboot
}

// registriesService is the service the MCO reloads for Special.
const registriesService = "crio.service"
