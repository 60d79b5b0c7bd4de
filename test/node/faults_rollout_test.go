//go:build faults

package node

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/internal/output"
	"github.com/ndp-dev/ndp/internal/testkit"
)

// replica is one ndp-controller process, restarted when it exits as a
// Deployment's pod would be (after a second, as the kubelet's backoff
// starts).
type replica struct {
	name        string
	metricsPort int
	logs        *output.Buffer

	mu       sync.Mutex
	cmd      *exec.Cmd
	done     chan struct{}
	restarts int
	stopped  bool
}

// controllerSet runs ndp-controller replicas with leader election.
type controllerSet struct {
	t        *testing.T
	bin      string
	replicas []*replica
}

var buildController = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "ndp-faults-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "ndp-controller")
	build := exec.Command("go", "build", "-o", bin, "./cmd/ndp-controller")
	build.Dir = "../.."
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building ndp-controller: %v\n%s", err, out)
	}
	return bin, nil
})

// startControllers runs n ndp-controller replicas electing a leader, with
// short leases so that a killed leader is replaced within seconds.
func startControllers(t *testing.T, n int) *controllerSet {
	t.Helper()
	bin, err := buildController()
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ndp-system"}}
	if err := k8s.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	cs := &controllerSet{t: t, bin: bin}
	for i := 0; i < n; i++ {
		r := &replica{name: fmt.Sprintf("ndp-controller-%d", i), metricsPort: testkit.FreePort(t), logs: &output.Buffer{}}
		cs.replicas = append(cs.replicas, r)
		cs.start(r)
		go cs.supervise(r)
	}
	t.Cleanup(func() { cs.stop(t) })
	return cs
}

// stop ends every replica with SIGTERM (a clean stop releases the lease)
// and logs their output if the test failed.
func (cs *controllerSet) stop(t *testing.T) {
	for _, r := range cs.replicas {
		r.mu.Lock()
		already := r.stopped
		r.stopped = true
		cmd, done := r.cmd, r.done
		r.mu.Unlock()
		if already || cmd.Process == nil {
			continue
		}
		testkit.Terminate(cmd.Process, done, 30*time.Second)
		if t.Failed() {
			t.Logf("%s output (last lines):\n%s", r.name, testkit.LastLines(r.logs.String(), 40))
		}
	}
}

// pid is replica i's current process.
func (cs *controllerSet) pid(i int) int {
	r := cs.replicas[i]
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd.Process == nil {
		return 0
	}
	return r.cmd.Process.Pid
}

func (cs *controllerSet) start(r *replica) {
	cmd := exec.Command(cs.bin,
		"--leader-elect=true",
		"--leader-election-namespace", "ndp-system",
		"--leader-election-lease-duration", "6s",
		"--leader-election-renew-deadline", "4s",
		"--leader-election-retry-period", "1s",
		"--webhook-port", "-1",
		"--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", r.metricsPort),
		"--health-probe-bind-address", "0",
	)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	cmd.Stdout, cmd.Stderr = r.logs, r.logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	done := make(chan struct{})
	if err := cmd.Start(); err != nil {
		close(done)
	} else {
		go func() { _ = cmd.Wait(); close(done) }()
	}
	r.mu.Lock()
	r.cmd, r.done = cmd, done
	r.mu.Unlock()
}

// supervise restarts the replica whenever it exits.
func (cs *controllerSet) supervise(r *replica) {
	for {
		r.mu.Lock()
		done := r.done
		r.mu.Unlock()
		<-done
		time.Sleep(time.Second)
		r.mu.Lock()
		if r.stopped {
			r.mu.Unlock()
			return
		}
		r.restarts++
		r.mu.Unlock()
		cs.start(r)
	}
}

var leaderMetric = regexp.MustCompile(`(?m)^leader_election_master_status\{[^}]*\} 1$`)

// leader is the replica that leads now, or nil.
func (cs *controllerSet) leader() *replica {
	for _, r := range cs.replicas {
		if leaderMetric.MatchString(scrape(cs.t, r.metricsPort)) {
			return r
		}
	}
	return nil
}

// kill SIGKILLs a replica: no lease released, the standby waits for it to
// expire.
func (r *replica) kill() {
	r.mu.Lock()
	cmd := r.cmd
	r.mu.Unlock()
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}

// faultRollout is the pool the rollout trials move: three nodes, one out
// at a time, each change a chrony edit under a restart policy.
type faultRollout struct {
	*rollout
	budget  *unavailability
	plans   *planRecord
	reboots map[string]int
	n       int
}

func newFaultRollout(t *testing.T, pool string) *faultRollout {
	r := newRollout(t, pool, 3, intstr.FromInt(1))
	// Each node's chronyd restart takes 2s: a rollout lasts long enough
	// for a fault to land in the middle of it.
	for _, h := range r.hosts {
		h.traceUnit("chronyd.service", "/bin/sleep 2")
	}
	superviseHosts(t, r.hosts)
	return &faultRollout{rollout: r, budget: watchUnavailable(t, pool)}
}

// change starts the next rollout and returns the old and the new target.
func (f *faultRollout) change(t *testing.T) (string, string, map[string]int) {
	f.t = t
	for _, h := range f.hosts {
		h.t = t
	}
	old := f.target()
	starts := map[string]int{}
	f.reboots = map[string]int{}
	for _, h := range f.hosts {
		starts[h.name], _ = h.runs("chronyd.service")
		f.reboots[h.name] = h.reboots()
	}
	f.budget.reset()
	f.n++
	f.changeChrony(fmt.Sprintf("pool %d.example.com\n", f.n))
	target := f.newTarget(old)
	f.plans = recordPlans(t, target, old)
	return old, target, starts
}

// planRecord is every plan from one config the target's status held while
// a rollout ran: the plan controller drops it once no node runs that
// config any more.
type planRecord struct {
	mu     sync.Mutex
	hashes map[string]bool
}

func recordPlans(t *testing.T, target, from string) *planRecord {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	r := &planRecord{hashes: map[string]bool{}}
	go func() {
		for ctx.Err() == nil {
			var mc ndpmcv1.MachineConfig
			if err := k8s.Get(ctx, client.ObjectKey{Name: target}, &mc); err == nil {
				if p := mc.Status.PlanFrom(from); p != nil {
					r.mu.Lock()
					r.hashes[p.PlanHash] = true
					r.mu.Unlock()
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	return r
}

func (r *planRecord) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for h := range r.hashes {
		out = append(out, h)
	}
	sort.Strings(out)
	return out
}

// check waits for the rollout to end and checks it: every node on the
// target, chronyd restarted exactly once on each, never more than one
// node out (from the watch), and every node ran the plan stored for its
// update, never a stale one.
func (f *faultRollout) check(t *testing.T, old, target string, starts map[string]int) string {
	f.waitDone(target, 5*time.Minute)
	peak, who := f.budget.peak()
	if peak > 1 {
		t.Errorf("%d nodes out at once (%s), maxUnavailable 1", peak, who)
	}
	// The policy does not change during a rollout: one plan is stored,
	// and every node ran it (the journal holds the plan it verified).
	stored := f.plans.seen()
	if len(stored) != 1 {
		t.Errorf("plans stored from %s during the rollout: %v, want one", old, stored)
	}
	for _, h := range f.hosts {
		if n := h.reboots() - f.reboots[h.name]; n != 0 {
			t.Errorf("%s rebooted %d times", h.name, n)
		}
		if s, _ := h.runs("chronyd.service"); s-starts[h.name] != 1 {
			t.Errorf("%s: chronyd started %d times", h.name, s-starts[h.name])
		}
		j := h.journal()
		switch {
		case j == nil || !j.Completed || j.To != target:
			t.Errorf("%s: journal %+v, want completed to %s", h.name, j, target)
		case j.Plan.From != old || !slices.Contains(stored, j.Plan.PlanHash):
			t.Errorf("%s ran plan %s from %s; stored from %s: %v", h.name, j.Plan.PlanHash, j.Plan.From, old, stored)
		}
		if strings.Contains(h.output(), "planHash mismatch") || strings.Contains(h.output(), "panic:") {
			t.Errorf("%s: ndp-daemon output:\n%s", h.name, testkit.LastLines(h.output(), 30))
		}
		if h.node().Spec.Unschedulable {
			t.Errorf("%s is still cordoned", h.name)
		}
	}
	return fmt.Sprintf("rollout done, peak %d out, chronyd once per node, all ran the stored plan %s", peak, truncateText(strings.Join(stored, ","), 24))
}

// waitProgress waits for a random point of a rollout: until a random
// number of its nodes (none to all but one) are done, then up to 1.5s more
// (a node's update takes a little over 2s).
func (f *faultRollout) waitProgress(t *testing.T, target string, rng *rand.Rand) {
	k := rng.IntN(len(f.hosts))
	testkit.Eventually(t, "the rollout progresses", func() (bool, string) {
		done, _ := f.counts(target)
		return done >= k, fmt.Sprintf("%d of %d nodes done on %s", done, k, target)
	}, testkit.Within(5*time.Minute))
	time.Sleep(time.Duration(rng.IntN(1500)) * time.Millisecond)
}

// counts is how many nodes are done on the target, and which are
// updating to it.
func (f *faultRollout) counts(target string) (int, []string) {
	done, updating := 0, []string{}
	for _, h := range f.hosts {
		var n corev1.Node
		if err := k8s.Get(context.Background(), client.ObjectKey{Name: h.name}, &n); err != nil {
			continue
		}
		a := n.Annotations
		switch {
		case a[ndpmcv1.CurrentConfigAnnotation] == target && a[ndpmcv1.StateAnnotation] == ndpmcv1.StateDone:
			done++
		case a[ndpmcv1.DesiredConfigAnnotation] == target:
			updating = append(updating, h.name)
		}
	}
	return done, updating
}

// progress says where a rollout is.
func (f *faultRollout) progress(target string) string {
	done, updating := f.counts(target)
	if done == len(f.hosts) {
		return "the rollout already done"
	}
	u := "none updating"
	if len(updating) > 0 {
		u = strings.Join(updating, "+") + " updating"
	}
	return fmt.Sprintf("%d/%d nodes done, %s", done, len(f.hosts), u)
}

// Part 2, controller restarts: two ndp-controller replicas electing a
// leader; in each of 20 trials a rollout is started and the leader (or, one
// time in four, a replica picked at random) is SIGKILLed at a random point
// of it, one trial in four twice; the replica comes back as a Deployment's
// would. Each rollout must complete within the budget, every node running
// its stored plan once. TestFaultsAPIServerRestarts and
// TestFaultsDaemonPartition check the same of other faults.
func TestFaultsControllerRestarts(t *testing.T) {
	base := seed(t)
	cs := startControllers(t, 2)
	f := newFaultRollout(t, "faults-controller")
	defer func() {
		for _, r := range cs.replicas {
			t.Logf("%s restarted %d times", r.name, r.restarts)
		}
	}()

	for i := 1; i <= 20; i++ {
		rng := rand.New(rand.NewPCG(base, uint64(1000+i)))
		trial(t, "controller-restarts", fmt.Sprintf("trial-%02d", i), func(tt *testing.T) string {
			old, target, starts := f.change(tt)
			var kills []string
			for k := 0; k < 1+b2i(rng.IntN(4) == 0); k++ {
				f.waitProgress(tt, target, rng)
				victim, role := cs.leader(), "leader"
				if victim == nil || rng.IntN(4) == 0 {
					victim, role = cs.replicas[rng.IntN(len(cs.replicas))], "no leader yet"
					switch l := cs.leader(); {
					case l == victim:
						role = "leader"
					case l != nil:
						role = "the standby"
					}
				}
				victim.kill()
				kills = append(kills, fmt.Sprintf("%s (%s) with %s", victim.name, role, f.progress(target)))
			}
			return "killed " + strings.Join(kills, ", then ") + "; " + f.check(tt, old, target, starts)
		})
	}

}

func TestFaultsAPIServerRestarts(t *testing.T) {
	base := seed(t)
	startControllers(t, 2)
	f := newFaultRollout(t, "faults-apiserver")
	for i := 1; i <= 3; i++ {
		rng := rand.New(rand.NewPCG(base, uint64(2000+i)))
		trial(t, "apiserver-restarts", fmt.Sprintf("trial-%d", i), func(tt *testing.T) string {
			old, target, starts := f.change(tt)
			f.waitProgress(tt, target, rng)
			sent := f.progress(target)
			// The first restart is a clean stop (SIGTERM, graceful
			// shutdown), the others a crash (SIGKILL).
			how := "stopped"
			apiServer := env.ControlPlane.GetAPIServer()
			stopped := time.Now()
			if i > 1 {
				how = "killed"
				killAPIServer(tt, apiServer.CertDir)
			}
			// envtest's stop waits 20s for a graceful shutdown, then kills.
			if err := apiServer.Stop(); err != nil && !strings.Contains(err.Error(), "timeout waiting for process") {
				tt.Fatalf("stopping the API server: %v", err)
			}
			time.Sleep(time.Duration(2000+rng.IntN(8000)) * time.Millisecond)
			if err := apiServer.Start(); err != nil {
				tt.Fatalf("starting the API server again: %v", err)
			}
			return fmt.Sprintf("API server %s with %s, serving again %.1fs later; %s", how, sent, time.Since(stopped).Seconds(), f.check(tt, old, target, starts))
		})
	}

}

func TestFaultsDaemonPartition(t *testing.T) {
	startControllers(t, 2)
	f := newFaultRollout(t, "faults-partition")
	// The last node in rollout order talks to the API server through a
	// proxy that cuts it off for a minute: once right after it is sent to
	// the target, once in the middle of its update.
	h := f.hosts[len(f.hosts)-1]
	proxy := startProxy(t, restConfig.Host)
	h.kubeconfig = proxy.kubeconfig(t)
	h.stop() // restarted through the proxy by its supervisor
	defer func() { h.kubeconfig = ""; h.stop() }()
	for _, mode := range []string{"sent", "working"} {
		trial(t, "daemon-partition", "cut-when-"+mode, func(tt *testing.T) string {
			old, target, starts := f.change(tt)
			var at string
			testkit.Eventually(tt, "the node reaches the target", func() (bool, string) {
				a := h.node().Annotations
				at = fmt.Sprintf("state %s, on %s", a[ndpmcv1.StateAnnotation], configName(a[ndpmcv1.CurrentConfigAnnotation], old, target))
				if mode == "sent" {
					return a[ndpmcv1.DesiredConfigAnnotation] == target, h.name + " not sent yet"
				}
				return a[ndpmcv1.DesiredConfigAnnotation] == target && a[ndpmcv1.StateAnnotation] == ndpmcv1.StateWorking, h.name + " not updating yet: " + at
			}, testkit.Within(3*time.Minute))
			proxy.cut(true)
			cutAt := time.Now()
			time.Sleep(time.Minute)
			a := h.node().Annotations
			during := fmt.Sprintf("a minute later: state %s, on %s", a[ndpmcv1.StateAnnotation], configName(a[ndpmcv1.CurrentConfigAnnotation], old, target))
			proxy.cut(false)
			healed := time.Now()
			desc := f.check(tt, old, target, starts)
			return fmt.Sprintf("%s cut off when %s (%s) for %.0fs; %s; done %.1fs after healing; %s", h.name, mode, at, healed.Sub(cutAt).Seconds(), during, time.Since(healed).Seconds(), desc)
		})
	}
}

// configName says which of a rollout's configs name is.
func configName(name, old, target string) string {
	switch name {
	case old:
		return "the old config"
	case target:
		return "the target"
	}
	return name
}

// killAPIServer SIGKILLs the kube-apiserver whose arguments name certDir
// and waits for it to be gone.
func killAPIServer(t *testing.T, certDir string) {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmdline), "kube-apiserver") || !strings.Contains(string(cmdline), certDir) {
			continue
		}
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil {
			continue
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatalf("killing kube-apiserver %d: %v", pid, err)
		}
		testkit.Eventually(t, "the killed kube-apiserver exits", func() (bool, string) {
			st, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
			return len(st) == 0 || strings.Contains(string(st), ") Z "), fmt.Sprintf("kube-apiserver %d still running", pid)
		}, testkit.Within(time.Minute))
		return
	}
	t.Fatalf("no kube-apiserver process names %s", certDir)
}

// tcpProxy forwards loopback connections to the API server; cut stops
// every byte both ways (a partition: connections hang, nothing is
// refused) until it is healed.
type tcpProxy struct {
	addr, upstream string
	mu             sync.Mutex
	isCut          bool
	healed         *sync.Cond
}

func startProxy(t *testing.T, upstream string) *tcpProxy {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	upstream = u.Host
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{addr: l.Addr().String(), upstream: upstream}
	p.healed = sync.NewCond(&p.mu)
	t.Cleanup(func() { _ = l.Close(); p.cut(false) })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	return p
}

func (p *tcpProxy) cut(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.isCut = on
	if !on {
		p.healed.Broadcast()
	}
}

func (p *tcpProxy) wait() {
	p.mu.Lock()
	for p.isCut {
		p.healed.Wait()
	}
	p.mu.Unlock()
}

func (p *tcpProxy) serve(c net.Conn) {
	defer c.Close()
	p.wait()
	u, err := net.Dial("tcp", p.upstream)
	if err != nil {
		return
	}
	defer u.Close()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				p.wait() // held while cut, delivered once healed
				if _, werr := dst.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		done <- struct{}{}
	}
	go pipe(u, c)
	go pipe(c, u)
	<-done
}

// kubeconfig is the admin kubeconfig pointed at the proxy.
func (p *tcpProxy) kubeconfig(t *testing.T) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.Clusters {
		c.Server = "https://" + p.addr
	}
	path := filepath.Join(t.TempDir(), "kubeconfig-proxy")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}
