package rolloutgates

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/rolloutcontrol"
)

// BlockingPods lists the pods the gate's selector matches (in every
// namespace, with their node in Spec.NodeName), leaving out those that
// finished, and, when the gate has a namespaceSelector, the labels of
// their namespaces: one pod LIST by the selector (consistent: served from
// the API server's watch cache once it has caught up), and a namespace GET
// per namespace met.
// rolloutcontrol checks both selectors again.
func BlockingPods(ctx context.Context, r client.Reader, g *v1alpha1.BlockingPodsGate) *rolloutcontrol.PodsResult {
	sel, err := metav1.LabelSelectorAsSelector(&g.Selector)
	if err != nil {
		return &rolloutcontrol.PodsResult{Err: fmt.Errorf("spec.gates.blockingPods.selector: %w", err)}
	}
	var list corev1.PodList
	if err := r.List(ctx, &list, client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return &rolloutcontrol.PodsResult{Err: fmt.Errorf("listing pods %s: %w", sel, err)}
	}
	res := &rolloutcontrol.PodsResult{}
	for i := range list.Items {
		p := &list.Items[i]
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		res.Pods = append(res.Pods, p)
	}
	if g.NamespaceSelector == nil || len(res.Pods) == 0 {
		return res
	}
	res.NamespaceLabels = map[string]map[string]string{}
	for _, p := range res.Pods {
		if _, done := res.NamespaceLabels[p.Namespace]; done {
			continue
		}
		var ns corev1.Namespace
		switch err := r.Get(ctx, client.ObjectKey{Name: p.Namespace}, &ns); {
		case apierrors.IsNotFound(err):
			// Being deleted with its pods: no labels, so only a selector
			// that asks for none matches it.
			res.NamespaceLabels[p.Namespace] = map[string]string{}
		case err != nil:
			return &rolloutcontrol.PodsResult{Err: fmt.Errorf("reading namespace %s: %w", p.Namespace, err)}
		default:
			l := ns.Labels
			if l == nil {
				l = map[string]string{}
			}
			res.NamespaceLabels[p.Namespace] = l
		}
	}
	return res
}
