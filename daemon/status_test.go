package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// statusReader answers the Status's read of its MachineConfigNode.
type statusReader struct {
	err   error
	conds []any // the stored status.conditions
	reads int
}

func (r *statusReader) Get(_ context.Context, _ client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	r.reads++
	if r.err != nil {
		return r.err
	}
	u := obj.(*unstructured.Unstructured)
	u.Object["status"] = map[string]any{"conditions": r.conds}
	return nil
}

func (r *statusReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("not used")
}

// statusWriter records the status the Status applies; the spec apply
// succeeds. Nothing else of the client is used.
type statusWriter struct {
	client.Client
	applied []map[string]any
}

func (w *statusWriter) Apply(context.Context, runtime.ApplyConfiguration, ...client.ApplyOption) error {
	return nil
}

func (w *statusWriter) Status() client.SubResourceWriter { return statusApply{w: w} }

type statusApply struct {
	client.SubResourceWriter
	w *statusWriter
}

func (a statusApply) Apply(_ context.Context, obj runtime.ApplyConfiguration, _ ...client.SubResourceApplyOption) error {
	b, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	a.w.applied = append(a.w.applied, m)
	return nil
}

// appliedConditions is "Type=Status" for each condition of a status apply.
func appliedConditions(m map[string]any) string {
	conds, _, _ := unstructured.NestedSlice(m, "status", "conditions")
	var out []string
	for _, c := range conds {
		c := c.(map[string]any)
		out = append(out, c["type"].(string)+"="+c["status"].(string))
	}
	return strings.Join(out, " ")
}

// A failed read of the MachineConfigNode keeps the conditions stored there:
// nothing is written until a read succeeds, then the stored conditions are
// written back with the newer ones set meanwhile over them. NotFound means
// nothing is stored.
func TestStatusKeepsStoredConditionsWhenTheReadFails(t *testing.T) {
	ctx := context.Background()
	stored := []any{
		map[string]any{"type": "Cordoned", "status": "True", "reason": "Cordoned", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"},
		map[string]any{"type": "Updated", "status": "True", "reason": "Updated", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"},
	}
	unavailable := apierrors.NewServiceUnavailable("the API server is away")
	r := &statusReader{err: unavailable, conds: stored}
	w := &statusWriter{}
	s := &Status{Client: w, Reader: r, NodeName: "node-a"}

	if err := s.load(ctx); err == nil || !strings.Contains(err.Error(), "MachineConfigNode node-a") {
		t.Errorf("load with the read failing: %v", err)
	}
	s.condition(mcfgv1.MachineConfigNodeUpdated, metav1.ConditionFalse, "Updating", "updating")
	if err := s.apply(ctx, "worker", "a", "b"); err == nil {
		t.Fatal("apply wrote the conditions without having read the stored ones")
	}
	if len(w.applied) != 0 {
		t.Fatalf("status written from an empty list: %v", w.applied)
	}
	if r.reads != 2 {
		t.Errorf("%d reads: apply should try the read again", r.reads)
	}

	r.err = nil
	if err := s.apply(ctx, "worker", "a", "b"); err != nil {
		t.Fatal(err)
	}
	if len(w.applied) != 1 {
		t.Fatalf("%d status applies, want 1", len(w.applied))
	}
	if got, want := appliedConditions(w.applied[0]), "Cordoned=True Updated=False"; got != want {
		t.Errorf("conditions written: %s, want %s (the stored ones, the newer Updated over the stored)", got, want)
	}
	// Loaded once: later writes do not read again.
	if err := s.apply(ctx, "worker", "a", "b"); err != nil || r.reads != 3 {
		t.Errorf("after loading: err %v, %d reads (want 3)", err, r.reads)
	}

	// No MachineConfigNode yet: nothing to keep, the conditions set are written.
	r2 := &statusReader{err: apierrors.NewNotFound(schema.GroupResource{Group: mcfgv1.GroupName, Resource: "machineconfignodes"}, "node-b")}
	w2 := &statusWriter{}
	s2 := &Status{Client: w2, Reader: r2, NodeName: "node-b"}
	s2.condition(mcfgv1.MachineConfigNodeUpdated, metav1.ConditionTrue, "Updated", "the node runs a")
	if err := s2.apply(ctx, "worker", "a", "a"); err != nil {
		t.Fatal(err)
	}
	if len(w2.applied) != 1 || appliedConditions(w2.applied[0]) != "Updated=True" {
		t.Errorf("with no MachineConfigNode: %v", w2.applied)
	}
}
