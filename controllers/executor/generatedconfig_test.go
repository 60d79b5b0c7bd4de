package executor

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ndp-dev/ndp/nodeconfig"
)

func TestIsGeneratedFinalizer(t *testing.T) {
	for f, want := range map[string]bool{
		"99-worker-generated-kubelet":          true,
		"99-worker-generated-kubelet-3":        true,
		"99-my-pool-generated-kubelet-1":       true,
		"99-worker-generated-kubelet-x":        false,
		"99-worker-generated-containerruntime": false,
		"foregroundDeletion":                   false,
		"example.com/keep":                     false,
	} {
		if got := isGeneratedFinalizer(nodeconfig.KindKubelet, f); got != want {
			t.Errorf("%s: %v, want %v", f, got, want)
		}
	}
}

// The MCO's cleanUpStatusConditions keeps the last three conditions; a
// condition the last one already says is not repeated.
func TestAppendCondition(t *testing.T) {
	same := func(a, b string) bool { return a == b }
	var conds []string
	for _, c := range []string{"a", "b", "b", "c", "d"} {
		conds, _ = appendCondition(conds, c, same)
	}
	if len(conds) != 3 || conds[0] != "b" || conds[2] != "d" {
		t.Errorf("conditions %v", conds)
	}
	if _, changed := appendCondition(conds, "d", same); changed {
		t.Error("repeating the last condition changed the status")
	}
}

// Each kind's status says the newest condition last, not repeated, with
// the object's generation observed.
func TestConfigKindConditions(t *testing.T) {
	// status is obj's status as the API server would store it.
	status := func(t *testing.T, obj client.Object) (conds []string, observed int64) {
		b, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		var o struct {
			Status struct {
				ObservedGeneration int64
				Conditions         []struct{ Type, Status, Reason, Message string }
			}
		}
		if err := json.Unmarshal(b, &o); err != nil {
			t.Fatal(err)
		}
		for _, c := range o.Status.Conditions {
			conds = append(conds, fmt.Sprintf("%s %s %s: %s", c.Type, c.Status, c.Reason, c.Message))
		}
		return conds, o.Status.ObservedGeneration
	}
	for _, tc := range []struct {
		kind configKind
		obj  client.Object
	}{
		{kubeletConfigs, &mcfgv1.KubeletConfig{ObjectMeta: metav1.ObjectMeta{Generation: 2}}},
		{containerRuntimeConfigs, &mcfgv1.ContainerRuntimeConfig{ObjectMeta: metav1.ObjectMeta{Generation: 3}}},
	} {
		t.Run(tc.kind.typeName, func(t *testing.T) {
			if got := fmt.Sprintf("%T", tc.kind.newObject()); got != fmt.Sprintf("%T", tc.obj) {
				t.Errorf("newObject is a %s, want %T", got, tc.obj)
			}
			if !tc.kind.setCondition(tc.obj, false, "Invalid", "Error: bad") || !tc.kind.setCondition(tc.obj, true, "Success", "Success: rendered") {
				t.Error("a new condition left the status as it was")
			}
			if tc.kind.setCondition(tc.obj, true, "Success", "Success: rendered") {
				t.Error("the last condition again changed the status")
			}
			conds, observed := status(t, tc.obj)
			if want := []string{"Failure False Invalid: Error: bad", "Success True Success: Success: rendered"}; !slices.Equal(conds, want) {
				t.Errorf("conditions %q, want %q", conds, want)
			}
			if observed != tc.obj.GetGeneration() {
				t.Errorf("observedGeneration %d, want %d", observed, tc.obj.GetGeneration())
			}
		})
	}
}
