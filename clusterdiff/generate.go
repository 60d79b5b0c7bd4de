package clusterdiff

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/mco/mcorender"
	"github.com/ndp-dev/ndp/nodeconfig"
	"github.com/ndp-dev/ndp/render"
)

// generator writes into after the MachineConfigs the controllers would
// write for the change set's KubeletConfigs, ContainerRuntimeConfigs and
// image-mirror objects, as the MCO's controllers (or ndp's, which name and
// render them the same way) do. Only what the change set touches is
// rendered again: a generated MachineConfig the change set does not
// concern stays as the cluster has it, so that a difference between ndp's
// rendering and the MCO's of the same version never shows as a change.
type generator struct {
	before, after *Objects
	mode          string
	// owners maps a generated MachineConfig's name to the objects it is
	// rendered from, for the report's causes.
	owners map[string][]string
	// touched are the generated MachineConfigs written or removed.
	touched map[string]bool
}

// generatedKind is what differs between KubeletConfig and
// ContainerRuntimeConfig.
type generatedKind struct {
	kind     nodeconfig.Kind
	apiKind  string
	owner    func(client.Object) nodeconfig.Owner
	validate func(client.Object) error
	ignition func(pool string, mcs []*ndpmcv1.MachineConfig, obj client.Object) ([]byte, error)
}

var generatedKinds = []generatedKind{
	{
		kind: nodeconfig.KindKubelet, apiKind: "KubeletConfig",
		owner: func(o client.Object) nodeconfig.Owner {
			return nodeconfig.OwnerOfKubeletConfig(o.(*mcfgv1.KubeletConfig))
		},
		validate: func(o client.Object) error { return nodeconfig.ValidateKubeletConfig(o.(*mcfgv1.KubeletConfig)) },
		ignition: func(pool string, mcs []*ndpmcv1.MachineConfig, o client.Object) ([]byte, error) {
			return render.KubeletConfigIgnition(pool, mcs, o.(*mcfgv1.KubeletConfig))
		},
	},
	{
		kind: nodeconfig.KindContainerRuntime, apiKind: "ContainerRuntimeConfig",
		owner: func(o client.Object) nodeconfig.Owner {
			return nodeconfig.OwnerOfContainerRuntimeConfig(o.(*mcfgv1.ContainerRuntimeConfig))
		},
		validate: func(o client.Object) error {
			return nodeconfig.ValidateContainerRuntimeConfig(o.(*mcfgv1.ContainerRuntimeConfig))
		},
		ignition: func(pool string, mcs []*ndpmcv1.MachineConfig, o client.Object) ([]byte, error) {
			return render.ContainerRuntimeConfigIgnition(pool, mcs, o.(*mcfgv1.ContainerRuntimeConfig))
		},
	},
}

func (k generatedKind) list(o *Objects) ([]client.Object, error) {
	var out []client.Object
	switch k.kind {
	case nodeconfig.KindKubelet:
		var l mcfgv1.KubeletConfigList
		if err := o.List(context.Background(), &l); err != nil {
			return nil, err
		}
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	default:
		var l mcfgv1.ContainerRuntimeConfigList
		if err := o.List(context.Background(), &l); err != nil {
			return nil, err
		}
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	}
	return out, nil
}

// generate renders, for every changed object of the kind (changed: its
// name, with nil before for a create and nil after for a delete), the
// MachineConfigs of the pools it selects before or after, as the
// webhook's preview does for one object.
func (g *generator) generate(ctx context.Context, k generatedKind, changed []string, sources map[string]string, only poolFilter) error {
	if len(changed) == 0 {
		return nil
	}
	pools, err := poolsOf(g.after)
	if err != nil {
		return err
	}
	for _, name := range changed {
		oldObj, newObj := g.lookupOwner(g.before, k, name), g.lookupOwner(g.after, k, name)
		object := fmt.Sprintf("%s %q", k.apiKind, name)
		if src := sources[name]; src != "" {
			object = src + ": " + object
		}
		if newObj != nil {
			if err := k.validate(newObj); err != nil {
				return fmt.Errorf("%s: the MCO's %s controller refuses it: %w", object, k.apiKind, err)
			}
		}
		for _, pool := range pools {
			if !only.has(pool.Name) {
				continue
			}
			inOld, inNew := false, false
			if oldObj != nil {
				inOld, _ = nodeconfig.SelectsPool(k.owner(oldObj).Selector, pool)
			}
			if newObj != nil {
				if inNew, err = nodeconfig.SelectsPool(k.owner(newObj).Selector, pool); err != nil {
					return fmt.Errorf("%s: %w", object, err)
				}
			}
			if inOld {
				all, err := k.owners(g.before)
				if err != nil {
					return err
				}
				if mcName, err := nodeconfig.ManagedName(k.kind, pool, k.owner(oldObj), all, g.before.hasMachineConfig); err == nil {
					g.remove(mcName)
				}
			}
			if !inNew {
				continue
			}
			all, err := k.owners(g.after)
			if err != nil {
				return err
			}
			owner := k.owner(newObj)
			mcName, err := nodeconfig.ManagedName(k.kind, pool, owner, all, g.after.hasMachineConfig)
			if err != nil {
				return fmt.Errorf("%s for pool %s: %w", object, pool.Name, err)
			}
			mcs, err := render.NewPoolView(g.after, pool).Sources(ctx)
			if err != nil {
				return err
			}
			ign, err := k.ignition(pool.Name, mcs, newObj)
			if err != nil {
				return fmt.Errorf("%s for pool %s: %w", object, pool.Name, err)
			}
			mc := render.GeneratedMachineConfig(mcName, pool.Name, ign)
			mc.Annotations = map[string]string{ndpmcv1.GeneratedByControllerVersionAnnotation: generatedBy}
			mc.OwnerReferences = []metav1.OwnerReference{{APIVersion: mcfgv1.GroupVersion.String(), Kind: k.apiKind, Name: name, Controller: ptr.To(true)}}
			if err := g.put(mc, k.apiKind+" "+name); err != nil {
				return err
			}
			g.recordSuffix(k, newObj, mcName, pool.Name)
		}
	}
	return nil
}

// poolFilter names the pools to render for; nil is every pool.
type poolFilter map[string]bool

func (f poolFilter) has(pool string) bool { return f == nil || f[pool] }

// generatedBy marks the MachineConfigs a diff renders as a controller's
// (render.Source.Generated), as the MCO marks its own.
const generatedBy = "ndp diff"

// recordSuffix notes the name the controller gave a new object, as the MCO
// does in its annotation, so that a second new object of the kind in the
// same change set takes the next name.
func (g *generator) recordSuffix(k generatedKind, obj client.Object, mcName, pool string) {
	if _, ok := obj.GetAnnotations()[nodeconfig.MCNameSuffixAnnotation]; ok {
		return
	}
	cp := obj.DeepCopyObject().(client.Object)
	ann := map[string]string{}
	for key, v := range cp.GetAnnotations() {
		ann[key] = v
	}
	ann[nodeconfig.MCNameSuffixAnnotation] = nodeconfig.Suffix(k.kind, pool, mcName)
	cp.SetAnnotations(ann)
	key, err := KeyOf(cp)
	if err != nil {
		return
	}
	e, _ := g.after.Lookup(key)
	e.Object = cp
	_ = g.after.Put(e)
}

func (k generatedKind) owners(o *Objects) ([]nodeconfig.Owner, error) {
	objs, err := k.list(o)
	if err != nil {
		return nil, err
	}
	out := make([]nodeconfig.Owner, len(objs))
	for i, obj := range objs {
		out[i] = k.owner(obj)
	}
	return out, nil
}

func (g *generator) lookupOwner(o *Objects, k generatedKind, name string) client.Object {
	key := Key{Group: mcfgv1.GroupName, Kind: k.apiKind, Name: name}
	if e, ok := o.Lookup(key); ok {
		return e.Object
	}
	return nil
}

// registries renders every pool's 99-<pool>-generated-registries with the
// image-mirror objects and image config of after: the MCO's files
// (mcorender.RegistriesIgnition) from the pool's template files, or ndp's
// (render.RegistriesConfig) from ndp's base; registries.conf is the same
// rendering in both.
func (g *generator) registries(ctx context.Context, owners []string, only poolFilter) error {
	pools, err := poolsOf(g.after)
	if err != nil {
		return err
	}
	in, err := mcorender.RegistriesInputs(ctx, g.after)
	if err != nil {
		return err
	}
	var ndpIgn []byte
	if g.mode == ModeNDP {
		if ndpIgn, _, err = render.RegistriesConfig(render.DefaultRegistriesBase, in.IDMS, in.ITMS, in.ICSP); err != nil {
			return fmt.Errorf("registries.conf cannot be rendered: %w", err)
		}
	}
	for _, pool := range pools {
		if !only.has(pool.Name) {
			continue
		}
		name := render.GeneratedRegistriesName(pool.Name)
		ign := ndpIgn
		if g.mode == ModeMCO {
			mcs, err := render.NewPoolView(g.after, pool).Sources(ctx)
			if err != nil {
				return err
			}
			if ign, err = mcorender.RegistriesIgnition(pool.Name, mcs, in); err != nil {
				return err
			}
		}
		mc := render.GeneratedMachineConfig(name, pool.Name, ign)
		mc.Annotations = map[string]string{ndpmcv1.GeneratedByControllerVersionAnnotation: generatedBy}
		if err := g.put(mc, owners...); err != nil {
			return err
		}
	}
	return nil
}

// put writes a generated MachineConfig into after, keeping the cluster's
// own object (its metadata) when the rendering is the same.
func (g *generator) put(mc *ndpmcv1.MachineConfig, owners ...string) error {
	key := Key{Group: mcfgv1.GroupName, Kind: "MachineConfig", Name: mc.Name}
	g.owners[mc.Name] = owners
	if e, ok := g.before.Lookup(key); ok && sameSpec(e.Object.(*ndpmcv1.MachineConfig), mc) {
		_ = g.after.Put(e)
		delete(g.touched, mc.Name)
		return nil
	}
	if e, ok := g.before.Lookup(key); ok {
		// The cluster's metadata (its labels, owner, creation) stays.
		cur := e.Object.(*ndpmcv1.MachineConfig).DeepCopy()
		cur.Spec = mc.Spec
		mc = cur
	}
	g.touched[mc.Name] = true
	return g.after.Put(Entry{Object: mc, Source: "generated"})
}

func (g *generator) remove(name string) {
	if g.after.Remove(Key{Group: mcfgv1.GroupName, Kind: "MachineConfig", Name: name}) {
		g.touched[name] = true
	}
}

// changes are the generated MachineConfigs written or removed, sorted.
func (g *generator) changes() []GeneratedChange {
	var out []GeneratedChange
	for name := range g.touched {
		key := Key{Group: mcfgv1.GroupName, Kind: "MachineConfig", Name: name}
		_, was := g.before.Lookup(key)
		e, is := g.after.Lookup(key)
		op := OpUpdate
		switch {
		case !was && !is:
			continue
		case !was:
			op = OpCreate
		case !is:
			op = OpDelete
		}
		pool := ""
		if is {
			pool = e.Object.GetLabels()[ndpmcv1.RoleLabel]
		} else if old, ok := g.before.Lookup(key); ok {
			pool = old.Object.GetLabels()[ndpmcv1.RoleLabel]
		}
		out = append(out, GeneratedChange{Name: name, Pool: pool, Operation: op, Owners: g.owners[name]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (o *Objects) hasMachineConfig(name string) bool {
	_, ok := o.Lookup(Key{Group: mcfgv1.GroupName, Kind: "MachineConfig", Name: name})
	return ok
}

// poolsOf lists the pools of o, sorted by name.
func poolsOf(o *Objects) ([]*mcfgv1.MachineConfigPool, error) {
	var l mcfgv1.MachineConfigPoolList
	if err := o.List(context.Background(), &l); err != nil {
		return nil, err
	}
	out := make([]*mcfgv1.MachineConfigPool, len(l.Items))
	for i := range l.Items {
		out[i] = &l.Items[i]
	}
	return out, nil
}

// sameSpec compares two MachineConfigs' specs, their Ignition configs as
// JSON values (a controller's encoding of the same config may differ).
func sameSpec(a, b *ndpmcv1.MachineConfig) bool {
	x, y := a.Spec, b.Spec
	var ix, iy any
	if json.Unmarshal(x.Config.Raw, &ix) != nil || json.Unmarshal(y.Config.Raw, &iy) != nil {
		return false
	}
	x.Config.Raw, y.Config.Raw = nil, nil
	return reflect.DeepEqual(ix, iy) && reflect.DeepEqual(x, y)
}
