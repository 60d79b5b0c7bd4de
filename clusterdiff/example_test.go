package clusterdiff

import (
	"context"
	"flag"
	"reflect"
	"sort"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/mco/mcorender"
	"github.com/ndp-dev/ndp/render"
)

var update = flag.Bool("update", false, "rewrite examples/diff/cluster.yaml's rendered configs from its MachineConfigs")

// exampleSnapshot is the snapshot the README's and docs/diff.md's example
// sessions diff against.
const exampleSnapshot = "../examples/diff/cluster.yaml"

// TestExampleSnapshotIsRendered keeps the example snapshot what a cluster
// would hold: each pool's configuration is what the MCO's render makes of
// its MachineConfigs (mcorender.Merge, proved against the MCO's own
// controllers), present in the snapshot, and its nodes run it. With
// -update it rewrites the rendered configs, the pools' configuration and
// the nodes' annotations.
func TestExampleSnapshotIsRendered(t *testing.T) {
	st, _, err := LoadSnapshot(exampleSnapshot)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var cc mcfgv1.ControllerConfig
	if err := st.Get(ctx, client.ObjectKey{Name: controllerConfigName}, &cc); err != nil {
		t.Fatal(err)
	}
	pools, err := poolsOf(st)
	if err != nil {
		t.Fatal(err)
	}
	for _, pool := range pools {
		mcs, err := render.NewPoolView(st, pool).Sources(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var sources []render.Source
		for _, mc := range mcs {
			sources = append(sources, render.SourceOf(mc, nil))
		}
		r, err := mcorender.Merge(pool.Name, sources, mcorender.BaseOf(&cc))
		if err != nil {
			t.Fatal(err)
		}
		if *update {
			rewriteRendered(t, st, pool, r)
			continue
		}
		if pool.Spec.Configuration.Name != r.Name || pool.Status.Configuration.Name != r.Name {
			t.Errorf("pool %s's configuration is %s, its MachineConfigs render to %s: run go test ./clusterdiff -run TestExampleSnapshotIsRendered -update", pool.Name, pool.Spec.Configuration.Name, r.Name)
			continue
		}
		if len(pool.Spec.Configuration.Source) != len(mcs) {
			t.Errorf("pool %s's spec.configuration.source lists %d MachineConfigs, it has %d: run with -update", pool.Name, len(pool.Spec.Configuration.Source), len(mcs))
		}
		var mc ndpmcv1.MachineConfig
		if err := st.Get(ctx, client.ObjectKey{Name: r.Name}, &mc); err != nil || !reflect.DeepEqual(mc.Spec.Config.Raw, r.Spec.Config.Raw) && !sameSpec(&mc, &ndpmcv1.MachineConfig{Spec: r.Spec}) {
			t.Errorf("the snapshot's %s is not the rendering of pool %s's MachineConfigs (%v): run with -update", r.Name, pool.Name, err)
		}
	}
	if *update {
		var objs []client.Object
		for _, k := range st.Keys() {
			e, _ := st.Lookup(k)
			objs = append(objs, e.Object)
		}
		sort.SliceStable(objs, func(i, j int) bool { return kindOrder(objs[i]) < kindOrder(objs[j]) })
		writeList(t, exampleSnapshot, objs)
	}
}

// rewriteRendered replaces pool's rendered config with r, and points the
// pool and its nodes at it.
func rewriteRendered(t *testing.T, st *Objects, pool *mcfgv1.MachineConfigPool, r *render.Rendered) {
	for _, k := range st.Keys() {
		e, _ := st.Lookup(k)
		if mc, ok := e.Object.(*ndpmcv1.MachineConfig); ok && mc.Labels[ndpmcv1.RenderedForLabel] == pool.Name || k.Kind == "MachineConfig" && strings.HasPrefix(k.Name, "rendered-"+pool.Name+"-") {
			st.Remove(k)
		}
	}
	mc := &ndpmcv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: r.Name, Labels: map[string]string{ndpmcv1.RenderedForLabel: pool.Name}}, Spec: r.Spec}
	p := pool.DeepCopy()
	p.Spec.Configuration.Name, p.Status.Configuration.Name = r.Name, r.Name
	mcs, err := render.NewPoolView(st, pool).Sources(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var refs []corev1.ObjectReference
	for _, mc := range mcs {
		refs = append(refs, corev1.ObjectReference{APIVersion: mcfgv1.GroupVersion.String(), Kind: "MachineConfig", Name: mc.Name})
	}
	p.Spec.Configuration.Source, p.Status.Configuration.Source = refs, refs
	nodes, err := render.NewPoolView(st, p).Nodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	p.Status.MachineCount, p.Status.UpdatedMachineCount, p.Status.ReadyMachineCount = int32(len(nodes)), int32(len(nodes)), int32(len(nodes))
	for _, obj := range []client.Object{mc, p} {
		if err := st.Put(Entry{Object: obj}); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range nodes {
		n = n.DeepCopy()
		n.Annotations = map[string]string{ndpmcv1.CurrentConfigAnnotation: r.Name, "machineconfiguration.openshift.io/desiredConfig": r.Name, "machineconfiguration.openshift.io/state": "Done"}
		if err := st.Put(Entry{Object: n}); err != nil {
			t.Fatal(err)
		}
	}
}

// kindOrder orders the example's objects as a reader meets them.
func kindOrder(o client.Object) int {
	switch o.(type) {
	case *mcfgv1.MachineConfigPool:
		return 0
	case *ndpmcv1.MachineConfig:
		return 1
	case *corev1.Node:
		return 3
	}
	return 2
}
