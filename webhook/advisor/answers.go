package advisor

import (
	"context"
	"fmt"
	"slices"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/mco/mcorender"
	"github.com/ndp-dev/ndp/webhook/preview"
)

// Answers answers the previews as the advisor (preview.Answers): what the
// MCO will do, as warnings only.
type Answers struct {
	Previewer *Previewer
}

var _ preview.Answers = (*Answers)(nil)

// Ignores leaves the MCO's rendered configs alone: they are owned by their
// pool.
func (a *Answers) Ignores(mc *ndpmcv1.MachineConfig) bool {
	return slices.ContainsFunc(mc.OwnerReferences, func(r metav1.OwnerReference) bool { return r.Kind == "MachineConfigPool" })
}

// InvalidMachineConfig warns: the MCO admits it, and its render
// controller refuses it.
func (a *Answers) InvalidMachineConfig(name string, err error) admission.Response {
	return admission.Allowed("").WithWarnings(fitMCOWarnings([]string{fmt.Sprintf("MCO: the render controller refuses MachineConfig %s, the pools selecting it go Degraded: %v", name, err)})...)
}

// NoPoolSelects says that no node is affected.
func (a *Answers) NoPoolSelects(name string) admission.Response {
	return admission.Allowed("").WithWarnings(fmt.Sprintf("MCO: MachineConfig %s is selected by no MachineConfigPool: no node is affected", name))
}

// MachineConfigPools previews each pool as the MCO would handle the change.
func (a *Answers) MachineConfigPools(ctx context.Context, name string, pools []*mcfgv1.MachineConfigPool, overrides func(*mcfgv1.MachineConfigPool) preview.Overrides) (admission.Response, bool) {
	return advisorPools(ctx, a.Previewer, pools, overrides, fmt.Sprintf("MachineConfig %s", name)), true
}

// RefuseGenerated warns: the MCO's controller reports it on the object's
// status, and nothing is rendered.
func (a *Answers) RefuseGenerated(kind, msg string) admission.Response {
	return admission.Allowed("").WithWarnings(fitMCOWarnings([]string{fmt.Sprintf("MCO: the %s controller refuses it, nothing is rendered: %s", kind, msg)})...)
}

// GeneratedPools previews each pool as the MCO would handle the change,
// after the warnings of the pools with no preview.
func (a *Answers) GeneratedPools(ctx context.Context, object, _ string, pools []*mcfgv1.MachineConfigPool, overrides func(*mcfgv1.MachineConfigPool) preview.Overrides, unpreviewed []string) admission.Response {
	resp := advisorPools(ctx, a.Previewer, pools, overrides, object)
	if len(unpreviewed) > 0 {
		resp.Warnings = fitMCOWarnings(append(unpreviewed, resp.Warnings...))
	}
	return resp
}

// ImageMirrors previews what the MCO would write with the mirrors and
// image.config cluster's registry sources.
func (a *Answers) ImageMirrors(ctx context.Context, req admission.Request, mirrors preview.Mirrors) admission.Response {
	in, err := mcorender.RegistriesInputs(ctx, a.Previewer.Client)
	if err != nil {
		return noMCOPreview(err)
	}
	in.IDMS, in.ITMS, in.ICSP = mirrors.IDMS, mirrors.ITMS, mirrors.ICSP
	return advisorRegistries(ctx, a.Previewer, in, fmt.Sprintf("%s %s", req.Kind.Kind, req.Name))
}

// NeverDeny admits whatever a preview handler answers: beside the MCO, ndp
// must never block a change of the MCO's objects, so a denial or an error
// (an undecodable object) becomes a warning. The MCO's own CRD validation
// still runs.
func NeverDeny(h admission.Handler) admission.Handler { return neverDeny{h} }

type neverDeny struct{ admission.Handler }

func (n neverDeny) Handle(ctx context.Context, req admission.Request) admission.Response {
	resp := n.Handler.Handle(ctx, req)
	if resp.Allowed {
		return resp
	}
	msg := "the preview failed"
	if resp.Result != nil && resp.Result.Message != "" {
		msg = resp.Result.Message
	}
	return admission.Allowed("").WithWarnings(fitMCOWarnings(append(resp.Warnings, "MCO: no preview: "+msg))...)
}
