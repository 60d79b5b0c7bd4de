package main

import (
	"context"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
)

// withFakeHoldCluster serves hold, release and status from one fake
// cluster whose kubeconfig user is user.
func withFakeHoldCluster(t *testing.T, user string, extra ...client.Object) client.Client {
	t.Helper()
	c := fakeCluster(t, extra...).(client.Client)
	oldS, oldH := newStatusClient, newHoldClient
	newStatusClient = func(*statusOptions) (client.Reader, error) { return c, nil }
	newHoldClient = func(*statusOptions) (client.Client, string, error) { return c, user, nil }
	t.Cleanup(func() { newStatusClient, newHoldClient = oldS, oldH })
	return c
}

func nodeAnnotations(t *testing.T, c client.Client, name string) map[string]string {
	t.Helper()
	var n corev1.Node
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, &n); err != nil {
		t.Fatal(err)
	}
	return n.Annotations
}

func TestHoldAndRelease(t *testing.T) {
	c := withFakeHoldCluster(t, "kube-admin")
	code, out, errOut := ndp(t, "hold", "worker-3", "--reason", "disk swap")
	if code != exitOK || out != "node worker-3 held: disk swap (by kube-admin)\n" {
		t.Fatalf("hold: exit %d\n%s%s", code, out, errOut)
	}
	if a := nodeAnnotations(t, c, "worker-3"); a[v1alpha1.HoldAnnotation] != "disk swap" || a[v1alpha1.HoldByAnnotation] != "kube-admin" {
		t.Errorf("annotations after hold: %v", a)
	}
	// --by names someone else; no reason is "".
	if code, out, _ := ndp(t, "hold", "worker-3", "--by", "alice"); code != exitOK || out != "node worker-3 held (by alice)\n" {
		t.Errorf("hold --by: exit %d %q", code, out)
	}
	if a := nodeAnnotations(t, c, "worker-3"); a[v1alpha1.HoldAnnotation] != "" || a[v1alpha1.HoldByAnnotation] != "alice" {
		t.Errorf("annotations after hold --by: %v", a)
	}

	// ndp status shows the hold under the pool.
	code, out, _ = ndp(t, "status", "worker")
	if code != exitOK || !strings.Contains(out, "Rollout:\n  policies: none\n  held: node worker-3 by annotation (not yet seen by the rollout controller)\n") {
		t.Errorf("status with a held node: exit %d\n%s", code, out)
	}

	if code, out, _ := ndp(t, "release", "worker-3"); code != exitOK || out != "node worker-3 released\n" {
		t.Errorf("release: exit %d %q", code, out)
	}
	if a := nodeAnnotations(t, c, "worker-3"); len(a) > 0 {
		if _, ok := a[v1alpha1.HoldAnnotation]; ok {
			t.Errorf("annotations after release: %v", a)
		}
		if _, ok := a[v1alpha1.HoldByAnnotation]; ok {
			t.Errorf("annotations after release: %v", a)
		}
	}
	if code, out, _ := ndp(t, "release", "worker-3"); code != exitOK || out != "node worker-3 is not held\n" {
		t.Errorf("release again: exit %d %q", code, out)
	}
}

func TestHoldErrors(t *testing.T) {
	withFakeHoldCluster(t, "")
	for _, args := range [][]string{{"hold", "nope"}, {"release", "nope"}} {
		code, _, errOut := ndp(t, args...)
		if code != exitInvalid || !strings.Contains(errOut, `node "nope" not found`) {
			t.Errorf("%v: exit %d %q", args, code, errOut)
		}
	}
	if code, _, _ := ndp(t, "hold"); code != exitUsage {
		t.Errorf("hold without a node: exit %d, want %d", code, exitUsage)
	}
	// No user known, no --by: no hold-by.
	if code, out, _ := ndp(t, "hold", "worker-0"); code != exitOK || out != "node worker-0 held\n" {
		t.Errorf("hold without a user: exit %d %q", code, out)
	}
}

// ndp status shows the policies on a pool and the reasons of its
// RolloutHeld condition, one a line.
func TestStatusShowsRolloutHolds(t *testing.T) {
	policy := &v1alpha1.RolloutPolicy{ObjectMeta: metav1.ObjectMeta{Name: "workers"}, Spec: v1alpha1.RolloutPolicySpec{
		PoolSelector: metav1.LabelSelector{}, Windows: []v1alpha1.MaintenanceWindow{{Start: "02:00", End: "04:00"}}}}
	c := withFakeHoldCluster(t, "", policy)
	var pool mcfgv1.MachineConfigPool
	if err := c.Get(context.Background(), client.ObjectKey{Name: "worker"}, &pool); err != nil {
		t.Fatal(err)
	}
	pool.Status.Conditions = append(pool.Status.Conditions, mcfgv1.MachineConfigPoolCondition{Type: ndpmcv1.ConditionRolloutHeld, Status: corev1.ConditionTrue, Reason: "HoldWindow",
		Message: "waiting: outside the maintenance window, opens Sat 02:00 UTC for plans that reboot or drain (2 nodes); held: node worker-3 by annotation ndp.dev/hold: disk swap (by alice)"})
	if err := c.Update(context.Background(), &pool); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := ndp(t, "hold", "worker-3", "--reason", "disk swap", "--by", "alice"); code != exitOK {
		t.Fatal(errOut)
	}
	code, out, errOut := ndp(t, "status", "worker")
	want := `Plans:
  0f1e2d3c -> 6f3a1c9b: drain, Restart chronyd.service (3 nodes)
Rollout:
  policies: workers
  waiting: outside the maintenance window, opens Sat 02:00 UTC for plans that reboot or drain (2 nodes)
  held: node worker-3 by annotation ndp.dev/hold: disk swap (by alice)
Details:
`
	if code != exitOK || !strings.Contains(out, want) {
		t.Errorf("status: exit %d %s\n%s\nwant within:\n%s", code, errOut, out, want)
	}
	// The master pool is selected by the policy too, and holds nothing.
	code, out, _ = ndp(t, "status", "master", "-o", "json")
	if code != exitOK || !strings.Contains(out, `"rollout": {
        "policies": [
          "workers"
        ],
        "held": false,`) {
		t.Errorf("status master: exit %d\n%s", code, out)
	}
}

func TestRetry(t *testing.T) {
	c := withFakeHoldCluster(t, "kube-admin")
	if code, out, _ := ndp(t, "retry", "worker-3"); code != exitOK || out != "node worker-3 skipped no drain\n" {
		t.Errorf("retry of a node not skipped: exit %d %q", code, out)
	}
	if code, _, errOut := ndp(t, "hold", "worker-3"); code != exitOK {
		t.Fatal(errOut)
	}
	var n corev1.Node
	if err := c.Get(context.Background(), client.ObjectKey{Name: "worker-3"}, &n); err != nil {
		t.Fatal(err)
	}
	n.Annotations[v1alpha1.DrainSkippedAnnotation] = "rendered-worker-b"
	n.Annotations[v1alpha1.DrainSkippedReasonAnnotation] = "the drain timed out with 1 pods still to evict (web/db-0)"
	if err := c.Update(context.Background(), &n); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := ndp(t, "retry", "worker-3"); code != exitOK || out != "node worker-3 may go to rendered-worker-b again\n" {
		t.Errorf("retry: exit %d %q", code, out)
	}
	a := nodeAnnotations(t, c, "worker-3")
	for _, k := range []string{v1alpha1.DrainSkippedAnnotation, v1alpha1.DrainSkippedReasonAnnotation} {
		if _, ok := a[k]; ok {
			t.Errorf("%s still there: %v", k, a)
		}
	}
	if _, ok := a[v1alpha1.HoldAnnotation]; !ok {
		t.Errorf("retry removed the hold: %v", a)
	}
	if code, _, _ := ndp(t, "retry", "nope"); code == exitOK {
		t.Error("retry of an unknown node: exit 0")
	}
}
