package node

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/internal/testkit/builder"
)

// pluginDir holds kubectl-ndp, built once for the tests that run it.
var (
	pluginOnce sync.Once
	pluginDir  string
)

// kubectlNdp runs `kubectl ndp ARGS` (the real kubectl and this tree's
// plugin) against the test's API server.
func kubectlNdp(t *testing.T, args ...string) (string, error) {
	t.Helper()
	pluginOnce.Do(func() {
		d, err := os.MkdirTemp("", "ndp-plugin-")
		if err != nil {
			t.Fatal(err)
		}
		afterTests = append(afterTests, func() int { _ = os.RemoveAll(d); return 0 })
		if out, err := exec.Command("go", "build", "-o", d+"/kubectl-ndp", "github.com/ndp-dev/ndp/cmd/ndp").CombinedOutput(); err != nil {
			t.Fatalf("go build ./cmd/ndp: %v\n%s", err, out)
		}
		pluginDir = d
	})
	cmd := exec.Command(kubectlBin, append([]string{"ndp"}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "PATH="+pluginDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// labelPool gives the rollout's pool a label a RolloutPolicy selects.
func (r *rollout) labelPool() map[string]string {
	r.t.Helper()
	l := map[string]string{"test.ndp.dev/rollout": r.pool}
	patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"labels":{"test.ndp.dev/rollout":%q}}}`, r.pool)))
	if err := k8s.Patch(context.Background(), r.mcp(), patch); err != nil {
		r.t.Fatal(err)
	}
	return l
}

// waitHeld waits for the pool's RolloutHeld condition to hold with a
// message that contains each of want.
func (r *rollout) waitHeld(want ...string) mcfgv1.MachineConfigPoolCondition {
	r.t.Helper()
	var c mcfgv1.MachineConfigPoolCondition
	testkit.Eventually(r.t, "the pool's RolloutHeld condition", func() (bool, string) {
		c = r.poolCondition(ndpmcv1.ConditionRolloutHeld)
		ok := c.Status == corev1.ConditionTrue
		for _, w := range want {
			ok = ok && strings.Contains(c.Message, w)
		}
		return ok, fmt.Sprintf("RolloutHeld %+v, want %q", c, want)
	}, testkit.Within(time.Minute))
	return c
}

// A window that holds plans that reboot or drain: a chrony change,
// planned as a restart, goes at once; a change that reboots waits, and
// the pool, the policy's status and the metrics say why and until when.
func TestRolloutPolicyWindowHoldsTheRebootNotTheRestart(t *testing.T) {
	r := newRollout(t, "roll-window", 2, intstr.FromInt(1))
	a := r.target()
	// A window two days from now (UTC): closed now, whatever the time.
	day := time.Now().UTC().Add(48 * time.Hour).Format("Mon")
	pol := &v1alpha1.RolloutPolicy{ObjectMeta: metav1.ObjectMeta{Name: "roll-window"}, Spec: v1alpha1.RolloutPolicySpec{
		PoolSelector: metav1.LabelSelector{MatchLabels: r.labelPool()},
		Windows:      []v1alpha1.MaintenanceWindow{{Name: "night", Days: []v1alpha1.Weekday{v1alpha1.Weekday(day)}, Start: "02:00", End: "04:00", TimeZone: "UTC"}},
	}}
	if err := k8s.Create(context.Background(), pol); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), pol) })

	// The restart goes at once, through the policy.
	r.changeChrony("pool 1.example.com\n")
	b := r.newTarget(a)
	r.waitDone(b, 3*time.Minute)

	// A file no NodeDisruptionPolicy claims: the plan reboots. It waits.
	motd := builder.MachineConfig("60-roll-window-motd").WithFileMap(map[string]string{"/etc/motd": "hello\n"}, 0o644).Build()
	motd.Labels = map[string]string{ndpmcv1.RoleLabel: r.pool}
	if err := k8s.Create(context.Background(), motd); err != nil {
		t.Fatal(err)
	}
	c := r.newTarget(b)
	cond := r.waitHeld("waiting: outside the maintenance window, opens "+day+" 02:00 UTC for plans that reboot", "(2 nodes)")
	r.waitDecided()
	if sent := r.sentTo(c); len(sent) != 0 {
		t.Fatalf("nodes sent outside the window to a plan that reboots: %v (RolloutHeld: %s)", sent, cond.Message)
	}
	testkit.Eventually(t, "the policy's status", func() (bool, string) {
		var p v1alpha1.RolloutPolicy
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(pol), &p); err != nil {
			return false, err.Error()
		}
		st := p.Status
		ok := st.ObservedGeneration == p.Generation && meta.IsStatusConditionTrue(st.Conditions, v1alpha1.RolloutPolicyAccepted) &&
			meta.IsStatusConditionTrue(st.Conditions, v1alpha1.RolloutPolicyHolding) && len(st.Pools) == 1 && st.Pools[0].Holding &&
			st.Pools[0].NextStart != nil && len(st.Pools[0].Reasons) == 1 && strings.HasPrefix(st.Pools[0].Reasons[0], "waiting: outside the maintenance window")
		return ok, fmt.Sprintf("status %+v", st)
	}, testkit.Within(time.Minute))
	if v := metricValue(scrape(t, controllerMetricsPort), fmt.Sprintf(`ndp_rollout_held{pool=%q,reason_kind="Window"}`, r.pool)); v != 2 {
		t.Errorf("ndp_rollout_held Window: %d, want 2", v)
	}

	// Taken back: the pool returns to b, which every node runs; nothing is
	// held any more.
	if err := k8s.Delete(context.Background(), motd); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the hold released", func() (bool, string) {
		c := r.poolCondition(ndpmcv1.ConditionRolloutHeld)
		return r.mcp().Spec.Configuration.Name == b && c.Status == corev1.ConditionFalse, fmt.Sprintf("target %s, RolloutHeld %+v", r.mcp().Spec.Configuration.Name, c)
	}, testkit.Within(time.Minute))
	for _, h := range r.hosts {
		if h.reboots() != 0 {
			t.Errorf("%s rebooted", h.name)
		}
	}
}

// A node held with `kubectl ndp hold` is skipped: the others go, one at a
// time (maxUnavailable 1), the pool and `kubectl ndp status` name the
// held node; released, it goes too.
func TestRolloutSkipsAHeldNode(t *testing.T) {
	r := newRollout(t, "roll-hold", 3, intstr.FromInt(1))
	a := r.target()
	held := r.hosts[0] // the oldest: it would go first
	out, err := kubectlNdp(t, "hold", held.name, "--reason", "disk swap", "--by", "alice")
	if err != nil || out != "node "+held.name+" held: disk swap (by alice)\n" {
		t.Fatalf("kubectl ndp hold: %v\n%s", err, out)
	}
	if out, err := kubectlNdp(t, "hold", "roll-hold-nope"); err == nil || !strings.Contains(out, `node "roll-hold-nope" not found`) {
		t.Errorf("kubectl ndp hold of an unknown node: %v\n%s", err, out)
	}
	u := watchUnavailable(t, r.pool)
	r.changeChrony("pool 1.example.com\n")
	b := r.newTarget(a)
	testkit.Eventually(t, "the other nodes done", func() (bool, string) {
		var on []string
		for _, h := range r.hosts[1:] {
			n := h.node()
			if n.Annotations[ndpmcv1.CurrentConfigAnnotation] == b && n.Annotations[ndpmcv1.StateAnnotation] == ndpmcv1.StateDone {
				on = append(on, h.name)
			}
		}
		return len(on) == 2, fmt.Sprintf("done on %s: %v", b, on)
	}, testkit.Within(3*time.Minute))
	want := "held: node " + held.name + " by annotation ndp.dev/hold: disk swap (by alice)"
	r.waitHeld(want)
	r.waitDecided()
	if sent := r.sentTo(b); len(sent) != 2 {
		t.Fatalf("sent to %s: %v; the held node must not be", b, sent)
	}
	out, err = kubectlNdp(t, "status", r.pool)
	if err != nil || !strings.Contains(out, "Rollout:\n  policies: none\n  "+want+"\n") || !strings.Contains(out, "  held: disk swap\n") {
		t.Errorf("kubectl ndp status: %v\n%s", err, out)
	}

	if out, err := kubectlNdp(t, "release", held.name); err != nil || out != "node "+held.name+" released\n" {
		t.Fatalf("kubectl ndp release: %v\n%s", err, out)
	}
	r.waitDone(b, 3*time.Minute)
	if p, who := u.peak(); p != 1 {
		t.Errorf("maxUnavailable 1: at most %d nodes were out at once (%s), want exactly 1", p, who)
	}
	testkit.Eventually(t, "the hold released", func() (bool, string) {
		c := r.poolCondition(ndpmcv1.ConditionRolloutHeld)
		return c.Status == corev1.ConditionFalse, fmt.Sprintf("RolloutHeld %+v", c)
	}, testkit.Within(time.Minute))
}
