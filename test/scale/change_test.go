//go:build scale

package scale

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/daemon"
	"github.com/ndp-dev/ndp/internal/testkit"
)

// change is one change rolled out to every pool at once.
type change struct {
	name, what string
	// prepare, if set, runs before the change is measured (what the
	// change is compared with other changes under, not its cost).
	prepare func(ctx context.Context)
	apply   func(ctx context.Context, pool string) error
	verify  func(n *simNode, before nodeBefore) error
}

// snapshot is every counter the figures are differences of.
type snapshot struct {
	at                       time.Time
	api                      float64 // apiserver_request_total
	apiBy                    map[string]float64
	ctrlRequests             float64 // the controller's rest_client_requests_total
	ctrlCPU, ctrlRSS         float64 // its process_cpu_seconds_total, process_resident_memory_bytes
	ctrl, apiserver, etcd    procStat
	self                     procStat
	daemons, harness         int64
	daemonsBy                map[string]int64
	daemonLatency            time.Duration
	daemonTimed              int64
	ctrlReconciles           map[string]float64
	ctrlWorkqueueAdds        map[string]float64
	ctrlReconcileTime        map[string]float64
	ctrlRateLimiterWaitTotal float64
}

func (r *run) snapshot() snapshot {
	t := r.t
	s := snapshot{at: time.Now()}
	text, err := scrapeText(r.metrics, r.apiHost+"/metrics")
	if err != nil {
		t.Fatalf("the API server's metrics: %v", err)
	}
	s.api, s.apiBy = metricSum(text, "apiserver_request_total", func(l string) string {
		res := labelValue(l, "resource")
		if sub := labelValue(l, "subresource"); sub != "" {
			res += "/" + sub
		}
		return labelValue(l, "verb") + " " + res
	})
	ctrl, err := scrapeText(http.DefaultClient, r.ctrlMetrics)
	if err != nil {
		t.Fatalf("ndp-controller's metrics: %v", err)
	}
	s.ctrlRequests, _ = metricSum(ctrl, "rest_client_requests_total", nil)
	s.ctrlCPU, _ = metricSum(ctrl, "process_cpu_seconds_total", nil)
	s.ctrlRSS, _ = metricSum(ctrl, "process_resident_memory_bytes", nil)
	_, s.ctrlWorkqueueAdds = metricSum(ctrl, "workqueue_adds_total", func(l string) string { return labelValue(l, "name") })
	_, s.ctrlReconciles = metricSum(ctrl, "controller_runtime_reconcile_total", func(l string) string { return labelValue(l, "controller") })
	_, s.ctrlReconcileTime = metricSum(ctrl, "controller_runtime_reconcile_time_seconds_sum", func(l string) string { return labelValue(l, "controller") })
	s.ctrlRateLimiterWaitTotal, _ = metricSum(ctrl, "rest_client_rate_limiter_duration_seconds_sum", nil)
	s.ctrl, _ = readProc(r.ctrlPID)
	s.apiserver, _ = readProc(r.procs["kube-apiserver"])
	s.etcd, _ = readProc(r.procs["etcd"])
	s.self, _ = readProc(os.Getpid())
	s.daemons, s.daemonsBy = r.daemons.snapshot()
	s.daemonLatency, s.daemonTimed = time.Duration(r.daemons.latency.Load()), r.daemons.timed.Load()
	s.harness, _ = r.harness.snapshot()
	return s
}

// result is one change's figures.
type result struct {
	change     change
	plans      []string
	nodes      int
	waves      int
	total      time.Duration // the change applied → every node updated
	firstOut   time.Duration // the change applied → the first node out
	poolStatus time.Duration // the change applied → every pool's status Updated
	node       percentiles   // each node's own update (its journal's start → available again, its report included)
	slot       percentiles   // each node's time out (the watch: unavailable → available)
	ideal      time.Duration // waves × node p50
	idealSlot  time.Duration // waves × slot p50
	util       float64       // budget use: Σ slots / (Σ budgets × total)
	peaks      map[string]poolState
	start, end time.Duration // since the run's origin
	before     snapshot
	after      snapshot
	failures   []string
}

type percentiles struct{ p50, p90, max time.Duration }

func percentilesOf(ds []time.Duration) percentiles {
	if len(ds) == 0 {
		return percentiles{}
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	at := func(q float64) time.Duration { return ds[min(len(ds)-1, int(q*float64(len(ds))))] }
	return percentiles{p50: at(0.5), p90: at(0.9), max: ds[len(ds)-1]}
}

// runChange applies a change to every pool and measures its rollout.
func (r *run) runChange(c change) *result {
	t, ctx := r.t, r.ctx
	res := &result{change: c, nodes: r.cfg.nodes}
	for _, pool := range r.pools {
		res.waves = max(res.waves, ceilDiv(r.poolNodes[pool], r.budgets[pool]))
	}
	before := map[string]nodeBefore{}
	for name, n := range r.fleet.nodes {
		restarts, _ := n.m.Systemd.Runs("chronyd.service")
		before[name] = nodeBefore{chronyRestarts: restarts, boots: n.m.Boots()}
	}
	old := map[string]string{}
	for k, v := range r.targets {
		old[k] = v
	}
	if c.prepare != nil {
		c.prepare(ctx)
	}
	r.tracker.begin()
	res.before = r.snapshot()
	t0 := time.Now()
	res.start = t0.Sub(r.origin)
	t.Logf("scale: %s: %s, in %d pools", c.name, c.what, len(r.pools))
	profiled := make(chan struct{})
	go func() {
		defer close(profiled)
		profile(t, r.cfg.pprof, r.ctrlPprof, "cpu-"+strings.NewReplacer(" ", "", "+", "-", "(", "", ")", "").Replace(strings.ToLower(c.name)), "profile", r.cfg.pprofSeconds)
	}()
	defer func() { <-profiled }()
	for _, pool := range r.pools {
		if err := c.apply(ctx, pool); err != nil {
			t.Fatalf("%s: pool %s: %v", c.name, pool, err)
		}
	}
	testkit.Eventually(t, "every pool updated", func() (bool, string) {
		for _, pool := range r.pools {
			var mcp mcfgv1.MachineConfigPool
			if err := r.k8s.Get(ctx, client.ObjectKey{Name: pool}, &mcp); err != nil {
				return false, err.Error()
			}
			if name := mcp.Spec.Configuration.Name; name == "" || name == old[pool] {
				return false, fmt.Sprintf("pool %s still targets %s", pool, old[pool])
			}
			r.targets[pool] = mcp.Spec.Configuration.Name
		}
		return true, ""
	}, testkit.Within(5*time.Minute))
	store := r.nodeStore
	r.tracker.setTargets(r.targets, func(name string) (string, string) {
		obj, ok, _ := store.GetByKey(name)
		if !ok {
			return "", ""
		}
		a := obj.(*corev1.Node).Annotations
		return a[ndpmcv1.CurrentConfigAnnotation], a[ndpmcv1.StateAnnotation]
	})
	r.waitUpdated(c.name+": the rollout", r.cfg.changeTimeout)
	t1 := time.Now()
	res.total = t1.Sub(t0)
	res.end = t1.Sub(r.origin)
	t.Logf("scale: %s: every node updated after %s", c.name, res.total.Round(time.Millisecond))
	testkit.Eventually(t, "every pool reports its machines updated", func() (bool, string) {
		for _, pool := range r.pools {
			var mcp mcfgv1.MachineConfigPool
			if err := r.k8s.Get(ctx, client.ObjectKey{Name: pool}, &mcp); err != nil {
				return false, err.Error()
			}
			s := mcp.Status
			updated := false
			for _, cond := range s.Conditions {
				updated = updated || cond.Type == mcfgv1.MachineConfigPoolUpdated && cond.Status == corev1.ConditionTrue
			}
			if !updated || s.Configuration.Name != r.targets[pool] || int(s.UpdatedMachineCount) != r.poolNodes[pool] {
				return false, fmt.Sprintf("pool %s status: updated %d of %d, configuration %s, Updated %t", pool, s.UpdatedMachineCount, s.MachineCount, s.Configuration.Name, updated)
			}
		}
		return true, ""
	}, testkit.Within(5*time.Minute))
	res.poolStatus = time.Since(t0)
	res.after = r.snapshot()
	res.peaks = r.tracker.peaks()

	// Each node's own account: from its journal's start to the end of its
	// time out (the watch saw it available again: its last step and its
	// report of it); and the change's effects.
	slots := r.tracker.slotsSince()
	slotEnd := map[string]time.Time{}
	for _, s := range slots {
		if !s.from.Before(t0) && s.to.After(slotEnd[s.node]) {
			slotEnd[s.node] = s.to
		}
	}
	plans := map[string]bool{}
	var nodeDurations, slotDurations []time.Duration
	for _, name := range sortedNodeNames(r.fleet.nodes) {
		n := r.fleet.nodes[name]
		j, err := n.journal()
		switch {
		case err != nil:
			res.failures = append(res.failures, err.Error())
			continue
		case j.To != r.targets[n.pool] || !j.Completed || j.Failed != nil:
			res.failures = append(res.failures, fmt.Sprintf("%s: journal to %s, completed %t, failed %+v", name, j.To, j.Completed, j.Failed))
			continue
		}
		last := slotEnd[name]
		for _, s := range j.Steps {
			if s.DoneAt != nil && s.DoneAt.After(last) {
				last = *s.DoneAt
			}
		}
		nodeDurations = append(nodeDurations, last.Sub(j.Started))
		plans[daemon.PlanSummary(&j.Plan)] = true
		if err := c.verify(n, before[name]); err != nil {
			res.failures = append(res.failures, fmt.Sprintf("%s: %v", name, err))
		}
	}
	for p := range plans {
		res.plans = append(res.plans, p)
	}
	sort.Strings(res.plans)
	first := t1
	var busy time.Duration
	for _, s := range slots {
		if s.from.Before(t0) {
			continue // a node out before the change (none expected)
		}
		slotDurations = append(slotDurations, s.to.Sub(s.from))
		busy += s.to.Sub(s.from)
		if s.from.Before(first) {
			first = s.from
		}
	}
	res.firstOut = first.Sub(t0)
	res.node, res.slot = percentilesOf(nodeDurations), percentilesOf(slotDurations)
	res.ideal = time.Duration(res.waves) * res.node.p50
	res.idealSlot = time.Duration(res.waves) * res.slot.p50
	budget := 0
	for _, b := range r.budgets {
		budget += b
	}
	res.util = float64(busy) / (float64(budget) * float64(res.total))

	for _, pool := range r.pools {
		if p := res.peaks[pool]; p.peak > r.budgets[pool] {
			t.Errorf("%s: pool %s had %d nodes unavailable at once (budget %d) at %s: %s", c.name, pool, p.peak, r.budgets[pool], p.peakAt.Format(time.RFC3339Nano), p.peakWho)
		}
	}
	if len(res.failures) > 0 {
		shown := res.failures
		if len(shown) > 10 {
			shown = append(shown[:10:10], fmt.Sprintf("and %d more", len(res.failures)-10))
		}
		t.Errorf("%s: %d nodes did not update as planned:\n%s", c.name, len(res.failures), strings.Join(shown, "\n"))
	}
	return res
}

func sortedNodeNames(m map[string]*simNode) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
