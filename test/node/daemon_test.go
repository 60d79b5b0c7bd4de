package node

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/daemon"
	"github.com/ndp-dev/ndp/internal/controlplane"
	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/internal/testkit/builder"
	"github.com/ndp-dev/ndp/internal/testkit/policytest"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/policy"
)

// plan computes the plan from one config to another with the built-in
// defaults and the given file policies (path → actions), as the plan
// controller would, in the shape stored in MachineConfig status.
func plan(t *testing.T, from, to *ndpmcv1.MachineConfig, files map[string][]operatorv1.NodeDisruptionPolicySpecAction) ndpmcv1.PostConfigActions {
	t.Helper()
	var pols []policy.Policy // with the defaults (policytest.Planner)
	if len(files) > 0 {
		np := &v1alpha1.NodeDisruptionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "test"}}
		for _, p := range slices.Sorted(maps.Keys(files)) {
			np.Spec.Files = append(np.Spec.Files, operatorv1.NodeDisruptionPolicySpecFile{Path: p, Actions: files[p]})
		}
		pols = append(pols, policy.FromAPI("test", np, 0, 0))
	}
	p := policytest.Plan(t, policytest.Planner(t, pols...), from, to, "")
	return p.PostConfigActions()
}

// fileUpdate creates the rendered configs rendered-<name>-a, path holding
// old, and rendered-<name>-b, path holding new, with the plan between them
// under a policy of actions for path in its status.
func fileUpdate(t *testing.T, name, path, old, new string, actions ...operatorv1.NodeDisruptionPolicySpecAction) (from, to *ndpmcv1.MachineConfig, p ndpmcv1.PostConfigActions) {
	t.Helper()
	from = createMC(t, builder.MachineConfig("rendered-"+name+"-a").WithFileMap(map[string]string{path: old}, 0o644).Build())
	to = builder.MachineConfig("rendered-"+name+"-b").WithFileMap(map[string]string{path: new}, 0o644).Build()
	p = plan(t, from, to, map[string][]operatorv1.NodeDisruptionPolicySpecAction{path: actions})
	to.Status.PostConfigActions = []ndpmcv1.PostConfigActions{p}
	return from, createMC(t, to), p
}

// rebootUpdate sends h from rendered-<name>-a to rendered-<name>-b, a new
// OS image and /etc/motd changed, which no policy claims: the defaults
// drain and reboot. edit changes the configs before they are created.
// It returns once the daemon asked for the reboot.
func rebootUpdate(t *testing.T, h *host, name string, edit func(from, to *ndpmcv1.MachineConfig)) (from, to *ndpmcv1.MachineConfig, p ndpmcv1.PostConfigActions) {
	t.Helper()
	kubelet(t, h.name)
	from = builder.MachineConfig("rendered-"+name+"-a").WithFileMap(map[string]string{"/etc/motd": "hello\n"}, 0o644).Build()
	from.Spec.OSImageURL = "quay.io/example/os@sha256:1111"
	to = builder.MachineConfig("rendered-"+name+"-b").WithFileMap(map[string]string{"/etc/motd": "hello again\n"}, 0o644).Build()
	to.Spec.OSImageURL = "quay.io/example/os@sha256:2222"
	edit(from, to)
	createMC(t, from)
	p = plan(t, from, to, nil)
	if !p.Reboot || !p.Drain {
		t.Fatalf("plan: %+v", p)
	}
	to.Status.PostConfigActions = []ndpmcv1.PostConfigActions{p}
	createMC(t, to)
	h.provision(from, map[string]string{"/etc/motd": "hello\n"})
	h.annotate(map[string]string{ndpmcv1.DesiredConfigAnnotation: to.Name})
	testkit.Eventually(t, "one reboot request", func() (bool, string) {
		return h.reboots() == 1, fmt.Sprintf("%d reboot requests", h.reboots())
	})
	return from, to, p
}

func restart(unit string) operatorv1.NodeDisruptionPolicySpecAction {
	return policy.RestartAction(unit)
}

func reload(unit string) operatorv1.NodeDisruptionPolicySpecAction {
	return policy.ReloadAction(unit)
}

var (
	daemonReload = operatorv1.NodeDisruptionPolicySpecAction{Type: operatorv1.DaemonReloadSpecAction}
	drainAction  = operatorv1.NodeDisruptionPolicySpecAction{Type: operatorv1.DrainSpecAction}
)

// nodeWatch records, from a watch, whether the node was ever cordoned and
// the order in which MachineConfigNode conditions became True.
type nodeWatch struct {
	mu        sync.Mutex
	cordoned  bool
	trueOrder []string
}

func watchNode(t *testing.T, name string) *nodeWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w := &nodeWatch{}
	nw, err := k8s.Watch(ctx, &corev1.NodeList{}, client.MatchingFields{"metadata.name": name})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for ev := range nw.ResultChan() {
			if n, ok := ev.Object.(*corev1.Node); ok && ev.Type != watch.Deleted && n.Spec.Unschedulable {
				w.mu.Lock()
				w.cordoned = true
				w.mu.Unlock()
			}
		}
	}()
	go func() {
		// The MachineConfigNode may not exist yet: poll its conditions
		// often enough to see each condition that turns True, in order.
		// What is True when the watch starts was not this update's doing.
		h := &host{t: t, name: name}
		last := map[string]metav1.ConditionStatus{}
		for first := true; ctx.Err() == nil; first = false {
			conds := h.mcnConditions()
			w.mu.Lock()
			// Several may turn True between two polls: order those by
			// their place in the daemon's sequence.
			for _, typ := range conditionSequence {
				c, ok := conds[typ]
				if ok && c.Status == metav1.ConditionTrue && last[typ] != metav1.ConditionTrue && !first {
					w.trueOrder = append(w.trueOrder, typ)
				}
				if ok {
					last[typ] = c.Status
				}
			}
			w.mu.Unlock()
			time.Sleep(20 * time.Millisecond)
		}
	}()
	return w
}

var conditionSequence = []string{"UpdatePrepared", "Cordoned", "Drained", "AppliedFiles", "AppliedOSImage", "AppliedFilesAndOS", "UpdatePostActionComplete", "RebootedNode", "Uncordoned", "UpdateExecuted", "UpdateComplete", "Updated"}

func (w *nodeWatch) wasCordoned() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cordoned
}

func (w *nodeWatch) order() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.trueOrder...)
}

// A chrony change under a restart policy: the file is written under the
// host root, chronyd restarted exactly once, no cordon, drain or reboot;
// the node ends Done with its MachineConfigNode conditions in order.
func TestChronyChangeRestartsChronydOnce(t *testing.T) {
	h := newHost(t, "node-chrony")
	h.metricsPort = testkit.FreePort(t)
	from, to, p := fileUpdate(t, "chrony", "/etc/chrony.conf", "pool a.example.com iburst\n", "pool b.example.com iburst\n", restart("chronyd.service"))
	if p.Drain || p.Reboot || len(p.Actions) != 1 || p.Actions[0].String() != "Restart chronyd.service" {
		t.Fatalf("unexpected plan: %+v", p)
	}

	h.traceUnit("chronyd.service", "")
	h.provision(from, map[string]string{"/etc/chrony.conf": "pool a.example.com iburst\n"})
	w := watchNode(t, h.name)
	startsBefore, _ := h.runs("chronyd.service")

	h.annotate(map[string]string{ndpmcv1.DesiredConfigAnnotation: to.Name})
	h.waitState(ndpmcv1.StateDone, to.Name, 2*time.Minute)

	if got := h.readFile("/etc/chrony.conf"); got != "pool b.example.com iburst\n" {
		t.Errorf("/etc/chrony.conf under the root: %q", got)
	}
	if starts, reloads := h.runs("chronyd.service"); starts-startsBefore != 1 || reloads != 0 {
		t.Errorf("chronyd.service: %d starts during the update (want 1), %d reloads", starts-startsBefore, reloads)
	}
	if h.reboots() != 0 {
		t.Errorf("%d reboots requested", h.reboots())
	}
	if w.wasCordoned() || h.node().Spec.Unschedulable {
		t.Error("the node was cordoned for a plan without drain")
	}
	var stored daemon.StoredConfig
	b, _ := os.ReadFile(h.path(daemon.CurrentConfigPath))
	if !strings.Contains(string(b), `"name": "`+to.Name+`"`) {
		t.Errorf("current config on the host: %s", b)
	}
	_ = stored
	// Conditions became True in the order of the steps.
	testkit.Eventually(t, "the MachineConfigNode conditions become True in the order of the steps", func() (bool, string) {
		o := strings.Join(w.order(), " ")
		return strings.Contains(o, "UpdatePrepared AppliedFiles AppliedFilesAndOS UpdatePostActionComplete UpdateExecuted UpdateComplete Updated"), "conditions became True in the order: " + o
	})
	conds := h.mcnConditions()
	for _, typ := range []string{"Cordoned", "Drained", "RebootedNode"} {
		if conds[typ].Status == metav1.ConditionTrue {
			t.Errorf("condition %s is True for a restart-only plan", typ)
		}
	}
	if c := conds["NodeDegraded"]; c.Status != metav1.ConditionFalse {
		t.Errorf("NodeDegraded: %+v", c)
	}
	// No Event for a plan that neither drains nor reboots: what it did is
	// in the node's history.
	nh := h.waitEntry(to.Name, "the update Done in the history", func(u *v1alpha1.NodeUpdate) bool { return u.Result == v1alpha1.UpdateDone }, time.Minute)
	checkSteps(t, &nh.Status.Updates[0], "backup", "files", "current-config", "action")
	m := scrape(t, h.metricsPort)
	for _, want := range []string{
		`ndp_daemon_actions_total{node="node-chrony",type="Restart"} 1`,
		`ndp_daemon_step_duration_seconds_count{node="node-chrony",phase="actions"} 1`,
		`ndp_daemon_update_duration_seconds_count{node="node-chrony"} 1`,
		`ndp_daemon_drain_blocked_pods{node="node-chrony"} 0`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("the daemon's metrics lack %s", want)
		}
	}
}

func assertEvent(t *testing.T, node, reason string) {
	t.Helper()
	testkit.Eventually(t, "the event", func() (bool, string) {
		var list corev1.EventList
		if err := k8s.List(context.Background(), &list, client.InNamespace("default")); err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range list.Items {
			if e.InvolvedObject.Name == node {
				if e.Reason == reason {
					return true, ""
				}
				seen = append(seen, e.Reason)
			}
		}
		return false, fmt.Sprintf("no %s event on node %s; seen %v", reason, node, seen)
	})
}

// kubelet finalises the pods the drain deletes on a node, as a kubelet
// would once their containers stopped (envtest has no kubelet).
func kubelet(t *testing.T, node string) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go controlplane.Kubelet(ctx, k8s, node)
}

func runningPod(t *testing.T, ns, name, node string, labels map[string]string, owner *metav1.OwnerReference) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "registry.example/app:1",
			VolumeMounts: []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}}},
			Volumes: []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}},
	}
	if owner != nil {
		pod.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	if err := k8s.Create(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	pod.Status.Phase = corev1.PodRunning
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	if err := k8s.Status().Update(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	return pod
}

// A plan with drain: the node is cordoned, evictable pods are evicted (a
// PodDisruptionBudget that forbids it keeps the daemon waiting and
// reporting, as soon as an eviction is refused, until it is relaxed),
// DaemonSet pods stay, and the node is uncordoned at the end.
func TestDrainWaitsForTheDisruptionBudget(t *testing.T) {
	ctx := context.Background()
	h := newHost(t, "node-drain")
	// One attempt for the whole test: the wait is reported while it runs.
	h.daemonArgs = []string{"--drain-attempt-timeout", "1h"}
	kubelet(t, h.name)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "drain-test"}}
	if err := k8s.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	ds := &appsDaemonSet{name: "agent", ns: ns.Name}
	dsOwner := ds.create(t)
	runningPod(t, ns.Name, "agent-x", h.name, map[string]string{"app": "agent"}, dsOwner)
	runningPod(t, ns.Name, "web-1", h.name, map[string]string{"app": "web"}, nil)
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "web"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: ptrIntOrString(1), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
	}
	if err := k8s.Create(ctx, pdb); err != nil {
		t.Fatal(err)
	}
	setPDB(t, pdb, 0) // as the disruption controller would: nothing may go

	from, to, p := fileUpdate(t, "drain", "/etc/app.conf", "v1\n", "v2\n", drainAction, restart("app.service"))
	if !p.Drain {
		t.Fatalf("plan does not drain: %+v", p)
	}
	h.traceUnit("app.service", "")
	h.provision(from, map[string]string{"/etc/app.conf": "v1\n"})
	w := watchNode(t, h.name)

	h.annotate(map[string]string{ndpmcv1.DesiredConfigAnnotation: to.Name})
	// Blocked by the budget: cordoned, waiting, saying which pod.
	testkit.Eventually(t, "the drain waits for the budget, naming the pod", func() (bool, string) {
		c := h.mcnConditions()["Drained"]
		return c.Status == metav1.ConditionUnknown && c.Reason == "WaitingForPods" && strings.Contains(c.Message, "attempt 1: ") &&
				strings.Contains(c.Message, "drain-test/web-1") && strings.Contains(c.Message, "an eviction was refused"),
			fmt.Sprintf("Drained condition: %+v", c)
	})
	if !h.node().Spec.Unschedulable {
		t.Fatal("draining an uncordoned node")
	}
	if got := h.readFile("/etc/app.conf"); got != "v1\n" {
		t.Fatalf("a file was written before the drain finished: %q", got)
	}
	assertEvent(t, h.name, "DrainWaiting")

	setPDB(t, pdb, 1)
	h.waitState(ndpmcv1.StateDone, to.Name, 2*time.Minute)
	var pods corev1.PodList
	if err := k8s.List(ctx, &pods, client.InNamespace(ns.Name)); err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, p := range pods.Items {
		left = append(left, p.Name)
	}
	if strings.Join(left, ",") != "agent-x" {
		t.Errorf("pods left on the node: %v (want only the DaemonSet's agent-x)", left)
	}
	if h.node().Spec.Unschedulable {
		t.Error("the node is still cordoned after the update")
	}
	if !w.wasCordoned() {
		t.Error("the watch never saw the node cordoned")
	}
	if got := h.readFile("/etc/app.conf"); got != "v2\n" {
		t.Errorf("/etc/app.conf: %q", got)
	}
}

// A node an administrator cordoned before the update stays cordoned.
func TestAdministratorsCordonIsKept(t *testing.T) {
	ctx := context.Background()
	h := newHost(t, "node-cordoned")
	from, to, _ := fileUpdate(t, "cordoned", "/etc/app.conf", "v1\n", "v2\n", drainAction, restart("app.service"))
	h.traceUnit("app.service", "")
	h.provision(from, map[string]string{"/etc/app.conf": "v1\n"})
	if err := k8s.Patch(ctx, h.node(), client.RawPatch(types.MergePatchType, []byte(`{"spec":{"unschedulable":true}}`))); err != nil {
		t.Fatal(err)
	}
	h.annotate(map[string]string{ndpmcv1.DesiredConfigAnnotation: to.Name})
	h.waitState(ndpmcv1.StateDone, to.Name, 2*time.Minute)
	if !h.node().Spec.Unschedulable {
		t.Error("the daemon uncordoned a node an administrator had cordoned")
	}
	if c := h.mcnConditions()["Uncordoned"]; c.Reason != "CordonedBeforeUpdate" {
		t.Errorf("Uncordoned condition: %+v", c)
	}
}

// A reboot plan: the daemon stops at the reboot step; restarted with a new
// boot ID, it completes the update without repeating an earlier step.
func TestRebootPlanResumesAfterTheReboot(t *testing.T) {
	h := newHost(t, "node-reboot")
	h.metricsPort = testkit.FreePort(t)
	_, to, _ := rebootUpdate(t, h, "reboot", func(_, to *ndpmcv1.MachineConfig) { to.Spec.KernelArguments = []string{"nosmt"} })
	// The daemon waits for the reboot; it does not go on, nor ask again:
	// synced afresh after the request, it did neither.
	h.waitSynced()
	before := h.journal()
	if h.reboots() != 1 || !h.running() {
		t.Fatalf("after the reboot request: %d requests, daemon running %t", h.reboots(), h.running())
	}
	if s := stepNamed(before, daemon.StepReboot); s == nil || !s.Started || s.Done {
		t.Fatalf("reboot step: %+v", s)
	}
	if got := h.readFile("/etc/motd"); got != "hello again\n" {
		t.Fatalf("files are written before the reboot: %q", got)
	}
	if c := h.mcnConditions()["RebootedNode"]; c.Status != metav1.ConditionUnknown {
		t.Errorf("RebootedNode before the reboot: %+v", c)
	}

	// The "reboot": the daemon dies with the system, the node boots anew.
	h.stop()
	h.setBootID("boot-2")
	h.start()
	h.waitState(ndpmcv1.StateDone, to.Name, 2*time.Minute)

	after := h.journal()
	for i, s := range before.Steps {
		if s.Done && (after.Steps[i].StartedAt == nil || !after.Steps[i].StartedAt.Equal(*s.StartedAt)) {
			t.Errorf("step %s was started again after the reboot", s.Name)
		}
	}
	if h.reboots() != 1 {
		t.Errorf("%d reboot requests", h.reboots())
	}
	if c := h.mcnConditions()["RebootedNode"]; c.Status != metav1.ConditionTrue {
		t.Errorf("RebootedNode: %+v", c)
	}
	// The OS change went through the OS updater once, before the reboot.
	osLog, _ := os.ReadFile(filepath.Join(h.dir, "os-updates"))
	if lines := strings.Split(strings.TrimSpace(string(osLog)), "\n"); len(lines) != 1 ||
		!strings.Contains(lines[0], `"to":{"osImageURL":"quay.io/example/os@sha256:2222","kernelArguments":["nosmt"]`) || !strings.Contains(lines[0], `"from":{"osImageURL":"quay.io/example/os@sha256:1111"`) {
		t.Errorf("OS updates recorded: %q", osLog)
	}
	if c := h.mcnConditions()["AppliedOSImage"]; c.Status != metav1.ConditionTrue {
		t.Errorf("AppliedOSImage: %+v", c)
	}
	if c := h.mcnConditions()["Resumed"]; c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "after a reboot") {
		t.Errorf("Resumed: %+v", c)
	}
	if h.node().Spec.Unschedulable {
		t.Error("still cordoned after the reboot")
	}
}

func stepNamed(j *daemon.Journal, name string) *daemon.Step {
	if j == nil {
		return nil
	}
	for i := range j.Steps {
		if j.Steps[i].Name == name {
			return &j.Steps[i]
		}
	}
	return nil
}

// SIGKILL at every step of a multi-action plan (drain, DaemonReload,
// Reload, Restart), before and after each step's work: restarted each
// time, the daemon completes the update, every action ran exactly once
// (counted from the units' own traces) and the files are right.
func TestCrashAtEveryStepRunsEachActionOnce(t *testing.T) {
	h := newHost(t, "node-crash")
	kubelet(t, h.name)
	runningPod(t, "default", "crash-victim", h.name, nil, nil)
	from := createMC(t, builder.MachineConfig("rendered-crash-a").WithFileMap(map[string]string{"/etc/a.conf": "a1\n", "/etc/b.conf": "b1\n", "/etc/gone.conf": "x\n"}, 0o644).Build())
	to := builder.MachineConfig("rendered-crash-b").WithFileMap(map[string]string{"/etc/a.conf": "a2\n", "/etc/b.conf": "b2\n", "/etc/new.conf": "n\n"}, 0o644).Build()
	p := plan(t, from, to, map[string][]operatorv1.NodeDisruptionPolicySpecAction{
		"/etc/a.conf":    {daemonReload, reload("reloader.service")},
		"/etc/b.conf":    {restart("restarter.service"), drainAction},
		"/etc/gone.conf": {{Type: operatorv1.NoneSpecAction}},
		"/etc/new.conf":  {{Type: operatorv1.NoneSpecAction}},
	})
	if got := fmt.Sprint(planner.FormatActions(ndpmcv1.NodeDisruptionPolicyActions(p.Actions))); got != "DaemonReload, Reload reloader.service, Restart restarter.service" || !p.Drain {
		t.Fatalf("plan: %s drain %t", got, p.Drain)
	}
	to.Status.PostConfigActions = []ndpmcv1.PostConfigActions{p}
	createMC(t, to)
	h.traceUnit("reloader.service", "")
	h.traceUnit("restarter.service", "")
	h.provision(from, map[string]string{"/etc/a.conf": "a1\n", "/etc/b.conf": "b1\n", "/etc/gone.conf": "x\n"})
	h.stop()
	startsR, reloadsR := h.runs("reloader.service")
	startsS, _ := h.runs("restarter.service")

	h.annotate(map[string]string{ndpmcv1.DesiredConfigAnnotation: to.Name})
	crashes := 0
	for step := 0; ; step++ {
		j := h.journal()
		if j != nil && j.Completed {
			break
		}
		if step > 0 && (j == nil || step >= len(j.Steps)) {
			break
		}
		for _, phase := range []string{"started", "ran", "done"} {
			if j := h.journal(); j != nil && step < len(j.Steps) && j.Steps[step].Done {
				continue
			}
			h.start("NDP_DAEMON_CRASH_AT=" + fmt.Sprintf("%d:%s", step, phase))
			h.waitExit(2 * time.Minute)
			crashes++
		}
	}
	if crashes < 20 {
		t.Fatalf("only %d crash points were reached", crashes)
	}
	h.start()
	h.waitState(ndpmcv1.StateDone, to.Name, 2*time.Minute)

	if starts, reloads := h.runs("reloader.service"); starts != startsR || reloads-reloadsR != 1 {
		t.Errorf("reloader.service: %d starts, %d reloads during the update (want 0 and 1)", starts-startsR, reloads-reloadsR)
	}
	if starts, reloads := h.runs("restarter.service"); starts-startsS != 1 || reloads != 0 {
		t.Errorf("restarter.service: %d starts, %d reloads during the update (want 1 and 0)", starts-startsS, reloads)
	}
	for path, want := range map[string]string{"/etc/a.conf": "a2\n", "/etc/b.conf": "b2\n", "/etc/new.conf": "n\n"} {
		if got := h.readFile(path); got != want {
			t.Errorf("%s: %q, want %q", path, got, want)
		}
	}
	if _, err := os.Stat(h.path("/etc/gone.conf")); !os.IsNotExist(err) {
		t.Errorf("/etc/gone.conf, dropped by the new config, is still there: %v", err)
	}
	if h.node().Spec.Unschedulable {
		t.Error("still cordoned")
	}
	var pod corev1.Pod
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "crash-victim"}, &pod); err == nil {
		t.Error("the pod on the node was not drained")
	}
	t.Logf("%d crashes survived", crashes)
}

// A plan whose planHash was edited is refused; a missing plan is waited
// for, and executed once it appears.
func TestPlanIsVerifiedAndWaitedFor(t *testing.T) {
	h := newHost(t, "node-verify")
	from := createMC(t, builder.MachineConfig("rendered-verify-a").WithFileMap(map[string]string{"/etc/chrony.conf": "a\n"}, 0o644).Build())
	to := builder.MachineConfig("rendered-verify-b").WithFileMap(map[string]string{"/etc/chrony.conf": "b\n"}, 0o644).Build()
	good := plan(t, from, to, map[string][]operatorv1.NodeDisruptionPolicySpecAction{"/etc/chrony.conf": {restart("chronyd.service")}})
	createMC(t, to) // no plan yet
	h.traceUnit("chronyd.service", "")
	h.provision(from, map[string]string{"/etc/chrony.conf": "a\n"})
	h.annotate(map[string]string{ndpmcv1.DesiredConfigAnnotation: to.Name})

	testkit.Eventually(t, "UpdatePrepared waits for the plan", func() (bool, string) {
		c := h.mcnConditions()["UpdatePrepared"]
		return c.Status == metav1.ConditionUnknown && c.Reason == ndpmcv1.PlanPendingReason, fmt.Sprintf("UpdatePrepared: %+v", c)
	}, testkit.Within(time.Minute))
	if got := h.readFile("/etc/chrony.conf"); got != "a\n" {
		t.Fatalf("written without a plan: %q", got)
	}

	// An edited plan: a restart turned into a reload, the hash kept.
	edited := *good.DeepCopy()
	edited.Actions[0] = ndpmcv1.PlanAction{Type: "Reload", Reload: &ndpmcv1.PlanService{ServiceName: "chronyd.service"}}
	setPlans(t, to.Name, edited)
	n := h.waitState(ndpmcv1.StateDegraded, "", time.Minute)
	if reason := n.Annotations[ndpmcv1.ReasonAnnotation]; !strings.Contains(reason, "planHash mismatch") {
		t.Errorf("reason: %q", reason)
	}
	if c := h.mcnConditions()["NodeDegraded"]; c.Status != metav1.ConditionTrue || c.Reason != "PlanHashMismatch" {
		t.Errorf("NodeDegraded: %+v", c)
	}
	if got := h.readFile("/etc/chrony.conf"); got != "a\n" || h.journal() != nil {
		t.Fatalf("an edited plan was acted on: file %q, journal %+v", got, h.journal())
	}

	setPlans(t, to.Name, good)
	h.waitState(ndpmcv1.StateDone, to.Name, 2*time.Minute)
	if got := h.readFile("/etc/chrony.conf"); got != "b\n" {
		t.Errorf("/etc/chrony.conf: %q", got)
	}
}

// A restart that fails degrades the node, naming the unit and the step;
// the previous files are back and nothing reboots.
func TestFailingRestartRestoresTheFiles(t *testing.T) {
	h := newHost(t, "node-fail")
	h.metricsPort = testkit.FreePort(t)
	kubelet(t, h.name)
	from := createMC(t, builder.MachineConfig("rendered-fail-a").WithFileMap(map[string]string{"/etc/broken.conf": "old\n"}, 0o644).Build())
	to := builder.MachineConfig("rendered-fail-b").WithFileMap(map[string]string{"/etc/broken.conf": "new\n", "/etc/extra.conf": "extra\n"}, 0o644).Build()
	to.Status.PostConfigActions = []ndpmcv1.PostConfigActions{plan(t, from, to, map[string][]operatorv1.NodeDisruptionPolicySpecAction{
		"/etc/broken.conf": {restart("broken.service")}, "/etc/extra.conf": {{Type: operatorv1.NoneSpecAction}},
	})}
	createMC(t, to)
	h.traceUnit("broken.service", "")
	h.provision(from, map[string]string{"/etc/broken.conf": "old\n"})
	// From now on the unit fails to start.
	h.traceUnit("broken.service", "/bin/false")
	_ = h.sd.Systemctl("reset-failed", "broken.service")

	h.annotate(map[string]string{ndpmcv1.DesiredConfigAnnotation: to.Name})
	n := h.waitState(ndpmcv1.StateDegraded, from.Name, 2*time.Minute)
	reason := n.Annotations[ndpmcv1.ReasonAnnotation]
	for _, want := range []string{"action", "Restart broken.service", "failed", "previous files are restored"} {
		if !strings.Contains(reason, want) {
			t.Errorf("reason %q does not say %q", reason, want)
		}
	}
	if got := h.readFile("/etc/broken.conf"); got != "old\n" {
		t.Errorf("/etc/broken.conf not restored: %q", got)
	}
	if _, err := os.Stat(h.path("/etc/extra.conf")); !os.IsNotExist(err) {
		t.Errorf("/etc/extra.conf, new in the failed update, is still there: %v", err)
	}
	if b, _ := os.ReadFile(h.path(daemon.CurrentConfigPath)); !strings.Contains(string(b), from.Name) {
		t.Errorf("the host's current config is not restored: %s", b)
	}
	if h.reboots() != 0 {
		t.Errorf("%d reboots", h.reboots())
	}
	if c := h.mcnConditions()["NodeDegraded"]; c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "broken.service") {
		t.Errorf("NodeDegraded: %+v", c)
	}
	assertEvent(t, h.name, "StepFailed")
	// It is not retried in a loop: synced afresh, the daemon started
	// the unit no more.
	failedStarts, _ := h.runs("broken.service")
	h.waitSynced()
	if starts, _ := h.runs("broken.service"); starts != failedStarts {
		t.Errorf("the failing restart was retried: %d starts after the failure, %d at it", starts, failedStarts)
	}
	// Back to the old config: the node is Done again.
	h.annotate(map[string]string{ndpmcv1.DesiredConfigAnnotation: from.Name})
	h.waitState(ndpmcv1.StateDone, from.Name, time.Minute)
}

// Bad input never half-applies: an unknown action type, a file that would
// land outside the host root, an unparsable rendered config — each refused
// before the first write, with the reason.
func TestBadInputIsRefusedBeforeAnyWrite(t *testing.T) {
	h := newHost(t, "node-bad")
	from := createMC(t, builder.MachineConfig("rendered-bad-a").WithFileMap(map[string]string{"/etc/app.conf": "v1\n"}, 0o644).Build())
	h.provision(from, map[string]string{"/etc/app.conf": "v1\n"})
	outside := filepath.Join(h.dir, "outside")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, h.path("/etc/escape")); err != nil {
		t.Fatal(err)
	}
	// An action type nobody knows does not even reach the status: the
	// API server refuses it.
	explode := builder.MachineConfig("rendered-bad-explode").Build()
	createMC(t, explode)
	bad := ndpmcv1.PostConfigActions{From: from.Name, Actions: []ndpmcv1.PlanAction{{Type: "Explode"}}, PolicyRevision: "sha256:test"}
	bad.PlanHash = bad.Hash(explode.Name)
	explode.Status.PostConfigActions = []ndpmcv1.PostConfigActions{bad}
	if err := k8s.Status().Update(context.Background(), explode); err == nil || !strings.Contains(err.Error(), `Unsupported value: "Explode"`) {
		t.Errorf("the API server stored an unknown action type: %v", err)
	}
	for _, tc := range []struct {
		name   string
		mc     *ndpmcv1.MachineConfig
		plan   func(p *ndpmcv1.PostConfigActions)
		reason string
		want   string
	}{
		// Drain is a flag of a plan, never one of its actions: the schema
		// lets it through, the daemon does not.
		{"unknown-action", builder.MachineConfig("rendered-bad-action").WithFileMap(map[string]string{"/etc/app.conf": "v2\n"}, 0o644).Build(),
			func(p *ndpmcv1.PostConfigActions) { p.Actions = []ndpmcv1.PlanAction{{Type: "Drain"}} }, "InvalidPlan", `unknown action type "Drain"`},
		{"outside-root", builder.MachineConfig("rendered-bad-escape").WithFileMap(map[string]string{"/etc/app.conf": "v2\n", "/etc/escape/x.conf": "x\n"}, 0o644).Build(),
			nil, "InvalidConfig", "resolves outside the host root"},
		{"unparsable", builder.MachineConfig("rendered-bad-ignition").WithFiles(builder.File("relative/path", "x")).Build(),
			nil, "InvalidConfig", "spec.config"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := ndpmcv1.PostConfigActions{From: from.Name, Actions: []ndpmcv1.PlanAction{{Type: "None"}}, PolicyRevision: "sha256:test"}
			if tc.plan != nil {
				tc.plan(&p)
			}
			p.PlanHash = p.Hash(tc.mc.Name)
			tc.mc.Status.PostConfigActions = []ndpmcv1.PostConfigActions{p}
			createMC(t, tc.mc)
			h.annotate(map[string]string{ndpmcv1.DesiredConfigAnnotation: tc.mc.Name})
			n := h.waitState(ndpmcv1.StateDegraded, from.Name, time.Minute)
			if r := n.Annotations[ndpmcv1.ReasonAnnotation]; !strings.Contains(r, tc.want) {
				t.Errorf("reason %q does not say %q", r, tc.want)
			}
			if c := h.mcnConditions()["NodeDegraded"]; c.Reason != tc.reason {
				t.Errorf("NodeDegraded reason %q, want %q", c.Reason, tc.reason)
			}
			if got := h.readFile("/etc/app.conf"); got != "v1\n" {
				t.Errorf("/etc/app.conf written: %q", got)
			}
			if entries, _ := os.ReadDir(outside); len(entries) != 0 {
				t.Errorf("a file was written outside the root: %v", entries)
			}
			if h.journal() != nil {
				t.Errorf("a journal was started: %+v", h.journal())
			}
			// Back to the current config clears the refusal.
			h.annotate(map[string]string{ndpmcv1.DesiredConfigAnnotation: from.Name})
			h.waitState(ndpmcv1.StateDone, from.Name, time.Minute)
		})
	}
}

func setPDB(t *testing.T, pdb *policyv1.PodDisruptionBudget, allowed int32) {
	t.Helper()
	ctx := context.Background()
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(pdb), pdb); err != nil {
		t.Fatal(err)
	}
	pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, DisruptionsAllowed: allowed, CurrentHealthy: 1, DesiredHealthy: 1 - allowed + 1, ExpectedPods: 1}
	if err := k8s.Status().Update(ctx, pdb); err != nil {
		t.Fatal(err)
	}
}

func ptrIntOrString(i int) *intstr.IntOrString {
	v := intstr.FromInt(i)
	return &v
}

// appsDaemonSet is a DaemonSet the drain recognises as the owner of the
// pods it must leave in place.
type appsDaemonSet struct{ name, ns string }

func (d *appsDaemonSet) create(t *testing.T) *metav1.OwnerReference {
	t.Helper()
	labels := map[string]string{"app": d.name}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: d.ns, Name: d.name},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example/agent:1"}}}},
		},
	}
	if err := k8s.Create(context.Background(), ds); err != nil {
		t.Fatal(err)
	}
	yes := true
	return &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID, Controller: &yes}
}

// Units and the core user's keys, through real systemd: a new unit with a
// drop-in, enabled (systemd's own [Install] symlinks), a masked unit, a
// removed unit, SSH keys and the password hash.
func TestUnitsKeysAndPasswordThroughSystemd(t *testing.T) {
	h := newHost(t, "node-units")
	trace := h.tracePath("hello.service")
	hello := fmt.Sprintf("[Unit]\\nDescription=hello\\n[Service]\\nType=oneshot\\nRemainAfterExit=yes\\nExecStart=/bin/sh -c 'echo \\\"start $GREETING\\\" >> %s'\\n[Install]\\nWantedBy=default.target\\n", trace)
	from := &ndpmcv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: "rendered-units-a"}}
	from.Spec.Config.Raw = []byte(`{"ignition":{"version":"3.4.0"},"systemd":{"units":[{"name":"retired.service","contents":"[Service]\nExecStart=/bin/true\n"}]},
	  "passwd":{"users":[{"name":"core","sshAuthorizedKeys":["ssh-ed25519 AAAAold old@example"]}]}}`)
	createMC(t, from)
	to := &ndpmcv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: "rendered-units-b"}}
	to.Spec.Config.Raw = []byte(`{"ignition":{"version":"3.4.0"},"systemd":{"units":[
	    {"name":"hello.service","enabled":true,"contents":"` + hello + `","dropins":[{"name":"10-greeting.conf","contents":"[Service]\nEnvironment=GREETING=hi\n"}]},
	    {"name":"masked.service","mask":true}]},
	  "passwd":{"users":[{"name":"core","sshAuthorizedKeys":["ssh-ed25519 AAAAnew new@example"],"passwordHash":"$6$rounds=4096$salt$hash"}]}}`)
	p := ndpmcv1.PostConfigActions{From: from.Name, PolicyRevision: "sha256:test", Actions: []ndpmcv1.PlanAction{{Type: "DaemonReload"}, {Type: "Restart", Restart: &ndpmcv1.PlanService{ServiceName: "hello.service"}}}}
	p.PlanHash = p.Hash(to.Name)
	to.Status.PostConfigActions = []ndpmcv1.PostConfigActions{p}
	createMC(t, to)
	h.provision(from, map[string]string{unitDir + "/retired.service": "[Service]\nExecStart=/bin/true\n"})
	h.annotate(map[string]string{ndpmcv1.DesiredConfigAnnotation: to.Name})
	h.waitState(ndpmcv1.StateDone, to.Name, 2*time.Minute)

	if b, _ := os.ReadFile(trace); strings.TrimSpace(string(b)) != "start hi" {
		t.Errorf("hello.service ran %q: want one start with the drop-in's environment", b)
	}
	if target, err := os.Readlink(filepath.Join(h.sd.UnitDir(), "default.target.wants", "hello.service")); err != nil || !strings.HasSuffix(target, "/hello.service") {
		t.Errorf("hello.service is not enabled by systemd: %q %v", target, err)
	}
	if state, _ := h.sd.Show("masked.service", "LoadState"); state != "masked" {
		t.Errorf("masked.service LoadState %q", state)
	}
	if _, err := os.Stat(h.path(unitDir + "/retired.service")); !os.IsNotExist(err) {
		t.Errorf("retired.service, dropped by the new config, is still there: %v", err)
	}
	keys := h.path("/home/core/.ssh/authorized_keys.d/ignition")
	if got := h.readFile("/home/core/.ssh/authorized_keys.d/ignition"); got != "ssh-ed25519 AAAAnew new@example\n" {
		t.Errorf("authorized keys: %q", got)
	}
	if fi, err := os.Stat(keys); err != nil || fi.Mode().Perm() != 0o600 || fi.Sys().(*syscall.Stat_t).Uid != 1000 {
		t.Errorf("authorized keys file: %v %v", fi, err)
	}
	if got := h.readFile("/etc/shadow"); !strings.Contains(got, "core:$6$rounds=4096$salt$hash:19000:") || !strings.Contains(got, "root:*:19000:") {
		t.Errorf("/etc/shadow: %q", got)
	}
}

// A crash while a Restart's job is still running: the daemon restarted
// finds the unit's run changed since the marker it journaled, waits for
// the job, and does not restart the unit again. The unit's start blocks
// until the test opens a gate, so the crash lands inside the job.
func TestCrashDuringARestartJob(t *testing.T) {
	h := newHost(t, "node-midjob")
	from, to, _ := fileUpdate(t, "midjob", "/etc/slow.conf", "1\n", "2\n", restart("slow.service"))
	gate := filepath.Join(h.dir, "slow.gate")
	h.writeGate(gate, true) // open for the unit's first start
	h.traceUnit("slow.service", fmt.Sprintf("/bin/sh -c 'while [ ! -e %s ]; do sleep 0.1; done'", gate))
	h.provision(from, map[string]string{"/etc/slow.conf": "1\n"})
	before, _ := h.runs("slow.service")
	h.writeGate(gate, false) // each start from now on waits for the gate

	h.annotate(map[string]string{ndpmcv1.DesiredConfigAnnotation: to.Name})
	testkit.Eventually(t, "the unit restarts", func() (bool, string) {
		starts, _ := h.runs("slow.service")
		return starts == before+1, fmt.Sprintf("%d starts", starts)
	})
	h.stop() // SIGKILL while the restart job runs
	// The premise: the crash landed inside the job, with the action step
	// journaled started and not done.
	if state, _ := h.sd.Show("slow.service", "ActiveState"); state != "activating" {
		t.Fatalf("slow.service is %s when the daemon dies: the crash did not land inside the restart job", state)
	}
	if s := stepNamed(h.journal(), daemon.StepAction); s == nil || !s.Started || s.Done {
		t.Fatalf("the restart's step when the daemon dies: %+v (want started, not done)", s)
	}
	h.start()
	// It waits for the job (inside its Sync, so no sync count moves): once
	// it has journaled taking the update up again, with the job still
	// running it has neither started the unit again nor finished.
	testkit.Eventually(t, "the restarted daemon journals the resume", func() (bool, string) {
		j := h.journal()
		return j != nil && len(j.Resumes) == 1, fmt.Sprintf("journal: %+v", j)
	}, testkit.Within(time.Minute))
	if starts, _ := h.runs("slow.service"); starts != before+1 {
		t.Errorf("slow.service started %d times while its job ran, want 1", starts-before)
	}
	if st := h.node().Annotations[ndpmcv1.StateAnnotation]; st == ndpmcv1.StateDone {
		t.Errorf("the update is Done while the restart job still runs")
	}
	h.writeGate(gate, true)
	h.waitState(ndpmcv1.StateDone, to.Name, 2*time.Minute)
	if starts, _ := h.runs("slow.service"); starts != before+1 {
		t.Errorf("slow.service started %d times during the update, want 1", starts-before)
	}
	if c := h.mcnConditions()["Resumed"]; c.Status != metav1.ConditionTrue {
		t.Errorf("Resumed: %+v", c)
	}
}

// writeGate opens (creates) or closes (removes) a gate file a test unit
// waits on.
func (h *host) writeGate(path string, open bool) {
	h.t.Helper()
	var err error
	if open {
		err = os.WriteFile(path, nil, 0o644)
	} else if err = os.Remove(path); os.IsNotExist(err) {
		err = nil
	}
	if err != nil {
		h.t.Fatal(err)
	}
}
