//go:build scale

package scale

import (
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
)

// tracker watches every node (the informer's events, in order) and keeps,
// per pool, how many are unavailable now — as the rollout controller counts
// them: updating, not Ready, cordoned or degraded — the most at once since
// the last reset, how many run the pool's target, and a time series of
// both for the plot.
type tracker struct {
	mu      sync.Mutex
	nodes   map[string]*nodeState
	pools   map[string]*poolState
	origin  time.Time
	samples []sample
	slots   []slot // each time a node was unavailable, since the last reset
	changed chan struct{}
}

type nodeState struct {
	pool        string
	unavailable bool
	updated     bool
	since       time.Time
}

type poolState struct {
	target      string
	unavailable int
	updated     int
	total       int
	peak        int
	peakWho     string
	peakAt      time.Time
}

type sample struct {
	at          time.Duration // since origin
	unavailable int
	updated     int
}

type slot struct {
	node     string
	from, to time.Time
}

func newTracker(informer cache.SharedIndexInformer) *tracker {
	tr := &tracker{nodes: map[string]*nodeState{}, pools: map[string]*poolState{}, origin: time.Now(), changed: make(chan struct{}, 1)}
	_, _ = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { tr.observe(obj) },
		UpdateFunc: func(_, obj any) { tr.observe(obj) },
	})
	return tr
}

// unavailable is the disruption maxUnavailable bounds: a node updating,
// not Ready, cordoned or degraded. The rollout controller counts more
// nodes as unavailable (the MCO's rule: any node not both ready and done,
// which adds pressure conditions and missing annotations), so it sends
// fewer: the watch checks the budget holds for what disrupts a node.
func unavailable(n *corev1.Node) bool {
	a := n.Annotations
	cur, desired, state := a[ndpmcv1.CurrentConfigAnnotation], a[ndpmcv1.DesiredConfigAnnotation], a[ndpmcv1.StateAnnotation]
	updating := (desired != "" && desired != cur) || state == ndpmcv1.StateWorking
	return updating || !nodeReady(n) || n.Spec.Unschedulable || state == ndpmcv1.StateDegraded || state == ndpmcv1.StateUnreconcilable
}

func (tr *tracker) observe(obj any) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	pool := n.Labels[poolLabel]
	if pool == "" {
		return
	}
	now := time.Now()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	p := tr.pools[pool]
	if p == nil {
		p = &poolState{}
		tr.pools[pool] = p
	}
	s := tr.nodes[n.Name]
	if s == nil {
		s = &nodeState{pool: pool}
		tr.nodes[n.Name] = s
		p.total++
	}
	out := unavailable(n)
	a := n.Annotations
	updated := p.target != "" && a[ndpmcv1.CurrentConfigAnnotation] == p.target && a[ndpmcv1.StateAnnotation] == ndpmcv1.StateDone && !out
	if out != s.unavailable {
		if out {
			p.unavailable++
			s.since = now
		} else {
			p.unavailable--
			tr.slots = append(tr.slots, slot{node: n.Name, from: s.since, to: now})
		}
		s.unavailable = out
		if p.unavailable > p.peak {
			p.peak, p.peakAt = p.unavailable, now
			var who []string
			for name, o := range tr.nodes {
				if o.pool == pool && o.unavailable {
					who = append(who, name)
				}
			}
			sort.Strings(who)
			p.peakWho = strings.Join(who, ", ")
		}
	}
	if updated != s.updated {
		if updated {
			p.updated++
		} else {
			p.updated--
		}
		s.updated = updated
	}
	tr.sample(now)
	select {
	case tr.changed <- struct{}{}:
	default:
	}
}

// sample records the totals when they changed.
func (tr *tracker) sample(now time.Time) {
	u, d := 0, 0
	for _, p := range tr.pools {
		u += p.unavailable
		d += p.updated
	}
	if k := len(tr.samples); k > 0 && tr.samples[k-1].unavailable == u && tr.samples[k-1].updated == d {
		return
	}
	tr.samples = append(tr.samples, sample{at: now.Sub(tr.origin), unavailable: u, updated: d})
}

// begin starts a change: peaks and slots are reset; targets are set by
// setTargets once the pools have rendered.
func (tr *tracker) begin() {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.slots = nil
	for _, p := range tr.pools {
		p.peak, p.peakWho = p.unavailable, ""
	}
}

// setTargets sets each pool's target and recounts its updated nodes.
func (tr *tracker) setTargets(targets map[string]string, current func(name string) (string, string)) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for pool, t := range targets {
		p := tr.pools[pool]
		if p == nil {
			p = &poolState{}
			tr.pools[pool] = p
		}
		p.target, p.updated = t, 0
	}
	for name, s := range tr.nodes {
		cur, state := current(name)
		p := tr.pools[s.pool]
		s.updated = p.target != "" && cur == p.target && state == ndpmcv1.StateDone && !s.unavailable
		if s.updated {
			p.updated++
		}
	}
	tr.sample(time.Now())
}

// done tells whether every node of every pool runs its target, available.
func (tr *tracker) done() (bool, int, int) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	updated, total := 0, 0
	for _, p := range tr.pools {
		updated += p.updated
		total += p.total
	}
	return updated == total && total > 0, updated, total
}

// peaks returns each pool's peak since begin.
func (tr *tracker) peaks() map[string]poolState {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	out := map[string]poolState{}
	for name, p := range tr.pools {
		out[name] = *p
	}
	return out
}

func (tr *tracker) slotsSince() []slot {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]slot(nil), tr.slots...)
}

func (tr *tracker) series() []sample {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]sample(nil), tr.samples...)
}
