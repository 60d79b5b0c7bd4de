package rolloutcontrol

import (
	"errors"
	"fmt"
	"sort"
	"sync"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
)

// Policy is a compiled RolloutPolicy: its time zones loaded, dates parsed,
// regular expressions and selectors compiled.
type Policy struct {
	Name    string
	Spec    *v1alpha1.RolloutPolicySpec
	windows windowSet
	// alerts, amAlerts: the Prometheus and Alertmanager alert selectors.
	alerts, amAlerts *AlertMatcher
	// pods, podNamespaces: the blocking-pod gate's selectors.
	pods, podNamespaces labels.Selector
}

// Compile checks a policy beyond what its CRD checks (time zones, dates,
// regular expressions, selectors) and compiles it; the error names the
// policy and the field. The controller reports it in the Accepted
// condition; an invalid policy holds its pools (Decide).
func Compile(p *v1alpha1.RolloutPolicy) (*Policy, error) {
	c, err := compile(p)
	if err != nil {
		return nil, fmt.Errorf("rolloutpolicy %s: %w", p.Name, err)
	}
	return c, nil
}

// Compiler memoizes Compile per policy name, UID and generation: the spec
// of a generation never changes, and compiling loads time zones and
// compiles regular expressions, which the rollout controller must not
// repeat at every step of every pool. A policy without a UID (not read
// from an API server) is compiled afresh. Safe for concurrent use; the
// zero value is ready.
type Compiler struct {
	mu sync.Mutex
	m  map[string]compiled
}

type compiled struct {
	uid        types.UID
	generation int64
	policy     *Policy
	err        error
}

// Compile is Compile(p), memoized.
func (c *Compiler) Compile(p *v1alpha1.RolloutPolicy) (*Policy, error) {
	if p.UID == "" {
		return Compile(p)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[p.Name]; ok && e.uid == p.UID && e.generation == p.Generation {
		return e.policy, e.err
	}
	cp, err := Compile(p)
	if c.m == nil {
		c.m = map[string]compiled{}
	}
	c.m[p.Name] = compiled{uid: p.UID, generation: p.Generation, policy: cp, err: err}
	return cp, err
}

func compile(p *v1alpha1.RolloutPolicy) (*Policy, error) {
	c := &Policy{Name: p.Name, Spec: &p.Spec}
	if _, err := metav1.LabelSelectorAsSelector(&p.Spec.PoolSelector); err != nil {
		return nil, fmt.Errorf("spec.poolSelector: %w", err)
	}
	for i, w := range p.Spec.Windows {
		cw, err := compileWindow(w, fmt.Sprintf("spec.windows[%d]", i))
		if err != nil {
			return nil, err
		}
		c.windows = append(c.windows, cw)
	}
	if g := p.Spec.Gates; g != nil {
		if pg := g.Prometheus; pg != nil {
			if pg.URL == "" {
				return nil, errors.New("spec.gates.prometheus.url: empty")
			}
			if pg.Alerts == nil && pg.Query == "" {
				return nil, errors.New("spec.gates.prometheus: sets neither alerts nor query")
			}
			if pg.Alerts != nil {
				m, err := CompileAlertSelector(pg.Alerts, "spec.gates.prometheus.alerts")
				if err != nil {
					return nil, err
				}
				c.alerts = m
			}
		}
		if ag := g.Alertmanager; ag != nil {
			if ag.URL == "" {
				return nil, errors.New("spec.gates.alertmanager.url: empty")
			}
			m, err := CompileAlertSelector(&ag.Alerts, "spec.gates.alertmanager.alerts")
			if err != nil {
				return nil, err
			}
			c.amAlerts = m
		}
		if bp := g.BlockingPods; bp != nil {
			s, err := metav1.LabelSelectorAsSelector(&bp.Selector)
			if err != nil {
				return nil, fmt.Errorf("spec.gates.blockingPods.selector: %w", err)
			}
			if s.Empty() {
				return nil, errors.New("spec.gates.blockingPods.selector: empty: it would select every pod")
			}
			c.pods = s
			if bp.NamespaceSelector != nil {
				if c.podNamespaces, err = metav1.LabelSelectorAsSelector(bp.NamespaceSelector); err != nil {
					return nil, fmt.Errorf("spec.gates.blockingPods.namespaceSelector: %w", err)
				}
			}
			switch bp.Scope {
			case "", v1alpha1.BlockingPodsNode, v1alpha1.BlockingPodsCluster:
			default:
				return nil, fmt.Errorf("spec.gates.blockingPods.scope: %q is not Node or Cluster", bp.Scope)
			}
		}
	}
	if p.Spec.Pacing != nil && p.Spec.Pacing.SettleAfter != nil && p.Spec.Pacing.SettleAfter.Duration < 0 {
		return nil, fmt.Errorf("spec.pacing.settleAfter: %s is negative", p.Spec.Pacing.SettleAfter.Duration)
	}
	if o := p.Spec.Order; o != nil {
		switch o.By {
		case v1alpha1.OrderZone, v1alpha1.OrderOldestFirst, v1alpha1.OrderNewestFirst:
		case v1alpha1.OrderLabelPriority:
			if o.Label == "" || len(o.Priorities) == 0 {
				return nil, errors.New("spec.order: LabelPriority needs label and priorities")
			}
		default:
			return nil, fmt.Errorf("spec.order.by: %q is not Zone, OldestFirst, NewestFirst or LabelPriority", o.By)
		}
	}
	if zb := p.Spec.ZoneBudget; zb != nil {
		if _, err := zoneLimit(zb, 100); err != nil {
			return nil, fmt.Errorf("spec.zoneBudget: %w", err)
		}
	}
	return c, nil
}

// zoneLimit is a zone's budget of nodes out: an integer, or a percentage
// of its nodes rounded down, at least 1 (maxUnavailable's rule).
func zoneLimit(zb *intstr.IntOrString, zoneNodes int) (int, error) {
	n, err := intstr.GetScaledValueFromIntOrPercent(zb, zoneNodes, false)
	if err != nil {
		return 1, err
	}
	if zb.Type == intstr.Int && n < 1 {
		return 1, fmt.Errorf("%d: at least 1", n)
	}
	return max(n, 1), nil
}

// Selects says whether the policy selects the pool (by the pool's labels).
func Selects(p *v1alpha1.RolloutPolicy, pool *mcfgv1.MachineConfigPool) (bool, error) {
	s, err := metav1.LabelSelectorAsSelector(&p.Spec.PoolSelector)
	if err != nil {
		return false, fmt.Errorf("rolloutpolicy %s: spec.poolSelector: %w", p.Name, err)
	}
	return s.Matches(labels.Set(pool.Labels)), nil
}

// PoliciesFor are the policies that select the pool, by name; a policy
// whose selector is invalid is among them (it selects nothing it can tell,
// so it holds every pool: Decide reports it).
func PoliciesFor(pool *mcfgv1.MachineConfigPool, policies []v1alpha1.RolloutPolicy) []*v1alpha1.RolloutPolicy {
	var out []*v1alpha1.RolloutPolicy
	for i := range policies {
		if ok, err := Selects(&policies[i], pool); ok || err != nil {
			out = append(out, &policies[i])
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
