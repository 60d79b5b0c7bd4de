package webhook

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/controllers"
)

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=machineconfiguration.openshift.io,resources=machineconfigs;machineconfigpools,verbs=get;list;watch

// MachineConfigPreview previews a MachineConfig create, update or delete:
// for each pool whose selector matches the object (before or after), it
// renders the pool with the change in place and plans from the configs the
// pool's nodes run. The plans come back as warnings; a change no node can
// apply in place, or an invalid Ignition config, is denied with the field.
type MachineConfigPreview struct {
	Previewer *Previewer
	Decoder   admission.Decoder
}

// Handle implements admission.Handler.
func (h *MachineConfigPreview) Handle(ctx context.Context, req admission.Request) admission.Response {
	ctx, cancel := withDeadline(ctx, PreviewDeadline)
	defer cancel()
	var candidate, old *ndpmcv1.MachineConfig
	if req.Operation == admissionv1.Create || req.Operation == admissionv1.Update {
		candidate = &ndpmcv1.MachineConfig{}
		if err := h.Decoder.Decode(req, candidate); err != nil {
			return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding MachineConfig %q: %w", req.Name, err))
		}
	}
	if len(req.OldObject.Raw) > 0 {
		old = &ndpmcv1.MachineConfig{}
		if err := h.Decoder.DecodeRaw(req.OldObject, old); err != nil {
			return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the previous MachineConfig %q: %w", req.Name, err))
		}
	}
	var newLabels, oldLabels map[string]string
	for _, mc := range []*ndpmcv1.MachineConfig{candidate, old} {
		// Rendered configs are the render controller's output, not a
		// change of any pool's sources.
		if mc != nil && mc.Labels[controllers.RenderedForLabel] != "" {
			return admission.Allowed("")
		}
	}
	if candidate != nil {
		// An invalid Ignition config is refused whichever pool selects it.
		if _, _, err := h.Previewer.candidate(req.Name, candidate); err != nil {
			return admission.Denied(err.Error()) // names the object and the field
		}
		newLabels = nonNil(candidate.Labels)
	}
	if old != nil {
		oldLabels = nonNil(old.Labels)
	}
	pools, err := h.Previewer.PoolsSelecting(ctx, newLabels, oldLabels)
	if err != nil {
		return noPreview(err)
	}
	if len(pools) == 0 {
		return admission.Allowed("").WithWarnings(fmt.Sprintf("MachineConfig %s is selected by no MachineConfigPool: no node is affected", req.Name))
	}
	return previewPools(ctx, h.Previewer, pools, func(*mcfgv1.MachineConfigPool) Overrides {
		return Overrides{req.Name: candidate}
	}, "", fmt.Sprintf("MachineConfig %q", req.Name))
}

// previewPools previews each pool and answers: the warnings, or a denial
// when the change is invalid or unreconcilable. Any other failure (a
// missing policy set, an unreadable cluster) allows the request with a
// warning: the preview never blocks a change by itself.
func previewPools(ctx context.Context, p *Previewer, pools []*mcfgv1.MachineConfigPool, overrides func(*mcfgv1.MachineConfigPool) Overrides, prefix, object string) admission.Response {
	var warnings, unreconcilable []string
	for _, pool := range pools {
		pp, err := p.Preview(ctx, pool, overrides(pool))
		var invalid *InvalidChangeError
		switch {
		case errors.As(err, &invalid):
			return admission.Denied(fmt.Sprintf("%s is invalid: %v", object, invalid.Err))
		case err != nil:
			warnings = append(warnings, fmt.Sprintf("%sno preview for pool %s: %v", prefix, pool.Name, err))
			continue
		}
		for _, u := range pp.Unreconcilable {
			unreconcilable = append(unreconcilable, fmt.Sprintf("pool %s, %s", pool.Name, u))
		}
		warnings = append(warnings, prefix+pp.Warning())
	}
	if len(unreconcilable) > 0 {
		return admission.Denied(fmt.Sprintf("%s cannot be applied in place (nodes would have to be reprovisioned): %s", object, strings.Join(unreconcilable, "; ")))
	}
	return admission.Allowed("").WithWarnings(warnings...)
}

func noPreview(err error) admission.Response {
	return admission.Allowed("").WithWarnings("ndp: no preview: " + err.Error())
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
