package render

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
)

// NodeLabelIndex indexes the Node informer of a cache by each label of a
// node: under "key=value", and under "key" for a selector that only asks
// that the label exists. A pool's nodes are then the cache's own objects
// that carry one label its nodeSelector requires, neither every node of the
// cluster matched against the selector nor copies: at 1,000 nodes, listing
// each pool's nodes from the cache at every reconcile (matching every
// node's labels, copying the matches into a list) was a third of
// ndp-controller's CPU.
const NodeLabelIndex = "ndp.dev/node-label"

// NodeIndex is the Node informer's index (client-go's cache.Indexer is
// one) with NodeLabelIndex: IndexNodeLabels returns it.
type NodeIndex interface {
	ByIndex(indexName, indexedValue string) ([]any, error)
}

// IndexNodeLabels adds NodeLabelIndex to the Node informer of a manager's
// cache, before it starts, and returns the informer's index.
func IndexNodeLabels(ctx context.Context, cache crcache.Informers) (NodeIndex, error) {
	inf, err := cache.GetInformer(ctx, &corev1.Node{})
	if err != nil {
		return nil, fmt.Errorf("the cache's Node informer: %w", err)
	}
	withIndex, ok := inf.(interface{ GetIndexer() toolscache.Indexer })
	if !ok {
		return nil, fmt.Errorf("the cache's Node informer (%T) has no index", inf)
	}
	if err := inf.AddIndexers(toolscache.Indexers{NodeLabelIndex: nodeLabelKeys}); err != nil {
		return nil, fmt.Errorf("indexing nodes by label: %w", err)
	}
	return withIndex.GetIndexer(), nil
}

// nodeLabelKeys are a node's NodeLabelIndex values.
func nodeLabelKeys(obj any) ([]string, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return nil, nil
	}
	out := make([]string, 0, 2*len(n.Labels))
	for k, v := range n.Labels {
		out = append(out, k, k+"="+v)
	}
	return out, nil
}

// labelIndexKey is the NodeLabelIndex value that narrows a list by sel to
// the nodes that may match it, and false when no requirement of sel names
// one label every match carries (only NotIn or DoesNotExist). exact: every
// node under the value matches sel (it is sel's one requirement). A
// requirement's key cannot contain "=", so "key" and "key=value" never
// collide.
func labelIndexKey(sel labels.Selector) (key string, exact, ok bool) {
	reqs, selectable := sel.Requirements()
	if !selectable {
		return "", false, false
	}
	for _, r := range reqs {
		if op := r.Operator(); op == selection.Equals || op == selection.DoubleEquals || (op == selection.In && r.Values().Len() == 1) {
			return r.Key() + "=" + r.Values().List()[0], len(reqs) == 1, true
		}
	}
	for _, r := range reqs {
		switch r.Operator() {
		case selection.Exists:
			return r.Key(), len(reqs) == 1, true
		case selection.In:
			return r.Key(), false, true
		}
	}
	return "", false, false
}

// indexedNodes are the nodes of index that sel selects, the index's own
// objects; false when sel has no label to look them up by.
func indexedNodes(index NodeIndex, sel labels.Selector) ([]*corev1.Node, bool, error) {
	key, exact, ok := labelIndexKey(sel)
	if !ok {
		return nil, false, nil
	}
	objs, err := index.ByIndex(NodeLabelIndex, key)
	if err != nil {
		return nil, true, err
	}
	nodes := make([]*corev1.Node, 0, len(objs))
	for _, o := range objs {
		n, isNode := o.(*corev1.Node)
		if isNode && (exact || sel.Matches(labels.Set(n.Labels))) {
			nodes = append(nodes, n)
		}
	}
	return nodes, true, nil
}
