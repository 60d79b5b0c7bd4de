package node

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/internal/testkit/builder"
	"github.com/ndp-dev/ndp/osupdate"
)

// A new apt snapshot source (a MachineConfig writing
// /etc/apt/sources.list.d/) is planned by the default policy as a package
// update whose plan holds both of the host's answers. Two hosts answer
// "restart ndp-demo.service" (needrestart): the service restarted once,
// never cordoned, no reboot. The third answers "reboot, asked for by
// ndp-demo-kernel": cordoned, drained, rebooted once, uncordoned; its
// history and `kubectl ndp why` name the package.
func TestRolloutPackageUpdateFollowsTheHostsAnswer(t *testing.T) {
	r := newRollout(t, "roll-apt", 3, intstr.FromInt(1))
	superviseHosts(t, r.hosts)
	u := watchUnavailable(t, r.pool)
	restartOnly, rebooting := r.hosts[:2], r.hosts[2]
	answer := func(h *host, o osupdate.Outcome) {
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(h.dir, "package-updates.answer"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	svc := []osupdate.PackageChange{{Name: "ndp-demo", From: "1.0", To: "2.0"}}
	for _, h := range restartOnly {
		h.traceUnit("ndp-demo.service", "")
		answer(h, osupdate.Outcome{Changes: svc, Restart: []string{"ndp-demo.service"}})
	}
	answer(rebooting, osupdate.Outcome{Changes: []osupdate.PackageChange{{Name: "ndp-demo-kernel", From: "1.0", To: "2.0"}}, Reboot: true, RequestedBy: []string{"ndp-demo-kernel"}})
	before := map[string]int{}
	for _, h := range restartOnly {
		before[h.name], _ = h.runs("ndp-demo.service")
	}

	old := r.target()
	mc := builder.MachineConfig("60-"+r.pool+"-apt").WithFileMap(map[string]string{
		"/etc/apt/sources.list.d/ndp-demo.list": "deb [trusted=yes] file:/var/lib/ndp-demo/snapshot-2 ./\n"}, 0o644).Build()
	mc.Labels = map[string]string{ndpmcv1.RoleLabel: r.pool}
	createMC(t, mc)
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), mc) })
	target := r.newTarget(old)
	r.waitDone(target, 3*time.Minute)

	plan := r.hosts[0].journal().Plan
	if got := fmt.Sprintf("%v drain=%t reboot=%t", plan.Actions, plan.Drain, plan.Reboot); got != "[PackageUpdate] drain=false reboot=false" {
		t.Errorf("the plan: %s, want [PackageUpdate] without drain or reboot of its own", got)
	}
	for _, h := range restartOnly {
		starts, _ := h.runs("ndp-demo.service")
		cordoned := h.journal().CordonedByDaemon()
		if starts-before[h.name] != 1 || h.reboots() != 0 || cordoned {
			t.Errorf("%s: ndp-demo.service started %d time(s), %d reboots, cordoned %t; want 1, 0, false", h.name, starts-before[h.name], h.reboots(), cordoned)
		}
	}
	if n := rebooting.reboots(); n != 1 {
		t.Errorf("%s rebooted %d times, want once", rebooting.name, n)
	}
	if j := rebooting.journal(); !j.CordonedByDaemon() {
		t.Errorf("%s rebooted without being cordoned first", rebooting.name)
	}
	if p, who := u.peak(); p != 1 {
		t.Errorf("maxUnavailable 1: at most %d nodes were out at once (%s), want 1 (the rebooting node)", p, who)
	}
	testkit.Eventually(t, "kubectl ndp why names the package", func() (bool, string) {
		out, err := kubectlNdp(t, "why", rebooting.name)
		return err == nil && strings.Contains(out, "a reboot asked for by ndp-demo-kernel") && strings.Contains(out, "ndp-demo-kernel 1.0 -> 2.0"), out
	})
	out, _ := kubectlNdp(t, "why", restartOnly[0].name)
	if !strings.Contains(out, "restarted ndp-demo.service (needrestart)") {
		t.Errorf("kubectl ndp why %s does not say what was restarted:\n%s", restartOnly[0].name, out)
	}
}
