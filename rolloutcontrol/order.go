package rolloutcontrol

import (
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
)

// ZoneLabel is the label the Zone order and the zone budget read.
const ZoneLabel = corev1.LabelTopologyZone

// zoneLess is the Zone order, ndp's without a policy (the MCO's
// sortNodeList, ties by name): nodes with a zone first, by zone, then
// oldest first; nodes without one last, oldest first; then by name.
func zoneLess(a, b *corev1.Node) bool {
	za, aok := a.Labels[ZoneLabel]
	zb, bok := b.Labels[ZoneLabel]
	switch {
	case aok != bok:
		return aok
	case za != zb:
		return za < zb
	case !a.CreationTimestamp.Equal(&b.CreationTimestamp):
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

// SortNodes sorts nodes in the order's order; nil is Zone. Ties end by
// name, so the order never depends on how the nodes were listed.
func SortNodes(nodes []*corev1.Node, o *v1alpha1.RolloutOrder) {
	by := v1alpha1.OrderZone
	if o != nil {
		by = o.By
	}
	age := func(a, b *corev1.Node, newest bool) (less, decided bool) {
		if a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return false, false
		}
		if newest {
			return b.CreationTimestamp.Before(&a.CreationTimestamp), true
		}
		return a.CreationTimestamp.Before(&b.CreationTimestamp), true
	}
	var less func(a, b *corev1.Node) bool
	switch by {
	case v1alpha1.OrderOldestFirst, v1alpha1.OrderNewestFirst:
		less = func(a, b *corev1.Node) bool {
			if l, ok := age(a, b, by == v1alpha1.OrderNewestFirst); ok {
				return l
			}
			return a.Name < b.Name
		}
	case v1alpha1.OrderLabelPriority:
		rank := func(n *corev1.Node) int {
			v, ok := n.Labels[o.Label]
			if !ok {
				return len(o.Priorities) + 1
			}
			if i := slices.Index(o.Priorities, v); i >= 0 {
				return i
			}
			return len(o.Priorities)
		}
		less = func(a, b *corev1.Node) bool {
			if ra, rb := rank(a), rank(b); ra != rb {
				return ra < rb
			}
			return zoneLess(a, b)
		}
	default:
		less = zoneLess
	}
	sort.SliceStable(nodes, func(i, j int) bool { return less(nodes[i], nodes[j]) })
}
