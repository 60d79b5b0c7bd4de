package executor

import (
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
)

func TestProgressDue(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 4, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		last time.Time
		now  time.Time
		want time.Duration
	}{
		{"never written", time.Time{}, t0, 0},
		{"just written", t0, t0, 2 * time.Second},
		{"within the interval", t0, t0.Add(500 * time.Millisecond), 1500 * time.Millisecond},
		{"the interval passed", t0, t0.Add(2 * time.Second), 0},
		{"long ago", t0, t0.Add(time.Hour), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := progressDue(tc.last, tc.now, 2*time.Second); got != tc.want {
				t.Errorf("progressDue = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestSameProgress: a status that differs in its counts or a condition's
// message is progress (coalesced); in a condition's status or reason, the
// configuration or the observed generation, it is not (written at once).
func TestSameProgress(t *testing.T) {
	pool := &mcfgv1.MachineConfigPool{}
	pool.Generation = 3
	pool.Status = mcfgv1.MachineConfigPoolStatus{
		ObservedGeneration: 3, MachineCount: 10, UpdatedMachineCount: 4, ReadyMachineCount: 4, UnavailableMachineCount: 1,
		Configuration: mcfgv1.MachineConfigPoolStatusConfiguration{ObjectReference: corev1.ObjectReference{Name: "rendered-a"}},
		Conditions: []mcfgv1.MachineConfigPoolCondition{
			{Type: mcfgv1.MachineConfigPoolUpdating, Status: corev1.ConditionTrue, Reason: "Updating", Message: "4 of 10 nodes on rendered-a; updating: n1"},
		},
	}
	status := func(edit func(st map[string]any, cond map[string]any)) map[string]any {
		cond := map[string]any{"type": "Updating", "status": "True", "reason": "Updating", "message": "4 of 10 nodes on rendered-a; updating: n1"}
		st := map[string]any{
			"observedGeneration": int64(3), "machineCount": int64(10), "updatedMachineCount": int64(4), "readyMachineCount": int64(4),
			"unavailableMachineCount": int64(1), "degradedMachineCount": int64(0), "configuration": map[string]any{"name": "rendered-a"},
			"conditions": []any{cond},
		}
		if edit != nil {
			edit(st, cond)
		}
		return st
	}
	for _, tc := range []struct {
		name                string
		edit                func(st, cond map[string]any)
		wantAll, wantButRun bool
	}{
		{"unchanged", nil, true, true},
		{"a node more updated", func(st, cond map[string]any) {
			st["updatedMachineCount"] = int64(5)
			cond["message"] = "5 of 10 nodes on rendered-a; updating: n2"
		}, false, true},
		{"the rollout ended", func(st, cond map[string]any) {
			st["updatedMachineCount"] = int64(10)
			cond["status"], cond["reason"] = "False", "Updated"
		}, false, false},
		{"a new target", func(st, _ map[string]any) { st["configuration"] = map[string]any{"name": "rendered-b"} }, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := status(tc.edit)
			if got := same(pool, st, true); got != tc.wantAll {
				t.Errorf("same(all) = %t, want %t", got, tc.wantAll)
			}
			if got := same(pool, st, false); got != tc.wantButRun {
				t.Errorf("same(but progress) = %t, want %t", got, tc.wantButRun)
			}
		})
	}
	stale := pool.DeepCopy()
	stale.Generation = 4
	if same(stale, status(nil), false) {
		t.Error("a pool whose generation moved is the same")
	}
}
