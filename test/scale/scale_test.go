//go:build scale

package scale

import (
	"context"
	"fmt"
	"maps"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/scheme"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/internal/testkit/builder"
	"github.com/ndp-dev/ndp/mco/mcoguard"
)

// poolLabel puts a node in a pool (each pool's nodeSelector).
const poolLabel = "ndp.dev/scale-pool"

// workloadNS holds the pods the drains evict.
const workloadNS = "scale-workload"

// config is the run's size and the simulated hosts' timings, from the
// environment.
type config struct {
	nodes, pools   int
	workers        int           // NDP_SCALE_WORKERS: daemon Syncs at once
	pods           int           // NDP_SCALE_PODS: pods per node at the start (drains move them: workload)
	restart        time.Duration // NDP_SCALE_RESTART: a unit restart's latency
	reboot         time.Duration // NDP_SCALE_REBOOT: how long a node is down in a reboot
	poll           time.Duration // the daemons' --plan-poll-interval
	maxUnavailable intstr.IntOrString
	changeTimeout  time.Duration
	changes        []string // NDP_SCALE_CHANGES: none,restart,reboot; by default also policyRounds of the RolloutPolicy's changes
	policyRounds   int      // NDP_SCALE_POLICY_ROUNDS: how many times the RolloutPolicy's cost is measured
	dir            string   // host roots (NDP_SCALE_DIR, default under /dev/shm)
	report         string   // NDP_SCALE_REPORT: a Markdown file for the figures
	controllerBin  string   // NDP_CONTROLLER_BIN, default bin/ndp-controller
	// NDP_SCALE_PPROF: a directory for ndp-controller's CPU profile of each
	// change's first NDP_SCALE_PPROF_SECONDS (default 30).
	pprof        string
	pprofSeconds time.Duration
}

func envInt(t *testing.T, key string, def int) int {
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q: want a number", key, v)
	}
	return n
}

func envDuration(t *testing.T, key string, def time.Duration) time.Duration {
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", key, v, err)
	}
	return d
}

func loadConfig(t *testing.T, root string) config {
	c := config{
		nodes:          envInt(t, "NDP_SCALE_NODES", 1000),
		pools:          envInt(t, "NDP_SCALE_POOLS", 5),
		workers:        envInt(t, "NDP_SCALE_WORKERS", 128),
		pods:           envInt(t, "NDP_SCALE_PODS", 2),
		restart:        envDuration(t, "NDP_SCALE_RESTART", 200*time.Millisecond),
		reboot:         envDuration(t, "NDP_SCALE_REBOOT", 2*time.Second),
		poll:           envDuration(t, "NDP_SCALE_POLL", 2*time.Second),
		maxUnavailable: intstr.Parse(envOr("NDP_SCALE_MAX_UNAVAILABLE", "10%")),
		changeTimeout:  envDuration(t, "NDP_SCALE_CHANGE_TIMEOUT", 15*time.Minute),
		pprof:          os.Getenv("NDP_SCALE_PPROF"),
		pprofSeconds:   envDuration(t, "NDP_SCALE_PPROF_SECONDS", 30*time.Second),
		policyRounds:   envInt(t, "NDP_SCALE_POLICY_ROUNDS", 2),
		report:         os.Getenv("NDP_SCALE_REPORT"),
		controllerBin:  envOr("NDP_CONTROLLER_BIN", filepath.Join(root, "bin", "ndp-controller")),
	}
	c.changes = strings.Split(envOr("NDP_SCALE_CHANGES", defaultChanges(c.policyRounds)), ",")
	if c.nodes < c.pools || c.pools < 1 || c.workers < 1 {
		t.Fatalf("NDP_SCALE_NODES=%d, NDP_SCALE_POOLS=%d, NDP_SCALE_WORKERS=%d: want nodes ≥ pools ≥ 1 and a worker", c.nodes, c.pools, c.workers)
	}
	base := os.Getenv("NDP_SCALE_DIR")
	if base == "" {
		// Host roots in memory: each real node has a disk of its own, a
		// thousand fsyncs a second on this machine's one disk would
		// measure the disk.
		if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
			base = "/dev/shm"
		}
	}
	dir, err := os.MkdirTemp(base, "ndp-scale-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	c.dir = dir
	return c
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// run is the state of one scale run.
type run struct {
	t       *testing.T
	cfg     config
	ctx     context.Context
	k8s     client.Client        // the harness's client (counted as harness)
	hcs     kubernetes.Interface // the harness's clientset
	metrics *http.Client         // reads the API server's /metrics
	apiHost string

	daemons, harness *counter
	fleet            *fleet
	workload         *workload
	tracker          *tracker
	nodeStore        cache.Store
	pools            []string
	poolNodes        map[string]int
	budgets          map[string]int
	targets          map[string]string

	ctrlPID     int
	ctrlMetrics string
	ctrlStarts  int    // ndp-controller processes started (restartController)
	ctrlStop    func() // stops the running one
	kubeconfig  string
	ctrlPprof   string         // its /debug/pprof/ when NDP_SCALE_PPROF is set
	procs       map[string]int // kube-apiserver, etcd
	origin      time.Time      // the first change's start: the plots' zero
	results     []*result
}

func TestScale(t *testing.T) {
	root, _ := filepath.Abs("../..")
	r := &run{t: t, poolNodes: map[string]int{}, budgets: map[string]int{}, targets: map[string]string{}}
	r.cfg = loadConfig(t, root)
	cfg := r.cfg
	if _, err := os.Stat(cfg.controllerBin); err != nil {
		t.Fatalf("ndp-controller: %v (run `make build`, or set NDP_CONTROLLER_BIN)", err)
	}
	t.Logf("scale: %d nodes in %d pools, maxUnavailable %s, %d daemon workers, %d pods per node, restart %s, reboot %s, host roots in %s",
		cfg.nodes, cfg.pools, cfg.maxUnavailable.String(), cfg.workers, cfg.pods, cfg.restart, cfg.reboot, cfg.dir)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	r.ctx = ctx

	// The control plane.
	started := time.Now()
	cp := testkit.NewControlPlane(t, testkit.ControlPlaneOptions{Root: root, Kubeconfig: true})
	restCfg, kubeconfig := cp.Config, cp.Kubeconfig
	t.Logf("scale: control plane up in %s", time.Since(started).Round(time.Millisecond))
	var err error
	r.procs = children("kube-apiserver", "etcd")
	r.apiHost = strings.TrimSuffix(restCfg.Host, "/")
	if r.metrics, err = rest.HTTPClientFor(restCfg); err != nil {
		t.Fatal(err)
	}

	// Clients: the harness's and the daemons', each counted.
	r.harness, r.daemons = newCounter(), newCounter()
	hcfg := rest.CopyConfig(restCfg)
	hcfg.QPS, hcfg.UserAgent = -1, "ndp-scale-harness"
	hcfg.Wrap(r.harness.wrap)
	if r.k8s, err = client.New(hcfg, client.Options{Scheme: scheme.New()}); err != nil {
		t.Fatal(err)
	}
	if r.hcs, err = kubernetes.NewForConfig(hcfg); err != nil {
		t.Fatal(err)
	}
	dcfg := rest.CopyConfig(restCfg)
	// Each real daemon has a client of its own with no client-side limit
	// (controller-runtime's default): none here either.
	dcfg.QPS, dcfg.UserAgent = -1, "ndp-daemon"
	dcfg.Wrap(r.daemons.wrap)
	dhttp, err := rest.HTTPClientFor(dcfg)
	if err != nil {
		t.Fatal(err)
	}
	dc, err := client.New(dcfg, client.Options{Scheme: scheme.New(), HTTPClient: dhttp})
	if err != nil {
		t.Fatal(err)
	}
	dcs, err := kubernetes.NewForConfigAndClient(dcfg, dhttp)
	if err != nil {
		t.Fatal(err)
	}
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: dcs.EventsV1()})
	if err := broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(broadcaster.Shutdown)

	// The MCO guard every ndp-daemon runs (a watch of the MCO's
	// ClusterOperator and DaemonSet, by name), one for the fleet here:
	// what one costs at a daemon's start is logged; a Sync asks it, not
	// the API server.
	guard, err := mcoguard.NewGuardForConfig(dcfg)
	if err != nil {
		t.Fatal(err)
	}
	before := r.daemons.total.Load()
	go func() { _ = guard.Start(ctx) }()
	gctx, cancelGuard := context.WithTimeout(ctx, time.Minute)
	err = guard.WaitSynced(gctx)
	cancelGuard()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the MCO guard's start: %d requests (the fleet shares one; each ndp-daemon process runs its own)", r.daemons.total.Load()-before)

	r.startController(kubeconfig)
	r.setup()
	r.fleet = &fleet{
		cfg: cfg, c: dc, cs: dcs, rec: broadcaster.NewRecorder(scheme.New(), "ndp-daemon"), harness: r.hcs, mco: guard,
		nodes:      map[string]*simNode{},
		queue:      workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, 1000*time.Second)),
		syncErrors: map[string]int{},
	}
	r.workload = newWorkload(r.hcs)
	wanted := map[string]int{}
	for i := 0; i < r.cfg.nodes; i++ {
		wanted[r.poolName(i%r.cfg.pools)] += r.cfg.pods
	}
	if err := r.workload.createReplicaSets(ctx, wanted); err != nil {
		t.Fatal(err)
	}
	r.createNodes()

	// One informer for every node: the daemons' wake-ups and the watch
	// that checks the budget.
	nodeFactory := informers.NewSharedInformerFactory(r.hcs, 0)
	nodeInformer := nodeFactory.Core().V1().Nodes().Informer()
	r.tracker = newTracker(nodeInformer)
	r.nodeStore = nodeInformer.GetStore()
	r.tracker.setTargets(r.targets, func(string) (string, string) { return "", "" })
	podFactory := informers.NewSharedInformerFactoryWithOptions(r.hcs, 0, informers.WithNamespace(workloadNS))
	r.fleet.start(ctx, nodeInformer, podFactory)
	r.workload.start(ctx, podFactory.Core().V1().Pods().Informer(), nodeInformer.GetStore())
	nodeFactory.Start(ctx.Done())
	podFactory.Start(ctx.Done())
	nodeFactory.WaitForCacheSync(ctx.Done())
	podFactory.WaitForCacheSync(ctx.Done())
	started = time.Now()
	r.waitUpdated("the daemons adopt their configs", 10*time.Minute)
	t.Logf("scale: %d daemons adopted their configs in %s", cfg.nodes, time.Since(started).Round(time.Millisecond))

	// The "+policy" changes repeat a change with a RolloutPolicy on every
	// pool (its gates, window and pacing evaluated, none holding): its
	// cost against the change without, in the same run, in rounds
	// (policyChanges).
	changes := map[string]change{
		"none":    {name: "None", what: "pull secret /var/lib/kubelet/config.json added", apply: r.addPullSecret, verify: verifyPullSecret},
		"restart": r.chronyChange(1),
		"reboot":  r.kernelArgumentChange(1),
	}
	for round := 1; round <= max(cfg.policyRounds, 1); round++ {
		for key, c := range r.policyChanges(round) {
			changes[key] = c
		}
	}
	r.origin = time.Now()
	for _, key := range cfg.changes {
		c, ok := changes[strings.TrimSpace(key)]
		if !ok {
			t.Fatalf("NDP_SCALE_CHANGES: unknown change %q (one of %s)", key, strings.Join(slices.Sorted(maps.Keys(changes)), ", "))
		}
		r.results = append(r.results, r.runChange(c))
	}
	r.report()
}

// startController runs ndp-controller as a process of its own, without
// leader election or webhooks, its metrics on loopback.
func (r *run) startController(kubeconfig string) {
	t := r.t
	r.kubeconfig = kubeconfig
	r.ctrlStarts++
	port := testkit.FreePort(t)
	logs, err := os.OpenFile(filepath.Join(os.TempDir(), fmt.Sprintf("ndp-scale-controller-%d.log", os.Getpid())), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(r.cfg.controllerBin,
		"--leader-elect=false",
		"--webhook-port", "-1",
		"--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", port),
		"--health-probe-bind-address", "0",
	)
	if r.cfg.pprof != "" {
		addr := fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(t))
		cmd.Args = append(cmd.Args, "--pprof-bind-address", addr)
		r.ctrlPprof = "http://" + addr + "/debug/pprof/"
	}
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	r.ctrlStop = func() { testkit.Terminate(cmd.Process, done, 30*time.Second) }
	t.Cleanup(func() {
		testkit.Terminate(cmd.Process, done, 30*time.Second)
		_ = logs.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logs.Name())
			t.Logf("ndp-controller output (last lines, all in %s):\n%s", logs.Name(), testkit.LastLines(string(b), 15))
		}
	})
	r.ctrlPID = cmd.Process.Pid
	r.ctrlMetrics = fmt.Sprintf("http://127.0.0.1:%d/metrics", port)
	testkit.Eventually(t, "ndp-controller serves its metrics", func() (bool, string) {
		select {
		case <-done:
			t.Fatalf("ndp-controller exited; its output is in %s", logs.Name())
		default:
		}
		_, err := scrapeText(http.DefaultClient, r.ctrlMetrics)
		return err == nil, fmt.Sprintf("ndp-controller's metrics endpoint: %v", err)
	}, testkit.Within(time.Minute))
}

// restartController replaces ndp-controller by a fresh process (no cache
// of what earlier changes made it read) and waits until it is idle: its
// start's reconciles done, none for a few seconds.
func (r *run) restartController() {
	r.ctrlStop()
	r.startController(r.kubeconfig)
	last, quiet := -1.0, 0
	testkit.Eventually(r.t, "the new ndp-controller idle", func() (bool, string) {
		text, err := scrapeText(http.DefaultClient, r.ctrlMetrics)
		if err != nil {
			return false, err.Error()
		}
		n, _ := metricSum(text, "controller_runtime_reconcile_total", nil)
		if n > 0 && n == last {
			quiet++
		} else {
			quiet = 0
		}
		last = n
		return quiet >= 5, fmt.Sprintf("%.0f reconciles, quiet for %d looks", n, quiet)
	}, testkit.Within(3*time.Minute))
}

func (r *run) poolName(i int) string { return fmt.Sprintf("scale-%d", i) }

// setup creates the chrony policy, the pools and their first
// MachineConfig, and waits for every pool's first target.
func (r *run) setup() {
	t, ctx := r.t, r.ctx
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: workloadNS}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: workloadNS, Name: "default"}},
	} {
		if err := r.k8s.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	p := &v1alpha1.NodeDisruptionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "scale-chrony"}}
	p.Spec.Files = []operatorv1.NodeDisruptionPolicySpecFile{{Path: "/etc/chrony.conf", Actions: []operatorv1.NodeDisruptionPolicySpecAction{{
		Type: operatorv1.RestartSpecAction, Restart: &operatorv1.RestartService{ServiceName: "chronyd.service"},
	}}}}
	if err := r.k8s.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "policy scale-chrony is active", func() (bool, string) {
		if err := r.k8s.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return false, err.Error()
		}
		return meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.ConditionActive), fmt.Sprintf("policy scale-chrony: %+v", p.Status.Conditions)
	})
	mu := r.cfg.maxUnavailable
	for i := 0; i < r.cfg.pools; i++ {
		pool := r.poolName(i)
		r.pools = append(r.pools, pool)
		mcp := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: pool, Labels: map[string]string{scalePoolLabel: ""}}, Spec: mcfgv1.MachineConfigPoolSpec{
			MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{ndpmcv1.RoleLabel: pool}},
			NodeSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{poolLabel: pool}},
			MaxUnavailable:        &mu,
		}}
		if err := r.k8s.Create(ctx, mcp); err != nil {
			t.Fatal(err)
		}
		if err := r.k8s.Create(ctx, builder.MachineConfig("50-"+pool+"-chrony").WithRole(pool).WithFileMap(map[string]string{"/etc/chrony.conf": chrony(0)}, 0o644).Build()); err != nil {
			t.Fatal(err)
		}
	}
	// The registries controller adds its MachineConfig to every pool: the
	// rendering from both is the config the nodes are provisioned with.
	testkit.Eventually(t, "the rendering with the registries MachineConfig", func() (bool, string) {
		for _, pool := range r.pools {
			var mcp mcfgv1.MachineConfigPool
			if err := r.k8s.Get(ctx, client.ObjectKey{Name: pool}, &mcp); err != nil {
				return false, err.Error()
			}
			if len(mcp.Spec.Configuration.Source) != 2 || mcp.Spec.Configuration.Name == "" {
				return false, fmt.Sprintf("pool %s renders %q from %v", pool, mcp.Spec.Configuration.Name, mcp.Spec.Configuration.Source)
			}
			r.targets[pool] = mcp.Spec.Configuration.Name
		}
		return true, ""
	}, testkit.Within(3*time.Minute))
}

func chrony(n int) string { return fmt.Sprintf("pool %d.example.com iburst\n", n) }

// createNodes creates the Node objects (labelled into pools, provisioned
// with the pool's target, Ready), their pods, and their simulated machines.
func (r *run) createNodes() {
	t, ctx := r.t, r.ctx
	started := time.Now()
	names := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	zones := []string{"zone-a", "zone-b", "zone-c"}
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range names {
				pool := r.poolName(i % r.cfg.pools)
				name := fmt.Sprintf("%s-n%04d", pool, i/r.cfg.pools)
				err := r.createNode(ctx, name, pool, zones[(i/r.cfg.pools)%len(zones)])
				if err == nil {
					err = r.fleet.addNode(name, pool, map[string]string{"/etc/chrony.conf": chrony(0)})
				}
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				r.poolNodes[pool]++
				mu.Unlock()
			}
		}()
	}
	for i := 0; i < r.cfg.nodes; i++ {
		names <- i
	}
	close(names)
	wg.Wait()
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	for _, pool := range r.pools {
		b, err := intstr.GetScaledValueFromIntOrPercent(&r.cfg.maxUnavailable, r.poolNodes[pool], false)
		if err != nil {
			t.Fatal(err)
		}
		r.budgets[pool] = max(b, 1)
	}
	t.Logf("scale: %d nodes, %d pods and their hosts created in %s", r.cfg.nodes, r.cfg.nodes*r.cfg.pods, time.Since(started).Round(time.Millisecond))
}

func (r *run) createNode(ctx context.Context, name, pool, zone string) error {
	target := r.targets[pool]
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:        name,
		Labels:      map[string]string{poolLabel: pool, corev1.LabelTopologyZone: zone, "node-role.kubernetes.io/worker": ""},
		Annotations: map[string]string{ndpmcv1.CurrentConfigAnnotation: target, ndpmcv1.DesiredConfigAnnotation: target},
	}}
	if _, err := r.hcs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
		return err
	}
	r.fleet.setReady(ctx, name, true)
	for k := 0; k < r.cfg.pods; k++ {
		if err := r.workload.createPod(ctx, pool, name); err != nil {
			return err
		}
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

// waitUpdated waits until every node runs its pool's target, available.
func (r *run) waitUpdated(what string, timeout time.Duration) {
	r.t.Helper()
	start := time.Now()
	deadline, progress := start.Add(timeout), start.Add(30*time.Second)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		ok, updated, total := r.tracker.done()
		if ok {
			return
		}
		if now := time.Now(); now.After(progress) {
			syncs, errs := r.fleet.errorSummary()
			r.t.Logf("scale: %s: %d of %d nodes updated after %s (%d daemon syncs, %d kinds of errors)", what, updated, total, now.Sub(start).Round(time.Second), syncs, len(errs))
			progress = now.Add(30 * time.Second)
		}
		if time.Now().After(deadline) {
			_, errs := r.fleet.errorSummary()
			r.t.Fatalf("%s: after %s, %d of %d nodes updated; daemon sync errors: %v", what, timeout, updated, total, errs)
		}
		select {
		case <-r.tracker.changed:
		case <-tick.C:
		}
	}
}

// The three changes.

const pullSecret = `{"auths":{"registry.example.com":{"auth":"c2NhbGU6c2NhbGU="}}}` + "\n"

func (r *run) addPullSecret(ctx context.Context, pool string) error {
	return r.k8s.Create(ctx, builder.MachineConfig("60-"+pool+"-pull-secret").WithRole(pool).WithFileMap(map[string]string{"/var/lib/kubelet/config.json": pullSecret}, 0o644).Build())
}

func verifyPullSecret(n *simNode, before nodeBefore) error {
	b, err := n.host.ReadFile("/var/lib/kubelet/config.json")
	if err != nil || string(b) != pullSecret {
		return fmt.Errorf("/var/lib/kubelet/config.json: %q, %v", b, err)
	}
	return unchanged(n, before, true, true)
}

// chronyChange points chrony at server gen: planned Restart chronyd.service
// (policy scale-chrony).
func (r *run) chronyChange(gen int) change {
	return change{name: "Restart", what: fmt.Sprintf("/etc/chrony.conf changed to %q (policy scale-chrony: Restart chronyd.service)", strings.TrimSpace(chrony(gen))),
		apply: func(ctx context.Context, pool string) error {
			var mc ndpmcv1.MachineConfig
			if err := r.k8s.Get(ctx, client.ObjectKey{Name: "50-" + pool + "-chrony"}, &mc); err != nil {
				return err
			}
			mc.Spec = builder.MachineConfig(mc.Name).WithRole(pool).WithFileMap(map[string]string{"/etc/chrony.conf": chrony(gen)}, 0o644).Build().Spec
			return r.k8s.Update(ctx, &mc)
		},
		verify: func(n *simNode, before nodeBefore) error {
			b, err := n.host.ReadFile("/etc/chrony.conf")
			if err != nil || string(b) != chrony(gen) {
				return fmt.Errorf("/etc/chrony.conf: %q, %v", b, err)
			}
			if restarts, _ := n.m.Systemd.Runs("chronyd.service"); restarts != before.chronyRestarts+1 {
				return fmt.Errorf("chronyd.service restarted %d times, want once", restarts-before.chronyRestarts)
			}
			return unchanged(n, before, false, true)
		}}
}

// kernelArgumentChange sets the kernel argument ndp.scale=gen (planned
// drain and Reboot).
func (r *run) kernelArgumentChange(gen int) change {
	arg := fmt.Sprintf("ndp.scale=%d", gen)
	return change{name: "Reboot", what: "kernel argument " + arg,
		apply: func(ctx context.Context, pool string) error {
			want := builder.MachineConfig("70-" + pool + "-kargs").WithRole(pool).WithKernelArguments(arg).Build()
			var mc ndpmcv1.MachineConfig
			err := r.k8s.Get(ctx, client.ObjectKeyFromObject(want), &mc)
			if apierrors.IsNotFound(err) {
				return r.k8s.Create(ctx, want)
			}
			if err != nil {
				return err
			}
			mc.Spec = want.Spec
			return r.k8s.Update(ctx, &mc)
		},
		verify: func(n *simNode, before nodeBefore) error {
			if boots := n.m.Boots(); boots != before.boots+1 {
				return fmt.Errorf("booted %d times, want once", boots-before.boots)
			}
			if got := n.m.OS.Running().KernelArguments; len(got) != 1 || got[0] != arg {
				return fmt.Errorf("runs kernel arguments %v, want [%s]", got, arg)
			}
			return unchanged(n, before, true, false)
		}}
}

// nodeBefore is what a change must not (or must exactly once) change.
type nodeBefore struct {
	chronyRestarts, boots int
}

func unchanged(n *simNode, before nodeBefore, chronyd, boots bool) error {
	if restarts, _ := n.m.Systemd.Runs("chronyd.service"); chronyd && restarts != before.chronyRestarts {
		return fmt.Errorf("chronyd.service restarted %d times, want none", restarts-before.chronyRestarts)
	}
	if b := n.m.Boots(); boots && b != before.boots {
		return fmt.Errorf("rebooted %d times, want none", b-before.boots)
	}
	return nil
}

// ceilDiv is ⌈a / b⌉.
func ceilDiv(a, b int) int { return int(math.Ceil(float64(a) / float64(b))) }
