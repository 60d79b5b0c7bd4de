package clusterdiff

import (
	"fmt"
	"reflect"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/machineconfig"
)

// apply puts the change set's objects into after, each merged with the
// cluster's object of its name as `kubectl apply` leaves it (the server's
// metadata, the annotations and finalizers controllers set, the status),
// and removes the deleted ones.
func (d *differ) apply(cs ChangeSet) error {
	for _, e := range cs.Apply {
		key, err := KeyOf(e.Object)
		if err != nil {
			return fmt.Errorf("%s: %w", e.Source, err)
		}
		if prev, dup := d.changed[key]; dup {
			return fmt.Errorf("%s: %s is also in %s", e.Source, key, prev)
		}
		d.changed[key] = e.Source
		op := OpCreate
		obj := e.Object.DeepCopyObject().(client.Object)
		if cur, ok := d.state.Lookup(key); ok {
			if obj, err = applied(cur.Object, obj); err != nil {
				return fmt.Errorf("%s: %s: %w", e.Source, key, err)
			}
			op = OpUpdate
			if sameContent(cur.Object, obj) {
				op = OpUnchanged
			}
		} else if ts := obj.GetCreationTimestamp(); ts.IsZero() {
			// Created now: the newest of its kind (the MCO names a
			// KubeletConfig's MachineConfig by age).
			obj.SetCreationTimestamp(metav1.NewTime(d.opts.Now))
		}
		if op != OpUnchanged {
			if err := d.after.Put(Entry{Object: obj, Source: e.Source}); err != nil {
				return err
			}
		}
		d.report.Objects = append(d.report.Objects, ObjectChange{Kind: key.Kind, Name: key.Name, Operation: op, Source: e.Source})
	}
	for _, key := range cs.Delete {
		if prev, dup := d.changed[key]; dup {
			return fmt.Errorf("--delete %s: the change set also applies it (%s)", key, prev)
		}
		if !d.after.Remove(key) {
			return fmt.Errorf("--delete %s: there is no such object in the %s", key, d.stateWord())
		}
		d.changed[key] = "--delete"
		d.report.Objects = append(d.report.Objects, ObjectChange{Kind: key.Kind, Name: key.Name, Operation: OpDelete, Source: "--delete"})
	}
	return nil
}

func (d *differ) stateWord() string {
	if d.opts.StateName != "" {
		return d.opts.StateName
	}
	return "cluster"
}

// applied is obj as the API server stores it after an apply over cur:
// metadata the server and controllers own is kept, and the status.
func applied(cur, obj client.Object) (client.Object, error) {
	c, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cur)
	if err != nil {
		return nil, err
	}
	n, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	if st, ok := c["status"]; ok {
		n["status"] = st
	} else {
		delete(n, "status")
	}
	out := obj.DeepCopyObject().(client.Object)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(n, out); err != nil {
		return nil, err
	}
	out.SetUID(cur.GetUID())
	out.SetCreationTimestamp(cur.GetCreationTimestamp())
	out.SetResourceVersion(cur.GetResourceVersion())
	out.SetGeneration(cur.GetGeneration())
	if len(out.GetFinalizers()) == 0 {
		out.SetFinalizers(cur.GetFinalizers())
	}
	if len(out.GetOwnerReferences()) == 0 {
		out.SetOwnerReferences(cur.GetOwnerReferences())
	}
	ann := map[string]string{}
	for k, v := range cur.GetAnnotations() {
		if k != corev1.LastAppliedConfigAnnotation {
			ann[k] = v
		}
	}
	for k, v := range out.GetAnnotations() {
		ann[k] = v
	}
	out.SetAnnotations(ann)
	return out, nil
}

// sameContent compares what an apply can change: labels, annotations and
// everything but metadata and status.
func sameContent(a, b client.Object) bool {
	strip := func(o client.Object) map[string]any {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			return nil
		}
		delete(m, "status")
		ann := map[string]string{}
		for k, v := range o.GetAnnotations() {
			if k != corev1.LastAppliedConfigAnnotation {
				ann[k] = v
			}
		}
		m["metadata"] = map[string]any{"labels": o.GetLabels(), "annotations": ann}
		return m
	}
	x, y := strip(a), strip(b)
	return x != nil && reflect.DeepEqual(x, y)
}

// validateMachineConfigs refuses a MachineConfig of the change set that
// the render controller would refuse (the pool would go Degraded).
func (d *differ) validateMachineConfigs() error {
	for key, src := range d.changed {
		if key.Kind != "MachineConfig" || key.Group != mcfgv1.GroupName {
			continue
		}
		e, ok := d.after.Lookup(key)
		if !ok {
			continue
		}
		mc := e.Object.(*ndpmcv1.MachineConfig)
		object := fmt.Sprintf("%s: MachineConfig %q", src, mc.Name)
		cfg, err := machineconfig.New(object, mc.Spec)
		if err == nil {
			err = machineconfig.Validate(object, cfg)
		}
		if err != nil {
			return fmt.Errorf("%w (the render controller refuses it: its pools would go Degraded)", err)
		}
		d.parsed[mc] = cfg
	}
	return nil
}
