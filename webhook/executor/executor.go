// Package executor holds the executor's answers to the admission previews
// (ndp-controller --mode=executor: ndp runs the nodes): what ndp's own
// controllers would render and plan for a MachineConfig, KubeletConfig,
// ContainerRuntimeConfig or image-mirror change, one warning per pool with
// its plans and when they would start under the pool's RolloutPolicies,
// and a denial of what the controllers would refuse or no node could apply
// in place. The frames that decode a change and find its pools are package
// preview's, below both modes.
package executor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/registries"
	"github.com/ndp-dev/ndp/render"
	"github.com/ndp-dev/ndp/webhook/preview"
)

// Answers answers the previews as the executor (preview.Answers).
type Answers struct {
	Previewer *preview.Previewer
	// RegistriesBase is the registries.conf image mirrors are added to, as
	// the registries controller's (render.DefaultRegistriesBase, unless
	// webhook.Options say otherwise).
	RegistriesBase string
}

var _ preview.Answers = (*Answers)(nil)

// Ignores leaves no MachineConfig but ndp's rendered ones alone.
func (a *Answers) Ignores(*ndpmcv1.MachineConfig) bool { return false }

// InvalidMachineConfig denies the change: the render controller would
// refuse it.
func (a *Answers) InvalidMachineConfig(_ string, err error) admission.Response {
	return admission.Denied(err.Error()) // names the object and the field
}

// NoPoolSelects allows the change, saying that no node is affected.
func (a *Answers) NoPoolSelects(name string) admission.Response {
	return admission.Allowed("").WithWarnings(fmt.Sprintf("MachineConfig %s is selected by no MachineConfigPool: no node is affected", name))
}

// MachineConfigPools previews each pool with ndp's plans.
func (a *Answers) MachineConfigPools(ctx context.Context, name string, pools []*mcfgv1.MachineConfigPool, overrides func(*mcfgv1.MachineConfigPool) preview.Overrides) (admission.Response, bool) {
	return a.pools(ctx, pools, overrides, "", fmt.Sprintf("MachineConfig %q", name))
}

// RefuseGenerated denies the change with the controller's message.
func (a *Answers) RefuseGenerated(_, msg string) admission.Response { return admission.Denied(msg) }

// GeneratedPools previews each pool with ndp's plans, after the warnings
// of the pools with no preview.
func (a *Answers) GeneratedPools(ctx context.Context, object, prefix string, pools []*mcfgv1.MachineConfigPool, overrides func(*mcfgv1.MachineConfigPool) preview.Overrides, unpreviewed []string) admission.Response {
	resp, _ := a.pools(ctx, pools, overrides, prefix, object)
	if len(unpreviewed) > 0 {
		resp.Warnings = append(unpreviewed, resp.Warnings...)
	}
	return resp
}

// ImageMirrors renders registries.conf with the mirrors, as the registries
// controller would (render.RegistriesConfig), and previews every pool's
// generated registries MachineConfig; mirrors it could not render are
// denied.
func (a *Answers) ImageMirrors(ctx context.Context, req admission.Request, mirrors preview.Mirrors) admission.Response {
	kind := req.Kind.Kind
	ign, _, err := render.RegistriesConfig(a.RegistriesBase, mirrors.IDMS, mirrors.ITMS, mirrors.ICSP)
	var invalid *registries.InvalidError
	if errors.As(err, &invalid) {
		return admission.Denied(fmt.Sprintf("registries.conf cannot be rendered with this %s: %v", kind, invalid))
	}
	if err != nil {
		return preview.NoPreview(err)
	}
	pools, err := a.Previewer.Pools(ctx)
	if err != nil {
		return preview.NoPreview(err)
	}
	prefix := fmt.Sprintf("%s %s %s: ", preview.Verb(req.Operation), kind, req.Name)
	resp, _ := a.pools(ctx, pools, func(pool *mcfgv1.MachineConfigPool) preview.Overrides {
		name := render.GeneratedRegistriesName(pool.Name)
		return preview.Overrides{name: &ndpmcv1.MachineConfig{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{ndpmcv1.RoleLabel: pool.Name}},
			Spec:       mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: ign}},
		}}
	}, prefix, fmt.Sprintf("%s %q", kind, req.Name))
	return resp
}

// pools previews each pool and answers: the warnings, or a denial when the
// change is invalid or unreconcilable. Any other failure (a missing policy
// set, an unreadable cluster, a deadline) allows the request with a
// warning, as the preview never blocks a change by itself; complete is
// false then.
func (a *Answers) pools(ctx context.Context, pools []*mcfgv1.MachineConfigPool, overrides func(*mcfgv1.MachineConfigPool) preview.Overrides, prefix, object string) (resp admission.Response, complete bool) {
	var warnings, unreconcilable []string
	complete = true
	for _, pool := range pools {
		pp, err := a.Preview(ctx, pool, overrides(pool))
		var invalid *preview.InvalidChangeError
		switch {
		case errors.As(err, &invalid):
			return admission.Denied(fmt.Sprintf("%s is invalid: %v", object, invalid.Err)), true
		case err != nil:
			warnings = append(warnings, fmt.Sprintf("%sno preview for pool %s: %v", prefix, pool.Name, err))
			complete = false
			continue
		}
		for _, u := range pp.Unreconcilable {
			unreconcilable = append(unreconcilable, fmt.Sprintf("pool %s, %s", pool.Name, u))
		}
		// When the change would start under the pool's rollout policies,
		// not at all for a pool no policy selects. It changes with the
		// clock and the policies, which the answer cache does not key
		// on: an answer that says it is not kept (the renderings and
		// plans under it still are).
		start := ""
		if policies, err := rolloutPolicies(ctx, a.Previewer.Client, pool); err != nil {
			start = "no rollout policy preview: " + err.Error()
		} else {
			start = rolloutStart(policies, pp, time.Now())
		}
		if start != "" {
			complete = false
		}
		warnings = append(warnings, prefix+withStart(pp.Warning(), start))
	}
	if len(unreconcilable) > 0 {
		return admission.Denied(fmt.Sprintf("%s cannot be applied in place (nodes would have to be reprovisioned): %s", object, strings.Join(unreconcilable, "; "))), complete
	}
	return admission.Allowed("").WithWarnings(warnings...), complete
}

// PoolPreview is what one pool's nodes would do after a change.
type PoolPreview struct {
	Pool string
	// Nodes the pool selects.
	Nodes int
	// Rendered is the name the pool's rendered config would have.
	Rendered string
	// Unchanged: the change leaves the pool's rendered config as it is.
	Unchanged bool
	// Groups holds one plan per config the pool's nodes run today (other
	// than Rendered), most nodes first.
	Groups []Group
	// UpToDate nodes already run Rendered; Unconfigured nodes run no
	// config ndp knows of yet; Pending nodes, when Unchanged, are still
	// moving to it.
	UpToDate, Unconfigured, Pending int
	// Unreconcilable lists the changes no node can apply in place.
	Unreconcilable []string
}

// Group is the nodes of a pool that run the same config, and their plan.
type Group struct {
	From  string
	Nodes int
	Plan  *planner.Plan
}

// Preview renders pool with the overrides in place, as ndp's render
// controller would, and plans, from each config its nodes run, to that
// rendering, with the active policy set.
func (a *Answers) Preview(ctx context.Context, pool *mcfgv1.MachineConfigPool, overrides preview.Overrides) (*PoolPreview, error) {
	p := a.Previewer
	pl, err := p.Active.Ready(ctx, p.Client)
	if err != nil {
		return nil, err
	}
	view := p.View(pool)
	r, err := p.Render(ctx, view, overrides, "", ndpRender)
	if err != nil {
		return nil, err
	}
	out := &PoolPreview{Pool: pool.Name, Rendered: r.Name, Unchanged: r.Name == pool.Spec.Configuration.Name}
	census, err := preview.TakeCensus(ctx, view, r.Name)
	if err != nil {
		return nil, err
	}
	single, err := view.SingleNode(ctx)
	if err != nil {
		return nil, err
	}
	out.Nodes, out.Unconfigured, out.UpToDate = census.Nodes, census.Unconfigured, census.UpToDate
	if out.Unchanged {
		// Nothing new to plan: updates already under way keep the plans
		// the plan controller wrote, and are not this change's doing.
		out.Pending = census.Pending()
		return out, nil
	}
	for _, from := range census.Froms(pool.Spec.Configuration.Name, r.Name) {
		plan, err := p.Plan(ctx, pl, pool, from, r.Name, r.Config, single)
		if err != nil {
			return nil, err
		}
		for _, u := range plan.Unreconcilable {
			out.Unreconcilable = append(out.Unreconcilable, fmt.Sprintf("from %s: %s", from, u))
		}
		if n := census.Others[from]; n > 0 {
			out.Groups = append(out.Groups, Group{From: from, Nodes: n, Plan: plan})
		}
	}
	return out, nil
}

// ndpRender merges a pool's sources as ndp's render controller does.
func ndpRender(pool string, sources []render.Source) (*preview.Rendering, error) {
	merged, err := render.Merge(pool, sources)
	if err != nil {
		return nil, err
	}
	cfg, err := machineconfig.New(merged.Name, merged.Spec)
	if err != nil {
		return nil, &preview.InvalidChangeError{Err: fmt.Errorf("the rendered config of pool %q would be invalid: %w", pool, err)}
	}
	cfg.Sources = merged.Sources
	return &preview.Rendering{Rendered: merged, Config: cfg}, nil
}
