// Package docs runs the example sessions of the README and the user guide
// (docs/*.md) that need a cluster: a real kube-apiserver and etcd (envtest,
// with the binaries in bin/), ndp-controller's controllers and webhooks in
// this process, the real kubectl and this tree's ndp as its plugin. Each
// session's commands are run as written, by sh, and what they print is
// compared with the block (internal/testkit/docexample).
package docs

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
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/ndp-dev/ndp/apis/scheme"
	"github.com/ndp-dev/ndp/controllers"
	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/planner/engine"
	"github.com/ndp-dev/ndp/policyset"
	"github.com/ndp-dev/ndp/webhook"
)

// The repository's root, from this package's directory.
const root = "../.."

var (
	k8s        client.Client
	restConfig *rest.Config
	kubeconfig string
	kubectlBin string
	active     *policyset.ActivePolicies
)

func TestMain(m *testing.M) {
	os.Exit(testkit.Main(m, testkit.ControlPlaneOptions{Root: root, Binaries: []string{"kubectl"}, Webhooks: true, Kubeconfig: true},
		func(cp *testkit.ControlPlane) (func(), error) {
			ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapLevel())))
			k8s, restConfig, kubeconfig, kubectlBin = cp.Client, cp.Config, cp.Kubeconfig, cp.Bin("kubectl")
			return startController(&cp.Env.WebhookInstallOptions)
		}))
}

// startController runs ndp-controller's wiring (the executor's controllers
// and webhooks) in this process, on the port envtest registered the
// shipped webhook configuration for.
func startController(hooks *envtest.WebhookInstallOptions) (func(), error) {
	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		Scheme:  scheme.New(),
		Client:  controllers.ClientOptions(),
		Cache:   controllers.CacheOptions(),
		Metrics: metricsserver.Options{BindAddress: "0"},
		WebhookServer: ctrlwebhook.NewServer(ctrlwebhook.Options{
			Host: hooks.LocalServingHost, Port: hooks.LocalServingPort, CertDir: hooks.LocalServingCertDir,
		}),
	})
	if err != nil {
		return nil, err
	}
	if active, err = controllers.SetupWithManager(mgr, engine.Options{}, controllers.Options{}); err != nil {
		return nil, err
	}
	if _, err = webhook.SetupWithManager(mgr, active, webhook.Options{}); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stop := func() {
		cancel()
		if err := <-done; err != nil {
			fmt.Fprintf(os.Stderr, "manager: %v\n", err)
		}
	}
	deadline := time.Now().Add(time.Minute)
	for mgr.GetWebhookServer().StartedChecker()(nil) != nil {
		if time.Now().After(deadline) {
			stop()
			return nil, fmt.Errorf("the webhook server did not start")
		}
		time.Sleep(50 * time.Millisecond)
	}
	return stop, nil
}

// zapLevel keeps controller logs quiet unless NDP_TEST_LOGS is set.
func zapLevel() zapcore.Level {
	if os.Getenv("NDP_TEST_LOGS") != "" {
		return zapcore.DebugLevel
	}
	return zapcore.ErrorLevel
}

// shell runs example commands as a reader would type them: by sh, in a
// directory with the repository's examples/ and this package's testdata
// files, with kubectl (and oc, the same binary here) and this tree's ndp as
// kubectl's plugin on PATH, and KUBECONFIG set to the test's cluster.
type shell struct {
	t   *testing.T
	dir string
	env []string
}

func newShell(t *testing.T) *shell {
	t.Helper()
	dir := t.TempDir()
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(abs, "examples"), filepath.Join(dir, "examples")); err != nil {
		t.Fatal(err)
	}
	data, err := filepath.Glob("testdata/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range data {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	bin := testkit.KubectlNdp(t)
	for _, name := range []string{"kubectl", "oc"} {
		if err := os.Symlink(kubectlBin, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	env := append(os.Environ(), "KUBECONFIG="+kubeconfig, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return &shell{t: t, dir: dir, env: env}
}

// run runs one command line and returns what it printed, stdout and stderr
// interleaved as on a terminal. A failing command is not an error: some
// examples show a refusal.
func (s *shell) run(command string) string {
	s.t.Helper()
	cmd := exec.Command("sh", "-c", command)
	cmd.Dir, cmd.Env = s.dir, s.env
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if _, exit := err.(*exec.ExitError); err != nil && !exit {
		s.t.Fatalf("%s: %v", command, err)
	}
	s.t.Logf("$ %s\n%s", command, out.String())
	return out.String()
}

// must runs a set-up command, which must succeed.
func (s *shell) must(command string) string {
	s.t.Helper()
	cmd := exec.Command("sh", "-c", command)
	cmd.Dir, cmd.Env = s.dir, s.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		s.t.Fatalf("%s: %v\n%s", command, err, out)
	}
	return string(out)
}
