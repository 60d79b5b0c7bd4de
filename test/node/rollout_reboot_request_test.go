package node

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/internal/testkit"
)

// Nodes whose hosts ask for a reboot (/var/run/reboot-required, as a
// package's postinst writes it) go through their pool's rollout: held
// while the window for plans that reboot is closed, then, once it is open,
// drained and rebooted one at a time (maxUnavailable 1); the node that
// asked nothing is left alone, and `kubectl ndp why` names the package.
func TestRolloutRebootsTheNodesThatAsk(t *testing.T) {
	r := newRollout(t, "roll-ask", 3, intstr.FromInt(1))
	superviseHosts(t, r.hosts)
	u := watchUnavailable(t, r.pool)
	pol, day := r.closedWindowPolicy("roll-ask")

	quiet, asking := r.hosts[0], r.hosts[1:]
	for _, h := range asking {
		h.writeFile("/run/reboot-required", "*** System restart required ***\n")
		h.writeFile("/run/reboot-required.pkgs", "linux-image-6.1.0-18-amd64\nlinux-image-6.1.0-18-amd64\n")
	}
	const by = "/var/run/reboot-required (linux-image-6.1.0-18-amd64)"
	for _, h := range asking {
		testkit.Eventually(t, h.name+"'s request reported", func() (bool, string) {
			a := h.node().Annotations
			return a[v1alpha1.RebootRequiredAnnotation] != "" && a[v1alpha1.RebootRequiredByAnnotation] == by, fmt.Sprintf("%v", a)
		}, testkit.Within(time.Minute))
	}
	r.waitHeld("waiting: outside the maintenance window, opens "+day+" 02:00 UTC for plans that reboot", "(2 nodes)")
	r.waitDecided()
	for _, h := range r.hosts {
		if h.reboots() != 0 {
			t.Fatalf("%s rebooted while the window is closed", h.name)
		}
		if _, ok := h.node().Annotations[v1alpha1.RebootGrantAnnotation]; ok {
			t.Fatalf("%s granted a reboot while the window is closed", h.name)
		}
	}

	// The window opens: it began an hour ago and ends in two.
	from, to := time.Now().UTC().Add(-time.Hour), time.Now().UTC().Add(2*time.Hour)
	patch := fmt.Sprintf(`{"spec":{"windows":[{"name":"now","days":[%q],"start":%q,"end":%q,"timeZone":"UTC"}]}}`, from.Format("Mon"), from.Format("15:04"), to.Format("15:04"))
	if err := k8s.Patch(context.Background(), pol, client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the asking nodes rebooted and done", func() (bool, string) {
		var not []string
		for _, h := range asking {
			a := h.node().Annotations
			_, granted := a[v1alpha1.RebootGrantAnnotation]
			if h.reboots() != 1 || granted || a[v1alpha1.RebootRequiredAnnotation] != "" || a[ndpmcv1.StateAnnotation] != ndpmcv1.StateDone {
				not = append(not, fmt.Sprintf("%s (%d reboots, %v)", h.name, h.reboots(), a))
			}
		}
		return len(not) == 0, strings.Join(not, "; ")
	}, testkit.Within(3*time.Minute))
	if quiet.reboots() != 0 {
		t.Errorf("%s rebooted, though its host asked nothing", quiet.name)
	}
	if p, who := u.peak(); p != 1 {
		t.Errorf("maxUnavailable 1: at most %d nodes were out at once (%s), want exactly 1", p, who)
	}
	out, err := kubectlNdp(t, "why", asking[0].name)
	if err != nil || !strings.Contains(out, "reboot requested by the node: "+by) {
		t.Errorf("kubectl ndp why %s: %v\n%s", asking[0].name, err, out)
	}
}
