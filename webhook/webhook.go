// Package webhook holds ndp's admission handlers: the dry-run preview of
// MachineConfig, image-mirror, KubeletConfig and ContainerRuntimeConfig changes, returned as warnings (one per
// pool, with node counts, actions, drain and reboot, and the deciding
// policies), and the validation of NodeDisruptionPolicies. In advisor mode
// (the MCO runs the nodes) the previews say what the MCO will do, with
// ndp's plan beside it, also for image.config and MachineConfiguration
// cluster, and deny nothing. They call the same render, planner and
// policy-check code as the controllers, in memory, and never write.
//
// Failure policies are deliberate (manifests/webhook): a preview never
// blocks a MachineConfig when the webhook is down (Ignore), while policy
// validation fails closed (Fail). The what-if preview of a policy delete,
// served by the validation handler, is called on dry-runs only and fails
// open (Ignore): a policy can always be deleted.
package webhook

import (
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/ndp-dev/ndp/policyset"
	"github.com/ndp-dev/ndp/render"
)

// Paths the handlers are served at (manifests/webhook/webhook.yaml).
const (
	MachineConfigPath = "/preview-machineconfig"
	ImageMirrorsPath  = "/preview-imagemirrors"
	// GeneratedConfigsPath previews KubeletConfigs and ContainerRuntimeConfigs.
	GeneratedConfigsPath = "/preview-generatedconfigs"
	PolicyPath           = "/validate-nodedisruptionpolicy"
	// ImageConfigPath previews image.config.openshift.io cluster and
	// MachineConfigurationPath MachineConfiguration cluster (advisor mode).
	ImageConfigPath          = "/preview-imageconfig"
	MachineConfigurationPath = "/preview-machineconfiguration"
)

// DefaultPreviewDeadline and ValidationDeadline are the deadlines of the
// handlers: below the timeoutSeconds of their webhook configurations (5 s
// and 15 s), so the handler answers before the API server gives up on it.
// A preview handler's Deadline overrides DefaultPreviewDeadline.
const DefaultPreviewDeadline = 4 * time.Second

// ValidationDeadline is the policy validation handler's: see DefaultPreviewDeadline.
const ValidationDeadline = 12 * time.Second

// previewDeadline is a preview handler's deadline: d, or
// DefaultPreviewDeadline when zero.
func previewDeadline(d time.Duration) time.Duration {
	if d == 0 {
		return DefaultPreviewDeadline
	}
	return d
}

// Options configure the handlers.
type Options struct {
	// RegistriesBase is the registries.conf image mirrors are added to
	// (render.DefaultRegistriesBase when empty), as the registries
	// controller's.
	RegistriesBase string
	// TestTimeout bounds each Rego test of a validated policy.
	TestTimeout time.Duration
	// PreviewDeadline is the preview handlers' deadline
	// (DefaultPreviewDeadline when zero).
	PreviewDeadline time.Duration
	// Advisor: the Machine Config Operator runs the nodes. The previews
	// say what it will do (its render, its daemon's decision, with the
	// cluster's MachineConfiguration policies), with ndp's own plan beside
	// it where less disruptive, and deny nothing; image.config and
	// MachineConfiguration cluster are previewed too.
	Advisor bool
	// MCOEntries is ndp-controller's --mco-entries: "off" (or empty),
	// "static" or "all". As the advisor, unless off, the policy webhook
	// also warns what ndp would write in MachineConfiguration cluster's
	// node disruption policy after a policy edit, and what the MCO would
	// then do with each pool's pending update.
	MCOEntries string
}

// SetupWithManager registers the handlers on the manager's webhook server.
// They use the replica's active policy set, which the policy controller
// keeps on every replica.
func SetupWithManager(mgr ctrl.Manager, active *policyset.ActivePolicies, opts Options) (*Previewer, error) {
	srv := mgr.GetWebhookServer()
	decoder := admission.NewDecoder(mgr.GetScheme())
	previewer := NewPreviewer(mgr.GetClient(), active)
	previewer.Advisor = opts.Advisor
	base := opts.RegistriesBase
	if base == "" {
		base = render.DefaultRegistriesBase
	}
	preview := func(h admission.Handler) *admission.Webhook {
		if opts.Advisor {
			h = neverDeny{h}
		}
		return &admission.Webhook{Handler: h}
	}
	mcPreview := NewMachineConfigPreview(previewer, decoder)
	mcPreview.Deadline = opts.PreviewDeadline
	srv.Register(MachineConfigPath, preview(mcPreview))
	srv.Register(ImageMirrorsPath, preview(&ImageMirrorPreview{Previewer: previewer, Decoder: decoder, Client: mgr.GetClient(), RegistriesBase: base, Deadline: opts.PreviewDeadline}))
	srv.Register(GeneratedConfigsPath, preview(&GeneratedConfigPreview{Previewer: previewer, Decoder: decoder, Deadline: opts.PreviewDeadline}))
	if opts.Advisor {
		srv.Register(ImageConfigPath, preview(&ImageConfigPreview{Previewer: previewer, Decoder: decoder, Deadline: opts.PreviewDeadline}))
		srv.Register(MachineConfigurationPath, preview(&MachineConfigurationPreview{Previewer: previewer, Decoder: decoder, Deadline: opts.PreviewDeadline}))
	}
	validation := &PolicyValidation{
		Checker:   &policyset.PolicyChecker{Client: mgr.GetClient(), Active: active, TestTimeout: opts.TestTimeout},
		Decoder:   decoder,
		Previewer: previewer,
	}
	if opts.Advisor && mcoEntriesOn(opts.MCOEntries) {
		validation.MCOEntries = opts.MCOEntries
		validation.APIReader = mgr.GetAPIReader()
		validation.PreviewDeadline = opts.PreviewDeadline
	}
	srv.Register(PolicyPath, &admission.Webhook{Handler: validation})
	// Every replica serves, so every replica watches (not leader-elected).
	if err := mgr.Add(inputsWatch{previewer, mgr.GetCache()}); err != nil {
		return nil, err
	}
	return previewer, nil
}

// neverDeny admits whatever a preview handler answers: beside the MCO, ndp
// must never block a change of the MCO's objects, so a denial or an error
// (an undecodable object) becomes a warning. The MCO's own CRD validation
// still runs.
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

type inputsWatch struct {
	p         *Previewer
	informers cache.Informers
}

func (w inputsWatch) Start(ctx context.Context) error { return w.p.WatchInputs(ctx, w.informers) }
func (inputsWatch) NeedLeaderElection() bool          { return false }
