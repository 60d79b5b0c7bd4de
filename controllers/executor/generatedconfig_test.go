package executor

import (
	"testing"

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
