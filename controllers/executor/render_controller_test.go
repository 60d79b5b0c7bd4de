package executor

import (
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
)

// A pool is rendered only with its generated registries config, unless the
// registries controller withholds it; the board's report wins over the
// pool's status, which stands in before the first report.
func TestRenderWaitsForTheGeneratedRegistriesConfig(t *testing.T) {
	withStatus := func(st corev1.ConditionStatus) *mcfgv1.MachineConfigPool {
		p := &mcfgv1.MachineConfigPool{}
		p.Name = "worker"
		if st != "" {
			p.Status.Conditions = []mcfgv1.MachineConfigPoolCondition{{Type: ndpmcv1.ConditionRegistriesDegraded, Status: st}}
		}
		return p
	}
	for _, tc := range []struct {
		name   string
		sel    string // the pool's machineConfigSelector; "" = its role
		names  []string
		board  corev1.ConditionStatus // "" = not reported since start
		status corev1.ConditionStatus // "" = not in the pool's status
		ready  bool
	}{
		{name: "only the administrator's config: wait", names: []string{"50-worker-chrony"}},
		{name: "with the generated config", names: []string{"50-worker-chrony", "99-worker-generated-registries"}, ready: true},
		{name: "another pool's generated config does not count", names: []string{"50-worker-chrony", "99-infra-generated-registries"}},
		{name: "withheld (reported)", names: []string{"50-worker-chrony"}, board: corev1.ConditionTrue, ready: true},
		{name: "withheld (in the status, before a report)", names: []string{"50-worker-chrony"}, status: corev1.ConditionTrue, ready: true},
		{name: "the report wins over a stale status", names: []string{"50-worker-chrony"}, board: corev1.ConditionFalse, status: corev1.ConditionTrue},
		{name: "not withheld", names: []string{"50-worker-chrony"}, board: corev1.ConditionFalse, status: corev1.ConditionFalse},
		{name: "a selector that would not select it: no wait", sel: "example.com/pool=edge", names: []string{"50-edge"}, ready: true},
		{name: "a selector of several roles selects it: wait", sel: "machineconfiguration.openshift.io/role in (worker,infra)", names: []string{"50-worker-chrony"}},
		{name: "an empty selection waits too", names: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &RenderReconciler{Conditions: NewPoolConditions()}
			if tc.board != "" {
				r.Conditions.Set("worker", ndpmcv1.ConditionRegistriesDegraded, tc.board, "R", "")
			}
			if tc.sel == "" {
				tc.sel = ndpmcv1.RoleLabel + "=worker"
			}
			sel, err := labels.Parse(tc.sel)
			if err != nil {
				t.Fatal(err)
			}
			if got := generatedReady("worker", sel, tc.names, r.registriesWithheld(withStatus(tc.status))); got != tc.ready {
				t.Errorf("generatedReady = %v, want %v", got, tc.ready)
			}
		})
	}
}
