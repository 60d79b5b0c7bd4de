// Package node tests the node daemon end to end: the real ndp-daemon
// binary against a real kube-apiserver and etcd (envtest), a real systemd
// user manager over D-Bus (internal/systemdtest), and a host root of its
// own per simulated node. Only the reboot and the kubelet are simulated.
package node

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ndp-dev/ndp/internal/output"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/scheme"
	"github.com/ndp-dev/ndp/controllers"
	"github.com/ndp-dev/ndp/daemon"
	"github.com/ndp-dev/ndp/internal/controlplane"
	"github.com/ndp-dev/ndp/internal/systemdtest"
	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/planner/engine"
	"github.com/ndp-dev/ndp/rolloutgates"
)

var (
	k8s        client.WithWatch
	restConfig *rest.Config
	kubeconfig string
	kubectlBin string
	daemonBin  string
	env        *envtest.Environment
	// faultsBuild is set by the faults build (make faults): its trials run
	// ndp-controller as processes they kill, so the controllers do not
	// also run in the test process; afterTests print its summary.
	faultsBuild bool
	afterTests  []func() int
	// The in-process controllers serve their metrics here.
	controllerMetricsPort int
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	// A certificate directory of our own survives a restart of the API
	// server (the faults trials restart it; etcd keeps the data).
	certDir, err := os.MkdirTemp("", "ndp-node-apiserver-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(certDir)
	cp, err := testkit.StartControlPlane(testkit.ControlPlaneOptions{Root: "../..", Kubeconfig: true,
		Configure: func(e *envtest.Environment) { e.ControlPlane.GetAPIServer().CertDir = certDir }})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = cp.Stop() }()
	env, restConfig, k8s, kubeconfig, kubectlBin = cp.Env, cp.Config, cp.Client, cp.Kubeconfig, cp.Bin("kubectl")
	root, _ := filepath.Abs("../..")
	dir, err := os.MkdirTemp("", "ndp-node-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	// The real binary, built as shipped; under the race detector when the
	// suite is (each host fails on a race the daemon reports).
	daemonBin = filepath.Join(dir, "ndp-daemon")
	args := []string{"build", "-o", daemonBin}
	if testkit.RaceDetector {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, "./cmd/ndp-daemon")...)
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building ndp-daemon: %v\n%s", err, out)
		return 1
	}
	if faultsBuild {
		code := m.Run()
		for _, after := range afterTests {
			code = max(code, after())
		}
		return code
	}
	if controllerMetricsPort, err = controlplane.FreePort(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// ndp's controllers, as ndp-controller wires them (no webhook): the
	// rollout tests need the render, plan, rollout and status controllers.
	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		Scheme:                 scheme.New(),
		Cache:                  controllers.CacheOptions(),
		Metrics:                metricsserver.Options{BindAddress: fmt.Sprintf("127.0.0.1:%d", controllerMetricsPort)},
		HealthProbeBindAddress: "0",
		Controller:             ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	gates := rolloutgates.NewEvaluator(mgr.GetClient(), rolloutgates.Options{})
	if _, err := controllers.SetupWithManager(mgr, engine.Options{}, controllers.Options{Gates: gates}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "controllers:", err)
		}
	}()
	return m.Run()
}

// host is one simulated node: a Node object, a host root, a systemd user
// manager whose units live under that root, and the ndp-daemon process.
type host struct {
	t    *testing.T
	name string
	dir  string // the test's own files (boot ID, reboot and OS logs)
	root string // the host root given to the daemon
	sd   *systemdtest.Manager

	// metricsPort, when set, serves the daemon's metrics on loopback.
	metricsPort int
	// kubeconfig, when set, replaces the admin kubeconfig (a proxy the
	// test controls).
	kubeconfig string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	logs *output.Buffer
	// daemonArgs are added to ndp-daemon's flags by start.
	daemonArgs []string
}

// unitDir is where units go, as a host path: the user manager's
// XDG_CONFIG_HOME/systemd/user.
const unitDir = "/etc/xdg/systemd/user"

func newHost(t *testing.T, name string) *host {
	t.Helper()
	return newHostWithLabels(t, name, map[string]string{"node-role.kubernetes.io/worker": ""})
}

// newHostWithLabels is newHost with the Node created with these labels, as
// a node registers with its roles: relabelled after its creation, a node
// first belongs to the pool its first labels choose.
func newHostWithLabels(t *testing.T, name string, labels map[string]string) *host {
	t.Helper()
	dir := t.TempDir()
	h := &host{t: t, name: name, dir: dir, root: filepath.Join(dir, "root"), logs: &output.Buffer{}}
	for path, data := range map[string]string{
		"/etc/passwd":  "root:x:0:0:root:/root:/bin/bash\ncore:x:1000:1000:CoreOS Admin:/home/core:/bin/bash\n",
		"/etc/group":   "root:x:0:\ncore:x:1000:\n",
		"/etc/shadow":  "root:*:19000:0:99999:7:::\ncore:*:19000:0:99999:7:::\n",
		"/home/.keep":  "",
		"/run/.keep":   "",
		unitDir + "/.": "",
	} {
		p := filepath.Join(h.root, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if filepath.Base(path) != "." {
			if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Debian's /var/run: an absolute link into the host's /run, where the
	// packages' reboot requests go.
	if err := os.MkdirAll(filepath.Join(h.root, "var"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/run", filepath.Join(h.root, "var", "run")); err != nil {
		t.Fatal(err)
	}
	h.setBootID("boot-1")
	sd, err := systemdtest.Start(filepath.Join(dir, "run"), filepath.Join(h.root, "etc/xdg"))
	if err != nil {
		t.Fatal(err)
	}
	h.sd = sd
	t.Cleanup(func() {
		h.stop()
		if t.Failed() {
			outs, _ := filepath.Glob(filepath.Join(dir, "*.trace*"))
			for _, o := range outs {
				b, _ := os.ReadFile(o)
				t.Logf("%s of %s:\n%s", filepath.Base(o), name, testkit.LastLines(string(b), 20))
			}
			for _, o := range outs {
				if unit := strings.TrimSuffix(filepath.Base(o), ".trace"); unit != filepath.Base(o) {
					t.Logf("systemctl --user status %s on %s:\n%s", unit, name, sd.Status(unit))
				}
			}
		}
		sd.Stop()
		if strings.Contains(h.output(), "WARNING: DATA RACE") {
			t.Error("the race detector found a data race in ndp-daemon")
		}
		if t.Failed() {
			t.Logf("ndp-daemon output:\n%s", h.output())
		}
	})
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if err := k8s.Create(context.Background(), node); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), node) })
	return h
}

func (h *host) path(p string) string { return filepath.Join(h.root, p) }

func (h *host) setBootID(id string) {
	h.t.Helper()
	if err := os.WriteFile(filepath.Join(h.dir, "boot_id"), []byte(id+"\n"), 0o644); err != nil {
		h.t.Fatal(err)
	}
}

// start runs ndp-daemon for the node; env adds environment variables (the
// crash point).
func (h *host) start(env ...string) {
	h.t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	kc := kubeconfig
	if h.kubeconfig != "" {
		kc = h.kubeconfig
	}
	cmd := exec.Command(daemonBin,
		"--kubeconfig", kc,
		"--node-name", h.name,
		"--root", h.root,
		"--unit-dir", unitDir,
		"--systemd-address", h.sd.Address(),
		"--boot-id-file", filepath.Join(h.dir, "boot_id"),
		"--simulate-reboot", filepath.Join(h.dir, "reboots"),
		"--simulate-os-updates", filepath.Join(h.dir, "os-updates"),
		"--simulate-package-updates", filepath.Join(h.dir, "package-updates"),
		"--metrics-bind-address", h.metricsAddr(),
		"--health-probe-bind-address", "0",
		"--plan-poll-interval", "500ms",
		"--drain-attempt-timeout", "5s",
		"--drain-evict-retry-delay", "200ms",
		"--drain-retry-max", "2s",
	)
	cmd.Args = append(cmd.Args, h.daemonArgs...) // the last of a flag wins
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = h.logs, h.logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	h.cmd, h.done = cmd, done
}

func (h *host) metricsAddr() string {
	if h.metricsPort == 0 {
		return "0"
	}
	return fmt.Sprintf("127.0.0.1:%d", h.metricsPort)
}

// scrape reads a metrics endpoint on loopback; "" while it does not
// answer (the callers poll).
func scrape(t *testing.T, port int) string {
	t.Helper()
	m, _ := testkit.Scrape(fmt.Sprintf("127.0.0.1:%d", port))
	return m
}

func (h *host) output() string { return h.logs.String() }

// stop kills the daemon (SIGKILL: no clean shutdown) and waits for it.
func (h *host) stop() {
	h.mu.Lock()
	cmd, done := h.cmd, h.done
	h.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-done
}

// waitExit waits for the daemon to exit by itself (a crash point).
func (h *host) waitExit(timeout time.Duration) {
	h.t.Helper()
	select {
	case <-h.done:
	case <-time.After(timeout):
		h.t.Fatalf("ndp-daemon did not exit within %s", timeout)
	}
}

func (h *host) running() bool {
	select {
	case <-h.done:
		return false
	default:
		return true
	}
}

// traceUnit installs a real unit whose every start and reload appends a
// line (with its InvocationID) to a trace file, and starts it.
func (h *host) traceUnit(name, execStart string) {
	h.t.Helper()
	if execStart == "" {
		execStart = "/bin/true"
	}
	trace := h.tracePath(name)
	unit := fmt.Sprintf(`[Unit]
Description=ndp test unit %[1]s
[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/sh -c 'echo "start $INVOCATION_ID" >> %[2]s'
ExecStart=%[3]s
ExecReload=/bin/sh -c 'echo "reload $INVOCATION_ID" >> %[2]s'
StandardOutput=append:%[2]s.out
StandardError=append:%[2]s.out
`, name, trace, execStart)
	if err := os.WriteFile(filepath.Join(h.sd.UnitDir(), name), []byte(unit), 0o644); err != nil {
		h.t.Fatal(err)
	}
	if err := h.sd.Systemctl("daemon-reload"); err != nil {
		h.t.Fatal(err)
	}
	if err := h.sd.Systemctl("start", name); err != nil {
		h.t.Fatal(err)
	}
}

func (h *host) tracePath(unit string) string { return filepath.Join(h.dir, unit+".trace") }

// runs counts a unit's starts and reloads from its trace.
func (h *host) runs(unit string) (starts, reloads int) {
	b, _ := os.ReadFile(h.tracePath(unit))
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		switch strings.Fields(sc.Text() + " x")[0] {
		case "start":
			starts++
		case "reload":
			reloads++
		}
	}
	return starts, reloads
}

func (h *host) reboots() int {
	b, _ := os.ReadFile(filepath.Join(h.dir, "reboots"))
	return strings.Count(string(b), "\n")
}

func (h *host) readFile(p string) string {
	b, err := os.ReadFile(h.path(p))
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

func (h *host) writeFile(p, data string) {
	h.t.Helper()
	if err := os.MkdirAll(filepath.Dir(h.path(p)), 0o755); err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(h.path(p), []byte(data), 0o644); err != nil {
		h.t.Fatal(err)
	}
}

func (h *host) journal() *daemon.Journal {
	var j daemon.Journal
	b, err := os.ReadFile(h.path(daemon.JournalPath))
	if err != nil {
		return nil
	}
	if err := json.Unmarshal(b, &j); err != nil {
		h.t.Fatalf("journal: %v", err)
	}
	return &j
}

func (h *host) node() *corev1.Node {
	h.t.Helper()
	var n corev1.Node
	if err := k8s.Get(context.Background(), client.ObjectKey{Name: h.name}, &n); err != nil {
		h.t.Fatal(err)
	}
	return &n
}

func (h *host) annotate(kv map[string]string) {
	h.t.Helper()
	patch := map[string]any{"metadata": map[string]any{"annotations": kv}}
	b, _ := json.Marshal(patch)
	if err := k8s.Patch(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: h.name}}, client.RawPatch("application/merge-patch+json", b)); err != nil {
		h.t.Fatal(err)
	}
}

// waitState waits for the node's state annotation (and, if set, its
// currentConfig).
func (h *host) waitState(state, current string, timeout time.Duration) *corev1.Node {
	h.t.Helper()
	var last *corev1.Node
	testkit.Eventually(h.t, "the node's state", func() (bool, string) {
		last = h.node()
		a := last.Annotations
		ok := a[ndpmcv1.StateAnnotation] == state && (current == "" || a[ndpmcv1.CurrentConfigAnnotation] == current)
		return ok, fmt.Sprintf("node %s: state %q current %q reason %q (want %s on %s)", h.name, a[ndpmcv1.StateAnnotation], a[ndpmcv1.CurrentConfigAnnotation], a[ndpmcv1.ReasonAnnotation], state, current)
	}, testkit.Within(timeout))
	return last
}

// provision makes the host run config mc, as Ignition would have at first
// boot, and has the daemon adopt it.
func (h *host) provision(mc *ndpmcv1.MachineConfig, files map[string]string) {
	h.t.Helper()
	for p, data := range files {
		h.writeFile(p, data)
	}
	h.annotate(map[string]string{ndpmcv1.CurrentConfigAnnotation: mc.Name, ndpmcv1.DesiredConfigAnnotation: mc.Name})
	h.start()
	h.waitState(ndpmcv1.StateDone, mc.Name, 2*time.Minute)
}

// mcn reads the node's MachineConfigNode conditions.
func (h *host) mcnConditions() map[string]metav1.Condition {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(mcfgv1.GroupVersion.WithKind("MachineConfigNode"))
	out := map[string]metav1.Condition{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Name: h.name}, u); err != nil {
		return out
	}
	raw, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	var conds []metav1.Condition
	b, _ := json.Marshal(raw)
	_ = json.Unmarshal(b, &conds)
	for _, c := range conds {
		out[c.Type] = c
	}
	return out
}

// createMC creates a MachineConfig (rendered for pool "worker") and, if
// plan is set, writes it into the status.
func createMC(t *testing.T, mc *ndpmcv1.MachineConfig) *ndpmcv1.MachineConfig {
	t.Helper()
	if mc.Labels == nil {
		mc.Labels = map[string]string{ndpmcv1.RenderedForLabel: "worker"}
	}
	status := mc.Status
	if err := k8s.Create(context.Background(), mc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), mc) })
	if len(status.PostConfigActions) > 0 {
		setPlans(t, mc.Name, status.PostConfigActions...)
	}
	return mc
}

// setPlans writes plans into a MachineConfig's status, as the plan
// controller does.
func setPlans(t *testing.T, name string, plans ...ndpmcv1.PostConfigActions) {
	t.Helper()
	var mc ndpmcv1.MachineConfig
	if err := k8s.Get(context.Background(), client.ObjectKey{Name: name}, &mc); err != nil {
		t.Fatal(err)
	}
	mc.Status.PostConfigActions = plans
	if err := k8s.Status().Update(context.Background(), &mc); err != nil {
		t.Fatal(err)
	}
}

// poke changes a test annotation of obj, which wakes the controllers
// watching it and changes nothing they read.
func poke(t *testing.T, obj client.Object, i int) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{"test.ndp.dev/poke": fmt.Sprintf("%d-%d", time.Now().UnixNano(), i)}}})
	if err := k8s.Patch(context.Background(), obj, client.RawPatch(types.MergePatchType, b)); err != nil {
		t.Fatal(err)
	}
}

// metricValue is the value of one series (name and labels exactly as
// served) in a metrics scrape; 0 when absent.
func metricValue(scrape, series string) int {
	for _, line := range strings.Split(scrape, "\n") {
		if strings.HasPrefix(line, series+" ") {
			var v float64
			if _, err := fmt.Sscan(strings.TrimPrefix(line, series+" "), &v); err == nil {
				return int(v)
			}
		}
	}
	return 0
}

// waitSynced returns once the daemon has run Sync afresh: two more
// reconciles, each asked for by a change of an annotation of its Node.
// They run one at a time, so the second began after the first ended, after
// this call began: it saw everything the test had observed before calling.
// Needs h.metricsPort.
func (h *host) waitSynced() {
	h.t.Helper()
	if h.metricsPort == 0 {
		h.t.Fatal("waitSynced needs the daemon's metrics (h.metricsPort)")
	}
	before := reconciles(h.t, h.metricsPort)
	for i := 1; i <= 2; i++ {
		poke(h.t, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: h.name}}, i)
		testkit.Eventually(h.t, "the daemon of "+h.name+" syncs", func() (bool, string) {
			n := reconciles(h.t, h.metricsPort)
			return n >= before+i, fmt.Sprintf("%d syncs, %d before; daemon running: %t", n, before, h.running())
		}, testkit.Within(time.Minute))
	}
}
