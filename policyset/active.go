// Package policyset holds the active policy set every ndp-controller
// replica keeps (the last revision of each NodeDisruptionPolicy that
// compiled, passed its tests and evaluated a probe change set within the
// sandbox's deadline and memory budget, compiled together) and the check a policy
// generation must pass to join it. The policy controller and the admission
// webhook share both, so that what the webhook admits the controller
// accepts, and both plan with the same set.
package policyset

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/engine"
	"github.com/ndp-dev/ndp/planner/policy"
)

// ActivePolicies is the policy set in force: for every NodeDisruptionPolicy,
// the last revision that compiled and passed its tests, compiled together
// into the planner that the plan controller and the webhook use.
type ActivePolicies struct {
	// update serialises changes of the set; mu guards the fields, held
	// only to read or swap them, so that compiling and probing a new set
	// does not stall the planners reading the current one.
	update   sync.Mutex
	mu       sync.RWMutex
	policies map[string]policy.Policy
	// seen is the generation of each policy this replica's policy
	// controller last reconciled, accepted or not: see Ready.
	seen    map[string]int64
	planner *planner.Planner
	opts    engine.Options
	// changes carries one event whenever the set's revision changes, so that
	// plans made with the previous revision are recomputed.
	changes chan event.GenericEvent
}

// NewActivePolicies returns an empty set: no policy is in force until the
// policy controller accepts one, so every change would need a reboot.
func NewActivePolicies(opts engine.Options) *ActivePolicies {
	return &ActivePolicies{policies: map[string]policy.Policy{}, seen: map[string]int64{}, opts: opts, changes: make(chan event.GenericEvent, 1)}
}

// Options are the sandbox limits the set is compiled and evaluated with.
func (a *ActivePolicies) Options() engine.Options { return a.opts }

// EvaluationError is a policy set that compiles but fails when evaluated,
// under the sandbox's limits, on the probe change set (planner.Probe): a
// policy whose rules blow up on changes, even if its tests pass.
type EvaluationError struct{ Err error }

func (e *EvaluationError) Error() string {
	return "evaluated before activation on a probe change set (one change of each kind and the paths and units its Rego names): " + e.Err.Error()
}

func (e *EvaluationError) Unwrap() error { return e.Err }

// Planner returns the planner of the active set; nil before any policy is
// active.
func (a *ActivePolicies) Planner() *planner.Planner {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.planner
}

// Changes is a source of events, one per change of the set's revision
// (coalesced while unread), for controllers whose output depends on it.
func (a *ActivePolicies) Changes() <-chan event.GenericEvent { return a.changes }

// Get returns the active revision of one policy.
func (a *ActivePolicies) Get(name string) (policy.Policy, bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	p, ok := a.policies[name]
	return p, ok
}

// Others returns every active policy but the named one, sorted by name.
func (a *ActivePolicies) Others(name string) []policy.Policy {
	a.mu.RLock()
	defer a.mu.RUnlock()
	out := make([]policy.Policy, 0, len(a.policies))
	for n, p := range a.policies {
		if n != name {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Without compiles the active set without the named policy, with the
// set's limits: the set the policy controller puts in force when the
// policy is deleted. It returns nil when no policy would be left.
func (a *ActivePolicies) Without(ctx context.Context, name string) (*planner.Planner, error) {
	others := a.Others(name)
	if len(others) == 0 {
		return nil, nil
	}
	return planner.New(ctx, others, a.opts)
}

// Seen records that the policy controller has reconciled generation of
// the named policy: accepted into the set, or refused with its last good
// revision (if any) kept.
func (a *ActivePolicies) Seen(name string, generation int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seen[name] = generation
}

// pending names the NodeDisruptionPolicies (read from c, the cache) whose
// current generation the policy controller has not reconciled yet. A plan
// or a preview made before they are is made without them: after a restart
// of the replica, with none of the administrator's policies, every change
// they would have made a restart or a reload is planned as a reboot.
func (a *ActivePolicies) pending(ctx context.Context, c client.Reader) ([]string, error) {
	var list v1alpha1.NodeDisruptionPolicyList
	// Read only, on every plan and preview: no copy of the cache's objects.
	if err := c.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	var pending []string
	for i := range list.Items {
		p := &list.Items[i]
		if g, ok := a.seen[p.Name]; (!ok || g < p.Generation) && p.DeletionTimestamp.IsZero() {
			pending = append(pending, p.Name)
		}
	}
	sort.Strings(pending)
	return pending, nil
}

// NotReadyError says why this replica cannot plan yet: no policy is active,
// or the policy controller has not loaded some policies' current
// generation. Planning then would plan their changes as reboots.
type NotReadyError struct {
	// Pending names the policies not loaded yet; empty when none is active.
	Pending []string
}

func (e *NotReadyError) Error() string {
	if len(e.Pending) == 0 {
		return "no NodeDisruptionPolicy is active yet"
	}
	return fmt.Sprintf("NodeDisruptionPolicies %s are still being loaded by this replica; try again in a moment", strings.Join(e.Pending, ", "))
}

// Ready returns the planner of the active set when this replica may plan
// with it: a policy is active and every NodeDisruptionPolicy (read from c,
// the cache) is loaded at its current generation. Otherwise it returns a
// *NotReadyError, or the error of reading the policies. Every plan and
// preview starts here.
func (a *ActivePolicies) Ready(ctx context.Context, c client.Reader) (*planner.Planner, error) {
	p := a.Planner()
	if p == nil {
		return nil, &NotReadyError{}
	}
	pending, err := a.pending(ctx, c)
	if err != nil {
		return nil, err
	}
	if len(pending) > 0 {
		return nil, &NotReadyError{Pending: pending}
	}
	return p, nil
}

// Put makes p the active revision of its policy, given that the whole set
// with it compiles and passes the probe (an *EvaluationError otherwise);
// the set is left unchanged otherwise.
func (a *ActivePolicies) Put(ctx context.Context, p policy.Policy) error {
	return a.change(ctx, p.Name, &p)
}

// Remove takes a deleted policy out of the set.
func (a *ActivePolicies) Remove(ctx context.Context, name string) error {
	return a.change(ctx, name, nil)
}

func (a *ActivePolicies) change(ctx context.Context, name string, p *policy.Policy) error {
	a.update.Lock()
	defer a.update.Unlock()
	a.mu.RLock()
	next := make(map[string]policy.Policy, len(a.policies)+1)
	for n, q := range a.policies {
		next[n] = q
	}
	old := ""
	if a.planner != nil {
		old = a.planner.Engine.Revision()
	}
	a.mu.RUnlock()
	if p == nil {
		if _, ok := next[name]; !ok {
			return nil
		}
		delete(next, name)
	} else {
		next[name] = *p
	}
	var pl *planner.Planner
	if len(next) > 0 {
		set := make([]policy.Policy, 0, len(next))
		for _, q := range next {
			set = append(set, q)
		}
		var err error
		if pl, err = planner.New(ctx, set, a.opts); err != nil {
			return fmt.Errorf("the active policy set would not compile: %w", err)
		}
		if p != nil {
			if err := pl.Probe(ctx, name); err != nil {
				return &EvaluationError{Err: err}
			}
		}
	}
	a.mu.Lock()
	a.policies, a.planner = next, pl
	a.mu.Unlock()
	if pl == nil || pl.Engine.Revision() != old {
		select {
		case a.changes <- event.GenericEvent{Object: &v1alpha1.NodeDisruptionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "active-policy-set"}}}:
		default: // one pending event already tells that the set changed
		}
	}
	return nil
}
