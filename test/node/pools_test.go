package node

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/internal/testkit"
)

const roleLabel = "node-role.kubernetes.io/"

// desiredLog records, from one watch over the cluster's nodes, every
// desiredConfig each node was sent to, in order.
type desiredLog struct {
	mu   sync.Mutex
	sent map[string][]string
}

func watchDesired(t *testing.T) *desiredLog {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	d := &desiredLog{sent: map[string][]string{}}
	w, err := k8s.Watch(ctx, &corev1.NodeList{})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for ev := range w.ResultChan() {
			n, ok := ev.Object.(*corev1.Node)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			desired := n.Annotations[ndpmcv1.DesiredConfigAnnotation]
			d.mu.Lock()
			if s := d.sent[n.Name]; desired != "" && (len(s) == 0 || s[len(s)-1] != desired) {
				d.sent[n.Name] = append(s, desired)
			}
			d.mu.Unlock()
		}
	}()
	return d
}

func (d *desiredLog) of(node string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.sent[node]...)
}

// A compact cluster: two nodes labelled master and worker, a worker that
// is also infra, a plain worker, and the pools master, worker and infra
// (which renders the worker configs and its own, as the MCO's custom pools
// do). Each node is counted by exactly one pool (master wins over worker, a
// custom pool over worker: nodepool.Primary), is only ever sent to that
// pool's targets, and a change of the workers' config moves the worker and
// the infra node (chronyd restarted once each) and never the masters.
func TestCompactClusterCountsEachNodeInOnePool(t *testing.T) {
	ensureChronyPolicy(t)
	ctx := context.Background()
	sent := watchDesired(t)
	for _, p := range []*mcfgv1.MachineConfigPool{
		{ObjectMeta: metav1.ObjectMeta{Name: "master"}, Spec: mcfgv1.MachineConfigPoolSpec{
			MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{ndpmcv1.RoleLabel: "master"}},
			NodeSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{roleLabel + "master": ""}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "worker"}, Spec: mcfgv1.MachineConfigPoolSpec{
			MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{ndpmcv1.RoleLabel: "worker"}},
			NodeSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{roleLabel + "worker": ""}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "infra"}, Spec: mcfgv1.MachineConfigPoolSpec{
			MachineConfigSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: ndpmcv1.RoleLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{"worker", "infra"}}}},
			NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{roleLabel + "infra": ""}}}},
	} {
		if err := k8s.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), p) })
	}
	for _, mc := range []*ndpmcv1.MachineConfig{chronyMC("master", "pool m.example.com\n"), chronyMC("worker", "pool w0.example.com\n")} {
		if err := k8s.Create(ctx, mc); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), mc) })
	}
	// Each pool's first target has its chrony config (infra inherits the
	// workers') and the registries controller's MachineConfig
	// 99-<pool>-generated-registries (infra selects the worker role's too):
	// the pool may render once before both exist.
	targets := map[string]string{}
	for _, pool := range []string{"master", "worker", "infra"} {
		testkit.Eventually(t, "pool "+pool+"'s first target", func() (bool, string) {
			var p mcfgv1.MachineConfigPool
			if err := k8s.Get(ctx, client.ObjectKey{Name: pool}, &p); err != nil {
				return false, err.Error()
			}
			targets[pool] = p.Spec.Configuration.Name
			var srcs []string
			for _, s := range p.Spec.Configuration.Source {
				srcs = append(srcs, s.Name)
			}
			chrony := "50-" + pool + "-chrony"
			if pool == "infra" {
				chrony = "50-worker-chrony"
			}
			return slices.Contains(srcs, "99-"+pool+"-generated-registries") && slices.Contains(srcs, chrony),
				fmt.Sprintf("pool %s renders %s from %v", pool, p.Spec.Configuration.Name, srcs)
		})
	}
	primary := map[string]string{"cm-0": "master", "cm-1": "master", "ci-0": "infra", "cw-0": "worker"}
	roles := map[string][]string{"cm-0": {"master", "worker"}, "cm-1": {"master", "worker"}, "ci-0": {"worker", "infra"}, "cw-0": {"worker"}}
	chrony := map[string]string{"master": "pool m.example.com\n", "worker": "pool w0.example.com\n", "infra": "pool w0.example.com\n"}
	var hosts []*host
	for _, name := range []string{"cm-0", "cm-1", "ci-0", "cw-0"} {
		labels := map[string]string{corev1.LabelTopologyZone: "zone-a"}
		for _, r := range roles[name] {
			labels[roleLabel+r] = ""
		}
		h := newHostWithLabels(t, name, labels)
		h.writeFile("/etc/chrony.conf", chrony[primary[name]])
		h.traceUnit("chronyd.service", "")
		h.traceUnit("crio.service", "")
		h.setReady(true)
		h.start()
		hosts = append(hosts, h)
	}
	waitAt := func(what string, want map[string]string) {
		t.Helper()
		testkit.Eventually(t, what, func() (bool, string) {
			var not []string
			for _, h := range hosts {
				a := h.node().Annotations
				if a[ndpmcv1.CurrentConfigAnnotation] != want[primary[h.name]] || a[ndpmcv1.StateAnnotation] != ndpmcv1.StateDone {
					not = append(not, fmt.Sprintf("%s (%s, %s %s)", h.name, a[ndpmcv1.CurrentConfigAnnotation], a[ndpmcv1.StateAnnotation], a[ndpmcv1.ReasonAnnotation]))
				}
			}
			return len(not) == 0, "not yet at their pool's target: " + strings.Join(not, ", ")
		}, testkit.Within(3*time.Minute))
	}
	counted := func(want map[string]int32) {
		t.Helper()
		testkit.Eventually(t, "each node counted by exactly one pool", func() (bool, string) {
			got := map[string]int32{}
			for pool := range want {
				var p mcfgv1.MachineConfigPool
				if err := k8s.Get(ctx, client.ObjectKey{Name: pool}, &p); err != nil {
					return false, err.Error()
				}
				s := p.Status
				if s.MachineCount != s.UpdatedMachineCount || s.MachineCount != s.ReadyMachineCount {
					return false, fmt.Sprintf("pool %s: %+v", pool, s)
				}
				got[pool] = s.MachineCount
			}
			return fmt.Sprint(got) == fmt.Sprint(want), fmt.Sprintf("machine counts %v, want %v", got, want)
		}, testkit.Within(time.Minute))
	}
	waitAt("every node at its own pool's first target", targets)
	counted(map[string]int32{"master": 2, "worker": 1, "infra": 1})

	starts := map[string]int{}
	for _, h := range hosts {
		starts[h.name], _ = h.runs("chronyd.service")
	}
	// The workers' chrony config changes: the worker and infra pools
	// render new targets, the master pool keeps its own (its masters are
	// workers too, but the worker configs are not theirs).
	var mc ndpmcv1.MachineConfig
	if err := k8s.Get(ctx, client.ObjectKey{Name: "50-worker-chrony"}, &mc); err != nil {
		t.Fatal(err)
	}
	mc.Spec = chronyMC("worker", "pool w1.example.com\n").Spec
	if err := k8s.Update(ctx, &mc); err != nil {
		t.Fatal(err)
	}
	next := map[string]string{"master": targets["master"]}
	for _, pool := range []string{"worker", "infra"} {
		testkit.Eventually(t, "pool "+pool+"'s new target", func() (bool, string) {
			var p mcfgv1.MachineConfigPool
			if err := k8s.Get(ctx, client.ObjectKey{Name: pool}, &p); err != nil {
				return false, err.Error()
			}
			next[pool] = p.Spec.Configuration.Name
			return next[pool] != targets[pool], "pool " + pool + " still targets " + targets[pool]
		})
	}
	waitAt("the worker and the infra node at their pool's new target", next)
	counted(map[string]int32{"master": 2, "worker": 1, "infra": 1})

	for _, h := range hosts {
		pool := primary[h.name]
		// Every config the node was ever sent to is one of its own
		// pool's: it never flips to another pool's target.
		seen := sent.of(h.name)
		want := []string{targets[pool]}
		if next[pool] != targets[pool] {
			want = append(want, next[pool])
		}
		if fmt.Sprint(seen) != fmt.Sprint(want) {
			t.Errorf("%s (pool %s) was sent to %v, want %v", h.name, pool, seen, want)
		}
		s, _ := h.runs("chronyd.service")
		restarts := 0
		if pool != "master" {
			restarts = 1
		}
		if s-starts[h.name] != restarts {
			t.Errorf("%s (pool %s): chronyd started %d times, want %d", h.name, pool, s-starts[h.name], restarts)
		}
		if got := h.readFile("/etc/chrony.conf"); pool != "master" && got != "pool w1.example.com\n" || pool == "master" && got != "pool m.example.com\n" {
			t.Errorf("%s (pool %s): /etc/chrony.conf %q", h.name, pool, got)
		}
	}
	var names []string
	for n := range primary {
		names = append(names, n)
	}
	sort.Strings(names)
	t.Logf("nodes %v: each counted once, sent only to its pool's targets %v then %v", names, targets, next)
}
