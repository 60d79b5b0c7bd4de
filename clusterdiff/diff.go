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
	"sigs.k8s.io/controller-runtime/pkg/client"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/mco/mcoentries"
	"github.com/ndp-dev/ndp/mco/mcorender"
	"github.com/ndp-dev/ndp/mco/mcorules"
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
	base       mcorender.Base
	mcoPolicy  mcorules.Policies
	overrides  operatorv1.IrreconcilableValidationOverrides
	entries    mcoentries.Entries
	single     bool
	planner    *planner.Planner
	rollouts   []v1alpha1.RolloutPolicy
	nodesKnown bool
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
		d.base = mcorender.BaseOf(&cc)
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
		return mcorender.Merge(pool, sources, d.base)
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
