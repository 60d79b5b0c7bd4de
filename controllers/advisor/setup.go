// Package advisor holds the controllers that run beside the Machine Config
// Operator (the advisor mode): the forecast controller, the observer of the
// MCO's updates (NodeHistories and Events), and the keeper of ndp's entries
// in the MCO's node disruption policy. They write only ndp's own objects
// and, with --mco-entries, the MachineConfiguration's node disruption
// policy (AdvisorClient enforces it).
package advisor

import (
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ndp-dev/ndp/policyset"
)

// SetupWithManager wires the advisor's controllers into mgr, forecasting
// with active; mcoEntries is what ndp keeps in the MCO's node disruption
// policy (MCOEntriesOff when empty, MCOEntriesStatic or
// MCOEntriesPerUpdate).
func SetupWithManager(mgr ctrl.Manager, active *policyset.ActivePolicies, mcoEntries string) error {
	forecast := &ForecastReconciler{Client: mgr.GetClient(), Active: active}
	reconcilers := map[string]interface{ SetupWithManager(ctrl.Manager) error }{
		"forecast": forecast,
		"observe":  &ObserveReconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("ndp-advisor"), Sources: forecast.PredictedSources},
	}
	switch mcoEntries {
	case "", MCOEntriesOff:
	case MCOEntriesStatic, MCOEntriesPerUpdate:
		// Its own forecast calculator: the forecast controller's caches
		// are its own worker's.
		calc := &ForecastReconciler{Client: mgr.GetClient(), Active: active}
		calc.init()
		reconcilers["mcoentries"] = &MCOEntriesReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Active: active, Forecasts: calc,
			PerUpdate: mcoEntries == MCOEntriesPerUpdate, Recorder: mgr.GetEventRecorder("ndp-mco-entries")}
	default:
		return fmt.Errorf("--mco-entries must be %s, %s or %s, not %q", MCOEntriesOff, MCOEntriesStatic, MCOEntriesPerUpdate, mcoEntries)
	}
	for name, r := range reconcilers {
		if err := r.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("setting up the %s controller: %w", name, err)
		}
	}
	return nil
}
