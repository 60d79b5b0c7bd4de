package rolloutgates

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/rolloutcontrol"
)

// DrainedNotReady lists the owners of the drained pods d that are not back
// (rolloutcontrol.DrainedNotReady), read from the API server without
// watching pods: a watch of every pod of the cluster would cost the
// controller each pod's every change, for a question asked once per node.
//
// An owner that is a ReplicaSet, StatefulSet or ReplicationController is
// read first: one whose status says every pod it wants exists and is Ready
// has none on its way, and one deleted or replaced has none to bring back;
// neither is waited for, and its pods are not read. Only the pods of the
// other owners are listed — by the owner's selector, or, for another kind
// of owner, every pod of its namespace — and judged one by one. Reads are
// consistent (a list is served from the API server's watch cache once it
// has caught up; resourceVersion 0 could answer with a pod's older state).
// Requests: one GET per owner of those kinds, one LIST per owner that may
// have pods on their way (one per namespace for other kinds).
func DrainedNotReady(ctx context.Context, r client.Reader, d *v1alpha1.DrainedPods) ([]string, error) {
	if d == nil || len(d.Owners) == 0 {
		return nil, nil
	}
	type listKey struct{ namespace, selector string }
	lists := map[listKey]labels.Selector{}
	var keys []listKey
	for _, o := range d.Owners {
		v, err := readOwner(ctx, r, o)
		if err != nil {
			return nil, err
		}
		if v.gone || v.settled {
			continue
		}
		k := listKey{namespace: o.Namespace}
		if v.selector != nil {
			k.selector = v.selector.String()
		}
		if _, ok := lists[k]; !ok {
			lists[k] = v.selector
			keys = append(keys, k)
		}
	}
	seen := map[types.UID]bool{}
	var pods []*corev1.Pod
	for _, k := range keys {
		opts := []client.ListOption{client.InNamespace(k.namespace)}
		if sel := lists[k]; sel != nil {
			opts = append(opts, client.MatchingLabelsSelector{Selector: sel})
		}
		var list corev1.PodList
		if err := r.List(ctx, &list, opts...); err != nil {
			what := "every pod of namespace " + k.namespace
			if k.selector != "" {
				what = fmt.Sprintf("the pods of namespace %s matching %s", k.namespace, k.selector)
			}
			return nil, fmt.Errorf("listing %s: %w", what, err)
		}
		for i := range list.Items {
			if p := &list.Items[i]; !seen[p.UID] {
				seen[p.UID] = true
				pods = append(pods, p)
			}
		}
	}
	return rolloutcontrol.DrainedNotReady(d, pods), nil
}

// ownerView is what an owner's object says of its pods.
type ownerView struct {
	// gone: deleted, being deleted, or another object of its name.
	gone bool
	// settled: every pod it wants exists and is Ready, as of its current
	// spec: none is on its way.
	settled bool
	// selector of its pods; nil: not known (every pod of its namespace).
	selector labels.Selector
}

// Groups of the owners read before their pods.
var (
	appsGroup = appsv1.SchemeGroupVersion.Group
	coreGroup = corev1.SchemeGroupVersion.Group
)

// readOwner reads o when it is of a kind whose status counts its Ready
// pods; any other owner's view is "not settled, selector unknown".
func readOwner(ctx context.Context, r client.Reader, o v1alpha1.DrainedOwner) (ownerView, error) {
	var obj client.Object
	switch kindOf(o) {
	case schema.GroupKind{Group: appsGroup, Kind: "ReplicaSet"}:
		obj = &appsv1.ReplicaSet{}
	case schema.GroupKind{Group: appsGroup, Kind: "StatefulSet"}:
		obj = &appsv1.StatefulSet{}
	case schema.GroupKind{Group: coreGroup, Kind: "ReplicationController"}:
		obj = &corev1.ReplicationController{}
	default:
		return ownerView{}, nil
	}
	err := r.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Name}, obj)
	if apierrors.IsNotFound(err) {
		return ownerView{gone: true}, nil
	}
	if err != nil {
		return ownerView{}, fmt.Errorf("reading %s %s/%s, an owner of drained pods: %w", o.Kind, o.Namespace, o.Name, err)
	}
	return viewOwner(obj, o.UID), nil
}

// kindOf is the owner's group and kind; an owner recorded without its
// apiVersion (by an older daemon) is taken for the built-in kind of its
// name.
func kindOf(o v1alpha1.DrainedOwner) schema.GroupKind {
	if o.APIVersion == "" {
		switch o.Kind {
		case "ReplicaSet", "StatefulSet":
			return schema.GroupKind{Group: appsGroup, Kind: o.Kind}
		}
		return schema.GroupKind{Group: coreGroup, Kind: o.Kind}
	}
	gv, err := schema.ParseGroupVersion(o.APIVersion)
	if err != nil {
		return schema.GroupKind{Group: "?" + o.APIVersion, Kind: o.Kind} // no kind read first
	}
	return schema.GroupKind{Group: gv.Group, Kind: o.Kind}
}

// viewOwner is what obj (a ReplicaSet, StatefulSet or
// ReplicationController) says of the pods of the owner whose UID is uid.
func viewOwner(obj client.Object, uid types.UID) ownerView {
	if obj.GetUID() != uid || obj.GetDeletionTimestamp() != nil {
		return ownerView{gone: true}
	}
	var (
		want                      *int32
		observed, replicas, ready int64
		sel                       labels.Selector
	)
	switch o := obj.(type) {
	case *appsv1.ReplicaSet:
		want, observed, replicas, ready = o.Spec.Replicas, o.Status.ObservedGeneration, int64(o.Status.Replicas), int64(o.Status.ReadyReplicas)
		sel = selectorOf(o.Spec.Selector)
	case *appsv1.StatefulSet:
		want, observed, replicas, ready = o.Spec.Replicas, o.Status.ObservedGeneration, int64(o.Status.Replicas), int64(o.Status.ReadyReplicas)
		sel = selectorOf(o.Spec.Selector)
	case *corev1.ReplicationController:
		want, observed, replicas, ready = o.Spec.Replicas, o.Status.ObservedGeneration, int64(o.Status.Replicas), int64(o.Status.ReadyReplicas)
		if len(o.Spec.Selector) > 0 {
			sel = labels.SelectorFromSet(o.Spec.Selector)
		}
	default:
		return ownerView{}
	}
	wanted := int64(1) // the API's default
	if want != nil {
		wanted = int64(*want)
	}
	// Its status is of its current spec, counts as many pods as it wants,
	// and all of them Ready.
	settled := observed >= obj.GetGeneration() && replicas >= wanted && ready >= replicas
	return ownerView{settled: settled, selector: sel}
}

// selectorOf is s as a labels.Selector; nil for none, an empty one or one
// that does not parse (the namespace's pods are read instead: a selector
// is only a narrowing, the pods are matched to their owner by UID).
func selectorOf(s *metav1.LabelSelector) labels.Selector {
	if s == nil || (len(s.MatchLabels) == 0 && len(s.MatchExpressions) == 0) {
		return nil
	}
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil || strings.TrimSpace(sel.String()) == "" {
		return nil
	}
	return sel
}
