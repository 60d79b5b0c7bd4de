// Command ndp-controller runs ndp's controllers and admission webhooks in
// one manager, in one of two modes (--mode; docs/design.md#the-advisor):
//
//   - executor: ndp runs the nodes: the policy controller (on every
//     replica, so that each replica's webhook has the active set; only the
//     leader writes), the registries, render, plan and rollout controllers
//     (leader only; they stand down while the Machine Config Operator is
//     present), and the webhook server (every replica) for the
//     MachineConfig and image-mirror previews and NodeDisruptionPolicy
//     validation;
//   - advisor: beside the MCO, ndp writes only its own objects
//     (controllers.SetupAdvisorWithManager, the webhook's advisor
//     previews: webhook.SetupAdvisorWithManager), with a client that
//     refuses any other write;
//   - auto (the default) picks advisor where the MCO is present, executor
//     elsewhere, at start; when that changes, it exits so that its
//     Deployment restarts it in the other mode.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/ndp-dev/ndp/apis/scheme"
	"github.com/ndp-dev/ndp/controllers"
	"github.com/ndp-dev/ndp/controllers/advisor"
	"github.com/ndp-dev/ndp/mco/mcoguard"
	"github.com/ndp-dev/ndp/planner/engine"
	"github.com/ndp-dev/ndp/policyset"
	"github.com/ndp-dev/ndp/rolloutgates"
	"github.com/ndp-dev/ndp/webhook"
	"github.com/ndp-dev/ndp/webhook/certs"
)

func main() {
	var (
		metricsAddr, probeAddr, leaderNS string
		pprofAddr                        string
		leaderElect                      bool
		webhookPort                      int
		certDir, selfSignedDir           string
		namespace, service, webhookCfg   string
		extraNames                       string
		evalMemory                       string
		leaseDuration, renewDeadline     time.Duration
		retryPeriod, previewDeadline     time.Duration
		modeFlag                         string
		mcoEntries                       string
	)
	flag.StringVar(&mcoEntries, "mco-entries", advisor.MCOEntriesOff, "as advisor, what ndp keeps in the Machine Config Operator's own node disruption policy (MachineConfiguration cluster spec.nodeDisruptionPolicy), so that the MCO does ndp's plan: off, static (the declarative entries of cluster-wide policies) or all (static, and per-update entries for the pending updates, behind the admission guard of overlays/openshift-mco-entries); needs patch on machineconfigurations/cluster")
	flag.StringVar(&modeFlag, "mode", modeAuto, "auto (advisor where the Machine Config Operator is present, executor elsewhere; exits when that changes, to be restarted in the other mode), executor (ndp runs the nodes; it stands down while the MCO is present) or advisor (beside the MCO: writes only ndp.dev objects, Events and Leases)")
	flag.DurationVar(&previewDeadline, "webhook-preview-deadline", 0, "deadline of one preview (default: 4s as executor, 2.5s as advisor, below the advisor webhooks' 3 s timeout)")
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8080", "address of the Prometheus metrics endpoint (0 disables it)")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "address of the health and readiness probes")
	flag.StringVar(&pprofAddr, "pprof-bind-address", "", "address of Go's /debug/pprof endpoints, for profiling (empty, the default, disables them)")
	flag.BoolVar(&leaderElect, "leader-elect", true, "elect a leader so that one replica acts at a time")
	flag.StringVar(&leaderNS, "leader-election-namespace", "", "namespace of the leader election lease (default: the pod's)")
	// controller-runtime's defaults: a killed leader is replaced within
	// the lease duration.
	flag.DurationVar(&leaseDuration, "leader-election-lease-duration", 15*time.Second, "how long a standby waits before taking over a lease its holder stopped renewing")
	flag.DurationVar(&renewDeadline, "leader-election-renew-deadline", 10*time.Second, "how long the leader retries renewing its lease before it gives up leading (and exits)")
	flag.DurationVar(&retryPeriod, "leader-election-retry-period", 2*time.Second, "how often replicas try to acquire or renew the lease")
	flag.IntVar(&webhookPort, "webhook-port", 9443, "port of the admission webhook server (-1 disables it)")
	flag.StringVar(&certDir, "webhook-cert-dir", "/etc/ndp/webhook-certs", "directory of the webhook's tls.crt and tls.key (from cert-manager or service-ca); when they are missing, a self-signed certificate is used")
	flag.StringVar(&selfSignedDir, "webhook-self-signed-dir", filepath.Join(os.TempDir(), "ndp-webhook-certs"), "writable directory for the self-signed fallback certificate")
	flag.StringVar(&namespace, "namespace", envOr("POD_NAMESPACE", "ndp-system"), "namespace of the webhook Service and of the self-signed certificate's Secret")
	flag.StringVar(&service, "webhook-service", "ndp-webhook", "name of the webhook Service, for the self-signed certificate's DNS names")
	flag.StringVar(&webhookCfg, "webhook-configuration", "ndp-webhook", "ValidatingWebhookConfiguration that gets the self-signed CA bundle")
	flag.StringVar(&extraNames, "webhook-cert-extra-names", "", "comma-separated DNS names or IPs the self-signed certificate also covers (when the API server calls the webhook by URL)")
	flag.StringVar(&evalMemory, "policy-eval-memory", "256Mi", "how far the heap may grow while one evaluation of the policies, or a policy's Rego tests, runs (a quantity: 256Mi, 1Gi); past it the evaluation is stopped and the policy refused (Degraded). One builtin call may allocate a quarter of it")
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	setup := ctrl.Log.WithName("setup")

	evalBytes, err := resource.ParseQuantity(evalMemory)
	if err != nil || evalBytes.Value() < 16<<20 {
		setup.Error(err, "--policy-eval-memory must be a quantity of at least 16Mi", "value", evalMemory)
		os.Exit(2)
	}
	engineOpts := engine.Options{EvalMemoryBytes: evalBytes.Value()}

	if !validMode(modeFlag) {
		setup.Error(nil, "--mode must be auto, executor or advisor", "value", modeFlag)
		os.Exit(2)
	}

	cfg := ctrl.GetConfigOrDie()
	ctx := ctrl.SetupSignalHandler()

	// The Machine Config Operator's ClusterOperator and daemon, watched by
	// name: auto mode decides from them, and the executor's controllers
	// stand down on them. Subscribed before it starts, so that no change
	// after the decision is missed.
	var guard *mcoguard.Guard
	var guardChanges <-chan event.GenericEvent
	mode := modeFlag
	if mode != modeAdvisor {
		var err error
		if guard, err = mcoguard.NewGuardForConfig(cfg); err != nil {
			setup.Error(err, "creating the Machine Config Operator guard")
			os.Exit(1)
		}
		if mode == modeAuto {
			guardChanges = guard.Subscribe()
		}
		go func() { _ = guard.Start(ctx) }()
		if mode == modeAuto {
			waitCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
			err := guard.WaitSynced(waitCtx)
			cancel()
			if err != nil {
				setup.Error(err, "looking for the Machine Config Operator (--mode=auto)")
				os.Exit(1)
			}
			v, _ := guard.Verdict() // synced: no error
			mode = decideMode(mode, v)
			setup.Info("mode decided at start (--mode=auto)", "mode", mode, "mco", strings.Join(v.Found, ", "))
		}
	}
	if previewDeadline == 0 && mode == modeAdvisor {
		previewDeadline = advisorPreviewDeadline
	}

	// Certificates mounted from cert-manager or service-ca win; without
	// them, a self-signed pair shared through a Secret, rotated in the
	// background. It must exist before the webhook server starts.
	var selfSigned *certs.SelfSigned
	if webhookPort > 0 && !certs.CertFilesPresent(certDir) {
		c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
		if err != nil {
			setup.Error(err, "creating a client")
			os.Exit(1)
		}
		names := []string{fmt.Sprintf("%s.%s.svc", service, namespace), fmt.Sprintf("%s.%s.svc.cluster.local", service, namespace)}
		if extraNames != "" {
			names = append(names, strings.Split(extraNames, ",")...)
		}
		selfSigned = &certs.SelfSigned{
			Client: c, Namespace: namespace, SecretName: "ndp-webhook-self-signed",
			DNSNames:              names,
			CertDir:               selfSignedDir,
			WebhookConfigurations: []string{webhookCfg},
			// A configuration re-applied without its CA bundle is fixed soon.
			CheckInterval: 5 * time.Minute,
		}
		ensureCtx, cancel := context.WithTimeout(ctx, time.Minute)
		err = selfSigned.Ensure(ensureCtx)
		cancel()
		if err != nil {
			setup.Error(err, "preparing the self-signed webhook certificate")
			os.Exit(1)
		}
		setup.Info("no mounted webhook certificate: serving a self-signed one", "dir", selfSignedDir, "mounted", certDir)
		certDir = selfSignedDir
	}

	var newClient client.NewClientFunc // the default
	if mode == modeAdvisor {
		// Defence in depth beside the role: nothing the MCO or the CVO
		// owns can be written, even by a bug.
		newClient = advisor.NewAdvisorClient
		if mcoEntries != advisor.MCOEntriesOff {
			newClient = advisor.NewAdvisorClientWithMCOEntries
		}
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		NewClient:                     newClient,
		Scheme:                        scheme.New(),
		Metrics:                       metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress:        probeAddr,
		PprofBindAddress:              pprofAddr,
		LeaderElection:                leaderElect,
		LeaderElectionID:              controllers.LeaderElectionID,
		LeaderElectionNamespace:       leaderNS,
		LeaderElectionReleaseOnCancel: true, // a clean stop hands over at once
		LeaseDuration:                 &leaseDuration,
		RenewDeadline:                 &renewDeadline,
		RetryPeriod:                   &retryPeriod,
		Client:                        controllers.ClientOptions(),
		Cache:                         controllers.CacheOptions(),
		// The server reloads the files on change (certwatcher).
		WebhookServer: ctrlwebhook.NewServer(ctrlwebhook.Options{Port: webhookPort, CertDir: certDir}),
	})
	if err != nil {
		setup.Error(err, "creating the manager")
		os.Exit(1)
	}
	var active *policyset.ActivePolicies
	if mode == modeAdvisor {
		active, err = controllers.SetupAdvisorWithManager(mgr, engineOpts, controllers.Options{MCOEntries: mcoEntries})
	} else {
		// The rollout policies' gates, asked at most every 30 s per policy.
		gates := rolloutgates.NewEvaluator(mgr.GetAPIReader(), rolloutgates.Options{})
		active, err = controllers.SetupWithManager(mgr, engineOpts, controllers.Options{MCO: guard, Gates: gates})
	}
	if err != nil {
		setup.Error(err, "setting up the controllers", "mode", mode)
		os.Exit(1)
	}
	if modeFlag == modeAuto {
		if err := mgr.Add(&modeWatch{guard: guard, changes: guardChanges, mode: mode, log: ctrl.Log.WithName("mode")}); err != nil {
			setup.Error(err, "adding the mode watch")
			os.Exit(1)
		}
	}
	if webhookPort > 0 {
		hooks := webhook.Options{PreviewDeadline: previewDeadline, MCOEntries: mcoEntries}
		if mode == modeAdvisor {
			_, err = webhook.SetupAdvisorWithManager(mgr, active, hooks)
		} else {
			_, err = webhook.SetupWithManager(mgr, active, hooks)
		}
		if err != nil {
			setup.Error(err, "setting up the webhooks")
			os.Exit(1)
		}
		if err := mgr.AddReadyzCheck("webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
			setup.Error(err, "adding the webhook readiness check")
			os.Exit(1)
		}
		if selfSigned != nil {
			if err := mgr.Add(selfSigned); err != nil {
				setup.Error(err, "adding the certificate rotation")
				os.Exit(1)
			}
		}
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		setup.Error(err, "adding the health check")
		os.Exit(1)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		setup.Error(err, "adding the readiness check")
		os.Exit(1)
	}
	setup.Info("starting the manager", "mode", mode)
	if err := mgr.Start(ctx); err != nil {
		if errors.Is(err, errModeChanged) {
			setup.Info("exiting to restart in the other mode", "reason", err.Error())
			os.Exit(exitModeChanged)
		}
		setup.Error(err, "running the manager")
		os.Exit(1)
	}
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
