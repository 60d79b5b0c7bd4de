// Package preview is what the admission webhooks of both of ndp-controller's
// modes stand on: the Previewer, which renders pools and plans their nodes
// in memory from the manager's cache (and counts the changes of what it
// reads); the frames of the MachineConfig, generated-config and
// image-mirror previews, which decode a change and find the pools it
// reaches, then leave the answer to the mode (Answers: package executor's
// or package advisor's); and the what-if preview of a policy edit. It
// imports neither mode's package.
package preview

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"sort"
	"strings"
	"sync/atomic"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/policyset"
	"github.com/ndp-dev/ndp/render"
)

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=machineconfiguration.openshift.io,resources=machineconfigs;machineconfigpools,verbs=get;list;watch

// Previewer runs the render and plan boxes of the flow (docs/design.md#the-flow) in
// memory, for a proposed change of MachineConfigs: what would each pool's
// nodes do? It reads the cluster through the manager's cache and writes
// nothing. How a pool is rendered (ndp's render or the MCO's) is the
// mode's; the pools, the candidates, the plans and the caches are here.
//
// Parsing Ignition is most of the cost of a plan, and GitOps tools send the
// same dry-runs again and again, so parsed configs, renderings and plans
// are kept, each under a key that changes with its inputs.
type Previewer struct {
	Client client.Reader
	Active *policyset.ActivePolicies
	// MoreInputs are the kinds a mode's previews read besides pools,
	// MachineConfigs and nodes (the advisor's: the MCO's singletons), set
	// before WatchInputs runs.
	MoreInputs []Input

	configs    *render.ConfigCache                     // cluster MachineConfigs, by UID and generation
	candidates *bounded[string, *machineconfig.Config] // candidate MachineConfigs, by content digest
	renders    *bounded[string, *Rendering]            // renderings, by pool and sources
	plans      *bounded[planKey, *planner.Plan]        // plans, by policy revision and configs

	// inputs counts changes of what a preview reads besides the candidate
	// and the policy revision: pools, MachineConfigs, the nodes' pool
	// labels and current configs, and MoreInputs (see WatchInputs). Whole
	// answers are kept under it.
	inputs atomic.Int64
	// nodes counts the cluster's nodes (a single-node cluster is never
	// drained) once nodesCounted, so that no preview lists them all.
	nodes        atomic.Int64
	nodesCounted atomic.Bool
}

// Input is a kind whose changes a preview's answer depends on.
type Input struct {
	Object client.Object
	// Changed says whether an update changes what a preview reads of it.
	Changed func(old, new any) bool
	// Optional: a cluster that does not serve the kind has none to watch
	// (nor to read).
	Optional bool
}

// Inputs is the count of changes of the previews' inputs in the cluster.
func (p *Previewer) Inputs() int64 { return p.inputs.Load() }

// NodesCounted says whether WatchInputs has counted the existing nodes:
// from then on the count replaces listing them.
func (p *Previewer) NodesCounted() bool { return p.nodesCounted.Load() }

// WatchInputs counts changes of the objects previews read, from the
// manager's informers; answers computed before a change are not reused
// after it. It runs on every replica until ctx ends.
func (p *Previewer) WatchInputs(ctx context.Context, informers cache.Informers) error {
	bump := func() { p.inputs.Add(1) }
	inputs := append([]Input{
		{Object: &corev1.Node{}, Changed: func(old, new any) bool {
			o, n := old.(*corev1.Node), new.(*corev1.Node)
			return !maps.Equal(o.Labels, n.Labels) || o.Annotations[ndpmcv1.CurrentConfigAnnotation] != n.Annotations[ndpmcv1.CurrentConfigAnnotation]
		}},
		{Object: &ndpmcv1.MachineConfig{}, Changed: func(old, new any) bool {
			o, n := old.(*ndpmcv1.MachineConfig), new.(*ndpmcv1.MachineConfig)
			return o.Generation != n.Generation || !maps.Equal(o.Labels, n.Labels) || o.Annotations[ndpmcv1.SourcesAnnotation] != n.Annotations[ndpmcv1.SourcesAnnotation]
		}},
		{Object: &mcfgv1.MachineConfigPool{}, Changed: func(old, new any) bool {
			o, n := old.(*mcfgv1.MachineConfigPool), new.(*mcfgv1.MachineConfigPool)
			return o.Generation != n.Generation || !maps.Equal(o.Labels, n.Labels)
		}},
	}, p.MoreInputs...)
	var nodes toolscache.ResourceEventHandlerRegistration
	for _, in := range inputs {
		inf, err := informers.GetInformer(ctx, in.Object)
		if meta.IsNoMatchError(err) && in.Optional {
			// Not served here: no such object can change, nor be read.
			continue
		}
		if err != nil {
			return fmt.Errorf("watching %T for the preview: %w", in.Object, err)
		}
		_, isNode := in.Object.(*corev1.Node)
		changed := in.Changed
		reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc: func(any) {
				if isNode {
					p.nodes.Add(1)
				}
				bump()
			},
			DeleteFunc: func(any) {
				if isNode {
					p.nodes.Add(-1)
				}
				bump()
			},
			UpdateFunc: func(old, new any) {
				if changed(old, new) {
					bump()
				}
			},
		})
		if err != nil {
			return err
		}
		if isNode {
			nodes = reg
		}
	}
	// Once the existing nodes are counted, the count replaces listing them.
	if toolscache.WaitForCacheSync(ctx.Done(), nodes.HasSynced) {
		p.nodesCounted.Store(true)
	}
	<-ctx.Done()
	return nil
}

// NewPreviewer returns a previewer with bounded caches.
func NewPreviewer(c client.Reader, active *policyset.ActivePolicies) *Previewer {
	return &Previewer{
		Client:     c,
		Active:     active,
		configs:    render.NewConfigCache(512),
		candidates: newBounded[string, *machineconfig.Config](64),
		// A rendering holds a whole rendered config twice (JSON and
		// parsed), up to a few MB in a real cluster: a repeated dry-run
		// is answered from the answer cache, so few are kept.
		renders: newBounded[string, *Rendering](32),
		plans:   newBounded[planKey, *planner.Plan](4096),
	}
}

// Rendering is a pool's rendered config, parsed for planning.
type Rendering struct {
	*render.Rendered
	Config *machineconfig.Config
}

type planKey struct {
	revision string
	from     types.UID
	fromGen  int64
	to       string
	pool     string // name and labels: policies select pools by label
	single   bool
}

// InvalidChangeError is a change that cannot be rendered: the candidate,
// not the cluster, is at fault, so admission denies it.
type InvalidChangeError struct{ Err error }

func (e *InvalidChangeError) Error() string { return e.Err.Error() }
func (e *InvalidChangeError) Unwrap() error { return e.Err }

// Overrides are the MachineConfigs a change puts in place, by name; a nil
// value removes that MachineConfig.
type Overrides map[string]*ndpmcv1.MachineConfig

// PoolsSelecting returns the pools whose MachineConfig selector matches
// any of the label sets, sorted by name.
func (p *Previewer) PoolsSelecting(ctx context.Context, sets ...map[string]string) ([]*mcfgv1.MachineConfigPool, error) {
	all, err := p.Pools(ctx)
	if err != nil {
		return nil, err
	}
	var out []*mcfgv1.MachineConfigPool
	for _, pool := range all {
		sel, err := metav1.LabelSelectorAsSelector(pool.Spec.MachineConfigSelector)
		if err != nil || pool.Spec.MachineConfigSelector == nil {
			continue // the render controller reports bad selectors
		}
		for _, set := range sets {
			if set != nil && sel.Matches(labels.Set(set)) {
				out = append(out, pool)
				break
			}
		}
	}
	return out, nil
}

// Pools lists every pool, sorted by name; the objects are the cache's and
// must not be modified.
func (p *Previewer) Pools(ctx context.Context) ([]*mcfgv1.MachineConfigPool, error) {
	var list mcfgv1.MachineConfigPoolList
	if err := p.Client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing MachineConfigPools: %w", err)
	}
	out := make([]*mcfgv1.MachineConfigPool, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Census is where a pool's nodes stand against a rendered config.
type Census struct {
	// Nodes is all of them; Unconfigured, those on no config yet; UpToDate,
	// those already on the rendered config.
	Nodes, Unconfigured, UpToDate int
	// Others counts the rest by the config they run.
	Others map[string]int
}

// TakeCensus counts view's nodes by the config they run against rendered.
func TakeCensus(ctx context.Context, view *render.PoolView, rendered string) (Census, error) {
	byConfig, err := view.NodesByConfig(ctx)
	if err != nil {
		return Census{}, err
	}
	c := Census{Others: map[string]int{}}
	for cur, ns := range byConfig {
		c.Nodes += len(ns)
		switch cur {
		case "":
			c.Unconfigured += len(ns)
		case rendered:
			c.UpToDate += len(ns)
		default:
			c.Others[cur] = len(ns)
		}
	}
	return c, nil
}

// Pending is how many nodes run another config than the rendered one:
// updates already under way, not a change's doing when it renders nothing
// new.
func (c Census) Pending() int {
	n := 0
	for _, k := range c.Others {
		n += k
	}
	return n
}

// Froms orders the other configs nodes run, most nodes first. A pool
// without nodes on other configs is still checked from its target, as the
// render controller does: that is what nodes will join.
func (c Census) Froms(target, rendered string) []string {
	froms := make([]string, 0, len(c.Others)+1)
	for from := range c.Others {
		froms = append(froms, from)
	}
	if len(froms) == 0 && target != "" && target != rendered {
		froms = append(froms, target)
	}
	sort.Slice(froms, func(i, j int) bool {
		if c.Others[froms[i]] != c.Others[froms[j]] {
			return c.Others[froms[i]] > c.Others[froms[j]]
		}
		return froms[i] < froms[j]
	})
	return froms
}

// View is a pool's view as previews read it: from the cache's own objects,
// and with the node count of WatchInputs.
func (p *Previewer) View(pool *mcfgv1.MachineConfigPool) *render.PoolView {
	return &render.PoolView{Pool: pool, Reader: p.Client, Shared: true, SingleNodeFunc: p.SingleNode}
}

// SingleNode says whether the cluster has one node, from WatchInputs'
// count once it has one.
func (p *Previewer) SingleNode(ctx context.Context) (bool, error) {
	if p.nodesCounted.Load() {
		return p.nodes.Load() == 1, nil
	}
	return render.SingleNode(ctx, p.Client)
}

// Render renders the pool's MachineConfigs, with the overrides in place,
// with merge (ndp's render or the MCO's, by mode); renderings are kept
// under the sources' identities after salt, which names what else merge
// depends on.
func (p *Previewer) Render(ctx context.Context, view *render.PoolView, overrides Overrides, salt string, merge func(pool string, sources []render.Source) (*Rendering, error)) (*Rendering, error) {
	pool := view.Pool
	sources, key, err := p.sources(ctx, view, overrides)
	if err != nil {
		return nil, err
	}
	key = salt + key
	if r, ok := p.renders.get(key); ok {
		return r, nil
	}
	if len(sources) == 0 {
		return nil, fmt.Errorf("MachineConfigPool %q would select no MachineConfig", pool.Name)
	}
	r, err := merge(pool.Name, sources)
	if err != nil {
		return nil, err
	}
	p.renders.put(key, r)
	return r, nil
}

// sources are the pool's MachineConfigs with the overrides in place, parsed
// (from the config cache, or as candidates), and the cache key of their
// rendering: every source's identity (name, UID and generation, or a
// candidate's digest), sorted.
func (p *Previewer) sources(ctx context.Context, view *render.PoolView, overrides Overrides) ([]render.Source, string, error) {
	sel, err := view.MachineConfigSelector()
	if err != nil {
		return nil, "", err
	}
	mcs, err := view.Sources(ctx)
	if err != nil {
		return nil, "", err
	}
	var sources []render.Source
	var ids []string
	for _, mc := range mcs {
		if _, overridden := overrides[mc.Name]; overridden {
			continue
		}
		cfg, err := p.configs.Get(mc)
		if err != nil {
			// The render controller reports an invalid MachineConfig
			// already in the cluster; it must not hide the preview.
			return nil, "", fmt.Errorf("MachineConfig %q already in the cluster is invalid: %w", mc.Name, err)
		}
		sources = append(sources, render.SourceOf(mc, cfg))
		ids = append(ids, fmt.Sprintf("%s/%s/%d", mc.Name, mc.UID, mc.Generation))
	}
	for name, mc := range overrides {
		if mc == nil || !sel.Matches(labels.Set(mc.Labels)) {
			continue
		}
		cfg, digest, err := p.candidate(name, mc)
		if err != nil {
			return nil, "", err
		}
		src := render.SourceOf(mc, cfg)
		src.Name = name
		sources = append(sources, src)
		ids = append(ids, name+"@"+digest)
	}
	sort.Strings(ids)
	return sources, view.Pool.Name + "\x00" + strings.Join(ids, "\x00"), nil
}

// candidate parses a MachineConfig that is not in the cluster (yet), keyed
// by a digest of its name and spec.
func (p *Previewer) candidate(name string, mc *ndpmcv1.MachineConfig) (*machineconfig.Config, string, error) {
	h := sha256.New()
	h.Write([]byte(name))
	h.Write([]byte{0})
	h.Write(mc.Spec.Config.Raw)
	rest := mc.Spec
	rest.Config.Raw = nil
	restJSON, err := json.Marshal(rest)
	if err != nil {
		return nil, "", err
	}
	h.Write(restJSON)
	digest := hex.EncodeToString(h.Sum(nil))
	if cfg, ok := p.candidates.get(digest); ok {
		return cfg, digest, nil
	}
	cfg, err := machineconfig.New(fmt.Sprintf("MachineConfig %q", name), mc.Spec)
	if err != nil {
		return nil, "", &InvalidChangeError{err}
	}
	// What the render controller would refuse (render.Merge validates
	// every source the same way), refused here with its message.
	if err := machineconfig.Validate(fmt.Sprintf("MachineConfig %q", name), cfg); err != nil {
		return nil, "", &InvalidChangeError{err}
	}
	p.candidates.put(digest, cfg)
	return cfg, digest, nil
}

// Plan plans one pool's nodes from a config in the cluster to toCfg (a
// rendering, or the pool's target in the cluster, named by toKey), with the
// given policy set; plans are kept by revision and configs, so a repeated
// dry-run plans nothing again.
func (p *Previewer) Plan(ctx context.Context, pl *planner.Planner, pool *mcfgv1.MachineConfigPool, from, toKey string, toCfg *machineconfig.Config, single bool) (*planner.Plan, error) {
	// The cache's own object, read only: a rendered config is large, and a
	// copy per preview would only be thrown away.
	var fromMC ndpmcv1.MachineConfig
	if err := p.Client.Get(ctx, client.ObjectKey{Name: from}, &fromMC, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("MachineConfig %q, which nodes of pool %q run: %w", from, pool.Name, err)
	}
	key := planKey{revision: pl.Engine.Revision(), from: fromMC.UID, fromGen: fromMC.Generation, to: toKey, pool: pool.Name + "\x00" + labels.Set(pool.Labels).String(), single: single}
	if plan, ok := p.plans.get(key); ok {
		return plan, nil
	}
	fromCfg, err := p.configs.Get(&fromMC)
	if err != nil {
		return nil, err
	}
	plan, err := pl.Plan(ctx, planner.Request{From: fromCfg, To: toCfg, Pool: pool.Name, PoolLabels: pool.Labels, SingleNode: single})
	if err != nil {
		return nil, err
	}
	p.plans.put(key, plan)
	return plan, nil
}

// ConfigNamed is a rendered MachineConfig of the cluster, parsed.
func (p *Previewer) ConfigNamed(ctx context.Context, pool *mcfgv1.MachineConfigPool, name string) (*machineconfig.Config, error) {
	var mc ndpmcv1.MachineConfig
	if err := p.Client.Get(ctx, client.ObjectKey{Name: name}, &mc); err != nil {
		return nil, fmt.Errorf("MachineConfig %q, which nodes of pool %q run: %w", name, pool.Name, err)
	}
	return p.configs.Get(&mc)
}
