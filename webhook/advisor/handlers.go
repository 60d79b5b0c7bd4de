package advisor

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/ndp-dev/ndp/mco/mcorender"
	"github.com/ndp-dev/ndp/mco/mcorules"
	"github.com/ndp-dev/ndp/registries"
	"github.com/ndp-dev/ndp/render"
	"github.com/ndp-dev/ndp/webhook/preview"
)

// mcoRegistriesOverrides puts, in each pool, the generated registries
// MachineConfig the MCO's container-runtime-config controller would write
// from in, over the pool's template registries.conf and policy.json (what
// the pool renders to without it). A refusal of the controller is
// returned as an *InvalidChangeError.
func (p *Previewer) mcoRegistriesOverrides(ctx context.Context, pools []*mcfgv1.MachineConfigPool, in registries.Inputs) (map[string]preview.Overrides, error) {
	out := map[string]preview.Overrides{}
	for _, pool := range pools {
		mcs, err := p.View(pool).Sources(ctx)
		if err != nil {
			return nil, err
		}
		ign, err := mcorender.RegistriesIgnition(pool.Name, mcs, in)
		var invalid *mcorender.InvalidRegistriesError
		if errors.As(err, &invalid) {
			return nil, &preview.InvalidChangeError{Err: invalid}
		}
		if err != nil {
			return nil, err
		}
		name := render.GeneratedRegistriesName(pool.Name)
		out[pool.Name] = preview.Overrides{name: render.GeneratedMachineConfig(name, pool.Name, ign)}
	}
	return out, nil
}

// advisorRegistries answers an image-mirror or image.config change in
// advisor mode: every pool's generated registries MachineConfig as the MCO
// renders it with in, and the MCO's decision.
func advisorRegistries(ctx context.Context, p *Previewer, in registries.Inputs, object string) admission.Response {
	pools, err := p.Pools(ctx)
	if err != nil {
		return noMCOPreview(err)
	}
	overrides, err := p.mcoRegistriesOverrides(ctx, pools, in)
	if err != nil {
		return noMCOPreview(fmt.Errorf("%s: %w", object, err))
	}
	return advisorPools(ctx, p, pools, func(pool *mcfgv1.MachineConfigPool) preview.Overrides { return overrides[pool.Name] }, object)
}

func noMCOPreview(err error) admission.Response {
	return admission.Allowed("").WithWarnings(fitMCOWarnings([]string{"MCO: no preview: " + err.Error()})...)
}

// +kubebuilder:rbac:groups=config.openshift.io,resources=images,verbs=get;list;watch

// ImageConfigPreview previews, in advisor mode, a change of
// image.config.openshift.io cluster: what the MCO's
// container-runtime-config controller renders from its registry sources
// (registries.conf insecure and blocked registries, policy.json allowed and
// blocked registries, the search registries drop-in; see
// mcorender.RegistriesIgnition for what is not modelled), and what the MCO's
// daemons then do.
type ImageConfigPreview struct {
	Previewer *Previewer
	Decoder   admission.Decoder
	Deadline  time.Duration
}

// Handle implements admission.Handler.
func (h *ImageConfigPreview) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Name != ClusterName {
		return admission.Allowed("") // the MCO reads image.config cluster only
	}
	ctx, cancel := context.WithTimeout(ctx, preview.Deadline(h.Deadline))
	defer cancel()
	in, err := mcorender.RegistriesInputs(ctx, h.Previewer.Client)
	if err != nil {
		return noMCOPreview(err)
	}
	in.SetSources(&configv1.ImageSpec{})
	if req.Operation != admissionv1.Delete {
		var img configv1.Image
		if err := h.Decoder.Decode(req, &img); err != nil {
			return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding image.config.openshift.io %s: %w", req.Name, err))
		}
		in.SetSources(&img.Spec)
	}
	return advisorRegistries(ctx, h.Previewer, in, "image.config.openshift.io cluster")
}

// +kubebuilder:rbac:groups=operator.openshift.io,resources=machineconfigurations,verbs=get;list;watch

// MachineConfigurationPreview previews, in advisor mode, a change of
// MachineConfiguration cluster's node disruption policies: each pool's
// pending update (its nodes not yet on the pool's target) decided again
// with the candidate's spec.nodeDisruptionPolicy merged with the MCO's
// defaults, against the policies in force now.
type MachineConfigurationPreview struct {
	Previewer *Previewer
	Decoder   admission.Decoder
	Deadline  time.Duration
}

// Handle implements admission.Handler.
func (h *MachineConfigurationPreview) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Name != ClusterName || req.Operation == admissionv1.Delete {
		return admission.Allowed("") // the MCO's guard refuses other names; its operator recreates cluster
	}
	ctx, cancel := context.WithTimeout(ctx, preview.Deadline(h.Deadline))
	defer cancel()
	var cand operatorv1.MachineConfiguration
	if err := h.Decoder.Decode(req, &cand); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding MachineConfiguration %s: %w", req.Name, err))
	}
	p := h.Previewer
	st, err := p.readMCOState(ctx)
	if err != nil {
		return noMCOPreview(err)
	}
	if err := mcorules.Validate(cand.Spec.NodeDisruptionPolicy); err != nil {
		// The CRD's own rules refuse most of this before it reaches here.
		return admission.Allowed("").WithWarnings(fitMCOWarnings([]string{"MCO: the operator refuses this nodeDisruptionPolicy: " + err.Error()})...)
	}
	after := mcorules.MergePolicies(cand.Spec.NodeDisruptionPolicy)
	afterOverrides := mcorules.OverridesOf(&cand)
	pools, err := p.Pools(ctx)
	if err != nil {
		return noMCOPreview(err)
	}
	var ws []string
	pending := 0
	if s := staleText(st.source); s != "" {
		ws = append(ws, s) // "before" is then the spec in force, not yet the status
	}
	for _, pool := range pools {
		w, err := p.pendingWarnings(ctx, pool, st, after, afterOverrides)
		if err != nil {
			ws = append(ws, fmt.Sprintf("MCO: pool %s: no preview: %v", pool.Name, err))
			pending++ // unknown: not "none"
			continue
		}
		ws = append(ws, w...)
		pending += len(w)
	}
	if pending == 0 {
		ws = append(ws, "MCO: no pool has a pending update: the new policies apply to the next change")
	}
	return admission.Allowed("").WithWarnings(fitMCOWarnings(ws)...)
}

// pendingWarnings decides a pool's pending update (per config its waiting
// nodes run, towards the pool's target) with the policies in force and
// with after, and says what changes.
func (p *Previewer) pendingWarnings(ctx context.Context, pool *mcfgv1.MachineConfigPool, st *mcoState, after mcorules.Policies, afterOverrides operatorv1.IrreconcilableValidationOverrides) ([]string, error) {
	target := pool.Spec.Configuration.Name
	if target == "" {
		return nil, nil
	}
	census, err := preview.TakeCensus(ctx, p.View(pool), target)
	if err != nil {
		return nil, err
	}
	if len(census.Others) == 0 {
		return nil, nil
	}
	toCfg, err := p.ConfigNamed(ctx, pool, target)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, from := range census.Froms(target, target) {
		fromCfg, err := p.ConfigNamed(ctx, pool, from)
		if err != nil {
			return nil, err
		}
		in := mcorules.Input{From: fromCfg, To: toCfg, Policies: st.policies, SingleNode: st.single, Overrides: st.overrides}
		before, err := p.decide(in)
		if err != nil {
			return nil, err
		}
		in.Policies, in.Overrides = after, afterOverrides
		now, err := p.decide(in)
		if err != nil {
			return nil, err
		}
		name := pool.Name
		if len(census.Others) > 1 {
			name += " (from " + from + ")"
		}
		out = append(out, pendingText(name, census.Others[from], before, now))
	}
	return out, nil
}
