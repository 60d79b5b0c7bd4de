package executor

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/rolloutcontrol"
)

// +kubebuilder:rbac:groups=ndp.dev,resources=rolloutpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=ndp.dev,resources=rolloutpolicies/status,verbs=get;update;patch

// GateSource evaluates a RolloutPolicy's gates (package rolloutgates).
// The rollout controller asks it for every policy with gates at every
// step of the pool: Remote answers from its own cache (Prometheus,
// Alertmanager) with when it will look again (zero: no time of its own);
// BlockingPods reads the pods the blocking-pods gate matches now, and
// DrainedNotReady the owners of a drain's pods that are not back; both are
// asked only when a node would start (decideRolloutPaced).
type GateSource interface {
	Remote(ctx context.Context, p *v1alpha1.RolloutPolicy) (rolloutcontrol.GateResults, time.Time)
	BlockingPods(ctx context.Context, p *v1alpha1.RolloutPolicy) *rolloutcontrol.PodsResult
	DrainedNotReady(ctx context.Context, d *v1alpha1.DrainedPods) ([]string, error)
}

// Metrics of the holds: how many nodes each kind of reason holds now, and
// how often a kind started to hold a pool.
var (
	rolloutHeld = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "ndp_rollout_held",
		Help: "Nodes of a MachineConfigPool whose start a rollout policy or a hold annotation holds now, by the kind of reason (Window, Alert, Query, GateError, BlockingPod, Hold, Settle, DrainedPods, ZoneBudget, InvalidPolicy, NoWindow).",
	}, []string{"pool", "reason_kind"})
	rolloutHolds = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ndp_rollout_holds_total",
		Help: "Times a kind of reason started to hold starts of a MachineConfigPool.",
	}, []string{"pool", "reason_kind"})
)

func init() { ctrlmetrics.Registry.MustRegister(rolloutHeld, rolloutHolds) }

// rolloutHoldView is what a pool's policy decision shows: the holds that
// keep back a start the budget would allow, without the nodes that only
// wait for their plan (the rollout's own NoPlan wait).
type rolloutHoldView struct {
	// Lines are rolloutcontrol.Summary's, at most v1alpha1.MaxPoolReasons.
	Lines []string
	// Kinds count the nodes each kind of reason holds (a reason that holds
	// the pool counts every candidate not sent, at least 1).
	Kinds map[rolloutcontrol.ReasonKind]int
	// HeldNodes are the pool's nodes held by annotation.
	HeldNodes []string
	// Next is when a window opens or a settle time ends.
	Next time.Time
	// dec is the decision without NoPlan reasons (forPolicy).
	dec rolloutcontrol.Decision
}

// forPolicy is what one policy holds in the pool: its own pool reasons
// (gates, pacing, zone budget), the windows' reasons if it has windows
// (the windows of all policies combine into one verdict), its warnings.
// Nodes held by annotation are in HeldNodes, not here: no policy holds them.
// next is the earliest time one of them lets go, when known.
func (v rolloutHoldView) forPolicy(p *v1alpha1.RolloutPolicy) (lines []string, next time.Time) {
	if !v.Holding() {
		return nil, time.Time{}
	}
	mine := func(r rolloutcontrol.Reason) bool {
		ok := r.Policy == p.Name
		if r.Policy == "" {
			ok = (r.Kind == rolloutcontrol.ReasonWindow || r.Kind == rolloutcontrol.ReasonNever) && len(p.Spec.Windows) > 0
		}
		if ok && !r.Until.IsZero() && (next.IsZero() || r.Until.Before(next)) {
			next = r.Until
		}
		return ok
	}
	d := rolloutcontrol.Decision{Order: v.dec.Order, Held: map[string][]rolloutcontrol.Reason{}}
	for _, r := range v.dec.Pool {
		if mine(r) {
			d.Pool = append(d.Pool, r)
		}
	}
	for n, rs := range v.dec.Held {
		for _, r := range rs {
			if mine(r) {
				d.Held[n] = append(d.Held[n], r)
			}
		}
	}
	for _, r := range v.dec.Warnings {
		if r.Policy == p.Name {
			d.Warnings = append(d.Warnings, r)
		}
	}
	return rolloutcontrol.Summary(d, v1alpha1.MaxPoolReasons), next
}

// Holding says whether anything holds.
func (v rolloutHoldView) Holding() bool { return len(v.Kinds) > 0 }

// holdView derives the view from a decision; nil (a stopped rollout) is
// no hold.
func holdView(d rolloutDecision) rolloutHoldView {
	v := rolloutHoldView{Kinds: map[rolloutcontrol.ReasonKind]int{}}
	pd := d.Policy
	if pd == nil {
		return v
	}
	c := *pd
	c.Held = map[string][]rolloutcontrol.Reason{}
	waiting := 0
	for _, n := range pd.Order {
		var rs []rolloutcontrol.Reason
		for _, r := range pd.Held[n.Name] {
			if r.Kind != rolloutcontrol.ReasonNoPlan {
				rs = append(rs, r)
			}
		}
		if len(rs) > 0 {
			c.Held[n.Name] = rs
		}
		kinds := map[rolloutcontrol.ReasonKind]bool{}
		for _, r := range rs {
			kinds[r.Kind] = true
		}
		for k := range kinds {
			v.Kinds[k]++
		}
		if d.Held[n.Name] == holdPolicy {
			waiting++
		}
	}
	// Redirects held (not candidates, so not in Order).
	for name, rs := range pd.Held {
		if _, ok := c.Held[name]; ok || d.Held[name] != holdPolicy || hasReason(rs, rolloutcontrol.ReasonNoPlan) {
			continue
		}
		c.Held[name] = rs
		c.Order = append(c.Order, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
		for _, r := range rs {
			v.Kinds[r.Kind]++
		}
	}
	for _, r := range pd.Pool {
		v.Kinds[r.Kind] = max(v.Kinds[r.Kind], waiting, 1)
	}
	if len(v.Kinds) == 0 {
		v.Kinds = nil
		v.HeldNodes = pd.HeldNodes
		return v
	}
	v.Lines = rolloutcontrol.Summary(c, v1alpha1.MaxPoolReasons)
	v.dec = c
	v.HeldNodes = pd.HeldNodes
	if len(v.HeldNodes) > v1alpha1.MaxPoolHeldNodes {
		v.HeldNodes = v.HeldNodes[:v1alpha1.MaxPoolHeldNodes]
	}
	v.Next = d.Next
	return v
}

// heldCondition is the pool's RolloutHeld condition for a view: True with
// the first reason's kind and every line, or False.
func heldCondition(v rolloutHoldView) (corev1.ConditionStatus, string, string) {
	if !v.Holding() {
		return corev1.ConditionFalse, "NotHeld", ""
	}
	kinds := make([]string, 0, len(v.Kinds))
	for k := range v.Kinds {
		kinds = append(kinds, string(k))
	}
	sort.Strings(kinds)
	return corev1.ConditionTrue, strings.Join(kinds, ""), strings.Join(v.Lines, "; ")
}

// countSuffix is Summary's "(3 nodes)": it changes as nodes go, the
// reason does not.
var countSuffix = regexp.MustCompile(` \(\d+ nodes?\)$`)

// holdKey is what an Event is deduplicated on: the reasons without their
// node counts.
func holdKey(v rolloutHoldView) string {
	lines := make([]string, len(v.Lines))
	for i, l := range v.Lines {
		lines[i] = countSuffix.ReplaceAllString(l, "")
	}
	return strings.Join(lines, "\n")
}

// poolPacing remembers, per pool, when its last node finished an update:
// a node seen done on the target that was not at the previous step. When
// it finished is the node's own word (UpdateDoneAnnotation, written with
// its Done state), so that a restarted controller, looking at a pool for
// the first time, takes the latest of its nodes done on the target as the
// last one: the settle time holds across a restart or a failover.
type poolPacing struct {
	mu     sync.Mutex
	byPool map[string]*pacingMemo
}

type pacingMemo struct {
	target string
	// seen is, by node name, the node as last looked at: its
	// resourceVersion and whether it was done on target. A node's object
	// changes only with its resourceVersion, so an unchanged one is not
	// looked at again (this runs at every step of the pool).
	seen  map[string]seenNode
	state rolloutcontrol.PacingState
	// drained is what the last done node's drain evicted (its
	// DrainedPodsAnnotation), nil without a drain.
	drained *v1alpha1.DrainedPods
	// The last check of drained (drainedNotReady): for which record, when,
	// and what was not Ready again.
	checked   *v1alpha1.DrainedPods
	checkedAt time.Time
	notReady  []string
}

// drainedRecheck is how long a check of drained pods that were not all
// Ready again is kept: a pool that waits for them reads its pods at most
// this often.
const drainedRecheck = 5 * time.Second

// drainedNotReady is the owners of the pool's drained record d (observe's)
// whose pods are not back, as read (GateSource.DrainedNotReady) only when
// needed: once the pods of a record are back, they are for good (the next
// node no longer waits for that drain, whatever its pods do later); while
// they are not, they are read again after drainedRecheck.
func (p *poolPacing) drainedNotReady(pool string, d *v1alpha1.DrainedPods, now time.Time, read func() ([]string, error)) ([]string, error) {
	p.mu.Lock()
	m := p.byPool[pool]
	if m != nil && m.checked == d && (len(m.notReady) == 0 || now.Before(m.checkedAt.Add(drainedRecheck))) {
		defer p.mu.Unlock()
		return m.notReady, nil
	}
	p.mu.Unlock()
	notReady, err := read()
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if m := p.byPool[pool]; m != nil && m.drained == d {
		m.checked, m.checkedAt, m.notReady = d, now, notReady
	}
	return notReady, nil
}

// observe records the pool's nodes done on target at now and returns the
// pool's pacing state and what the last done node's drain evicted.
func (p *poolPacing) observe(pool, target string, nodes []*corev1.Node, now time.Time) (rolloutcontrol.PacingState, *v1alpha1.DrainedPods) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.byPool == nil {
		p.byPool = map[string]*pacingMemo{}
	}
	m := p.byPool[pool]
	first := m == nil || m.target != target
	if first {
		m = &pacingMemo{target: target}
		p.byPool[pool] = m
	}
	if m.seen == nil {
		m.seen = make(map[string]seenNode, len(nodes))
	}
	for _, n := range nodes {
		prev, ok := m.seen[n.Name]
		if ok && n.ResourceVersion != "" && n.ResourceVersion == prev.rv {
			continue
		}
		done := doneOn(n, target)
		m.seen[n.Name] = seenNode{rv: n.ResourceVersion, done: done}
		if !done || (!first && prev.done) {
			continue // not done, or seen done before: nothing new (and nothing to parse)
		}
		at, said := doneAt(n)
		switch {
		case first && said && at.After(m.state.LastDone):
			// Seen done already: only its own word says when.
		case !first:
			if !said || at.After(now) {
				at = now // no word, or a clock ahead of ours
			}
		default:
			continue
		}
		m.state = rolloutcontrol.PacingState{LastDone: at, LastNode: n.Name}
		m.drained = drainedOf(n)
	}
	if len(m.seen) > len(nodes) { // nodes left the pool
		in := make(map[string]bool, len(nodes))
		for _, n := range nodes {
			in[n.Name] = true
		}
		for name := range m.seen {
			if !in[name] {
				delete(m.seen, name)
			}
		}
	}
	return m.state, m.drained
}

type seenNode struct {
	rv   string
	done bool
}

// doneOn: the node runs target, done and available (not unavailable).
func doneOn(n *corev1.Node, target string) bool {
	return target != "" && n.Annotations[ndpmcv1.CurrentConfigAnnotation] == target && !unavailable(n)
}

// doneAt reads a node's UpdateDoneAnnotation.
func doneAt(n *corev1.Node) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339, n.Annotations[v1alpha1.UpdateDoneAnnotation])
	return t, err == nil
}

func (p *poolPacing) forget(pool string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.byPool, pool)
}

// drainedOf reads a node's DrainedPodsAnnotation; nil when it has none or
// it does not parse (the daemon writes it: a bad one waits for nothing).
func drainedOf(n *corev1.Node) *v1alpha1.DrainedPods {
	raw := n.Annotations[v1alpha1.DrainedPodsAnnotation]
	if raw == "" {
		return nil
	}
	var d v1alpha1.DrainedPods
	if err := json.Unmarshal([]byte(raw), &d); err != nil {
		return nil
	}
	return &d
}

// rolloutBoard holds each pool's holds as the rollout controller last
// decided them, for the RolloutPolicy status writer; it tells that writer
// when a pool's entry changes.
type rolloutBoard struct {
	mu     sync.Mutex
	byPool map[string]map[string]v1alpha1.PoolRolloutStatus // by pool, by policy
	// changes wakes the status writer (source.Channel): one pending
	// signal covers every change, the writer then looks at every policy.
	changes chan event.GenericEvent
}

func newRolloutBoard() *rolloutBoard {
	return &rolloutBoard{byPool: map[string]map[string]v1alpha1.PoolRolloutStatus{}, changes: make(chan event.GenericEvent, 1)}
}

// set records what each of the pool's policies holds there at now;
// lastEvaluated moves only when the rest changes (a status write per
// rollout step would cost a request per node).
func (b *rolloutBoard) set(pool string, v rolloutHoldView, policies []*v1alpha1.RolloutPolicy, now time.Time) {
	if b == nil {
		return
	}
	stamp := metav1.NewTime(now.UTC().Truncate(time.Second))
	entries := make(map[string]v1alpha1.PoolRolloutStatus, len(policies))
	for _, p := range policies {
		lines, next := v.forPolicy(p)
		e := v1alpha1.PoolRolloutStatus{Pool: pool, Holding: len(lines) > 0, Reasons: lines, HeldNodes: v.HeldNodes}
		if !next.IsZero() {
			t := metav1.NewTime(next.UTC().Truncate(time.Second))
			e.NextStart = &t
		}
		entries[p.Name] = e
	}
	b.mu.Lock()
	old := b.byPool[pool]
	changed := len(old) != len(entries)
	for name, e := range entries {
		o, had := old[name]
		if had {
			e.LastEvaluated = o.LastEvaluated
		}
		if !had || !samePoolRollout(o, e) {
			e.LastEvaluated = &stamp
			changed = true
		}
		entries[name] = e
	}
	if changed {
		b.byPool[pool] = entries
	}
	b.mu.Unlock()
	if changed {
		b.changed()
	}
}

func (b *rolloutBoard) remove(pool string) {
	if b == nil {
		return
	}
	b.mu.Lock()
	_, had := b.byPool[pool]
	delete(b.byPool, pool)
	b.mu.Unlock()
	if had {
		b.changed()
	}
}

func (b *rolloutBoard) changed() {
	select {
	case b.changes <- event.GenericEvent{Object: &v1alpha1.RolloutPolicy{}}:
	default: // one pending signal covers every change
	}
}

// get is what the policy holds in the pool, as last decided.
func (b *rolloutBoard) get(pool, policy string) (v1alpha1.PoolRolloutStatus, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.byPool[pool][policy]
	return e, ok
}

func samePoolRollout(a, b v1alpha1.PoolRolloutStatus) bool {
	// metav1.Time's Equal takes nil as equal to nil only.
	return a.Pool == b.Pool && a.Holding == b.Holding && slices.Equal(a.Reasons, b.Reasons) && slices.Equal(a.HeldNodes, b.HeldNodes) &&
		a.NextStart.Equal(b.NextStart) && a.LastEvaluated.Equal(b.LastEvaluated)
}
