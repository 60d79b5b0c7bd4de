package clusterdiff

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
)

// liveSource is the Source of every object ReadLive reads.
const liveSource = "the cluster"

// ReadLive reads the objects of every kind of Kinds from a cluster (only
// get and list): all of each, but of ConfigMaps only the policy bundles
// NodeDisruptionPolicies name. A kind the cluster does not serve is
// skipped with a note.
func ReadLive(ctx context.Context, r client.Reader) (*Objects, []string, error) {
	objs, _ := NewObjects()
	var notes []string
	for _, k := range Kinds {
		if k.Namespaced {
			continue // ConfigMaps: below
		}
		list := k.NewList()
		if err := r.List(ctx, list); err != nil {
			// A 404 from discovery is a NoMatch error too (controller-runtime's
			// mapper), a 404 of the list itself NotFound.
			if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
				notes = append(notes, fmt.Sprintf("the cluster does not serve %s: none read", k.Kind))
				continue
			}
			return nil, nil, readError(k, err)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return nil, nil, err
		}
		for _, item := range items {
			obj, ok := item.(client.Object)
			if !ok {
				return nil, nil, fmt.Errorf("reading %s: got %T", k.Kind, item)
			}
			if err := objs.Put(Entry{Object: obj, Source: liveSource}); err != nil {
				return nil, nil, err
			}
		}
	}
	cm, _ := kindOf("", "ConfigMap")
	for _, ref := range bundleRefs(objs) {
		obj := cm.New()
		err := r.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, obj)
		switch {
		case apierrors.IsNotFound(err):
			notes = append(notes, fmt.Sprintf("NodeDisruptionPolicy %s names ConfigMap %s/%s, which the cluster does not hold", ref.policy, ref.Namespace, ref.Name))
			continue
		case err != nil:
			return nil, nil, readError(cm, err)
		}
		if err := objs.Put(Entry{Object: obj, Source: liveSource}); err != nil {
			return nil, nil, err
		}
	}
	return objs, notes, nil
}

func readError(k Kind, err error) error {
	if apierrors.IsForbidden(err) {
		res := k.Resource
		if k.Group != "" {
			res += "." + k.Group
		}
		return fmt.Errorf("reading %s: %w; the diff needs the same read access as the advisor: get and list on %s", k.Kind, err, res)
	}
	return fmt.Errorf("reading %s: %w", k.Kind, err)
}

type bundleRef struct {
	Namespace, Name, policy string
}

// bundleRefs are the ConfigMaps the NodeDisruptionPolicies of objs name,
// in their spec and in the spec in force (which a diff may keep using
// while the current one is rejected), once each.
func bundleRefs(objs *Objects) []bundleRef {
	var out []bundleRef
	seen := map[[2]string]bool{}
	for _, k := range objs.Keys() {
		if k.Group != v1alpha1.GroupVersion.Group || k.Kind != v1alpha1.Kind {
			continue
		}
		e, _ := objs.Lookup(k)
		p, ok := e.Object.(*v1alpha1.NodeDisruptionPolicy)
		if !ok {
			continue
		}
		refs := []*v1alpha1.BundleReference{p.Spec.BundleRef}
		if p.Status.ActiveSpec != nil {
			refs = append(refs, p.Status.ActiveSpec.BundleRef)
		}
		for _, ref := range refs {
			if ref == nil || seen[[2]string{ref.Namespace, ref.Name}] {
				continue
			}
			seen[[2]string{ref.Namespace, ref.Name}] = true
			out = append(out, bundleRef{Namespace: ref.Namespace, Name: ref.Name, policy: p.Name})
		}
	}
	return out
}
