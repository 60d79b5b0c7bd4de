package clusterdiff

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/ndp-dev/ndp/apis/scheme"
)

// Key names an object of a cluster: group, kind, namespace and name.
type Key struct {
	Group, Kind, Namespace, Name string
}

func (k Key) String() string {
	kind := k.Kind
	if k.Group != "" {
		kind += "." + k.Group
	}
	if k.Namespace != "" {
		return kind + " " + k.Namespace + "/" + k.Name
	}
	return kind + " " + k.Name
}

// Entry is one object and where it was read from ("manifests/mc.yaml:12",
// "the cluster", "snapshot.yaml: item 3").
type Entry struct {
	Object client.Object
	Source string
}

// KeyOf is obj's key, by the scheme's kind for its Go type.
func KeyOf(obj client.Object) (Key, error) {
	gvk, err := apiutil.GVKForObject(obj, Scheme)
	if err != nil {
		return Key{}, err
	}
	return Key{Group: gvk.Group, Kind: gvk.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}, nil
}

// Scheme decodes every kind a diff reads: ndp's scheme (ndp's
// MachineConfig, the pools, KubeletConfig, ContainerRuntimeConfig, the
// image-mirror objects, ControllerConfig, MachineConfiguration, Nodes,
// NodeDisruptionPolicy, RolloutPolicy, ConfigMaps for policy bundles).
var Scheme = scheme.New()

// Objects is a cluster's objects by key. It implements client.Reader, so
// that the render and plan code that reads a cluster reads a snapshot, or a
// snapshot with a change set applied, the same way.
type Objects struct {
	byKey map[Key]Entry
}

var _ client.Reader = (*Objects)(nil)

// NewObjects returns the objects of entries; a later entry replaces an
// earlier one of the same key.
func NewObjects(entries ...Entry) (*Objects, error) {
	o := &Objects{byKey: map[Key]Entry{}}
	for _, e := range entries {
		if err := o.Put(e); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// Put adds or replaces an object.
func (o *Objects) Put(e Entry) error {
	k, err := KeyOf(e.Object)
	if err != nil {
		return fmt.Errorf("%s: %w", e.Source, err)
	}
	o.byKey[k] = e
	return nil
}

// Remove removes the object of key k; it tells whether there was one.
func (o *Objects) Remove(k Key) bool {
	_, ok := o.byKey[k]
	delete(o.byKey, k)
	return ok
}

// Lookup is the entry of key k.
func (o *Objects) Lookup(k Key) (Entry, bool) {
	e, ok := o.byKey[k]
	return e, ok
}

// Clone is a copy whose changes do not touch o (the objects themselves are
// shared and must not be modified).
func (o *Objects) Clone() *Objects {
	c := &Objects{byKey: make(map[Key]Entry, len(o.byKey))}
	for k, e := range o.byKey {
		c.byKey[k] = e
	}
	return c
}

// Keys are every key, sorted.
func (o *Objects) Keys() []Key {
	out := make([]Key, 0, len(o.byKey))
	for k := range o.byKey {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// Len is the number of objects.
func (o *Objects) Len() int { return len(o.byKey) }

// Has tells whether any object of the group and kind is present.
func (o *Objects) Has(group, kind string) bool {
	for k := range o.byKey {
		if k.Group == group && k.Kind == kind {
			return true
		}
	}
	return false
}

// Get implements client.Reader: a copy of the stored object.
func (o *Objects) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	gvk, err := apiutil.GVKForObject(obj, Scheme)
	if err != nil {
		return err
	}
	e, ok := o.byKey[Key{Group: gvk.Group, Kind: gvk.Kind, Namespace: key.Namespace, Name: key.Name}]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Group: gvk.Group, Resource: strings.ToLower(gvk.Kind)}, key.Name)
	}
	return assign(obj, e.Object)
}

// List implements client.Reader, with label selectors and namespaces; the
// items are copies, sorted by namespace and name.
func (o *Objects) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	gvk, err := apiutil.GVKForObject(list, Scheme)
	if err != nil {
		return err
	}
	kind, ok := strings.CutSuffix(gvk.Kind, "List")
	if !ok {
		return fmt.Errorf("%s is not a list kind", gvk.Kind)
	}
	var lo client.ListOptions
	lo.ApplyOptions(opts)
	var keys []Key
	for k := range o.byKey {
		if k.Group != gvk.Group || k.Kind != kind || (lo.Namespace != "" && k.Namespace != lo.Namespace) {
			continue
		}
		if lo.LabelSelector != nil && !lo.LabelSelector.Matches(labels.Set(o.byKey[k].Object.GetLabels())) {
			continue
		}
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Namespace != keys[j].Namespace {
			return keys[i].Namespace < keys[j].Namespace
		}
		return keys[i].Name < keys[j].Name
	})
	if lo.Limit > 0 && int64(len(keys)) > lo.Limit {
		keys = keys[:lo.Limit]
	}
	items := make([]runtime.Object, len(keys))
	for i, k := range keys {
		items[i] = o.byKey[k].Object.DeepCopyObject()
	}
	return meta.SetList(list, items)
}

// assign copies src into dst, which must be of the same Go type.
func assign(dst, src client.Object) error {
	dv, sv := reflect.ValueOf(dst), reflect.ValueOf(src.DeepCopyObject())
	if dv.Type() != sv.Type() {
		return fmt.Errorf("reading %T as %T", src, dst)
	}
	dv.Elem().Set(sv.Elem())
	return nil
}
