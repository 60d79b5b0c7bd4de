package clusterdiff

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"sort"
	"strings"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	operatorv1alpha1 "github.com/openshift/api/operator/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/mcoentries"
	"github.com/ndp-dev/ndp/mcorules"
	"github.com/ndp-dev/ndp/nodepool"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/engine"
	"github.com/ndp-dev/ndp/planner/policy"
	"github.com/ndp-dev/ndp/policyset"
	"github.com/ndp-dev/ndp/render"
	"github.com/ndp-dev/ndp/rolloutcontrol"
)

// Options are how a diff decides.
type Options struct {
	// Mode is ModeMCO or ModeNDP; "" takes ModeMCO when the state holds
	// the MCO's ControllerConfig, ModeNDP otherwise.
	Mode string
	// Now is the time RolloutPolicy windows are read at (time.Now() when
	// zero).
	Now time.Time
	// StateName says what state is, for the report ("snapshot DIR").
	StateName string
}

// The MCO's singletons a diff reads.
const (
	controllerConfigName = "machine-config-controller"
	clusterName          = "cluster"
)

// Diff applies cs to state and reports what every pool's nodes would do.
// state is not modified. An object of cs that the MCO (or ndp) would
// refuse, or a state that lacks what a changed pool needs, is an error
// naming the file and the object.
func Diff(ctx context.Context, state *Objects, cs ChangeSet, opts Options) (*Report, error) {
	d := &differ{state: state, after: state.Clone(), opts: opts, changed: map[Key]string{}, parsed: map[*ndpmcv1.MachineConfig]*machineconfig.Config{}}
	if d.opts.Now.IsZero() {
		d.opts.Now = time.Now()
	}
	if d.opts.Mode == "" {
		d.opts.Mode = ModeNDP
		if state.Has(mcfgv1.GroupName, "ControllerConfig") {
			d.opts.Mode = ModeMCO
		}
	}
	if d.opts.Mode != ModeMCO && d.opts.Mode != ModeNDP {
		return nil, fmt.Errorf("mode must be %s or %s, not %q", ModeMCO, ModeNDP, d.opts.Mode)
	}
	d.report = &Report{APIVersion: ReportAPIVersion, Kind: ReportKind, Mode: d.opts.Mode, State: opts.StateName, Effect: EffectNone}
	if err := d.apply(cs); err != nil {
		return nil, err
	}
	if err := d.validateMachineConfigs(); err != nil {
		return nil, err
	}
	if err := d.generate(ctx); err != nil {
		return nil, err
	}
	if err := d.readDecisionInputs(ctx); err != nil {
		return nil, err
	}
	pools, err := poolsOf(d.after)
	if err != nil {
		return nil, err
	}
	for _, pool := range pools {
		pd, err := d.pool(ctx, pool)
		if err != nil {
			return nil, err
		}
		d.report.Pools = append(d.report.Pools, *pd)
		d.report.Changed = d.report.Changed || pd.Changed
		d.report.Effect = worse(d.report.Effect, pd.Effect)
	}
	return d.report, nil
}

type differ struct {
	state, after *Objects
	opts         Options
	report       *Report
	// changed holds the change set's keys (applied or deleted), with
	// their sources.
	changed map[Key]string
	gen     *generator
	parsed  map[*ndpmcv1.MachineConfig]*machineconfig.Config

	// What the decisions read, from after.
	base       render.MCOBase
	mcoPolicy  mcorules.Policies
	overrides  operatorv1.IrreconcilableValidationOverrides
	entries    mcoentries.Entries
	single     bool
	planner    *planner.Planner
	rollouts   []v1alpha1.RolloutPolicy
	nodesKnown bool
}

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

// generate renders the MachineConfigs the change set's KubeletConfigs,
// ContainerRuntimeConfigs, image-mirror objects and image config (and new
// pools) make the controllers write.
func (d *differ) generate(ctx context.Context) error {
	g := &generator{before: d.state, after: d.after, mode: d.opts.Mode, owners: map[string][]string{}, touched: map[string]bool{}}
	d.gen = g
	names := map[string][]string{}
	sources := map[string]string{}
	var mirrors []string
	for key, src := range d.changed {
		switch {
		case key.Group == mcfgv1.GroupName && (key.Kind == "KubeletConfig" || key.Kind == "ContainerRuntimeConfig"):
			names[key.Kind] = append(names[key.Kind], key.Name)
			sources[key.Name] = src
		case key.Group == configv1.GroupName && (key.Kind == "ImageDigestMirrorSet" || key.Kind == "ImageTagMirrorSet"),
			key.Group == operatorv1alpha1.GroupName && key.Kind == "ImageContentSourcePolicy",
			key.Group == configv1.GroupName && key.Kind == "Image" && key.Name == clusterName:
			mirrors = append(mirrors, key.Kind+" "+key.Name)
		}
	}
	for _, k := range generatedKinds {
		sort.Strings(names[k.apiKind])
		if err := g.generate(ctx, k, names[k.apiKind], sources, nil); err != nil {
			return err
		}
	}
	if len(mirrors) > 0 {
		sort.Strings(mirrors)
		if err := g.registries(ctx, mirrors, nil); err != nil {
			return fmt.Errorf("%s: %w", strings.Join(mirrors, ", "), err)
		}
	}
	// A pool the change set creates, or whose labels it changes, gets
	// what the controllers write for every pool they select: the
	// MachineConfigs of the KubeletConfigs and ContainerRuntimeConfigs that
	// select it, and its registries MachineConfig.
	if pools := d.relabelledPools(); len(pools) > 0 {
		for _, k := range generatedKinds {
			objs, err := k.list(d.after)
			if err != nil {
				return err
			}
			var all []string
			for _, o := range objs {
				all = append(all, o.GetName())
			}
			if err := g.generate(ctx, k, all, sources, pools); err != nil {
				return err
			}
		}
		var owners []string
		for p := range pools {
			owners = append(owners, "MachineConfigPool "+p)
		}
		sort.Strings(owners)
		if err := g.registries(ctx, owners, pools); err != nil {
			return err
		}
	}
	d.report.Generated = g.changes()
	return nil
}

// relabelledPools are the pools the change set creates or whose labels
// it changes (what KubeletConfigs and ContainerRuntimeConfigs select).
func (d *differ) relabelledPools() poolFilter {
	out := poolFilter{}
	for key := range d.changed {
		if key.Group != mcfgv1.GroupName || key.Kind != "MachineConfigPool" {
			continue
		}
		now, ok := d.after.Lookup(key)
		if !ok {
			continue
		}
		if was, existed := d.state.Lookup(key); !existed || !maps.Equal(was.Object.GetLabels(), now.Object.GetLabels()) {
			out[key.Name] = true
		}
	}
	return out
}

// readDecisionInputs reads, from after, what the render and the plans
// start from.
func (d *differ) readDecisionInputs(ctx context.Context) error {
	var infra configv1.Infrastructure
	if err := d.after.Get(ctx, client.ObjectKey{Name: clusterName}, &infra); err == nil {
		d.single = infra.Status.ControlPlaneTopology == configv1.SingleReplicaTopologyMode
	}
	var nodes corev1.NodeList
	if err := d.after.List(ctx, &nodes); err != nil {
		return err
	}
	d.nodesKnown = len(nodes.Items) > 0
	if d.nodesKnown && !d.after.Has(configv1.GroupName, "Infrastructure") {
		d.single = len(nodes.Items) == 1
	}
	if d.opts.Mode == ModeMCO {
		var cc mcfgv1.ControllerConfig
		if err := d.after.Get(ctx, client.ObjectKey{Name: controllerConfigName}, &cc); err != nil {
			return fmt.Errorf("the %s has no ControllerConfig %s, which the MCO's render starts from (its OS images): add `oc get controllerconfig %s -o yaml` to it", d.stateWord(), controllerConfigName, controllerConfigName)
		}
		d.base = render.MCOBaseOf(&cc)
		var mc operatorv1.MachineConfiguration
		var cur *operatorv1.MachineConfiguration
		if err := d.after.Get(ctx, client.ObjectKey{Name: clusterName}, &mc); err == nil {
			cur = &mc
		}
		key := Key{Group: operatorv1.GroupName, Kind: "MachineConfiguration", Name: clusterName}
		if src, ok := d.changed[key]; ok && cur != nil {
			if err := mcorules.Validate(cur.Spec.NodeDisruptionPolicy); err != nil {
				return fmt.Errorf("%s: MachineConfiguration %s: the operator refuses its spec.nodeDisruptionPolicy: %w", src, clusterName, err)
			}
			// The operator merges the new spec into its status.
			d.mcoPolicy = mcorules.MergePolicies(cur.Spec.NodeDisruptionPolicy)
		} else {
			d.mcoPolicy, _ = mcorules.PoliciesOf(cur)
		}
		d.overrides = mcorules.OverridesOf(cur)
		if cur != nil {
			d.entries = cur.Spec.NodeDisruptionPolicy
		}
	}
	pl, err := d.policies(ctx)
	if err != nil {
		return err
	}
	d.planner = pl
	var rps v1alpha1.RolloutPolicyList
	if err := d.after.List(ctx, &rps); err != nil {
		return err
	}
	d.rollouts = rps.Items
	if d.opts.Mode == ModeMCO && len(rps.Items) > 0 {
		d.report.Notes = append(d.report.Notes, "RolloutPolicies hold nothing beside the MCO, which paces the rollout itself (spec.maxUnavailable, spec.paused): they are not shown")
	}
	for key, src := range d.changed {
		if key.Kind != "RolloutPolicy" {
			continue
		}
		if e, ok := d.after.Lookup(key); ok {
			if _, err := rolloutcontrol.Compile(e.Object.(*v1alpha1.RolloutPolicy)); err != nil {
				return fmt.Errorf("%s: RolloutPolicy %q: %w", src, key.Name, err)
			}
		}
	}
	return nil
}

// policies compiles ndp's policy set of after: the embedded default and
// every NodeDisruptionPolicy, each checked as the policy controller checks
// it (compiled with the others, its Rego tests, the probe). A policy of the
// change set that fails is an error; one of the cluster's is left out, as
// the cluster leaves it out, with a note.
func (d *differ) policies(ctx context.Context) (*planner.Planner, error) {
	active := policyset.NewActivePolicies(engine.Options{})
	if err := active.Put(ctx, policy.DefaultPolicy()); err != nil {
		return nil, err
	}
	var list v1alpha1.NodeDisruptionPolicyList
	if err := d.after.List(ctx, &list); err != nil {
		return nil, err
	}
	checker := &policyset.PolicyChecker{Client: d.after, Active: active}
	for i := range list.Items {
		ndp := &list.Items[i]
		key := Key{Group: v1alpha1.GroupVersion.Group, Kind: v1alpha1.Kind, Name: ndp.Name}
		pol, _, err := checker.Check(ctx, ndp)
		if err == nil {
			err = active.Put(ctx, pol)
		}
		if err == nil {
			continue
		}
		if src, ok := d.changed[key]; ok {
			return nil, fmt.Errorf("%s: %s %q: %w", src, v1alpha1.Kind, ndp.Name, err)
		}
		d.report.Notes = append(d.report.Notes, fmt.Sprintf("%s %q of the %s is not in force here (%v): its plans are made without it", v1alpha1.Kind, ndp.Name, d.stateWord(), firstLine(err.Error())))
	}
	return active.Planner(), nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// pool is what the change set does to one pool.
func (d *differ) pool(ctx context.Context, pool *mcfgv1.MachineConfigPool) (*PoolDiff, error) {
	pd := &PoolDiff{Pool: pool.Name, From: pool.Spec.Configuration.Name, Effect: EffectNone, ToExact: true}
	pd.To = pd.From
	after := render.NewPoolView(d.after, pool)
	srcAfter, err := after.Sources(ctx)
	var selErr *render.SelectorError
	if errors.As(err, &selErr) {
		pd.Error = err.Error()
		return pd, nil
	}
	if err != nil {
		return nil, err
	}
	var srcBefore []*ndpmcv1.MachineConfig
	beforePool, existed := d.state.Lookup(Key{Group: mcfgv1.GroupName, Kind: "MachineConfigPool", Name: pool.Name})
	if existed {
		if srcBefore, err = render.NewPoolView(d.state, beforePool.Object.(*mcfgv1.MachineConfigPool)).Sources(ctx); err != nil && !errors.As(err, &selErr) {
			return nil, err
		}
	}
	if existed {
		pd.Causes = d.causes(srcBefore, srcAfter)
	} else {
		pd.Causes = []string{"MachineConfigPool " + pool.Name + " (created)"}
	}
	if err := d.countNodes(ctx, pd, after); err != nil {
		return nil, err
	}
	if len(pd.Causes) == 0 && existed {
		return pd, nil // the pool's sources are the cluster's: nothing to render
	}
	if existed {
		if err := d.sourcesPresent(beforePool.Object.(*mcfgv1.MachineConfigPool)); err != nil {
			return nil, err
		}
	}
	if len(srcAfter) == 0 {
		pd.Error = fmt.Sprintf("MachineConfigPool %q would select no MachineConfig", pool.Name)
		return pd, nil
	}
	to, err := d.render(pool.Name, srcAfter)
	if err != nil {
		return nil, fmt.Errorf("pool %s: the render controller refuses the change (the pool would go Degraded): %w", pool.Name, err)
	}
	toCfg, err := to.Config()
	if err != nil {
		return nil, fmt.Errorf("pool %s: the rendered config would be invalid: %w", pool.Name, err)
	}
	pd.To = to.Name
	pd.Changed = pd.To != pd.From
	var fromSources map[string]string
	// today is what the pool's MachineConfigs render to today, when that
	// is not the pool's configuration: a cluster whose MCO renders (or
	// encodes) otherwise than the version ndp follows, or a render under
	// way. Its nodes are then planned from today's rendering, so that the
	// plan holds the change set's changes and not the versions' difference.
	var today *machineconfig.Config
	if existed && len(srcBefore) > 0 {
		before, err := d.render(pool.Name, srcBefore)
		if err == nil {
			fromSources = before.Sources
			if pd.From != "" && before.Name != pd.From {
				if today, err = before.Config(); err != nil {
					return nil, fmt.Errorf("pool %s: %w", pool.Name, err)
				}
				pd.Changed = pd.To != before.Name
				pd.ToExact = !pd.Changed
				d.report.Notes = append(d.report.Notes, fmt.Sprintf("pool %s: its MachineConfigs render to %s here, not to its configuration %s (its MCO's version renders otherwise, or a render is under way): the new config's name may differ from %s, and its nodes are planned from %s, so that the plans hold only the change set's changes", pool.Name, shortName(before.Name), shortName(pd.From), shortName(pd.To), shortName(before.Name)))
			}
		}
	}
	if !pd.Changed {
		pd.To = pd.From
		return pd, nil
	}
	objects := func(id string) []string { return d.objectsOf(id, to.Sources, fromSources) }
	groups, err := d.groups(ctx, pd, after)
	if err != nil {
		return nil, err
	}
	for _, g := range groups {
		fromCfg, err := d.configNamed(g.From, pool.Name)
		if err != nil {
			return nil, err
		}
		if today != nil && g.From == pd.From {
			fromCfg = today
		}
		if err := d.plan(ctx, &g, pool, fromCfg, toCfg, objects); err != nil {
			return nil, fmt.Errorf("pool %s, from %s to %s: %w", pool.Name, g.From, pd.To, err)
		}
		pd.Effect = worse(pd.Effect, g.Plan.Effect)
		pd.Groups = append(pd.Groups, g)
	}
	pd.Rollout = d.rollout(pool, pd)
	return pd, nil
}

// shortName is a rendered config's name with its hash cut to 8 digits,
// for notes.
func shortName(name string) string {
	if i := strings.LastIndex(name, "-"); i >= 0 && len(name)-i > 9 {
		return name[:i+9]
	}
	return name
}

// sourcesPresent checks that the state holds every MachineConfig the
// pool's configuration was rendered from (spec.configuration.source): a
// snapshot without one (a template MachineConfig left out) would render
// the pool without it, and every file of it would read as removed.
func (d *differ) sourcesPresent(pool *mcfgv1.MachineConfigPool) error {
	var missing []string
	for _, ref := range pool.Spec.Configuration.Source {
		if ref.Kind != "" && ref.Kind != "MachineConfig" {
			continue
		}
		key := Key{Group: mcfgv1.GroupName, Kind: "MachineConfig", Name: ref.Name}
		if _, ok := d.state.Lookup(key); !ok {
			missing = append(missing, ref.Name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("the %s lacks MachineConfig %s, which pool %s's configuration %s was rendered from (its spec.configuration.source): it must hold every MachineConfig of the pool, the templates (00-%s, 01-%s-kubelet, …) included (oc get mc)", d.stateWord(), strings.Join(missing, ", "), pool.Name, pool.Spec.Configuration.Name, pool.Name, pool.Name)
}

// causes names what differs between a pool's sources before and after:
// MachineConfigs created, updated or deleted, generated ones with the
// objects they are rendered from.
func (d *differ) causes(before, after []*ndpmcv1.MachineConfig) []string {
	was := map[string]*ndpmcv1.MachineConfig{}
	for _, mc := range before {
		was[mc.Name] = mc
	}
	var out []string
	for _, mc := range after {
		old, ok := was[mc.Name]
		delete(was, mc.Name)
		switch {
		case !ok:
			out = append(out, d.mcCause(mc.Name, OpCreate))
		case old != mc && !reflect.DeepEqual(old.Spec, mc.Spec):
			out = append(out, d.mcCause(mc.Name, OpUpdate))
		}
	}
	for name := range was {
		out = append(out, d.mcCause(name, OpDelete))
	}
	sort.Strings(out)
	return out
}

var pastTense = map[string]string{OpCreate: "created", OpUpdate: "updated", OpDelete: "deleted"}

func (d *differ) mcCause(name, op string) string {
	s := fmt.Sprintf("MachineConfig %s (%s)", name, pastTense[op])
	if owners := d.gen.owners[name]; len(owners) > 0 {
		s += " for " + strings.Join(owners, ", ")
	}
	return s
}

// countNodes fills the pool's node count: from its nodes when the state
// has nodes, else from its status.
func (d *differ) countNodes(ctx context.Context, pd *PoolDiff, view *render.PoolView) error {
	if !d.nodesKnown {
		pd.Nodes = int(view.Pool.Status.MachineCount)
		return nil
	}
	nodes, err := view.Nodes(ctx)
	if err != nil {
		return err
	}
	pd.Nodes, pd.NodesKnown = len(nodes), true
	return nil
}

// groups are the pool's nodes by the config they run, other than the new
// one, most first; without nodes in the state, one group of the pool's
// machine count on its configuration.
func (d *differ) groups(ctx context.Context, pd *PoolDiff, view *render.PoolView) ([]Group, error) {
	if !d.nodesKnown {
		if pd.From == "" {
			return nil, nil
		}
		if view.Pool.Status.UpdatedMachineCount < view.Pool.Status.MachineCount {
			d.report.Notes = append(d.report.Notes, fmt.Sprintf("pool %s: %d of its %d nodes are still updating (its status): their plans start from another config; add the nodes to the state to see each", pd.Pool, view.Pool.Status.MachineCount-view.Pool.Status.UpdatedMachineCount, view.Pool.Status.MachineCount))
		}
		return []Group{{From: pd.From, Nodes: pd.Nodes}}, nil
	}
	byConfig, err := view.NodesByConfig(ctx)
	if err != nil {
		return nil, err
	}
	var out []Group
	for from, nodes := range byConfig {
		if from == pd.To {
			continue
		}
		if from == "" {
			d.report.Notes = append(d.report.Notes, fmt.Sprintf("pool %s: %d nodes run no rendered config yet: they join on the new one", pd.Pool, len(nodes)))
			continue
		}
		g := Group{From: from, Nodes: len(nodes)}
		for _, n := range nodes {
			g.Names = append(g.Names, n.Name)
		}
		sort.Strings(g.Names)
		out = append(out, g)
	}
	if len(out) == 0 && pd.From != "" && len(byConfig) == 0 {
		out = append(out, Group{From: pd.From}) // what nodes that join move from
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Nodes != out[j].Nodes {
			return out[i].Nodes > out[j].Nodes
		}
		return out[i].From < out[j].From
	})
	return out, nil
}

// render merges a pool's sources as the MCO's render controller (ModeMCO)
// or ndp's does.
func (d *differ) render(pool string, mcs []*ndpmcv1.MachineConfig) (*render.Rendered, error) {
	sources := make([]render.Source, len(mcs))
	for i, mc := range mcs {
		cfg, err := d.parse(mc)
		if err != nil {
			return nil, err
		}
		sources[i] = render.SourceOf(mc, cfg)
	}
	if d.opts.Mode == ModeMCO {
		return render.MergeMCO(pool, sources, d.base)
	}
	return render.Merge(pool, sources)
}

// parse parses a MachineConfig once (objects are shared between the state
// and after, so a parse serves both).
func (d *differ) parse(mc *ndpmcv1.MachineConfig) (*machineconfig.Config, error) {
	if cfg, ok := d.parsed[mc]; ok {
		return cfg, nil
	}
	cfg, err := machineconfig.New(fmt.Sprintf("MachineConfig %q", mc.Name), mc.Spec)
	if err != nil {
		return nil, err
	}
	d.parsed[mc] = cfg
	return cfg, nil
}

// configNamed is a rendered config that nodes run, which the state must
// hold.
func (d *differ) configNamed(name, pool string) (*machineconfig.Config, error) {
	e, ok := d.state.Lookup(Key{Group: mcfgv1.GroupName, Kind: "MachineConfig", Name: name})
	if !ok {
		return nil, fmt.Errorf("the %s lacks MachineConfig %s, the rendered config nodes of pool %s run: it must hold every rendered config a pool or a node names (oc get mc)", d.stateWord(), name, pool)
	}
	return d.parse(e.Object.(*ndpmcv1.MachineConfig))
}

// plan fills a group's plans: the MCO's decision and ndp's plan beside it
// (with the entries that would give ndp's), or ndp's plan alone.
func (d *differ) plan(ctx context.Context, g *Group, pool *mcfgv1.MachineConfigPool, from, to *machineconfig.Config, objects func(string) []string) error {
	var ndp *planner.Plan
	if d.planner != nil {
		p, err := d.planner.Plan(ctx, planner.Request{From: from, To: to, Pool: pool.Name, PoolLabels: pool.Labels, SingleNode: d.single})
		if err != nil {
			return err
		}
		ndp = p
	}
	if d.opts.Mode == ModeNDP {
		if ndp == nil {
			return errors.New("no policy is in force")
		}
		g.Plan = ndpPlan(ndp, objects)
		return nil
	}
	dec, err := mcorules.Decide(mcorules.Input{From: from, To: to, Policies: d.mcoPolicy, SingleNode: d.single, Overrides: d.overrides})
	if err != nil {
		return err
	}
	g.Plan = mcoPlan(dec, objects)
	if ndp == nil {
		return nil
	}
	np := ndpPlan(ndp, objects)
	g.NDP = &np
	if rank(np.Effect) >= rank(g.Plan.Effect) || len(ndp.Unreconcilable) > 0 {
		return nil
	}
	res, err := mcoentries.ForUpdate(mcoentries.Update{From: from, To: to, Plan: ndp, SingleNode: d.single, Overrides: d.overrides}, d.entries)
	if err != nil {
		return err
	}
	g.Entries, g.EntriesExact = entriesOf(res.Entries), res.Equal
	return nil
}

func ndpPlan(p *planner.Plan, objects func(string) []string) Plan {
	out := Plan{By: "ndp", Actions: []string{}, Drain: p.Drain, Reboot: p.Reboot, Changes: []Change{}}
	for _, a := range p.Actions {
		out.Actions = append(out.Actions, planner.FormatActions([]policy.Action{a}))
	}
	for _, u := range p.Unreconcilable {
		out.Refused = append(out.Refused, u.String())
	}
	for _, r := range p.Reasons {
		rule := r.Policy
		if r.Match != "" {
			rule += " (" + r.Match + ")"
		}
		c := Change{Change: r.Change, Rule: rule, Actions: []string{}, Objects: objects(r.ChangeID)}
		for _, a := range r.Actions {
			c.Actions = append(c.Actions, planner.FormatActions([]policy.Action{a}))
		}
		out.Changes = append(out.Changes, c)
	}
	out.Effect = effect(out.Refused, out.Reboot, out.Drain, out.Actions)
	return out
}

func mcoPlan(dec *mcorules.Decision, objects func(string) []string) Plan {
	out := Plan{By: "MCO", Actions: []string{}, Drain: dec.Drain, Reboot: dec.Reboot, Refused: dec.Refused, Changes: []Change{}}
	if dec.Error != "" {
		out.Refused = append(out.Refused, "the MCO's daemon fails the update: "+dec.Error)
	}
	for _, a := range dec.Actions {
		out.Actions = append(out.Actions, a.String())
	}
	for _, r := range dec.Rules {
		c := Change{Change: r.Change, Rule: r.Rule, Actions: []string{}, Objects: objects(changeID(r.Change))}
		for _, a := range r.Actions {
			c.Actions = append(c.Actions, a.String())
		}
		out.Changes = append(out.Changes, c)
	}
	out.Effect = effect(out.Refused, out.Reboot, out.Drain, out.Actions)
	return out
}

// changeID is the render's source key of one of the MCO's changes ("file
// /etc/x" → "file:/etc/x").
func changeID(change string) string {
	for _, p := range []string{"file", "unit"} {
		if rest, ok := strings.CutPrefix(change, p+" "); ok {
			return p + ":" + rest
		}
	}
	return "os:" + change
}

// objectsOf names where a change comes from: the MachineConfig that gives
// it in the new rendering (or, for a removal, gave it in the old), after
// the objects a generated one is rendered from ("KubeletConfig max-pods →
// MachineConfig 99-worker-generated-kubelet").
func (d *differ) objectsOf(id string, to, from map[string]string) []string {
	name := to[id]
	if name == "" {
		name = from[id]
	}
	if name == "" {
		return nil
	}
	s := "MachineConfig " + name
	if owners := d.gen.owners[name]; len(owners) > 0 {
		s = strings.Join(owners, ", ") + " → " + s
	} else if e, ok := d.after.Lookup(Key{Group: mcfgv1.GroupName, Kind: "MachineConfig", Name: name}); ok {
		if ref := metav1.GetControllerOf(e.Object); ref != nil {
			s = ref.Kind + " " + ref.Name + " → " + s
		}
	}
	return []string{s}
}

func entriesOf(e mcoentries.Entries) []MCOEntry {
	var out []MCOEntry
	for subject, actions := range mcoentries.BySubject(e) {
		m := MCOEntry{Subject: mcoentries.SubjectText(subject)}
		for _, a := range actions {
			m.Actions = append(m.Actions, string(a.Type)+serviceOf(a))
		}
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Subject < out[j].Subject })
	return out
}

func serviceOf(a operatorv1.NodeDisruptionPolicySpecAction) string {
	switch {
	case a.Reload != nil:
		return " " + string(a.Reload.ServiceName)
	case a.Restart != nil:
		return " " + string(a.Restart.ServiceName)
	}
	return ""
}

// rollout says how the pool's update would roll out now: beside the MCO,
// its own pacing (spec.paused, spec.maxUnavailable; RolloutPolicies hold
// nothing there); with ndp, the same budget and the pool's
// RolloutPolicies: held by a window, and the gates every step waits on.
func (d *differ) rollout(pool *mcfgv1.MachineConfigPool, pd *PoolDiff) *Rollout {
	out := &Rollout{}
	if budget, err := nodepool.MaxUnavailable(pool, pd.Nodes); err == nil {
		out.Pacing = fmt.Sprintf("at most %d node(s) at once (spec.maxUnavailable)", budget)
	}
	if pool.Spec.Paused {
		out.Held = "the pool is paused (spec.paused): nothing rolls out until it is unpaused"
	}
	pols := rolloutcontrol.PoliciesFor(pool, d.rollouts)
	if d.opts.Mode == ModeMCO || len(pols) == 0 || out.Held != "" {
		return out
	}
	var compiled []*rolloutcontrol.Policy
	for _, p := range pols {
		out.Policies = append(out.Policies, p.Name)
		c, err := rolloutcontrol.Compile(p)
		if err != nil {
			out.Held = fmt.Sprintf("RolloutPolicy %s does not compile (%v): it holds the pool", p.Name, err)
			return out
		}
		compiled = append(compiled, c)
		out.Gates = append(out.Gates, gatesOf(p)...)
	}
	var kinds rolloutcontrol.Kinds
	for _, g := range pd.Groups {
		kinds |= kindsOf(g.Plan)
	}
	out.Held = rolloutcontrol.WindowMessage(rolloutcontrol.CheckWindows(compiled, kinds, d.opts.Now), d.opts.Now)
	return out
}

// kindsOf is what a plan makes a node go through, as rollout windows read
// it.
func kindsOf(p Plan) rolloutcontrol.Kinds {
	pc := ndpmcv1.PostConfigActions{Drain: p.Drain, Reboot: p.Reboot}
	for _, a := range p.Actions {
		switch {
		case strings.HasPrefix(a, "Restart"):
			pc.Actions = append(pc.Actions, ndpmcv1.PlanAction{Type: operatorv1.RestartSpecAction})
		case strings.HasPrefix(a, "Reload"), strings.HasPrefix(a, "Special"):
			pc.Actions = append(pc.Actions, ndpmcv1.PlanAction{Type: operatorv1.ReloadSpecAction})
		}
	}
	return rolloutcontrol.KindsOf(&pc)
}

// gatesOf names a RolloutPolicy's gates in words.
func gatesOf(p *v1alpha1.RolloutPolicy) []string {
	g := p.Spec.Gates
	if g == nil {
		return nil
	}
	var out []string
	add := func(ok bool, s string) {
		if ok {
			out = append(out, p.Name+": "+s)
		}
	}
	v := reflect.ValueOf(*g)
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		if !f.IsZero() {
			add(true, lowerFirst(v.Type().Field(i).Name))
		}
	}
	return out
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// effect is a plan's effect constant.
func effect(refused []string, reboot, drain bool, actions []string) string {
	switch {
	case len(refused) > 0:
		return EffectUnreconcilable
	case reboot:
		return EffectReboot
	case drain:
		return EffectDrain
	}
	e := EffectNone
	for _, a := range actions {
		switch {
		case strings.HasPrefix(a, "Reboot"):
			return EffectReboot
		case strings.HasPrefix(a, "Drain"):
			e = worse(e, EffectDrain)
		case strings.HasPrefix(a, "Restart"):
			e = worse(e, EffectRestart)
		case strings.HasPrefix(a, "Reload"), strings.HasPrefix(a, "Special"), strings.HasPrefix(a, "DaemonReload"):
			e = worse(e, EffectReload)
		}
	}
	return e
}

var effectRank = map[string]int{EffectNone: 0, EffectReload: 1, EffectRestart: 2, EffectDrain: 3, EffectReboot: 4, EffectUnreconcilable: 5}

func rank(e string) int { return effectRank[e] }

// worse is the more disruptive of two effects.
func worse(a, b string) string {
	if rank(b) > rank(a) {
		return b
	}
	return a
}
