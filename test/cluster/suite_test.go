// Package cluster holds ndp's tests against a real kube-apiserver and etcd
// (envtest with the binaries hack/build-control-plane.sh builds into bin/)
// and the real kubectl.
package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/yaml"

	"github.com/ndp-dev/ndp/apis/scheme"
	"github.com/ndp-dev/ndp/controllers"
	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/planner/engine"
	"github.com/ndp-dev/ndp/policyset"
	"github.com/ndp-dev/ndp/webhook"
	"github.com/ndp-dev/ndp/webhook/preview"
)

var (
	k8s        client.Client
	restConfig *rest.Config
	kubeconfig string // for the real kubectl
	kubectlBin string
	// The running replica of ndp-controller (see startReplica).
	active      *policyset.ActivePolicies
	previewer   *preview.Previewer
	stopReplica func()
	// Where envtest registered the shipped webhook configuration.
	webhookInstall *envtest.WebhookInstallOptions
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

// suiteLogger is the suite's: quiet unless NDP_TEST_LOGS is set.
var suiteLogger = zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr), zap.Level(zapLevel()))

func run(m *testing.M) int {
	ctrl.SetLogger(suiteLogger)
	return testkit.Main(m, testkit.ControlPlaneOptions{Root: "../..", Binaries: []string{"kubectl"}, Webhooks: true, Kubeconfig: true},
		func(cp *testkit.ControlPlane) (func(), error) {
			k8s, restConfig, kubeconfig, kubectlBin = cp.Client, cp.Config, cp.Kubeconfig, cp.Bin("kubectl")
			webhookInstall = &cp.Env.WebhookInstallOptions
			if err := startReplica(); err != nil {
				return nil, err
			}
			return func() { stopReplica() }, nil
		})
}

// controllerOptions are the suite's controllers' (and a takeover
// replica's): a rejected policy is retried every 2s, not every minute.
var controllerOptions = controllers.Options{RetryRejected: 2 * time.Second}

// replicaOptions are the manager options of a replica of ndp-controller in
// this process, elected by id; a restarted replica registers the same
// controller names again.
func replicaOptions(id string) ctrl.Options {
	return ctrl.Options{
		Scheme:                  scheme.New(),
		Client:                  controllers.ClientOptions(),
		Cache:                   controllers.CacheOptions(),
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		LeaderElection:          true,
		LeaderElectionID:        id,
		LeaderElectionNamespace: "default",
		Controller:              config.Controller{SkipNameValidation: ptr.To(true)},
	}
}

// startReplica runs ndp-controller's wiring in this process: controllers
// with leader election, and the webhook server on the port envtest
// registered. stopReplica stops it, as a killed process would.
func startReplica() error {
	opts := replicaOptions(controllers.LeaderElectionID)
	opts.LeaderElectionReleaseOnCancel = true
	opts.Logger = reconciles.logger(suiteLogger) // for reconciledSince
	opts.WebhookServer = ctrlwebhook.NewServer(ctrlwebhook.Options{
		Host: webhookInstall.LocalServingHost, Port: webhookInstall.LocalServingPort, CertDir: webhookInstall.LocalServingCertDir,
	})
	mgr, err := ctrl.NewManager(restConfig, opts)
	if err != nil {
		return err
	}
	replicaCache = mgr.GetCache()
	if active, err = controllers.SetupWithManager(mgr, engine.Options{}, controllerOptions); err != nil {
		return err
	}
	if previewer, err = webhook.SetupWithManager(mgr, active, webhook.Options{}); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stopReplica = func() {
		cancel()
		if err := <-done; err != nil {
			fmt.Fprintf(os.Stderr, "manager: %v\n", err)
		}
	}
	// Serving, and able to plan: the webhook server answers its readiness
	// check and every NodeDisruptionPolicy is loaded. A test after a restart
	// would otherwise see "still being loaded" for as long as loading takes
	// (seconds under -race).
	deadline := time.Now().Add(time.Minute)
	for {
		notReady := mgr.GetWebhookServer().StartedChecker()(nil)
		if notReady == nil {
			if _, notReady = active.Ready(ctx, mgr.GetCache()); notReady == nil {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the replica is not ready after a minute: %w", notReady)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// zapLevel keeps controller logs quiet unless NDP_TEST_LOGS is set.
func zapLevel() zapcore.Level {
	if os.Getenv("NDP_TEST_LOGS") != "" {
		return zapcore.DebugLevel
	}
	return zapcore.ErrorLevel
}

// kubectl runs the real kubectl against the test API server.
func kubectl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command(kubectlBin, append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
	return string(out), err
}

// kubectlFile writes manifest to a file and runs kubectl with -f on it.
func kubectlFile(t *testing.T, manifest string, args ...string) (string, error) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "manifest.yaml")
	if err := os.WriteFile(f, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	return kubectl(t, append(args, "-f", f)...)
}

// manifest is obj as an administrator writes it for kubectl -f: YAML
// with its apiVersion and kind, without a status.
func manifest(t *testing.T, obj client.Object) string {
	t.Helper()
	gvk, err := apiutil.GVKForObject(obj, k8s.Scheme())
	if err != nil {
		t.Fatal(err)
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	delete(u, "status")
	unstructured.RemoveNestedField(u, "metadata", "creationTimestamp")
	u["apiVersion"], u["kind"] = gvk.GroupVersion().String(), gvk.Kind
	b, err := yaml.Marshal(u)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// kubectlPlugin runs the real kubectl with dir (holding kubectl-ndp) first
// on PATH. kubectl passes plugins no flags of its own: the cluster comes
// from KUBECONFIG.
func kubectlPlugin(t *testing.T, dir string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(kubectlBin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("kubectl %v: %v", args, err)
	}
	return out.String(), errOut.String(), code
}
