package preview

import (
	"context"
	"fmt"
	"strings"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1alpha1 "github.com/openshift/api/operator/v1alpha1"
	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
)

// Answers is how one of ndp-controller's modes answers the previews of a
// MachineConfig, a KubeletConfig or ContainerRuntimeConfig and an
// image-mirror change, once the frames here have decoded it and found what
// it reaches: the executor (package executor) with ndp's own plans,
// denying what its controllers would refuse; the advisor (package advisor)
// with what the Machine Config Operator will do, denying nothing.
type Answers interface {
	// Ignores says whether the MachineConfig preview leaves a change of
	// mc alone (it leaves ndp's rendered configs in every mode).
	Ignores(mc *ndpmcv1.MachineConfig) bool
	// InvalidMachineConfig answers a MachineConfig whose config cannot be
	// parsed or is invalid; err names the object and the field.
	InvalidMachineConfig(name string, err error) admission.Response
	// NoPoolSelects answers a change of a MachineConfig no pool selects.
	NoPoolSelects(name string) admission.Response
	// MachineConfigPools answers a change of MachineConfig name that
	// pools select, each with overrides(pool) in place; complete is false
	// when the answer depends on a passing condition, and is not kept.
	MachineConfigPools(ctx context.Context, name string, pools []*mcfgv1.MachineConfigPool, overrides func(*mcfgv1.MachineConfigPool) Overrides) (resp admission.Response, complete bool)
	// RefuseGenerated answers a KubeletConfig or ContainerRuntimeConfig
	// (kind) its controller would refuse, with the controller's message.
	RefuseGenerated(kind, msg string) admission.Response
	// GeneratedPools answers a change of a KubeletConfig or
	// ContainerRuntimeConfig (object: its kind and quoted name) that pools
	// select, each with overrides(pool) in place; prefix starts each
	// pool's warning, and unpreviewed are the warnings of the pools that
	// could not be previewed.
	GeneratedPools(ctx context.Context, object, prefix string, pools []*mcfgv1.MachineConfigPool, overrides func(*mcfgv1.MachineConfigPool) Overrides, unpreviewed []string) admission.Response
	// ImageMirrors answers an image-mirror change (req), given the
	// cluster's image-mirror objects with it in place.
	ImageMirrors(ctx context.Context, req admission.Request, mirrors Mirrors) admission.Response
}

// Mirrors are the cluster's image-mirror objects.
type Mirrors struct {
	IDMS []configv1.ImageDigestMirrorSet
	ITMS []configv1.ImageTagMirrorSet
	ICSP []operatorv1alpha1.ImageContentSourcePolicy
}

// DefaultPreviewDeadline is a preview handler's deadline when it sets none:
// below the timeoutSeconds of its webhook configuration (5 s), so that the
// handler answers before the API server gives up on it.
const DefaultPreviewDeadline = 4 * time.Second

// Deadline is a preview handler's deadline: d, or DefaultPreviewDeadline
// when zero.
func Deadline(d time.Duration) time.Duration {
	if d == 0 {
		return DefaultPreviewDeadline
	}
	return d
}

// NoPreview allows a change the preview could not be made for, saying why:
// the preview never blocks a change by itself.
func NoPreview(err error) admission.Response {
	return admission.Allowed("").WithWarnings("ndp: no preview: " + err.Error())
}

// Verb is an operation as the warnings say it: "creating", "updating",
// "deleting".
func Verb(op admissionv1.Operation) string {
	if v := map[admissionv1.Operation]string{admissionv1.Create: "creating", admissionv1.Update: "updating", admissionv1.Delete: "deleting"}[op]; v != "" {
		return v
	}
	return strings.ToLower(string(op))
}

// Count is "1 node", "3 nodes".
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
