package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/internal/testkit"
)

// A server dry-run tells when the change would start under the pool's
// RolloutPolicy: a plan that reboots waits for the window, one that the
// window does not hold starts now.
func TestDryRunSaysWhenTheChangeWouldStart(t *testing.T) {
	previewPool(t, "preview-window", 2)
	pool := machineConfigPool("preview-window")
	if err := k8s.Patch(context.Background(), pool, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"test.ndp.dev/window":"yes"}}}`))); err != nil {
		t.Fatal(err)
	}
	// A window two days from now (UTC): closed now, whatever the time.
	day := time.Now().UTC().Add(48 * time.Hour).Format("Mon")
	pol := &v1alpha1.RolloutPolicy{ObjectMeta: metav1.ObjectMeta{Name: "preview-window"}, Spec: v1alpha1.RolloutPolicySpec{
		PoolSelector: metav1.LabelSelector{MatchLabels: map[string]string{"test.ndp.dev/window": "yes"}},
		Windows:      []v1alpha1.MaintenanceWindow{{Days: []v1alpha1.Weekday{v1alpha1.Weekday(day)}, Start: "02:00", End: "04:00", TimeZone: "UTC"}},
	}}
	create(t, pol)
	mc := strings.ReplaceAll(strings.ReplaceAll(chronyMC, "role: preview}", "role: preview-window}"), "50-preview-chrony", "50-preview-window-chrony")

	// Unclaimed, chrony.conf reboots: it waits.
	want := "Warning: pool preview-window, 2 nodes: Reboot, drains 2 nodes, reboots 2 nodes (unclaimed: file /etc/chrony.conf: added); would wait: outside the maintenance window, opens " + day + " 02:00 UTC for plans that reboot or drain"
	// The webhook's cache sees the policy a moment after it is created.
	testkit.Eventually(t, "the dry-run says the change waits", func() (bool, string) {
		out, err := kubectlFile(t, mc, "apply", "--dry-run=server")
		return err == nil && strings.Contains(out, want), fmt.Sprintf("printed (%v):\n%s\nwant %q", err, out, want)
	}, testkit.Within(time.Minute))

	// A window that holds only restarts lets the reboot start now.
	if err := k8s.Patch(context.Background(), pol, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"windows":[{"days":["`+day+`"],"start":"02:00","end":"04:00","holds":["Restart"]}]}}`))); err != nil {
		t.Fatal(err)
	}
	want = "(unclaimed: file /etc/chrony.conf: added); would start: now"
	testkit.Eventually(t, "the dry-run says the change starts now", func() (bool, string) {
		out, err := kubectlFile(t, mc, "apply", "--dry-run=server")
		return err == nil && strings.Contains(out, want), fmt.Sprintf("printed (%v):\n%s\nwant %q", err, out, want)
	}, testkit.Within(time.Minute))
}
