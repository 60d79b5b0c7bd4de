package preview

import (
	"context"
	"fmt"
	"net/http"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	operatorv1alpha1 "github.com/openshift/api/operator/v1alpha1"
	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// +kubebuilder:rbac:groups=config.openshift.io,resources=imagedigestmirrorsets;imagetagmirrorsets,verbs=get;list;watch
// +kubebuilder:rbac:groups=operator.openshift.io,resources=imagecontentsourcepolicies,verbs=get;list;watch

// ImageMirrorPreview previews an ImageDigestMirrorSet, ImageTagMirrorSet or
// ImageContentSourcePolicy create, update or delete: it lists the
// cluster's image-mirror objects with the change in place, and its mode's
// Answers previews what they render to (the executor's: registries.conf as
// the registries controller would render it, render.RegistriesConfig, in
// every pool's generated registries MachineConfig, and a denial of an
// object it could not render; the advisor's: what the MCO would write,
// mcorender.RegistriesIgnition, with image.config's registry sources).
type ImageMirrorPreview struct {
	Answers Answers
	Decoder admission.Decoder
	Client  client.Reader
	// Deadline bounds a preview (DefaultPreviewDeadline when zero).
	Deadline time.Duration
}

// Handle implements admission.Handler.
func (h *ImageMirrorPreview) Handle(ctx context.Context, req admission.Request) admission.Response {
	ctx, cancel := context.WithTimeout(ctx, Deadline(h.Deadline))
	defer cancel()
	var idms configv1.ImageDigestMirrorSetList
	var itms configv1.ImageTagMirrorSetList
	var icsp operatorv1alpha1.ImageContentSourcePolicyList
	for _, l := range []client.ObjectList{&idms, &itms, &icsp} {
		if err := h.Client.List(ctx, l); err != nil {
			return NoPreview(fmt.Errorf("listing image-mirror objects: %w", err))
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
	return h.Answers.ImageMirrors(ctx, req, Mirrors{IDMS: idms.Items, ITMS: itms.Items, ICSP: icsp.Items})
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
