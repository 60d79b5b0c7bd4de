//go:build scale

package scale

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/scheme"
	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/internal/testkit/builder"
	"github.com/ndp-dev/ndp/mco/mcoguard"
)

// The MCO benchmark (make scale-mco): ndp beside the Machine Config
// Operator on a cluster of real size. One API server holds 500 rendered
// MachineConfigs built from real ones (150 KB to 1.2 MB), 5 pools and
// their nodes; the MCO's own controllers (mcc-ref) and ndp-controller
// run against it as processes of their own, and the run reports their
// peak resident memory and the latency of MachineConfig dry-runs through
// the API server to ndp's preview webhook against a no-op webhook
// registered the same way. Figures only: a benchmark, not a pass/fail
// test (it fails only when something does not work).

// floorLabel marks the dry-runs that go to the no-op webhook instead of
// ndp's: the two registrations select objects with and without it.
const floorLabel = "scale.ndp.dev/floor"

// mcoPools are the benchmark's pools: the two the MCO ships and three
// custom pools, which select the worker MachineConfigs and their own, as
// OpenShift's documentation sets them up; and their node counts.
var mcoPools = []struct {
	name  string
	nodes int
}{{"master", 3}, {"worker", 10}, {"infra", 4}, {"storage", 4}, {"gpu", 4}}

type mcoConfig struct {
	ref           string // NDP_MCO_REF: ../shared/mco-ref
	controllerBin string // NDP_CONTROLLER_BIN
	rendered      int    // NDP_SCALE_MCO_RENDERED: rendered MachineConfigs (500)
	requests      int    // NDP_SCALE_MCO_REQUESTS: dry-runs per webhook and phase (200)
	clients       int    // NDP_SCALE_MCO_CLIENTS: concurrent clients (4)
	mode          string // NDP_SCALE_MCO_MODE: advisor, executor, or "" (advisor when the binary has --mode)
	report        string // NDP_SCALE_REPORT: a Markdown file for the figures
	pprof         string // NDP_SCALE_MCO_PPROF: a directory for ndp-controller's CPU profile of the previews and heap profiles
}

func TestScaleMCO(t *testing.T) {
	root, _ := filepath.Abs("../..")
	cfg := mcoConfig{
		ref:           envOr("NDP_MCO_REF", filepath.Join(root, "..", "shared", "mco-ref")),
		controllerBin: envOr("NDP_CONTROLLER_BIN", filepath.Join(root, "bin", "ndp-controller")),
		rendered:      envInt(t, "NDP_SCALE_MCO_RENDERED", 500),
		requests:      envInt(t, "NDP_SCALE_MCO_REQUESTS", 200),
		clients:       envInt(t, "NDP_SCALE_MCO_CLIENTS", 4),
		mode:          os.Getenv("NDP_SCALE_MCO_MODE"),
		report:        os.Getenv("NDP_SCALE_REPORT"),
		pprof:         os.Getenv("NDP_SCALE_MCO_PPROF"),
	}
	for _, f := range []string{cfg.controllerBin, filepath.Join(cfg.ref, "mcc-ref"), filepath.Join(cfg.ref, "realconfigs"), filepath.Join(cfg.ref, "templates")} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("%v (run `make build`; NDP_MCO_REF names the mco-ref directory, NDP_CONTROLLER_BIN ndp-controller)", err)
		}
	}
	if cfg.rendered < len(mcoPools) || cfg.clients < 1 || cfg.requests < cfg.clients {
		t.Fatalf("NDP_SCALE_MCO_RENDERED=%d, NDP_SCALE_MCO_CLIENTS=%d, NDP_SCALE_MCO_REQUESTS=%d: want ≥ 5 rendered configs and ≥ 1 request per client", cfg.rendered, cfg.clients, cfg.requests)
	}
	if cfg.mode == "" {
		cfg.mode = "executor"
		help, _ := exec.Command(cfg.controllerBin, "--help").CombinedOutput()
		if strings.Contains(string(help), "-mode") {
			cfg.mode = "advisor"
		}
	}
	real, err := loadRealRendered(filepath.Join(cfg.ref, "realconfigs"))
	if err != nil {
		t.Fatal(err)
	}
	ctrllog.SetLogger(logr.Discard()) // the no-op webhook server's
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	loads := []string{"start " + loadavg()}

	cp := testkit.NewControlPlane(t, testkit.ControlPlaneOptions{Root: root, Kubeconfig: true, Webhooks: true})
	wh := cp.Env.WebhookInstallOptions
	hcfg := rest.CopyConfig(cp.Config)
	hcfg.QPS, hcfg.Burst, hcfg.UserAgent = -1, 0, "ndp-scale-mco"
	c, err := client.New(hcfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}

	// What the MCO needs (its CRDs, replacing ndp's copies of the same
	// ones, and the fixtures), then the cluster.
	started := time.Now()
	if out, err := exec.Command(filepath.Join(cfg.ref, "mcc-ref"), "setup", "--kubeconfig", cp.Kubeconfig).CombinedOutput(); err != nil {
		t.Fatalf("mcc-ref setup: %v\n%s", err, testkit.LastLines(string(out), 20))
	}
	t.Logf("scale-mco: mcc-ref setup in %s", time.Since(started).Round(time.Millisecond))
	// Every OpenShift cluster has it; without --mode=advisor, it is what
	// makes ndp's executor stand down.
	if err := c.Create(ctx, &configv1.ClusterOperator{ObjectMeta: metav1.ObjectMeta{Name: mcoguard.ClusterOperatorName}}); err != nil {
		t.Fatal(err)
	}
	sizes := createMCOCluster(t, ctx, c, cfg, real)

	// (a) The MCO's controllers, settled.
	mcc := startProcess(t, "mcc-ref", filepath.Join(cfg.ref, "mcc-ref"), cp.Kubeconfig,
		"--kubeconfig", cp.Kubeconfig, "--templates", filepath.Join(cfg.ref, "templates"))
	started = time.Now()
	targets := waitPoolsRendered(t, ctx, c)
	t.Logf("scale-mco: mcc-ref rendered the 5 pools in %s: %v", time.Since(started).Round(time.Millisecond), targets)
	onTargets(t, ctx, c, targets)
	waitQuiet(t, mcc)
	loads = append(loads, "mcc-ref settled "+loadavg())
	mccSettled := mustProc(t, mcc)
	t.Logf("scale-mco: mcc-ref settled: peak RSS %s, RSS %s, CPU %s", mib(float64(mccSettled.hwm)), mib(float64(mccSettled.rss)), mccSettled.cpu.Round(time.Millisecond))

	// (b) ndp-controller, with the same objects, the MCO still running.
	ndp, pprofURL := startNDP(t, cfg, cp.Kubeconfig, wh.LocalServingPort, wh.LocalServingCertDir)
	noopURL, noopHits := startNoop(t, ctx, wh.LocalServingHost, wh.LocalServingCertDir)
	registerFloor(t, ctx, c, noopURL)
	dry := newDryRunner(t, cp.Config)
	testkit.Eventually(t, "ndp's preview answers a dry-run with the worker pool's warning", func() (bool, string) {
		w, err := dry.send(ctx, chronyMC(-1, false))
		return err == nil && previewed(w), fmt.Sprintf("warnings %q, error %v", w, err)
	}, testkit.Within(3*time.Minute))
	testkit.Eventually(t, "the no-op webhook answers a dry-run", func() (bool, string) {
		before := noopHits.Load()
		_, err := dry.send(ctx, chronyMC(-1, true))
		return err == nil && noopHits.Load() > before, fmt.Sprintf("hits %d, error %v", noopHits.Load(), err)
	}, testkit.Within(time.Minute))
	waitQuiet(t, ndp)
	loads = append(loads, "ndp settled "+loadavg())
	ndpSettled := mustProc(t, ndp)
	t.Logf("scale-mco: ndp-controller settled: peak RSS %s, RSS %s, CPU %s", mib(float64(ndpSettled.hwm)), mib(float64(ndpSettled.rss)), ndpSettled.cpu.Round(time.Millisecond))
	profile(t, cfg.pprof, pprofURL, "heap-settled", "heap", 0)

	// Preview latency: each client alternates ndp and the floor.
	var phases []latencyPhase
	for _, ph := range []struct {
		name     string
		distinct bool
	}{{"distinct", true}, {"repeated", false}} {
		if !ph.distinct {
			// The first dry-run of a change is a distinct one: the
			// repeated phase times the ones after it.
			if _, err := dry.send(ctx, chronyMC(0, false)); err != nil {
				t.Fatal(err)
			}
		}
		hitsBefore := noopHits.Load()
		var cpuProfile sync.WaitGroup
		if ph.distinct {
			cpuProfile.Go(func() { profile(t, cfg.pprof, pprofURL, "cpu-distinct", "profile", 20*time.Second) })
		}
		p := runPreviewPhase(t, ctx, dry, cfg, ph.name, ph.distinct)
		cpuProfile.Wait()
		if got := noopHits.Load() - hitsBefore; got != int64(p.noop.n) {
			t.Errorf("%s: the no-op webhook was called %d times for %d dry-runs", ph.name, got, p.noop.n)
		}
		phases = append(phases, p)
		loads = append(loads, ph.name+" previews "+loadavg())
	}
	ndpAfter, mccAfter := mustProc(t, ndp), mustProc(t, mcc)
	profile(t, cfg.pprof, pprofURL, "heap-after", "heap", 0)
	apiserver := map[string]procStat{}
	for name, pid := range children("kube-apiserver", "etcd") {
		if st, err := readProc(pid); err == nil {
			apiserver[name] = st
		}
	}
	mcoReport(t, cfg, sizes, mccSettled, mccAfter, ndpSettled, ndpAfter, apiserver, phases, loads)
}

// renderedSizes is what the run created, for the report.
type renderedSizes struct {
	count, objects int
	sizes          []int // JSON bytes of each rendered MachineConfig
	nodes          int
}

// createMCOCluster creates the custom pools, their MachineConfigs, the
// rendered configs and the nodes (which run some of them).
func createMCOCluster(t *testing.T, ctx context.Context, c client.Client, cfg mcoConfig, real []realRendered) renderedSizes {
	started := time.Now()
	var out renderedSizes
	uids := map[string]string{}
	for _, p := range mcoPools {
		var pool mcfgv1.MachineConfigPool
		if p.name == "master" || p.name == "worker" {
			if err := c.Get(ctx, client.ObjectKey{Name: p.name}, &pool); err != nil {
				t.Fatalf("pool %s from mcc-ref setup: %v", p.name, err)
			}
		} else {
			pool = mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: p.name}, Spec: mcfgv1.MachineConfigPoolSpec{
				MachineConfigSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
					Key: ndpmcv1.RoleLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{"worker", p.name},
				}}},
				NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/" + p.name: ""}},
			}}
			if err := c.Create(ctx, &pool); err != nil {
				t.Fatal(err)
			}
			mc := builder.MachineConfig("50-"+p.name+"-sysctl").WithRole(p.name).
				WithFileMap(map[string]string{"/etc/sysctl.d/50-" + p.name + ".conf": "vm.max_map_count = 262144\nkernel.pid_max = 4194304\n"}, 0o644).Build()
			if err := c.Create(ctx, mc); err != nil {
				t.Fatal(err)
			}
		}
		uids[p.name] = string(pool.UID)
	}
	var objs []client.Object
	byPool := map[string][]string{}
	for i := range cfg.rendered {
		pool := mcoPools[i%len(mcoPools)].name
		role := "worker"
		if pool == "master" {
			role = "master"
		}
		u, err := variant(real, i, cfg.rendered, pool, role, uids[pool])
		if err != nil {
			t.Fatal(err)
		}
		b, _ := u.MarshalJSON()
		out.sizes = append(out.sizes, len(b))
		objs = append(objs, u)
		byPool[pool] = append(byPool[pool], u.GetName())
	}
	if err := createAll(ctx, c, objs, 4); err != nil {
		t.Fatal(err)
	}
	out.count = len(objs)
	// Nodes: two thirds run the pool's newest variant (until onTargets),
	// a third its largest.
	for pi, p := range mcoPools {
		names := byPool[p.name]
		newest, largest := names[len(names)-1], names[0]
		best := 0
		for k, name := range names {
			if s := grownSize(pi+k*len(mcoPools), cfg.rendered); s > best {
				best, largest = s, name
			}
		}
		for k := range p.nodes {
			cur := newest
			if k%3 == 2 {
				cur = largest
			}
			n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
				Name:   fmt.Sprintf("%s-%d", p.name, k),
				Labels: map[string]string{"node-role.kubernetes.io/" + p.name: "", corev1.LabelHostname: fmt.Sprintf("%s-%d", p.name, k)},
				Annotations: map[string]string{
					ndpmcv1.CurrentConfigAnnotation: cur, ndpmcv1.DesiredConfigAnnotation: cur, ndpmcv1.StateAnnotation: "Done",
				},
			}}
			if err := c.Create(ctx, n); err != nil {
				t.Fatal(err)
			}
			n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
			if err := c.Status().Update(ctx, n); err != nil {
				t.Fatal(err)
			}
			out.nodes++
		}
	}
	var mcs ndpmcv1.MachineConfigList
	if err := c.List(ctx, &mcs); err != nil {
		t.Fatal(err)
	}
	out.objects = len(mcs.Items)
	total := 0
	for _, s := range out.sizes {
		total += s
	}
	t.Logf("scale-mco: %d rendered MachineConfigs (%s in all), %d nodes and the custom pools created in %s",
		out.count, mib(float64(total)), out.nodes, time.Since(started).Round(time.Millisecond))
	return out
}

// onTargets moves the nodes that run their pool's newest variant to the
// config the MCO rendered for the pool, as after a rollout: a preview then
// plans most nodes from the pool's target, and the others (a third, on an
// older config of up to 1.2 MB) from that config, as in a rollout.
func onTargets(t *testing.T, ctx context.Context, c client.Client, targets map[string]string) {
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		t.Fatal(err)
	}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		var k int
		if _, err := fmt.Sscanf(n.Name[strings.LastIndex(n.Name, "-")+1:], "%d", &k); err != nil || k%3 == 2 {
			continue
		}
		pool := n.Name[:strings.LastIndex(n.Name, "-")]
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q,%q:%q}}}`, ndpmcv1.CurrentConfigAnnotation, targets[pool], ndpmcv1.DesiredConfigAnnotation, targets[pool])
		if err := c.Patch(ctx, n, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
			t.Fatal(err)
		}
	}
}

// waitPoolsRendered waits until the MCO's render controller gave every pool
// a rendered config of its own.
func waitPoolsRendered(t *testing.T, ctx context.Context, c client.Client) map[string]string {
	targets := map[string]string{}
	testkit.Eventually(t, "mcc-ref renders every pool", func() (bool, string) {
		for _, p := range mcoPools {
			var pool mcfgv1.MachineConfigPool
			if err := c.Get(ctx, client.ObjectKey{Name: p.name}, &pool); err != nil {
				return false, err.Error()
			}
			name := pool.Spec.Configuration.Name
			if name == "" {
				return false, "pool " + p.name + " has no rendered config"
			}
			var mc ndpmcv1.MachineConfig
			if err := c.Get(ctx, client.ObjectKey{Name: name}, &mc); err != nil {
				return false, err.Error()
			}
			targets[p.name] = name
		}
		return true, ""
	}, testkit.Within(5*time.Minute))
	return targets
}

// process is a started process of the run.
type process struct {
	name string
	pid  int
	done chan struct{}
	log  string
}

func startProcess(t *testing.T, name, bin, kubeconfig string, args ...string) *process {
	logs, err := os.CreateTemp("", "ndp-scale-mco-"+name+"-*.log")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{name: name, pid: cmd.Process.Pid, done: make(chan struct{}), log: logs.Name()}
	go func() { _ = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		testkit.Terminate(cmd.Process, p.done, 30*time.Second)
		_ = logs.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logs.Name())
			t.Logf("%s output (last lines, all in %s):\n%s", name, logs.Name(), testkit.LastLines(string(b), 15))
		} else {
			t.Logf("scale-mco: %s's output is in %s", name, logs.Name())
		}
	})
	return p
}

func (p *process) alive(t *testing.T) {
	select {
	case <-p.done:
		t.Fatalf("%s exited; its output is in %s", p.name, p.log)
	default:
	}
}

// startNDP runs ndp-controller without leader election, its webhook on
// envtest's port with envtest's certificate (which the registration's CA
// bundle trusts).
func startNDP(t *testing.T, cfg mcoConfig, kubeconfig string, webhookPort int, certDir string) (*process, string) {
	probe := testkit.FreePort(t)
	args := []string{
		"--leader-elect=false",
		"--webhook-port", strconv.Itoa(webhookPort),
		"--webhook-cert-dir", certDir,
		"--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(t)),
		"--health-probe-bind-address", fmt.Sprintf("127.0.0.1:%d", probe),
	}
	if cfg.mode == "advisor" {
		args = append(args, "--mode=advisor")
	}
	pprofURL := ""
	if cfg.pprof != "" {
		addr := fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(t))
		args = append(args, "--pprof-bind-address", addr)
		pprofURL = "http://" + addr + "/debug/pprof/"
	}
	t.Logf("scale-mco: ndp-controller %s", strings.Join(args, " "))
	p := startProcess(t, "ndp-controller", cfg.controllerBin, kubeconfig, args...)
	testkit.Eventually(t, "ndp-controller is ready", func() (bool, string) {
		p.alive(t)
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", probe))
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	}, testkit.Within(3*time.Minute))
	return p, pprofURL
}

// profile saves one of ndp-controller's pprof profiles (kind: heap, or
// profile for seconds of CPU) as dir/name.pprof; url "" is profiling off.
func profile(t *testing.T, dir, url, name, kind string, seconds time.Duration) {
	if url == "" {
		return
	}
	u := url + kind
	if seconds > 0 {
		u += fmt.Sprintf("?seconds=%d", int(seconds.Seconds()))
	} else {
		u += "?gc=1"
	}
	resp, err := http.Get(u)
	if err != nil {
		t.Errorf("profile %s: %v", name, err)
		return
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("profile %s: %s, %v", name, resp.Status, err)
		return
	}
	path := filepath.Join(dir, name+".pprof")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Error(err)
	}
	if kind == "profile" {
		kind = "CPU"
	}
	t.Logf("ndp-controller's %s profile in %s", kind, path)
}

// startNoop serves the floor: a controller-runtime webhook server, as
// ndp's, with the same certificate, whose handler allows at once.
func startNoop(t *testing.T, ctx context.Context, host, certDir string) (string, *atomic.Int64) {
	port := testkit.FreePort(t)
	hits := &atomic.Int64{}
	srv := ctrlwebhook.NewServer(ctrlwebhook.Options{Host: host, Port: port, CertDir: certDir})
	srv.Register("/noop", &admission.Webhook{Handler: admission.HandlerFunc(func(context.Context, admission.Request) admission.Response {
		hits.Add(1)
		return admission.Allowed("")
	})})
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Start(sctx) }()
	t.Cleanup(func() { cancel(); <-done })
	testkit.Until(t, "the no-op webhook server starts", func() bool { return srv.StartedChecker()(nil) == nil })
	return fmt.Sprintf("https://%s/noop", net.JoinHostPort(host, strconv.Itoa(port))), hits
}

// registerFloor registers the no-op webhook as ndp's MachineConfig preview
// is registered (same rules, failure policy, timeout, CA bundle), for the
// MachineConfigs labelled floorLabel, and keeps those from ndp's.
func registerFloor(t *testing.T, ctx context.Context, c client.Client, url string) {
	var cfg admissionregistrationv1.ValidatingWebhookConfiguration
	if err := c.Get(ctx, client.ObjectKey{Name: "ndp-webhook"}, &cfg); err != nil {
		t.Fatal(err)
	}
	i := -1
	for k, w := range cfg.Webhooks {
		if w.Name == "machineconfigs.preview.ndp.dev" {
			i = k
		}
	}
	if i < 0 {
		t.Fatal("ValidatingWebhookConfiguration ndp-webhook has no machineconfigs.preview.ndp.dev")
	}
	floor := cfg.Webhooks[i].DeepCopy()
	cfg.Webhooks[i].ObjectSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: floorLabel, Operator: metav1.LabelSelectorOpDoesNotExist}}}
	if err := c.Update(ctx, &cfg); err != nil {
		t.Fatal(err)
	}
	floor.Name = "machineconfigs.noop.scale.ndp.dev"
	floor.ClientConfig.URL, floor.ClientConfig.Service = &url, nil
	floor.ObjectSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: floorLabel, Operator: metav1.LabelSelectorOpExists}}}
	noop := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "ndp-scale-noop"}, Webhooks: []admissionregistrationv1.ValidatingWebhook{*floor}}
	if err := c.Create(ctx, noop); err != nil {
		t.Fatal(err)
	}
}

// chronyMC is the change the dry-runs send: /etc/chrony.conf for the
// worker MachineConfigs (the worker pool and the three custom pools select
// it), its contents given by n; floor labels it for the no-op webhook.
func chronyMC(n int, floor bool) *ndpmcv1.MachineConfig {
	b := builder.MachineConfig("60-worker-chrony").WithRole("worker").
		WithFileMap(map[string]string{"/etc/chrony.conf": fmt.Sprintf("server ntp-%d.example.com iburst\ndriftfile /var/lib/chrony/drift\nmakestep 1.0 3\nrtcsync\n", n)}, 0o644)
	if floor {
		b.WithLabel(floorLabel, "true")
	}
	return b.Build()
}

// previewed tells whether ndp's warnings preview the worker pool.
func previewed(warnings []string) bool {
	for _, w := range warnings {
		if strings.Contains(w, "pool worker") && !strings.Contains(w, "no preview") {
			return true
		}
	}
	return false
}

// dryRunner sends server dry-runs and collects each one's warnings.
type dryRunner struct{ c client.Client }

type warningsKey struct{}

type collectWarnings struct{}

func (collectWarnings) HandleWarningHeaderWithContext(ctx context.Context, _ int, _ string, text string) {
	if w, ok := ctx.Value(warningsKey{}).(*[]string); ok {
		*w = append(*w, text)
	}
}

func newDryRunner(t *testing.T, restCfg *rest.Config) *dryRunner {
	cfg := rest.CopyConfig(restCfg)
	cfg.QPS, cfg.Burst, cfg.UserAgent = -1, 0, "ndp-scale-mco-dry-run"
	cfg.WarningHandlerWithContext = collectWarnings{}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	return &dryRunner{c: c}
}

func (d *dryRunner) send(ctx context.Context, mc *ndpmcv1.MachineConfig) ([]string, error) {
	var warnings []string
	err := d.c.Create(context.WithValue(ctx, warningsKey{}, &warnings), mc, client.DryRunAll)
	return warnings, err
}

// latencies of one webhook in one phase.
type latencies struct {
	n        int
	p50, p99 time.Duration
	max      time.Duration
}

func summarize(d []time.Duration) latencies {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	at := func(q float64) time.Duration { return d[int(q*float64(len(d)-1)+0.5)] }
	return latencies{n: len(d), p50: at(0.5), p99: at(0.99), max: d[len(d)-1]}
}

type latencyPhase struct {
	name      string
	ndp, noop latencies
}

// runPreviewPhase sends cfg.requests dry-runs to each webhook from
// cfg.clients clients, each client alternating ndp's and the floor's so
// that both see the same load; distinct: every change different (nothing
// is reused: a first preview), else the same change every time (GitOps
// tools resending their manifests).
func runPreviewPhase(t *testing.T, ctx context.Context, dry *dryRunner, cfg mcoConfig, name string, distinct bool) latencyPhase {
	var mu sync.Mutex
	var ndpLat, noopLat []time.Duration
	var next atomic.Int64
	var failures atomic.Int64
	var firstErr atomic.Value
	fail := func(err error) {
		failures.Add(1)
		firstErr.CompareAndSwap(nil, err.Error())
	}
	var wg sync.WaitGroup
	for range cfg.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(cfg.requests) {
					return
				}
				n := int(i)
				if !distinct {
					n = 0
				}
				start := time.Now()
				w, err := dry.send(ctx, chronyMC(n, false))
				dn := time.Since(start)
				if err == nil && !previewed(w) {
					err = fmt.Errorf("no preview of the worker pool: %q", w)
				}
				if err != nil {
					fail(err)
				}
				start = time.Now()
				_, err = dry.send(ctx, chronyMC(n, true))
				df := time.Since(start)
				if err != nil {
					fail(err)
				}
				mu.Lock()
				ndpLat, noopLat = append(ndpLat, dn), append(noopLat, df)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if f := failures.Load(); f > 0 {
		t.Errorf("%s previews: %d failures, first: %v", name, f, firstErr.Load())
	}
	return latencyPhase{name: name, ndp: summarize(ndpLat), noop: summarize(noopLat)}
}

// waitQuiet waits until the process has used under 10% of a core for
// 10 s (it has listed, built its caches and done its first work), or for
// 2 minutes.
func waitQuiet(t *testing.T, p *process) {
	const window = 10 * time.Second
	deadline := time.Now().Add(2 * time.Minute)
	prev := mustProc(t, p)
	for {
		time.Sleep(window)
		p.alive(t)
		cur := mustProc(t, p)
		if cur.cpu-prev.cpu < window/10 {
			return
		}
		if time.Now().After(deadline) {
			t.Logf("scale-mco: %s still busy after 2 minutes (%s of CPU in the last %s); measuring anyway", p.name, cur.cpu-prev.cpu, window)
			return
		}
		prev = cur
	}
}

func mustProc(t *testing.T, p *process) procStat {
	st, err := readProc(p.pid)
	if err != nil {
		t.Fatalf("%s: %v", p.name, err)
	}
	return st
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "load ?"
	}
	return "load " + strings.Join(f[:3], " ")
}

func mcoReport(t *testing.T, cfg mcoConfig, sizes renderedSizes, mccSettled, mccAfter, ndpSettled, ndpAfter procStat, apiserver map[string]procStat, phases []latencyPhase, loads []string) {
	var b bytes.Buffer
	s := append([]int(nil), sizes.sizes...)
	sort.Ints(s)
	total := 0
	big := 0
	for _, v := range s {
		total += v
		if v >= 300_000 {
			big++
		}
	}
	kb := func(v int) string { return fmt.Sprintf("%.0f KB", float64(v)/1000) }
	fmt.Fprintf(&b, "\nscale-mco: %d rendered MachineConfigs (%s..%s, median %s, %d of 300 KB or more; %s of JSON), %d MachineConfigs in all, %d pools, %d nodes; ndp-controller in %s mode; %d CPUs\n",
		sizes.count, kb(s[0]), kb(s[len(s)-1]), kb(s[len(s)/2]), big, mib(float64(total)), sizes.objects, len(mcoPools), sizes.nodes, cfg.mode, runtime.NumCPU())
	fmt.Fprintf(&b, "\npeak RSS (VmHWM)          settled   after previews\n")
	fmt.Fprintf(&b, "  mcc-ref (the MCO)     %8s   %8s\n", mib(float64(mccSettled.hwm)), mib(float64(mccAfter.hwm)))
	fmt.Fprintf(&b, "  ndp-controller        %8s   %8s\n", mib(float64(ndpSettled.hwm)), mib(float64(ndpAfter.hwm)))
	fmt.Fprintf(&b, "  ndp ÷ MCO             %7.2f×   %7.2f×   (target ≤ 1×)\n", float64(ndpSettled.hwm)/float64(mccSettled.hwm), float64(ndpAfter.hwm)/float64(mccAfter.hwm))
	fmt.Fprintf(&b, "  RSS at the end: mcc-ref %s, ndp-controller %s; CPU: mcc-ref %s, ndp-controller %s", mib(float64(mccAfter.rss)), mib(float64(ndpAfter.rss)), mccAfter.cpu.Round(time.Millisecond), ndpAfter.cpu.Round(time.Millisecond))
	for _, name := range []string{"kube-apiserver", "etcd"} {
		if st, ok := apiserver[name]; ok {
			fmt.Fprintf(&b, "; %s peak %s", name, mib(float64(st.hwm)))
		}
	}
	fmt.Fprintf(&b, "\n\nMachineConfig dry-runs through the API server (%d per webhook and phase, %d clients, alternating):\n", cfg.requests, cfg.clients)
	fmt.Fprintf(&b, "  %-9s %9s %9s %9s %9s %9s %9s %12s\n", "phase", "ndp p50", "ndp p99", "ndp max", "noop p50", "noop p99", "noop max", "p99 ndp÷noop")
	for _, p := range phases {
		fmt.Fprintf(&b, "  %-9s %9s %9s %9s %9s %9s %9s %11.2f×\n", p.name, msf(p.ndp.p50), msf(p.ndp.p99), msf(p.ndp.max), msf(p.noop.p50), msf(p.noop.p99), msf(p.noop.max), float64(p.ndp.p99)/float64(p.noop.p99))
	}
	fmt.Fprintf(&b, "  (target: p99 ndp ≤ 1.5× noop)\n\nmachine load (1, 5, 15 min): %s\n", strings.Join(loads, "; "))
	t.Log(b.String())
	fmt.Print(b.String())
	if cfg.report != "" {
		if err := os.WriteFile(cfg.report, b.Bytes(), 0o644); err != nil {
			t.Error(err)
		}
	}
}

func msf(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d.Microseconds())/1000) }
