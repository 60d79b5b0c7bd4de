// Package webhook wires ndp's admission handlers into a manager's webhook
// server, for either of ndp-controller's modes, at the paths of
// manifests/webhook/webhook.yaml: the dry-run preview of MachineConfig,
// image-mirror, KubeletConfig and ContainerRuntimeConfig changes, returned
// as warnings (one per pool), and the validation of NodeDisruptionPolicies.
// The handlers are the packages below:
//
//   - preview: what both modes stand on (the previewer, which renders and
//     plans in memory with the same code as the controllers, and never
//     writes; the frames of the previews; the what-if of a policy edit);
//   - nodedisruptionpolicy: the policy validation, both modes;
//   - executor: the executor's answers (ndp's own plans; denials of what
//     its controllers would refuse) (SetupWithManager);
//   - advisor: the advisor's (what the Machine Config Operator will do,
//     with ndp's plan beside it; nothing denied), and its previews of
//     image.config and MachineConfiguration cluster
//     (SetupAdvisorWithManager).
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
	"github.com/ndp-dev/ndp/webhook/advisor"
	"github.com/ndp-dev/ndp/webhook/executor"
	"github.com/ndp-dev/ndp/webhook/nodedisruptionpolicy"
	"github.com/ndp-dev/ndp/webhook/preview"
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

// Options configure the handlers.
type Options struct {
	// RegistriesBase is the registries.conf image mirrors are added to
	// (render.DefaultRegistriesBase when empty), as the registries
	// controller's; the executor's.
	RegistriesBase string
	// TestTimeout bounds each Rego test of a validated policy.
	TestTimeout time.Duration
	// PreviewDeadline is the preview handlers' deadline
	// (preview.DefaultPreviewDeadline when zero).
	PreviewDeadline time.Duration
	// MCOEntries is ndp-controller's --mco-entries: "off" (or empty),
	// "static" or "all". As the advisor, unless off, the policy webhook
	// also warns what ndp would write in MachineConfiguration cluster's
	// node disruption policy after a policy edit, and what the MCO would
	// then do with each pool's pending update.
	MCOEntries string
}

// SetupWithManager registers the executor's handlers on the manager's
// webhook server. They use the replica's active policy set, which the
// policy controller keeps on every replica.
func SetupWithManager(mgr ctrl.Manager, active *policyset.ActivePolicies, opts Options) (*preview.Previewer, error) {
	p := preview.NewPreviewer(mgr.GetClient(), active)
	base := opts.RegistriesBase
	if base == "" {
		base = render.DefaultRegistriesBase
	}
	decoder := register(mgr, p, &executor.Answers{Previewer: p, RegistriesBase: base}, nil, opts)
	mgr.GetWebhookServer().Register(PolicyPath, &admission.Webhook{Handler: policyValidation(mgr, p, decoder, opts)})
	if err := watchInputs(mgr, p); err != nil {
		return nil, err
	}
	return p, nil
}

// SetupAdvisorWithManager registers the advisor's handlers on the manager's
// webhook server: the previews say what the Machine Config Operator will
// do, and deny nothing (advisor.NeverDeny); image.config and
// MachineConfiguration cluster are previewed too.
func SetupAdvisorWithManager(mgr ctrl.Manager, active *policyset.ActivePolicies, opts Options) (*advisor.Previewer, error) {
	p := advisor.NewPreviewer(mgr.GetClient(), active)
	decoder := register(mgr, p.Previewer, &advisor.Answers{Previewer: p}, advisor.NeverDeny, opts)
	srv := mgr.GetWebhookServer()
	srv.Register(ImageConfigPath, &admission.Webhook{Handler: advisor.NeverDeny(&advisor.ImageConfigPreview{Previewer: p, Decoder: decoder, Deadline: opts.PreviewDeadline})})
	srv.Register(MachineConfigurationPath, &admission.Webhook{Handler: advisor.NeverDeny(&advisor.MachineConfigurationPreview{Previewer: p, Decoder: decoder, Deadline: opts.PreviewDeadline})})
	validation := policyValidation(mgr, p.Previewer, decoder, opts)
	if advisor.MCOEntriesOn(opts.MCOEntries) {
		validation.Also = &advisor.MCOEntriesPreview{Previewer: p, Mode: opts.MCOEntries, APIReader: mgr.GetAPIReader(), Deadline: opts.PreviewDeadline}
	}
	srv.Register(PolicyPath, &admission.Webhook{Handler: validation})
	if err := watchInputs(mgr, p.Previewer); err != nil {
		return nil, err
	}
	return p, nil
}

// register registers the previews both modes serve, answered by answers
// and, when set, wrapped by wrap; it returns their decoder.
func register(mgr ctrl.Manager, p *preview.Previewer, answers preview.Answers, wrap func(admission.Handler) admission.Handler, opts Options) admission.Decoder {
	srv := mgr.GetWebhookServer()
	decoder := admission.NewDecoder(mgr.GetScheme())
	hook := func(h admission.Handler) *admission.Webhook {
		if wrap != nil {
			h = wrap(h)
		}
		return &admission.Webhook{Handler: h}
	}
	mc := preview.NewMachineConfigPreview(p, answers, decoder)
	mc.Deadline = opts.PreviewDeadline
	srv.Register(MachineConfigPath, hook(mc))
	srv.Register(ImageMirrorsPath, hook(&preview.ImageMirrorPreview{Answers: answers, Decoder: decoder, Client: mgr.GetClient(), Deadline: opts.PreviewDeadline}))
	srv.Register(GeneratedConfigsPath, hook(&preview.GeneratedConfigPreview{Previewer: p, Answers: answers, Decoder: decoder, Deadline: opts.PreviewDeadline}))
	return decoder
}

// policyValidation is the NodeDisruptionPolicy validation both modes serve,
// with the what-if preview of dry-runs.
func policyValidation(mgr ctrl.Manager, p *preview.Previewer, decoder admission.Decoder, opts Options) *nodedisruptionpolicy.PolicyValidation {
	return &nodedisruptionpolicy.PolicyValidation{
		Checker:   &policyset.PolicyChecker{Client: mgr.GetClient(), Active: p.Active, TestTimeout: opts.TestTimeout},
		Decoder:   decoder,
		Previewer: p,
	}
}

// watchInputs keeps the previewer's count of its inputs' changes. Every
// replica serves, so every replica watches (not leader-elected).
func watchInputs(mgr ctrl.Manager, p *preview.Previewer) error {
	return mgr.Add(inputsWatch{p, mgr.GetCache()})
}

type inputsWatch struct {
	p         *preview.Previewer
	informers cache.Informers
}

func (w inputsWatch) Start(ctx context.Context) error { return w.p.WatchInputs(ctx, w.informers) }
func (inputsWatch) NeedLeaderElection() bool          { return false }
