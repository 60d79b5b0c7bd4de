package render

import (
	"context"
	"fmt"
	"sort"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/nodepool"
)

// PoolView reads, for one MachineConfigPool, what its rendering and its
// plans start from: the render controller takes its sources, the plan
// controller its nodes by current config, and the admission webhook's
// preview both, from the same code.
type PoolView struct {
	Pool   *mcfgv1.MachineConfigPool
	Reader client.Reader

	// Shared lists with client.UnsafeDisableDeepCopy: the objects returned
	// are the cache's own, and must not be modified (a cache-backed reader
	// only; the webhook's previews read this way).
	Shared bool
	// NodeIndex, when set, is where the pool's nodes are read: the Node
	// informer's index of Reader's cache (IndexNodeLabels), whose objects,
	// as Shared ones, must not be modified. Nodes are read from Reader when
	// the pool's nodeSelector has no label to look them up by.
	NodeIndex NodeIndex
	// SingleNodeFunc, when set, tells whether the cluster has a single node
	// instead of listing every node (the webhook counts nodes from its
	// informer).
	SingleNodeFunc func(context.Context) (bool, error)
}

// NewPoolView returns the view of pool read through r.
func NewPoolView(r client.Reader, pool *mcfgv1.MachineConfigPool) *PoolView {
	return &PoolView{Pool: pool, Reader: r}
}

// NewCachedPoolView returns the view of pool read from a manager's cache
// without copies: Shared, and its nodes from nodes, the cache's Node index
// (IndexNodeLabels). The controllers that read a pool's nodes at every
// step use it.
func NewCachedPoolView(cache client.Reader, nodes NodeIndex, pool *mcfgv1.MachineConfigPool) *PoolView {
	return &PoolView{Pool: pool, Reader: cache, Shared: true, NodeIndex: nodes}
}

// SelectorError is a pool selector that selects nothing it could be
// rendered or planned from: missing (machineConfigSelector) or invalid.
// The render controller reports it on the pool.
type SelectorError struct {
	Pool  string
	Field string // spec.machineConfigSelector or spec.nodeSelector
	Err   error  // nil when the selector is missing
}

func (e *SelectorError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("MachineConfigPool %q: %s: missing", e.Pool, e.Field)
	}
	return fmt.Sprintf("MachineConfigPool %q: %s: %v", e.Pool, e.Field, e.Err)
}

func (e *SelectorError) Unwrap() error { return e.Err }

func (v *PoolView) listOptions(opts ...client.ListOption) []client.ListOption {
	if v.Shared {
		opts = append(opts, client.UnsafeDisableDeepCopy)
	}
	return opts
}

// MachineConfigSelector is the pool's machineConfigSelector; a missing or
// invalid one is a *SelectorError.
func (v *PoolView) MachineConfigSelector() (labels.Selector, error) {
	if v.Pool.Spec.MachineConfigSelector == nil {
		return nil, &SelectorError{Pool: v.Pool.Name, Field: "spec.machineConfigSelector"}
	}
	sel, err := metav1.LabelSelectorAsSelector(v.Pool.Spec.MachineConfigSelector)
	if err != nil {
		return nil, &SelectorError{Pool: v.Pool.Name, Field: "spec.machineConfigSelector", Err: err}
	}
	return sel, nil
}

// Sources returns the MachineConfigs the pool's rendering merges, sorted by
// name: those its machineConfigSelector selects, but for rendered configs
// (labelled ndpmcv1.RenderedForLabel).
func (v *PoolView) Sources(ctx context.Context) ([]*ndpmcv1.MachineConfig, error) {
	sel, err := v.MachineConfigSelector()
	if err != nil {
		return nil, err
	}
	var list ndpmcv1.MachineConfigList
	if err := v.Reader.List(ctx, &list, v.listOptions(client.MatchingLabelsSelector{Selector: sel})...); err != nil {
		return nil, fmt.Errorf("listing the MachineConfigs of pool %q: %w", v.Pool.Name, err)
	}
	out := make([]*ndpmcv1.MachineConfig, 0, len(list.Items))
	for i := range list.Items {
		if _, rendered := list.Items[i].Labels[ndpmcv1.RenderedForLabel]; !rendered {
			out = append(out, &list.Items[i])
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Nodes returns the nodes the pool manages: those its nodeSelector selects
// (none without one) whose primary pool it is (nodepool.Primary). A node
// that another pool manages, that no pool may manage (two custom pools) or
// that runs Windows is not among them. An invalid selector of the pool is a
// *SelectorError.
func (v *PoolView) Nodes(ctx context.Context) ([]*corev1.Node, error) {
	nodes, _, err := v.Members(ctx)
	return nodes, err
}

// Members returns the nodes the pool manages (Nodes), and the nodes its
// nodeSelector selects that no pool manages, each with why: the pool
// status controller reports them.
func (v *PoolView) Members(ctx context.Context) ([]*corev1.Node, []nodepool.Unmanaged, error) {
	sel, err := metav1.LabelSelectorAsSelector(v.Pool.Spec.NodeSelector)
	if err != nil {
		return nil, nil, &SelectorError{Pool: v.Pool.Name, Field: "spec.nodeSelector", Err: err}
	}
	if v.Pool.Spec.NodeSelector == nil || sel.Empty() {
		return nil, nil, nil // selects nothing, as the MCO reads it
	}
	nodes, err := v.selectNodes(ctx, sel)
	if err != nil {
		return nil, nil, fmt.Errorf("listing the nodes of pool %q: %w", v.Pool.Name, err)
	}
	if len(nodes) == 0 {
		return nil, nil, nil
	}
	var pools mcfgv1.MachineConfigPoolList
	if err := v.Reader.List(ctx, &pools, client.UnsafeDisableDeepCopy); err != nil {
		return nil, nil, fmt.Errorf("listing MachineConfigPools: %w", err)
	}
	all := make([]*mcfgv1.MachineConfigPool, 0, len(pools.Items)+1)
	self := false
	for i := range pools.Items {
		if pools.Items[i].Name == v.Pool.Name {
			// The pool as the caller read it: a cache may be behind.
			all = append(all, v.Pool)
			self = true
			continue
		}
		all = append(all, &pools.Items[i])
	}
	if !self {
		all = append(all, v.Pool) // a pool being created (a preview)
	}
	members, unmanaged, err := nodepool.Members(v.Pool, all, nodes)
	if err != nil {
		return nil, nil, &SelectorError{Pool: v.Pool.Name, Field: "spec.nodeSelector", Err: err}
	}
	return members, unmanaged, nil
}

// selectNodes are the nodes sel selects: from NodeIndex when sel has a
// label to look them up by, else from Reader.
func (v *PoolView) selectNodes(ctx context.Context, sel labels.Selector) ([]*corev1.Node, error) {
	if v.NodeIndex != nil {
		if nodes, indexed, err := indexedNodes(v.NodeIndex, sel); indexed {
			return nodes, err
		}
	}
	var list corev1.NodeList
	if err := v.Reader.List(ctx, &list, v.listOptions(client.MatchingLabelsSelector{Selector: sel})...); err != nil {
		return nil, err
	}
	nodes := make([]*corev1.Node, len(list.Items))
	for i := range list.Items {
		nodes[i] = &list.Items[i]
	}
	return nodes, nil
}

// NodesByConfig returns the pool's nodes by the config they run today
// (ndpmcv1.CurrentConfigAnnotation); nodes that run none ndp knows of yet
// are under "".
func (v *PoolView) NodesByConfig(ctx context.Context) (map[string][]*corev1.Node, error) {
	nodes, err := v.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string][]*corev1.Node{}
	for _, n := range nodes {
		cur := n.Annotations[ndpmcv1.CurrentConfigAnnotation]
		out[cur] = append(out[cur], n)
	}
	return out, nil
}

// SingleNode tells whether the cluster has a single node, which is never
// drained: the planner's Request.SingleNode.
func (v *PoolView) SingleNode(ctx context.Context) (bool, error) {
	if v.SingleNodeFunc != nil {
		return v.SingleNodeFunc(ctx)
	}
	return SingleNode(ctx, v.Reader)
}

// SingleNode tells whether the cluster has a single node. It lists at most
// two, and a cache-backed reader hands out its own objects: the plan
// controller asks on every reconcile, and a cluster has thousands of
// nodes.
func SingleNode(ctx context.Context, r client.Reader, opts ...client.ListOption) (bool, error) {
	var list corev1.NodeList
	if err := r.List(ctx, &list, append(opts, client.Limit(2), client.UnsafeDisableDeepCopy)...); err != nil {
		return false, fmt.Errorf("listing nodes: %w", err)
	}
	return len(list.Items) == 1, nil
}
