// Package nodepool decides which MachineConfigPool manages a node: the
// Machine Config Operator's primary-pool rule (GetPoolsForNode in its
// pkg/controller/common/helpers.go). A node is selected by every pool whose
// nodeSelector matches its labels, yet exactly one pool manages it, or none:
//
//   - master wins over worker (compact clusters label every node both);
//   - a custom pool (infra, ...) wins over worker;
//   - master wins over a custom pool (OCPBUGS-2177: a control-plane node may
//     be labelled infra and stay a master);
//   - a node selected by two custom pools is managed by none: an error;
//   - a Windows node (kubernetes.io/os=windows) is never managed;
//   - a pool with an empty nodeSelector selects nothing, not everything.
//
// The plan, rollout and pool status controllers, the webhook's
// previews and `ndp status` all read membership from here, so a node is
// counted once and sent only to its own pool's target.
package nodepool

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The two base pools, by name, as the MCO has them.
const (
	Master = "master"
	Worker = "worker"
)

// ConflictError is why no pool manages a node that pools select: it is in
// two or more custom pools, or a pool's nodeSelector is invalid (the MCO
// then manages no node at all: which nodes that pool was meant to take
// cannot be known, and letting another pool take them could reconfigure
// them for the wrong role).
type ConflictError struct {
	Node string
	// Pools are the custom pools that select the node, sorted; for an
	// invalid selector, the pool that has it.
	Pools []string
	// Selector is the invalid nodeSelector's error, nil for a conflict of
	// custom pools.
	Selector error
}

func (e *ConflictError) Error() string {
	if e.Selector != nil {
		return fmt.Sprintf("node %s: no pool manages it: MachineConfigPool %s has an invalid spec.nodeSelector: %v", e.Node, strings.Join(e.Pools, ", "), e.Selector)
	}
	return fmt.Sprintf("node %s belongs to %d custom pools (%s): no pool manages it until it is in one at most", e.Node, len(e.Pools), strings.Join(e.Pools, ", "))
}

// IsWindows tells whether the kubelet reports a Windows node (its
// kubernetes.io/os label): such nodes are never managed.
func IsWindows(n *corev1.Node) bool {
	return n.Labels[corev1.LabelOSStable] == "windows"
}

// Pools are a cluster's pools with their nodeSelectors parsed once: a
// reconcile asks which pool manages each of hundreds of nodes.
type Pools struct {
	pools []*mcfgv1.MachineConfigPool
	sels  []labels.Selector // nil: selects nothing
	errs  []error           // an invalid nodeSelector
}

// NewPools parses the nodeSelectors of pools.
func NewPools(pools []*mcfgv1.MachineConfigPool) *Pools {
	p := &Pools{pools: pools, sels: make([]labels.Selector, len(pools)), errs: make([]error, len(pools))}
	for i, pool := range pools {
		sel, err := metav1.LabelSelectorAsSelector(pool.Spec.NodeSelector)
		switch {
		case err != nil:
			p.errs[i] = err
		case !sel.Empty():
			p.sels[i] = sel
		}
	}
	return p
}

// ForNode returns the pools of a node, the one that manages it (its
// primary pool) first: for a node of a custom pool that is also a worker,
// the worker pool follows. None for a Windows node or one no pool selects;
// a *ConflictError when pools select it but none may manage it.
func (ps *Pools) ForNode(node *corev1.Node) ([]*mcfgv1.MachineConfigPool, error) {
	if IsWindows(node) {
		return nil, nil
	}
	var master, worker *mcfgv1.MachineConfigPool
	var custom []*mcfgv1.MachineConfigPool
	for i, p := range ps.pools {
		if ps.errs[i] != nil {
			return nil, &ConflictError{Node: node.Name, Pools: []string{p.Name}, Selector: ps.errs[i]}
		}
		if ps.sels[i] == nil || !ps.sels[i].Matches(labels.Set(node.Labels)) {
			continue
		}
		switch p.Name {
		case Master:
			master = p
		case Worker:
			worker = p
		default:
			custom = append(custom, p)
		}
	}
	var out []*mcfgv1.MachineConfigPool
	switch {
	case len(custom) > 1:
		names := make([]string, len(custom))
		for i, p := range custom {
			names[i] = p.Name
		}
		sort.Strings(names)
		return nil, &ConflictError{Node: node.Name, Pools: names}
	case len(custom) == 1 && master != nil:
		out = append(out, master)
	case len(custom) == 1:
		out = append(out, custom[0])
	case master != nil:
		return []*mcfgv1.MachineConfigPool{master}, nil
	case worker != nil:
		return []*mcfgv1.MachineConfigPool{worker}, nil
	default:
		return nil, nil
	}
	if worker != nil {
		out = append(out, worker)
	}
	return out, nil
}

// Primary returns the pool that manages node: nil when no pool does
// (ForNode).
func (ps *Pools) Primary(node *corev1.Node) (*mcfgv1.MachineConfigPool, error) {
	pools, err := ps.ForNode(node)
	if err != nil || len(pools) == 0 {
		return nil, err
	}
	return pools[0], nil
}

// ForNode is NewPools(pools).ForNode(node).
func ForNode(node *corev1.Node, pools []*mcfgv1.MachineConfigPool) ([]*mcfgv1.MachineConfigPool, error) {
	return NewPools(pools).ForNode(node)
}

// Primary is NewPools(pools).Primary(node).
func Primary(node *corev1.Node, pools []*mcfgv1.MachineConfigPool) (*mcfgv1.MachineConfigPool, error) {
	return NewPools(pools).Primary(node)
}

// Unmanaged is a node a pool selects that no pool manages.
type Unmanaged struct {
	Node *corev1.Node
	Err  *ConflictError
}

// Members splits the nodes that pool selects into those it manages (its
// primary pool is pool) and those no pool manages, each with why. Nodes
// another pool manages, and Windows nodes, are in neither. pools is every
// pool of the cluster, pool among them. An invalid selector of pool itself
// is an error.
func Members(pool *mcfgv1.MachineConfigPool, pools []*mcfgv1.MachineConfigPool, nodes []*corev1.Node) (members []*corev1.Node, unmanaged []Unmanaged, err error) {
	sel, err := metav1.LabelSelectorAsSelector(pool.Spec.NodeSelector)
	if err != nil {
		return nil, nil, err
	}
	if sel.Empty() {
		return nil, nil, nil
	}
	ps := NewPools(pools)
	for _, n := range nodes {
		if !sel.Matches(labels.Set(n.Labels)) {
			continue
		}
		primary, err := ps.Primary(n)
		var c *ConflictError
		if errors.As(err, &c) {
			unmanaged = append(unmanaged, Unmanaged{Node: n, Err: c})
			continue
		}
		if primary != nil && primary.Name == pool.Name {
			members = append(members, n)
		}
	}
	return members, unmanaged, nil
}

// MaxUnavailable is the pool's budget of nodes out at once: an integer or
// a percentage of its nodes, rounded down, at least 1 (the Machine Config
// Operator's rule).
func MaxUnavailable(pool *mcfgv1.MachineConfigPool, nodes int) (int, error) {
	mu := intstr.FromInt(1)
	if pool.Spec.MaxUnavailable != nil {
		mu = *pool.Spec.MaxUnavailable
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(&mu, nodes, false)
	if err != nil {
		return 1, fmt.Errorf("MachineConfigPool %q: spec.maxUnavailable: %w", pool.Name, err)
	}
	return max(n, 1), nil
}
