//go:build scale

package scale

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
// Reboot, then rounds of the RolloutPolicy's (policyChanges), in the order
// with, without, without, with, ... so that what drifts along the run
// weighs on both sides.
func defaultChanges(rounds int) string {
	keys := []string{"none", "restart", "reboot"}
	with, without := []string{"restart+policy", "reboot+policy", "reboot+pacing"}, []string{"restart-again", "reboot-again"}
	for round := 1; round <= rounds; round++ {
		suffix := ""
		if round > 1 {
			suffix = fmt.Sprintf("#%d", round)
		}
		order := append(slices.Clone(with), without...)
		if round%2 == 0 {
			order = append(slices.Clone(without), with...)
		}
		for _, k := range order {
			keys = append(keys, k+suffix)
		}
	}
	return strings.Join(keys, ",")
}

// policyChanges are round's changes that measure the RolloutPolicy's
// cost: Restart and Reboot with the policy that gates every pool ("+
// policy": its window and gates), Reboot with the same policy also
// waiting for drained pods ("+ pacing"), and both without a policy
// ("again"), each a new generation of its change, each on a fresh
// ndp-controller. A process's CPU for the same change grows with the
// changes it has seen (the first Restart, on the process that ran None,
// cost more than the "again" ones in every run): so no side runs on an
// older process than the other. One round's ratio still moves by more
// than the 10 % target between runs on 2 shared cores, so policyCost
// compares the means of all rounds' runs.
func (r *run) policyChanges(round int) map[string]change {
	key, label := "", ""
	if round > 1 {
		key, label = fmt.Sprintf("#%d", round), fmt.Sprintf(" (%d)", round)
	}
	named := func(c change) change { c.name += label; return c }
	return map[string]change{
		"restart+policy" + key: named(r.withRolloutPolicy(r.chronyChange(2*round), false)),
		"reboot+policy" + key:  named(r.withRolloutPolicy(r.kernelArgumentChange(2*round), false)),
		"reboot+pacing" + key:  named(r.withRolloutPolicy(r.kernelArgumentChange(100+round), true)),
		"restart-again" + key:  named(r.withoutRolloutPolicy(r.chronyChange(2*round + 1))),
		"reboot-again" + key:   named(r.withoutRolloutPolicy(r.kernelArgumentChange(2*round + 1))),
	}
}

// withRolloutPolicy is c with a RolloutPolicy on every pool: a window
// open all day for every plan, gates on a real Prometheus (Debian's, on
// loopback, no alert firing) and on blocking pods (on the node, none
// match), and with pacing, waiting for drained pods too. Everything is
// evaluated at every step of every pool; nothing holds. What it costs is
// the change's figures against c's own, measured in the same run, each on
// a fresh ndp-controller. The policy and its Prometheus (once) are made
// before the change is measured: starting a Prometheus is not the
// policy's cost.
func (r *run) withRolloutPolicy(c change, pacing bool) change {
	suffix, parts := " + policy", "window, Prometheus alert gate, blocking-pods gate"
	if pacing {
		suffix, parts = " + pacing", parts+", drained-pods pacing"
	}
	c.name += suffix
	c.what += ", a RolloutPolicy on every pool (" + parts + "), on a fresh ndp-controller"
	c.prepare = func(ctx context.Context) {
		r.restartController()
		r.applyRolloutPolicy(ctx, pacing)
	}
	return c
}

// withoutRolloutPolicy is c once more beside the "+ policy" changes: the
// policy deleted, on a fresh ndp-controller (as they run).
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

// applyRolloutPolicy creates the policy, or sets its spec, and waits until
// the controller accepted it.
func (r *run) applyRolloutPolicy(ctx context.Context, pacing bool) {
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
	}}
	if pacing {
		p.Spec.Pacing = &v1alpha1.RolloutPacing{WaitForDrainedPodsReady: true}
	}
	var cur v1alpha1.RolloutPolicy
	switch err := r.k8s.Get(ctx, client.ObjectKeyFromObject(p), &cur); {
	case apierrors.IsNotFound(err):
		if err := r.k8s.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	case err != nil:
		t.Fatal(err)
	default:
		cur.Spec = p.Spec
		if err := r.k8s.Update(ctx, &cur); err != nil {
			t.Fatal(err)
		}
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
