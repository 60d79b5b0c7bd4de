package framework

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ndp-dev/ndp/internal/testkit"
)

// TestWatchWorkersSeesEveryState: the watch behind WatchWorkers sees a
// cordon undone before any poll could have seen it, on a real API server
// through the real kubectl (a watch's jsonpath output once went through
// kubectl's tabwriter, and the e2e budget checks saw nothing).
func TestWatchWorkersSeesEveryState(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: kubectl runs through nsenter, as in the cluster")
	}
	cp := testkit.NewControlPlane(t, testkit.ControlPlaneOptions{Root: "../..", Binaries: []string{"kubectl"}, NoCRDs: true, Kubeconfig: true})
	// The cluster's network namespace: here, this process's own.
	dir := t.TempDir()
	netns := filepath.Join(dir, "run", "netns")
	if err := os.MkdirAll(filepath.Dir(netns), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(netns, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "--bind", "/proc/self/ns/net", netns).CombinedOutput(); err != nil {
		t.Fatalf("mount --bind: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", netns).Run() })
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{Root: root, s: &stack{work: dir, admin: cp.Kubeconfig}} // kubectl: bin/, as make cluster's

	ctx := context.Background()
	worker := func(name string) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"node-role.kubernetes.io/worker": ""},
			Annotations: map[string]string{"machineconfiguration.openshift.io/currentConfig": "a", "machineconfiguration.openshift.io/desiredConfig": "a"}}}
		if err := cp.Client.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
		if err := cp.Client.Status().Update(ctx, n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	w1, _ := worker("w1"), worker("w2")
	w := c.watchWorkers(ctx)
	defer w.stop()
	testkit.Eventually(t, "the watch lists the workers", func() (bool, string) {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.rows) == 2, fmt.Sprintf("rows: %q", w.rows)
	})
	if s := w.seen(); s.MaxOut != 0 || s.MaxCordoned != 0 {
		t.Fatalf("two Ready workers on their config, seen %+v", s)
	}
	// Cordoned and uncordoned at once: no sample in between.
	for _, cordon := range []bool{true, false} {
		patch := client.MergeFrom(w1.DeepCopy())
		w1.Spec.Unschedulable = cordon
		if err := cp.Client.Patch(ctx, w1, patch); err != nil {
			t.Fatal(err)
		}
	}
	testkit.Eventually(t, "the watch saw w1 cordoned", func() (bool, string) {
		s := w.seen()
		return s.MaxCordoned == 1 && s.MaxOut == 1 && s.Out == "w1", fmt.Sprintf("seen: %+v", s)
	})
	if s := w.stop(); s.MinReady != -1 {
		t.Errorf("no Deployment web, but seen MinReady %d", s.MinReady)
	}
}
