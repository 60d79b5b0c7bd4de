package rolloutgates

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/api"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/rolloutcontrol"
)

// Defaults of Options.
const (
	DefaultInterval     = 30 * time.Second
	DefaultTimeout      = 5 * time.Second
	DefaultPodsInterval = 5 * time.Second
)

// Options tune an Evaluator; the zero value takes the defaults.
type Options struct {
	// Interval: a policy's remote gates are asked at most this often
	// (DefaultInterval).
	Interval time.Duration
	// PodsInterval: a policy's blocking pods are read from the reader at
	// most this often (DefaultPodsInterval): a read is an API request (a
	// LIST by the gate's selector), and the rollout controller asks
	// whenever a node would start, in every pool the policy selects.
	PodsInterval time.Duration
	// Timeout bounds each call to Prometheus or Alertmanager
	// (DefaultTimeout).
	Timeout time.Duration
	// RoundTripper carries the calls (client_golang's
	// api.DefaultRoundTripper).
	RoundTripper http.RoundTripper
	// Now is the clock (time.Now).
	Now func() time.Time
}

// Evaluator gives a policy's evaluated gates to the rollout controller on
// every reconcile without asking Prometheus or Alertmanager each time: the
// remote answers are kept per policy (name, UID and generation: a changed
// spec is asked again at once) for Interval. Requests per policy per
// Interval: 1 Prometheus alerts call if spec.gates.prometheus.alerts is
// set, 1 query if spec.gates.prometheus.query is, 1 Alertmanager alerts
// call if spec.gates.alertmanager is; 0 per pool, node or reconcile. The
// blocking pods are read from the reader at most every PodsInterval: 1
// LIST of pods by the gate's selector, and 1 GET per namespace of a
// matching pod when the gate has a namespaceSelector. Safe for
// concurrent use; concurrent callers of one policy wait for a single
// evaluation (at most Timeout, once per Interval), callers of other
// policies do not wait for it.
type Evaluator struct {
	r    client.Reader
	opts Options

	mu      sync.Mutex
	entries map[string]*entry
}

// entry is one policy's last remote answers; mu serializes its evaluation.
type entry struct {
	uid        types.UID
	generation int64

	mu      sync.Mutex
	results rolloutcontrol.GateResults // remote gates only
	next    time.Time                  // zero: not evaluated yet

	// The blocking pods as last read, apart: a read of the cache does not
	// wait for a remote call.
	podsMu   sync.Mutex
	pods     *rolloutcontrol.PodsResult
	podsNext time.Time
}

// NewEvaluator is an Evaluator reading pods, their owners and namespaces
// from r: the API server (the manager's APIReader), as the controller
// does not watch pods.
func NewEvaluator(r client.Reader, opts Options) *Evaluator {
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.PodsInterval <= 0 {
		opts.PodsInterval = DefaultPodsInterval
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.RoundTripper == nil {
		opts.RoundTripper = api.DefaultRoundTripper
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Evaluator{r: r, opts: opts, entries: map[string]*entry{}}
}

// Results are the policy's gates, evaluated: the remote ones as last asked
// (Remote), the blocking pods as the reader has them now (BlockingPods).
// next is when the remote gates will be asked again (the controller
// requeues then to see a change); zero when the policy has none. The
// results are shared between callers: read them, do not change them.
func (e *Evaluator) Results(ctx context.Context, p *v1alpha1.RolloutPolicy) (rolloutcontrol.GateResults, time.Time) {
	res, next := e.Remote(ctx, p)
	res.BlockingPods = e.BlockingPods(ctx, p)
	return res, next
}

// Remote are the policy's Prometheus and Alertmanager gates as last asked,
// at most Interval ago, and when they will be asked again (zero: the
// policy has none).
func (e *Evaluator) Remote(ctx context.Context, p *v1alpha1.RolloutPolicy) (rolloutcontrol.GateResults, time.Time) {
	if g := p.Spec.Gates; g == nil || (g.Prometheus == nil && g.Alertmanager == nil) {
		return rolloutcontrol.GateResults{}, time.Time{}
	}
	return e.remote(ctx, p)
}

// BlockingPods are the pods the policy's blocking-pods gate matches, as
// the reader had them at most PodsInterval ago; nil when the policy has
// no such gate. A read that failed is not kept.
func (e *Evaluator) BlockingPods(ctx context.Context, p *v1alpha1.RolloutPolicy) *rolloutcontrol.PodsResult {
	g := p.Spec.Gates
	if g == nil || g.BlockingPods == nil {
		return nil
	}
	en := e.entry(p)
	en.podsMu.Lock()
	defer en.podsMu.Unlock()
	now := e.opts.Now()
	if en.pods != nil && now.Before(en.podsNext) {
		return en.pods
	}
	res := BlockingPods(ctx, e.r, g.BlockingPods)
	en.pods, en.podsNext = nil, time.Time{}
	if res.Err == nil {
		en.pods, en.podsNext = res, now.Add(e.opts.PodsInterval)
	}
	return res
}

// DrainedNotReady lists the owners of the drained pods d that are not
// back, read now from the reader (DrainedNotReady; the controller keeps
// the answer, poolPacing).
func (e *Evaluator) DrainedNotReady(ctx context.Context, d *v1alpha1.DrainedPods) ([]string, error) {
	return DrainedNotReady(ctx, e.r, d)
}

// entry is what is kept for the policy, afresh for a new UID or
// generation.
func (e *Evaluator) entry(p *v1alpha1.RolloutPolicy) *entry {
	e.mu.Lock()
	defer e.mu.Unlock()
	en := e.entries[p.Name]
	if en == nil || en.uid != p.UID || en.generation != p.Generation {
		en = &entry{uid: p.UID, generation: p.Generation}
		e.entries[p.Name] = en
	}
	return en
}

// Forget drops what is kept for a policy (deleted), and its metrics.
func (e *Evaluator) Forget(name string) {
	e.mu.Lock()
	delete(e.entries, name)
	e.mu.Unlock()
	gateEvaluations.DeletePartialMatch(map[string]string{"policy": name})
	gateErrors.DeletePartialMatch(map[string]string{"policy": name})
}

func (e *Evaluator) remote(ctx context.Context, p *v1alpha1.RolloutPolicy) (rolloutcontrol.GateResults, time.Time) {
	en := e.entry(p)
	en.mu.Lock()
	defer en.mu.Unlock()
	start := e.opts.Now()
	if !en.next.IsZero() && start.Before(en.next) {
		return en.results, en.next
	}
	res := e.ask(ctx, p.Name, p.Spec.Gates)
	if ctx.Err() != nil {
		// The caller gave up (the manager stops): what failed for that
		// is not the gate's answer, so it is not kept.
		return res, start
	}
	en.results, en.next = res, start.Add(e.opts.Interval)
	return en.results, en.next
}

// ask calls the policy's remote gates, at once, each within Timeout.
func (e *Evaluator) ask(ctx context.Context, policy string, g *v1alpha1.RolloutGates) rolloutcontrol.GateResults {
	var res rolloutcontrol.GateResults
	var wg sync.WaitGroup
	call := func(gate string, f func(context.Context) error) {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, e.opts.Timeout)
			defer cancel()
			t := time.Now()
			err := f(cctx)
			gateSeconds.WithLabelValues(gate).Observe(time.Since(t).Seconds())
			result := "ok"
			if err != nil {
				result = "error"
				gateErrors.WithLabelValues(policy, gate).Inc()
			}
			gateEvaluations.WithLabelValues(policy, gate, result).Inc()
		})
	}
	rt := e.opts.RoundTripper
	if pg := g.Prometheus; pg != nil {
		if pg.Alerts != nil {
			call(GatePrometheusAlerts, func(ctx context.Context) error {
				res.PrometheusAlerts = PrometheusAlerts(ctx, pg.URL, rt)
				return res.PrometheusAlerts.Err
			})
		}
		if pg.Query != "" {
			call(GatePrometheusQuery, func(ctx context.Context) error {
				res.PrometheusQuery = PrometheusQuery(ctx, pg.URL, pg.Query, rt)
				return res.PrometheusQuery.Err
			})
		}
	}
	if ag := g.Alertmanager; ag != nil {
		call(GateAlertmanagerAlerts, func(ctx context.Context) error {
			res.AlertmanagerAlerts = AlertmanagerAlerts(ctx, ag.URL, rt)
			return res.AlertmanagerAlerts.Err
		})
	}
	wg.Wait()
	return res
}
