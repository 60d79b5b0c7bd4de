// Package advisor holds the advisor's admission previews (ndp-controller
// --mode=advisor: the Machine Config Operator runs the nodes). They say
// what the MCO will do (its render, its daemon's decision, with the
// cluster's MachineConfiguration policies), with ndp's own plan beside it
// where less disruptive, and deny nothing (NeverDeny): its answers to the
// MachineConfig, generated-config and image-mirror previews (Answers, on
// package preview's frames), the previews of image.config and
// MachineConfiguration cluster, and, with --mco-entries, what a policy
// edit would change in ndp's entries in MachineConfiguration cluster
// (MCOEntriesPreview). They read the cluster and write nothing.
package advisor

import (
	"context"
	"errors"
	"fmt"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/ndp-dev/ndp/mco/mcorender"
	"github.com/ndp-dev/ndp/mco/mcorules"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/policy"
	"github.com/ndp-dev/ndp/policyset"
	"github.com/ndp-dev/ndp/render"
	"github.com/ndp-dev/ndp/webhook/preview"
)

// +kubebuilder:rbac:groups=machineconfiguration.openshift.io,resources=controllerconfigs,verbs=get;list;watch
// +kubebuilder:rbac:groups=operator.openshift.io,resources=machineconfigurations,verbs=get;list;watch
// +kubebuilder:rbac:groups=config.openshift.io,resources=infrastructures;images,verbs=get;list;watch

// The rest of the cluster's configuration the MCO reads to decide (its
// feature gates, the cluster's version): readable to the advisor like the
// MCO's other inputs, though the previews take what they model of it from
// ControllerConfig.
// +kubebuilder:rbac:groups=config.openshift.io,resources=featuregates;clusterversions,verbs=get;list;watch

// The MCO's singletons the advisor reads.
const (
	// ControllerConfigName is the MCO's ControllerConfig, the base of its
	// render controller (the OS and extensions images).
	ControllerConfigName = "machine-config-controller"
	// ClusterName names MachineConfiguration, Infrastructure and Image.
	ClusterName = "cluster"
)

// Previewer is package preview's previewer with the MCO's rules and render,
// and the MCO's singletons among the inputs its answers depend on.
type Previewer struct {
	*preview.Previewer
	// Observe, when set before the previewer serves, is called with every
	// pool's advisor preview (tests compare its rendering with the one
	// the MCO then makes).
	Observe func(*MCOPreview)

	// The MCO's rules and render (mcorules.Decide, mcorender.Merge); tests
	// may put the MCO's own tools here.
	decide   func(mcorules.Input) (*mcorules.Decision, error)
	mergeMCO func(pool string, sources []render.Source, base mcorender.Base) (*render.Rendered, error)
}

// NewPreviewer returns the advisor's previewer.
func NewPreviewer(c client.Reader, active *policyset.ActivePolicies) *Previewer {
	p := preview.NewPreviewer(c, active)
	p.MoreInputs = mcoInputs()
	return &Previewer{Previewer: p, decide: mcorules.Decide, mergeMCO: mcorender.Merge}
}

// mcoInputs are what the MCO's render and decision read besides the
// configs (a cluster without one of these kinds has none to watch).
func mcoInputs() []preview.Input {
	return []preview.Input{
		{Object: &operatorv1.MachineConfiguration{}, Optional: true, Changed: func(old, new any) bool {
			return old.(*operatorv1.MachineConfiguration).ResourceVersion != new.(*operatorv1.MachineConfiguration).ResourceVersion
		}},
		{Object: &configv1.Infrastructure{}, Optional: true, Changed: func(old, new any) bool {
			return old.(*configv1.Infrastructure).Status.ControlPlaneTopology != new.(*configv1.Infrastructure).Status.ControlPlaneTopology
		}},
		{Object: &mcfgv1.ControllerConfig{}, Optional: true, Changed: func(old, new any) bool {
			o, n := old.(*mcfgv1.ControllerConfig), new.(*mcfgv1.ControllerConfig)
			return mcorender.BaseOf(o) != mcorender.BaseOf(n)
		}},
	}
}

// MCOPreview is what the MCO would do to one pool's nodes after a change:
// its daemon's decision (mcorules.Decide) per group of nodes on the same
// current config, towards the config its render controller would render.
type MCOPreview struct {
	Pool  string
	Nodes int
	// Rendered is the rendered config's name, as the MCO names it.
	Rendered  string
	Unchanged bool
	Groups    []MCOGroup
	// UpToDate nodes already run Rendered; Unconfigured nodes run no
	// config yet; Pending nodes, when Unchanged, are still moving to it.
	UpToDate, Unconfigured, Pending int
}

// MCOGroup is the nodes of a pool on one config, and the MCO's decision.
type MCOGroup struct {
	From     string
	Nodes    int
	Decision *mcorules.Decision
	// NDP is ndp's own plan for the same pair with the active policy set,
	// nil when there is none yet or the MCO's decision is to do nothing
	// (ndpCanBeLess).
	NDP *planner.Plan
}

// mcoState is what the MCO's decision and render read besides the configs,
// read once per request.
type mcoState struct {
	policies mcorules.Policies
	source   mcorules.PolicySource
	current  *operatorv1.MachineConfiguration // nil: none
	// overrides are its spec.irreconcilableValidationOverrides.
	overrides operatorv1.IrreconcilableValidationOverrides
	single    bool
	base      mcorender.Base
}

// readMCOState reads MachineConfiguration cluster (its policies),
// Infrastructure cluster (a single-replica control plane is never drained)
// and ControllerConfig machine-config-controller (the render base).
func (p *Previewer) readMCOState(ctx context.Context) (*mcoState, error) {
	var mc operatorv1.MachineConfiguration
	var current *operatorv1.MachineConfiguration
	switch err := p.Client.Get(ctx, client.ObjectKey{Name: ClusterName}, &mc); {
	case err == nil:
		current = &mc
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("reading MachineConfiguration %s: %w", ClusterName, err)
	}
	st, err := p.mcoDecisionState(ctx, current)
	if err != nil {
		return nil, err
	}
	var cc mcfgv1.ControllerConfig
	if err := p.Client.Get(ctx, client.ObjectKey{Name: ControllerConfigName}, &cc); err != nil {
		return nil, fmt.Errorf("reading ControllerConfig %s, the base of the MCO's render: %w", ControllerConfigName, err)
	}
	st.base = mcorender.BaseOf(&cc)
	return st, nil
}

// mcoDecisionState is what the MCO's daemon decides with besides the
// configs: mc's policies (nil: none) and overrides, and whether the
// control plane is a single replica, from Infrastructure cluster (never
// drained); no render base.
func (p *Previewer) mcoDecisionState(ctx context.Context, mc *operatorv1.MachineConfiguration) (*mcoState, error) {
	st := &mcoState{current: mc}
	st.policies, st.source = mcorules.PoliciesOf(mc)
	st.overrides = mcorules.OverridesOf(mc)
	var infra configv1.Infrastructure
	switch err := p.Client.Get(ctx, client.ObjectKey{Name: ClusterName}, &infra); {
	case err == nil:
		st.single = infra.Status.ControlPlaneTopology == configv1.SingleReplicaTopologyMode
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		// The MCO reads the topology from Infrastructure; without one,
		// a single node is the best evidence.
		single, err := p.SingleNode(ctx)
		if err != nil {
			return nil, err
		}
		st.single = single
	default:
		return nil, fmt.Errorf("reading Infrastructure %s: %w", ClusterName, err)
	}
	return st, nil
}

// renderMCO merges the pool's MachineConfigs with the overrides in place,
// as the MCO's render controller does.
func (p *Previewer) renderMCO(ctx context.Context, view *render.PoolView, overrides preview.Overrides, base mcorender.Base) (*preview.Rendering, error) {
	// The MCO's render starts from its ControllerConfig's images: they are
	// part of what the rendering depends on.
	salt := strings.Join([]string{"mco", base.OSImageURL, base.BaseOSExtensionsContainerImage, ""}, "\x00")
	return p.Render(ctx, view, overrides, salt, func(pool string, sources []render.Source) (*preview.Rendering, error) {
		merged, err := p.mergeMCO(pool, sources, base)
		if err != nil {
			return nil, &preview.InvalidChangeError{Err: err}
		}
		cfg, err := merged.Config()
		if err != nil {
			return nil, &preview.InvalidChangeError{Err: fmt.Errorf("the rendered config of pool %q would be invalid: %w", pool, err)}
		}
		return &preview.Rendering{Rendered: merged, Config: cfg}, nil
	})
}

// PreviewMCO renders pool with the overrides in place as the MCO would,
// and decides, for each config its nodes run, what the MCO's daemon does;
// ndp's own plan for the same pair is kept beside it.
func (p *Previewer) PreviewMCO(ctx context.Context, pool *mcfgv1.MachineConfigPool, overrides preview.Overrides, st *mcoState) (*MCOPreview, error) {
	view := p.View(pool)
	r, err := p.renderMCO(ctx, view, overrides, st.base)
	if err != nil {
		return nil, err
	}
	out := &MCOPreview{Pool: pool.Name, Rendered: r.Name, Unchanged: r.Name == pool.Spec.Configuration.Name}
	census, err := preview.TakeCensus(ctx, view, r.Name)
	if err != nil {
		return nil, err
	}
	out.Nodes, out.Unconfigured, out.UpToDate = census.Nodes, census.Unconfigured, census.UpToDate
	if out.Unchanged {
		out.Pending = census.Pending()
		return out, nil
	}
	for _, from := range census.Froms(pool.Spec.Configuration.Name, r.Name) {
		fromCfg, err := p.ConfigNamed(ctx, pool, from)
		if err != nil {
			return nil, err
		}
		d, err := p.decide(mcorules.Input{From: fromCfg, To: r.Config, Policies: st.policies, SingleNode: st.single, Overrides: st.overrides})
		if err != nil {
			return nil, fmt.Errorf("the MCO's decision from %s to %s: %w", from, r.Name, err)
		}
		g := MCOGroup{From: from, Nodes: census.Others[from], Decision: d}
		if pl := p.Active.Planner(); pl != nil && ndpCanBeLess(d) {
			// ndp's own plan is a comparison only: without it, the MCO's
			// decision still stands; where the MCO does nothing, ndp
			// cannot do less, and planning would be wasted.
			if plan, err := p.Plan(ctx, pl, pool, from, r.Name, r.Config, st.single); err == nil {
				g.NDP = plan
			}
		}
		out.Groups = append(out.Groups, g)
	}
	return out, nil
}

// lookupPolicy finds an active ndp policy by name.
func (p *Previewer) lookupPolicy(name string) (policy.Policy, bool) {
	if p.Active == nil {
		return policy.Policy{}, false
	}
	return p.Active.Get(name)
}

// advisorPools previews each pool as the MCO would handle the change and
// answers with warnings only: in advisor mode nothing is ever denied (the
// MCO's own CRD validation still runs); a change the MCO's render
// controller would refuse is a warning too.
func advisorPools(ctx context.Context, p *Previewer, pools []*mcfgv1.MachineConfigPool, overrides func(*mcfgv1.MachineConfigPool) preview.Overrides, object string) admission.Response {
	st, err := p.readMCOState(ctx)
	if err != nil {
		return admission.Allowed("").WithWarnings(fitMCOWarnings([]string{"MCO: no preview: " + err.Error()})...)
	}
	var ws []string
	if s := staleText(st.source); s != "" {
		ws = append(ws, s)
	}
	for _, pool := range pools {
		pp, err := p.PreviewMCO(ctx, pool, overrides(pool), st)
		var invalid *preview.InvalidChangeError
		switch {
		case errors.As(err, &invalid):
			ws = append(ws, fmt.Sprintf("MCO: pool %s: the MCO's render controller refuses %s (the pool goes Degraded): %v", pool.Name, object, invalid.Err))
			continue
		case err != nil:
			ws = append(ws, fmt.Sprintf("MCO: pool %s: no preview: %v", pool.Name, err))
			continue
		}
		if p.Observe != nil {
			p.Observe(pp)
		}
		ws = append(ws, pp.Warning())
		if s := pp.NDPWarning(p.lookupPolicy); s != "" {
			ws = append(ws, s)
		}
	}
	return admission.Allowed("").WithWarnings(fitMCOWarnings(ws)...)
}
