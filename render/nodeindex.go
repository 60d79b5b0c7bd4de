package render

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// NodeLabelIndex indexes a cache's Nodes by each of their labels: under
// "key=value", and under "key" for a selector that only asks that the
// label exists. A pool's nodes are then read from the nodes that carry
// one label its nodeSelector requires, instead of from every node of the
// cluster: at 1,000 nodes in 20 pools, matching every node's labels at
// every reconcile of every pool was a third of ndp-controller's CPU.
const NodeLabelIndex = "ndp.node.label"

// IndexNodeLabels adds NodeLabelIndex to a manager's cache; a PoolView
// whose Reader is that cache may then set NodesIndexed.
func IndexNodeLabels(ctx context.Context, indexer client.FieldIndexer) error {
	if err := indexer.IndexField(ctx, &corev1.Node{}, NodeLabelIndex, nodeLabelKeys); err != nil {
		return fmt.Errorf("indexing nodes by label: %w", err)
	}
	return nil
}

// nodeLabelKeys are a node's NodeLabelIndex values.
func nodeLabelKeys(obj client.Object) []string {
	l := obj.GetLabels()
	out := make([]string, 0, 2*len(l))
	for k, v := range l {
		out = append(out, k, k+"="+v)
	}
	return out
}

// labelIndexKey is the NodeLabelIndex value that narrows a list by sel to
// the nodes that may match it, and false when no requirement of sel names
// one label every match carries (only NotIn, DoesNotExist, or a set of
// values). A requirement's key cannot contain "=", so "key" and
// "key=value" never collide.
func labelIndexKey(sel labels.Selector) (string, bool) {
	reqs, selectable := sel.Requirements()
	if !selectable {
		return "", false
	}
	exists := ""
	for _, r := range reqs {
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals:
			return r.Key() + "=" + r.Values().List()[0], true
		case selection.In:
			if r.Values().Len() == 1 {
				return r.Key() + "=" + r.Values().List()[0], true
			}
			if exists == "" {
				exists = r.Key()
			}
		case selection.Exists:
			if exists == "" {
				exists = r.Key()
			}
		}
	}
	return exists, exists != ""
}
