package webhook

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1alpha1 "github.com/openshift/api/operator/v1alpha1"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/render"
)

// +kubebuilder:rbac:groups=config.openshift.io,resources=imagedigestmirrorsets;imagetagmirrorsets,verbs=get;list;watch
// +kubebuilder:rbac:groups=operator.openshift.io,resources=imagecontentsourcepolicies,verbs=get;list;watch

// ImageMirrorPreview previews an ImageDigestMirrorSet, ImageTagMirrorSet or
// ImageContentSourcePolicy create, update or delete: it renders
// registries.conf with the change in place, as the registries controller
// would (render.RegistriesConfig), and previews every pool's generated
// registries MachineConfig. An object the registries controller could not
// render is denied. In advisor mode it previews what the MCO would write
// instead (registries.RenderMCO, with image.config's registry sources).
type ImageMirrorPreview struct {
	Previewer      *Previewer
	Decoder        admission.Decoder
	Client         client.Reader
	RegistriesBase string
	// Deadline bounds a preview (DefaultPreviewDeadline when zero).
	Deadline time.Duration
}

// Handle implements admission.Handler.
func (h *ImageMirrorPreview) Handle(ctx context.Context, req admission.Request) admission.Response {
	ctx, cancel := context.WithTimeout(ctx, previewDeadline(h.Deadline))
	defer cancel()
	var idms configv1.ImageDigestMirrorSetList
	var itms configv1.ImageTagMirrorSetList
	var icsp operatorv1alpha1.ImageContentSourcePolicyList
	for _, l := range []client.ObjectList{&idms, &itms, &icsp} {
		if err := h.Client.List(ctx, l); err != nil {
			return noPreview(fmt.Errorf("listing image-mirror objects: %w", err))
		}
	}
	kind := req.Kind.Kind
	var err error
	switch kind {
	case "ImageDigestMirrorSet":
		idms.Items, err = replaceItem(h.Decoder, req, idms.Items)
	case "ImageTagMirrorSet":
		itms.Items, err = replaceItem(h.Decoder, req, itms.Items)
	case "ImageContentSourcePolicy":
		icsp.Items, err = replaceItem(h.Decoder, req, icsp.Items)
	default:
		return admission.Allowed("") // not an image-mirror kind: nothing to preview
	}
	if err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding %s %q: %w", kind, req.Name, err))
	}
	if h.Previewer.Advisor {
		in, err := h.Previewer.mcoImageInputs(ctx)
		if err != nil {
			return noMCOPreview(err)
		}
		in.IDMS, in.ITMS, in.ICSP = idms.Items, itms.Items, icsp.Items
		return advisorRegistries(ctx, h.Previewer, in, fmt.Sprintf("%s %s", kind, req.Name))
	}
	ign, _, err := render.RegistriesConfig(h.RegistriesBase, idms.Items, itms.Items, icsp.Items)
	var invalid *render.InvalidMirrorsError
	if errors.As(err, &invalid) {
		return admission.Denied(fmt.Sprintf("registries.conf cannot be rendered with this %s: %v", kind, invalid))
	}
	if err != nil {
		return noPreview(err)
	}
	pools, err := h.Previewer.pools(ctx)
	if err != nil {
		return noPreview(err)
	}
	verb := map[admissionv1.Operation]string{admissionv1.Create: "creating", admissionv1.Update: "updating", admissionv1.Delete: "deleting"}[req.Operation]
	if verb == "" {
		verb = strings.ToLower(string(req.Operation))
	}
	prefix := fmt.Sprintf("%s %s %s: ", verb, kind, req.Name)
	resp, _ := previewPools(ctx, h.Previewer, pools, func(pool *mcfgv1.MachineConfigPool) Overrides {
		name := render.GeneratedRegistriesName(pool.Name)
		return Overrides{name: &ndpmcv1.MachineConfig{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{ndpmcv1.RoleLabel: pool.Name}},
			Spec:       mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: ign}},
		}}
	}, prefix, fmt.Sprintf("%s %q", kind, req.Name))
	return resp
}

// replaceItem puts the request's object in place of the listed one of the
// same name, or removes it on delete.
func replaceItem[T any, PT interface {
	*T
	client.Object
}](dec admission.Decoder, req admission.Request, items []T) ([]T, error) {
	out := make([]T, 0, len(items)+1)
	for i := range items {
		if PT(&items[i]).GetName() != req.Name {
			out = append(out, items[i])
		}
	}
	if req.Operation == admissionv1.Delete {
		return out, nil
	}
	var obj T
	if err := dec.Decode(req, PT(&obj)); err != nil {
		return nil, err
	}
	return append(out, obj), nil
}
