//go:build scale

package scale

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/internal/testkit"
)

// scalePoolLabel is on every pool: the RolloutPolicy selects them all.
const scalePoolLabel = "ndp.dev/scale"

// prometheusOnce starts the Prometheus of the policy's alert gate, at
// the first "+ policy" change; prometheusURL is its address.
var (
	prometheusOnce sync.Once
	prometheusURL  string
)

// defaultChanges are the changes make scale runs: None, Restart and
// Reboot, then rounds of the RolloutPolicy's (policyChanges).
func defaultChanges(rounds int) string {
	keys := []string{"none", "restart", "reboot"}
	for round := 1; round <= rounds; round++ {
		suffix := ""
		if round > 1 {
			suffix = fmt.Sprintf("#%d", round)
		}
		for _, k := range []string{"restart+policy", "reboot+policy", "restart-again", "reboot-again"} {
			keys = append(keys, k+suffix)
		}
	}
	return strings.Join(keys, ",")
}

// policyChanges are round's changes that measure the RolloutPolicy's
// cost: Restart and Reboot with the policy ("+ policy"), then without it
// on a fresh controller ("again"), each a new generation of its change.
// One round's ratio moves by more than the 10 % target between runs on
// 2 shared cores (the same change without the policy, before and after,
// differs by up to 12 %), so policyCost compares the means of all rounds.
func (r *run) policyChanges(round int) map[string]change {
	key, label := "", ""
	if round > 1 {
		key, label = fmt.Sprintf("#%d", round), fmt.Sprintf(" (%d)", round)
	}
	named := func(c change) change { c.name += label; return c }
	return map[string]change{
		"restart+policy" + key: named(r.withRolloutPolicy(r.chronyChange(2 * round))),
		"reboot+policy" + key:  named(r.withRolloutPolicy(r.kernelArgumentChange(2 * round))),
		"restart-again" + key:  named(r.withoutRolloutPolicy(r.chronyChange(2*round + 1))),
		"reboot-again" + key:   named(r.withoutRolloutPolicy(r.kernelArgumentChange(2*round + 1))),
	}
}

// withRolloutPolicy is c with a RolloutPolicy on every pool: a window
// open all day for every plan, gates on a real Prometheus (Debian's, on
// loopback, no alert firing) and on blocking pods (on the node, none
// match), pacing that waits for drained pods. Everything is evaluated at
// every step of every pool; nothing holds. What it costs is the change's
// figures against c's own, measured in the same run. The policy (when the
// change before deleted it) and its Prometheus (once) are made before the
// change is measured: starting a Prometheus is not the policy's cost.
func (r *run) withRolloutPolicy(c change) change {
	c.name += " + policy"
	c.what += ", a RolloutPolicy on every pool (window, Prometheus alert gate, blocking-pods gate, drained-pods pacing)"
	c.prepare = func(ctx context.Context) { r.createRolloutPolicy(ctx) }
	return c
}

// withoutRolloutPolicy is c once more after the "+ policy" changes: the
// policy deleted and ndp-controller restarted (its pod cache, started by
// the policy, would outlive it). A "+ policy" change is compared with the
// mean of c before and after it, so that what drifts along the run (the
// API server's growing store) weighs on both sides.
func (r *run) withoutRolloutPolicy(c change) change {
	c.name += " again"
	c.what += ", the RolloutPolicy deleted, on a fresh ndp-controller"
	c.prepare = func(ctx context.Context) {
		p := &v1alpha1.RolloutPolicy{ObjectMeta: metav1.ObjectMeta{Name: "scale"}}
		if err := r.k8s.Delete(ctx, p); client.IgnoreNotFound(err) != nil {
			r.t.Fatal(err)
		}
		r.restartController()
	}
	return c
}

// createRolloutPolicy creates the policy, unless it exists, and waits
// until the controller accepted it.
func (r *run) createRolloutPolicy(ctx context.Context) {
	t := r.t
	prometheusOnce.Do(func() {
		bin := testkit.RequirePrometheusTool(t, "prometheus", "prometheus")
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte("global: {evaluation_interval: 5s}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		prometheusURL = fmt.Sprintf("http://127.0.0.1:%d", testkit.FreePort(t))
		testkit.StartServer(t, prometheusURL, bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
			"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+prometheusURL[len("http://"):])
	})
	url := prometheusURL
	p := &v1alpha1.RolloutPolicy{ObjectMeta: metav1.ObjectMeta{Name: "scale"}, Spec: v1alpha1.RolloutPolicySpec{
		PoolSelector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: scalePoolLabel, Operator: metav1.LabelSelectorOpExists}}},
		Windows:      []v1alpha1.MaintenanceWindow{{Name: "always", Start: "00:00", End: "24:00", Holds: []v1alpha1.PlanKind{v1alpha1.PlanAll}}},
		Gates: &v1alpha1.RolloutGates{
			Prometheus:   &v1alpha1.PrometheusGate{URL: url, Alerts: &v1alpha1.AlertSelector{Names: []string{"NodeDown"}}},
			BlockingPods: &v1alpha1.BlockingPodsGate{Selector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "scale-blocker"}}, Scope: v1alpha1.BlockingPodsNode},
		},
		Pacing: &v1alpha1.RolloutPacing{WaitForDrainedPodsReady: true},
	}}
	if err := r.k8s.Create(ctx, p); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the RolloutPolicy accepted", func() (bool, string) {
		var got v1alpha1.RolloutPolicy
		if err := r.k8s.Get(ctx, client.ObjectKeyFromObject(p), &got); err != nil {
			return false, err.Error()
		}
		return got.Status.ObservedGeneration == got.Generation && meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.RolloutPolicyAccepted),
			fmt.Sprintf("status %+v", got.Status)
	}, testkit.Within(time.Minute))
	t.Logf("scale: RolloutPolicy %s on every pool, its Prometheus at %s", p.Name, url)
}
