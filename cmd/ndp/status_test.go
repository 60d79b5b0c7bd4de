package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/scheme"
	"github.com/ndp-dev/ndp/internal/testkit/docexample"
)

// cond parses "Type=Status/Reason" or "Type=Status/Reason:message".
func cond(s string) metav1.Condition {
	typ, rest, _ := strings.Cut(s, "=")
	status, rest, _ := strings.Cut(rest, "/")
	reason, msg, _ := strings.Cut(rest, ":")
	full := map[string]metav1.ConditionStatus{"T": metav1.ConditionTrue, "F": metav1.ConditionFalse, "U": metav1.ConditionUnknown}[status]
	return metav1.Condition{Type: typ, Status: full, Reason: reason, Message: msg}
}

// setConds sets conditions the way ndp-daemon does, in order.
func setConds(conds *[]metav1.Condition, cs ...string) {
	for _, c := range cs {
		meta.SetStatusCondition(conds, cond(c))
	}
}

// TestDeriveStepFollowsTheDaemon replays the conditions ndp-daemon writes
// for a plan that drains, restarts a unit and reboots, and checks the step
// shown after each.
func TestDeriveStepFollowsTheDaemon(t *testing.T) {
	f := nodeFacts{current: "rendered-w-a", desired: "rendered-w-b", state: "Working", target: "rendered-w-b", hasMCN: true, mcnDesired: "rendered-w-b"}
	// A previous update's conditions, then waiting for the plan.
	setConds(&f.conditions, "Updated=T/Updated", "UpdateComplete=T/Complete", "Drained=T/Drained", "NodeDegraded=F/AsExpected",
		"UpdatePrepared=U/PlanPending:waiting for the plan from rendered-w-a in the status of rendered-w-b")
	steps := []struct {
		set         []string
		phase, step string
	}{
		{nil, PhasePlanPending, "waiting for a plan"},
		{[]string{"UpdatePrepared=U/TargetNotFound:the desired config rendered-w-b does not exist (yet)"}, PhasePlanPending, "waiting for the target config"},
		// start: every phase False, Pending or NotRequired.
		{[]string{"UpdatePrepared=T/PlanVerified", "UpdateExecuted=U/Executing", "Updated=F/Updating", "NodeDegraded=F/AsExpected",
			"Cordoned=F/Pending", "Drained=F/Pending", "AppliedFiles=F/Pending", "AppliedOSImage=F/NotRequired", "AppliedFilesAndOS=F/Pending",
			"UpdatePostActionComplete=F/Pending", "RebootedNode=F/Pending", "Uncordoned=F/Pending", "UpdateComplete=F/Pending", "Resumed=F/NotRequired"},
			PhaseCordoning, "cordoning"},
		{[]string{"Cordoned=T/Cordoned"}, PhaseDraining, "draining"},
		{[]string{"Drained=U/Draining:evicting pods"}, PhaseDraining, "draining"},
		{[]string{"Drained=U/WaitingForPods:attempt 2: 2 pods still to evict (shop/web-0, shop/db-1): Cannot evict pod as it would violate the pod's disruption budget."},
			PhaseDraining, "draining (waiting for pods: shop/web-0, shop/db-1)"},
		{[]string{"Drained=T/Drained"}, PhaseWritingFiles, "writing files"},
		{[]string{"AppliedFiles=T/Applied"}, PhaseRecording, "recording the new config"},
		{[]string{"AppliedFilesAndOS=T/Applied"}, PhaseRunningActions, "running actions"},
		{[]string{"UpdatePostActionComplete=U/Running:action 1 (Restart crio.service)"}, PhaseRunningActions, "running action 1 (Restart crio.service)"},
		{[]string{"UpdatePostActionComplete=U/Running:action 2 (Reload chronyd.service)"}, PhaseRunningActions, "running action 2 (Reload chronyd.service)"},
		{[]string{"UpdatePostActionComplete=T/Done"}, PhaseRebooting, "rebooting"},
		{[]string{"RebootedNode=U/Rebooting:reboot requested"}, PhaseRebooting, "rebooting"},
		{[]string{"Resumed=T/Resumed:resumed the update to rendered-w-b at step reboot after a reboot", "RebootedNode=T/Rebooted"}, PhaseUncordoning, "uncordoning (resumed)"},
		{[]string{"Uncordoned=T/Uncordoned"}, PhaseCompleting, "completing (resumed)"},
		{[]string{"UpdateExecuted=T/Executed", "UpdateComplete=T/Complete", "Updated=T/Updated"}, PhaseCompleting, "completing"},
	}
	for i, s := range steps {
		setConds(&f.conditions, s.set...)
		if phase, step := deriveStep(f); phase != s.phase || step != s.step {
			t.Errorf("step %d (%v): got %s %q, want %s %q", i, s.set, phase, step, s.phase, s.step)
		}
	}
	// The daemon writes the annotations last.
	f.current, f.state = f.desired, "Done"
	if phase, step := deriveStep(f); phase != PhaseDone || step != "done" {
		t.Errorf("after the update: %s %q", phase, step)
	}
}

func TestDeriveStepOtherStates(t *testing.T) {
	working := func(mod func(*nodeFacts)) nodeFacts {
		f := nodeFacts{current: "a", desired: "b", state: "Working", target: "b", hasMCN: true, mcnDesired: "b",
			conditions: []metav1.Condition{cond("UpdatePrepared=T/PlanVerified"), cond("NodeDegraded=F/AsExpected"),
				cond("Cordoned=F/NotRequired"), cond("Drained=F/NotRequired"), cond("AppliedFiles=F/Pending")}}
		if mod != nil {
			mod(&f)
		}
		return f
	}
	for _, tc := range []struct {
		name        string
		f           nodeFacts
		phase, step string
	}{
		{"phases a plan does not have are skipped", working(nil), PhaseWritingFiles, "writing files"},
		{"degraded by the annotation", working(func(f *nodeFacts) {
			f.state, f.reason = "Degraded", "step action 1 (Restart app.service) of the update to b failed: job failed (result exit-code)"
		}), PhaseDegraded, "degraded: step action 1 (Restart app.service) of the update to b failed: job failed (result exit-code)"},
		{"degraded by the condition", working(func(f *nodeFacts) {
			f.conditions[1] = cond("NodeDegraded=T/PlanHashMismatch:refusing the update to b: planHash mismatch")
		}), PhaseDegraded, "degraded: refusing the update to b: planHash mismatch"},
		{"an old failure does not count once the node is sent elsewhere", working(func(f *nodeFacts) {
			f.mcnDesired, f.conditions[1] = "c", cond("NodeDegraded=T/StepFailed:old")
		}), PhasePending, "waiting for the node daemon"},
		{"unreconcilable", working(func(f *nodeFacts) { f.state, f.reason = "Unreconcilable", "kernelType changed" }), PhaseUnreconcilable, "unreconcilable: kernelType changed"},
		{"degraded without a word", working(func(f *nodeFacts) { f.state, f.hasMCN = "Degraded", false }), PhaseDegraded, "degraded"},
		{"refused without NodeDegraded", working(func(f *nodeFacts) {
			f.conditions[0] = cond("UpdatePrepared=F/InvalidConfig:refusing the update to b: bad path")
		}), PhaseDegraded, "refused: refusing the update to b: bad path"},
		{"no MachineConfigNode yet", working(func(f *nodeFacts) { f.hasMCN, f.conditions = false, nil }), PhasePending, "waiting for the node daemon"},
		{"MachineConfigNode without UpdatePrepared", working(func(f *nodeFacts) { f.conditions = f.conditions[1:] }), PhasePending, "waiting for the node daemon"},
		{"up to date", nodeFacts{current: "b", desired: "b", state: "Done", target: "b"}, PhaseDone, "done"},
		{"up to date, no annotation for desired", nodeFacts{current: "b", state: "Done", target: "b"}, PhaseDone, "done"},
		{"pool without a target", nodeFacts{current: "b", desired: "b", state: "Done"}, PhaseDone, "done"},
		{"a new node", nodeFacts{target: "b"}, PhasePending, "no config yet"},
		{"waiting for the rollout", nodeFacts{current: "a", desired: "a", state: "Done", target: "b"}, PhaseQueued, "waiting for its turn"},
		{"paused pool", nodeFacts{current: "a", desired: "a", state: "Done", target: "b", paused: true}, PhaseQueued, "waiting: the pool is paused"},
		{"held", nodeFacts{current: "a", desired: "a", state: "Done", target: "b", held: true, heldReason: "disk swap"}, PhaseQueued, "held: disk swap"},
		{"held without a reason", nodeFacts{current: "a", desired: "a", state: "Done", target: "b", held: true}, PhaseQueued, "held (ndp release NODE lets it go)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if phase, step := deriveStep(tc.f); phase != tc.phase || step != tc.step {
				t.Errorf("got %s %q, want %s %q", phase, step, tc.phase, tc.step)
			}
		})
	}
}

func TestWaitingPods(t *testing.T) {
	for msg, want := range map[string]string{
		"attempt 1: 1 pods still to evict (ns/a): Too many requests":     "ns/a",
		"attempt 9: 12 pods still to evict (ns/a, ns/b, and 10 more): x": "ns/a, ns/b, and 10 more",
		"something else": "something else",
		"":               "?",
	} {
		if got := waitingPods(msg); got != want {
			t.Errorf("waitingPods(%q) = %q, want %q", msg, got, want)
		}
	}
}

const (
	cfgA = "rendered-worker-0f1e2d3c4b5a69788796a5b4c3d2e1f0"
	cfgB = "rendered-worker-6f3a1c9b0d2e4f5a6b7c8d9e0f1a2b3c"
)

func statusNode(name string, labels map[string]string, current, desired, state, reason string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: map[string]string{}}}
	for k, v := range map[string]string{ndpmcv1.CurrentConfigAnnotation: current, ndpmcv1.DesiredConfigAnnotation: desired,
		ndpmcv1.StateAnnotation: state, ndpmcv1.ReasonAnnotation: reason} {
		if v != "" {
			n.Annotations[k] = v
		}
	}
	return n
}

func statusMCN(node, desired string, conds ...string) *mcfgv1.MachineConfigNode {
	m := &mcfgv1.MachineConfigNode{ObjectMeta: metav1.ObjectMeta{Name: node}}
	m.Status.ConfigVersion = &mcfgv1.MachineConfigNodeStatusMachineConfigVersion{Desired: desired}
	for _, c := range conds {
		m.Status.Conditions = append(m.Status.Conditions, cond(c))
	}
	return m
}

// fakeCluster is a worker pool rolling out a chronyd restart: one node
// done, one draining, one degraded, one waiting for its turn; a node in
// no pool.
func fakeCluster(t *testing.T, extra ...client.Object) client.Reader {
	t.Helper()
	s := scheme.New()
	s.AddKnownTypes(mcfgv1.GroupVersion, &mcfgv1.MachineConfigNode{}, &mcfgv1.MachineConfigNodeList{})
	worker := map[string]string{"node-role.kubernetes.io/worker": ""}
	mu := intstr.FromString("50%")
	pool := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "worker"},
		Spec: mcfgv1.MachineConfigPoolSpec{NodeSelector: &metav1.LabelSelector{MatchLabels: worker}, MaxUnavailable: &mu,
			Configuration: mcfgv1.MachineConfigPoolStatusConfiguration{ObjectReference: corev1.ObjectReference{Name: cfgB}}},
		Status: mcfgv1.MachineConfigPoolStatus{MachineCount: 4, UpdatedMachineCount: 1, ReadyMachineCount: 1, UnavailableMachineCount: 2, DegradedMachineCount: 1,
			Conditions: []mcfgv1.MachineConfigPoolCondition{
				{Type: mcfgv1.MachineConfigPoolUpdated, Status: corev1.ConditionFalse, Reason: "NodesNotUpdated"},
				{Type: mcfgv1.MachineConfigPoolUpdating, Status: corev1.ConditionTrue, Reason: "Updating"},
				{Type: mcfgv1.MachineConfigPoolDegraded, Status: corev1.ConditionTrue, Reason: "Degraded", Message: "NodeDegraded: node worker-2: ..."},
			}}}
	master := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "master"},
		Spec: mcfgv1.MachineConfigPoolSpec{NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/master": ""}}, Paused: true}}
	target := &ndpmcv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: cfgB}, Status: ndpmcv1.MachineConfigStatus{PostConfigActions: []ndpmcv1.PostConfigActions{{
		From: cfgA, Actions: []ndpmcv1.PlanAction{{Type: "Restart", Restart: &ndpmcv1.PlanService{ServiceName: "chronyd.service"}}}, Drain: true}}}}
	degradedReason := "step action 1 (Restart chronyd.service) of the update to " + cfgB + " failed: restart chronyd.service: job failed (result exit-code); the previous files are restored"
	objs := []client.Object{pool, master, target,
		statusNode("worker-0", worker, cfgB, cfgB, "Done", ""),
		statusNode("worker-1", worker, cfgA, cfgB, "Working", ""),
		statusNode("worker-2", worker, cfgA, cfgB, "Degraded", degradedReason),
		statusNode("worker-3", worker, cfgA, cfgA, "Done", ""),
		statusNode("stray", nil, "", "", "", ""),
		statusMCN("worker-0", cfgB, "UpdatePrepared=T/PlanVerified", "Updated=T/Updated", "UpdateComplete=T/Complete"),
		statusMCN("worker-1", cfgB, "UpdatePrepared=T/PlanVerified", "Cordoned=T/Cordoned", "Drained=U/WaitingForPods:attempt 3: 1 pods still to evict (shop/web-0): Cannot evict pod", "AppliedFiles=F/Pending"),
		statusMCN("worker-2", cfgB, "UpdatePrepared=T/PlanVerified", "NodeDegraded=T/StepFailed:"+degradedReason),
	}
	return fake.NewClientBuilder().WithScheme(s).WithObjects(append(objs, extra...)...).Build()
}

func withFakeCluster(t *testing.T, extra ...client.Object) {
	t.Helper()
	c := fakeCluster(t, extra...)
	old := newStatusClient
	newStatusClient = func(*statusOptions) (client.Reader, error) { return c, nil }
	t.Cleanup(func() { newStatusClient = old })
}

func TestStatusJSON(t *testing.T) {
	withFakeCluster(t)
	code, out, errOut := ndp(t, "status", "-o", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r StatusReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(r.Pools) != 3 || r.Pools[0].Name != "master" || r.Pools[1].Name != "worker" || r.Pools[2].Name != NoPool {
		t.Fatalf("pools: %s", out)
	}
	w := r.Pools[1]
	if w.Target != cfgB || w.MaxUnavailable != "50%" || w.Paused || w.MachineCount != 4 || w.UpdatedMachineCount != 1 || w.ReadyMachineCount != 1 ||
		w.UnavailableMachineCount != 2 || w.DegradedMachineCount != 1 || len(w.Conditions) != 3 {
		t.Errorf("worker pool: %+v", w)
	}
	if m := r.Pools[0]; !m.Paused || m.MaxUnavailable != "1" || len(m.Nodes) != 0 {
		t.Errorf("master pool: %+v", m)
	}
	plan := &PlanReport{From: cfgA, To: cfgB, Actions: []string{"Restart chronyd.service"}, Drain: true}
	want := []NodeReport{
		{Name: "worker-0", Current: cfgB, Desired: cfgB, State: "Done", Phase: PhaseDone, Step: "done"},
		{Name: "worker-1", Current: cfgA, Desired: cfgB, State: "Working", Phase: PhaseDraining, Step: "draining (waiting for pods: shop/web-0)", Plan: plan},
		{Name: "worker-2", Current: cfgA, Desired: cfgB, State: "Degraded", Reason: w.Nodes[2].Reason, Phase: PhaseDegraded, Step: "degraded: " + w.Nodes[2].Reason, Plan: plan},
		{Name: "worker-3", Current: cfgA, Desired: cfgA, State: "Done", Phase: PhaseQueued, Step: "waiting for its turn", Plan: plan},
	}
	if d := cmp.Diff(want, w.Nodes); d != "" || !strings.Contains(w.Nodes[2].Reason, "job failed") {
		t.Errorf("worker nodes (-want +got):\n%s", d)
	}
	if n := r.Pools[2].Nodes; len(n) != 1 || n[0].Name != "stray" || n[0].Phase != PhasePending || n[0].Plan != nil {
		t.Errorf("(none): %+v", n)
	}
	// The raw JSON: a node with nothing to do has no plan key.
	if !strings.Contains(out, `"plan": {`) || strings.Count(out, `"plan"`) != 3 {
		t.Errorf("plan keys:\n%s", out)
	}
}

func TestStatusText(t *testing.T) {
	withFakeCluster(t)
	code, out, errOut := ndp(t, "status")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := `POOL    TARGET    NODES  UPDATED  READY  UNAVAILABLE  DEGRADED  MAXUNAVAILABLE  PAUSED  CONDITIONS
master  -         0      0        0      0            0         1               true    -
worker  6f3a1c9b  4      1        1      2            1         50%             false   Updating, Degraded

Pool master, target -:
  no nodes

Pool worker, target rendered-worker-6f3a1c9b0d2e4f5a6b7c8d9e0f1a2b3c:
NODE      CURRENT   DESIRED   STATE     STEP
worker-0  6f3a1c9b  6f3a1c9b  Done      done
worker-1  0f1e2d3c  6f3a1c9b  Working   draining (waiting for pods: shop/web-0)
worker-2  0f1e2d3c  6f3a1c9b  Degraded  degraded: step action 1 (Restart chronyd.service) of the ...
worker-3  0f1e2d3c  0f1e2d3c  Done      waiting for its turn
Plans:
  0f1e2d3c -> 6f3a1c9b: drain, Restart chronyd.service (3 nodes)
Details:
  worker-2: degraded: step action 1 (Restart chronyd.service) of the update to rendered-worker-6f3a1c9b0d2e4f5a6b7c8d9e0f1a2b3c failed: restart chronyd.service: job failed (result exit-code); the previous files are restored

Nodes no pool manages:
NODE   CURRENT  DESIRED  STATE  STEP
stray  -        -        -      no config yet
`
	if d := cmp.Diff(want, out); d != "" {
		t.Errorf("text output (-want +got):\n%s\ngot:\n%s", d, out)
	}
	for _, l := range strings.Split(out, "\n") {
		if len(l) > 120 && !strings.HasPrefix(l, "  worker-2: ") {
			t.Errorf("line wider than 120 columns: %q", l)
		}
	}

	// docs/rollouts.md shows this worker pool: its session runs here, on
	// the same fake cluster.
	docexample.Check(t, "../..", "status-worker", func(command string) string {
		args, ok := strings.CutPrefix(command, "kubectl ndp ")
		if !ok {
			t.Fatalf("%q: not a kubectl ndp command", command)
		}
		code, out, errOut := ndp(t, strings.Fields(args)...)
		if code != exitOK {
			t.Errorf("%s: exit %d: %s", command, code, errOut)
		}
		return out
	})

	// One pool by name; no "(none)" then.
	code, out, _ = ndp(t, "status", "worker", "-o", "yaml")
	if code != exitOK || !strings.Contains(out, "name: worker") || strings.Contains(out, "master") || strings.Contains(out, NoPool) {
		t.Errorf("ndp status worker -o yaml: exit %d\n%s", code, out)
	}
}

func TestStatusErrors(t *testing.T) {
	t.Run("usage", func(t *testing.T) {
		withFakeCluster(t)
		if code, _, errOut := ndp(t, "status", "-o", "xml"); code != exitUsage || !strings.Contains(errOut, "--output must be") {
			t.Errorf("-o xml: exit %d, %s", code, errOut)
		}
		if code, _, errOut := ndp(t, "status", "--no-such-flag"); code != exitUsage {
			t.Errorf("unknown flag: exit %d, %s", code, errOut)
		}
	})
	t.Run("unknown pool", func(t *testing.T) {
		withFakeCluster(t)
		if code, _, errOut := ndp(t, "status", "infra"); code != exitInvalid || !strings.Contains(errOut, `MachineConfigPool "infra" not found`) {
			t.Errorf("exit %d, %s", code, errOut)
		}
	})
	t.Run("no cluster reachable", func(t *testing.T) {
		kc := filepath.Join(t.TempDir(), "kubeconfig")
		if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := ndp(t, "status", "--kubeconfig", kc, "--request-timeout", "5s")
		if code != exitInvalid || out != "" || !strings.Contains(errOut, "127.0.0.1:1") || strings.Contains(errOut, "goroutine") {
			t.Errorf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
	})
	t.Run("no kubeconfig", func(t *testing.T) {
		t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "missing"))
		t.Setenv("HOME", t.TempDir())
		t.Setenv("KUBERNETES_SERVICE_HOST", "")
		code, _, errOut := ndp(t, "status")
		if code != exitInvalid || !strings.Contains(errOut, "no cluster to talk to") {
			t.Errorf("exit %d, %s", code, errOut)
		}
	})
}

// Each node is shown under the one pool that manages it, as the
// controllers count it (nodepool.Primary); a node two custom pools select
// is shown under none, with a warning naming it.
func TestStatusShowsEachNodeInItsPrimaryPool(t *testing.T) {
	s := scheme.New()
	s.AddKnownTypes(mcfgv1.GroupVersion, &mcfgv1.MachineConfigNode{}, &mcfgv1.MachineConfigNodeList{})
	role := func(roles ...string) map[string]string {
		l := map[string]string{}
		for _, r := range roles {
			l["node-role.kubernetes.io/"+r] = ""
		}
		return l
	}
	pool := func(name string) *mcfgv1.MachineConfigPool {
		return &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: mcfgv1.MachineConfigPoolSpec{NodeSelector: &metav1.LabelSelector{MatchLabels: role(name)}}}
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(pool("master"), pool("worker"), pool("infra"), pool("gpu"),
		statusNode("c1", role("master", "worker"), "", "", "", ""),
		statusNode("c2", role("master", "worker", "infra"), "", "", "", ""),
		statusNode("i1", role("worker", "infra"), "", "", "", ""),
		statusNode("w1", role("worker"), "", "", "", ""),
		statusNode("x1", role("worker", "infra", "gpu"), "", "", "", ""),
	).Build()
	var warnings []string
	r, err := collectStatus(context.Background(), c, nil, func(m string) { warnings = append(warnings, m) })
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range r.Pools {
		var names []string
		for _, n := range p.Nodes {
			names = append(names, n.Name)
		}
		got[p.Name] = strings.Join(names, " ")
	}
	want := map[string]string{"gpu": "", "infra": "i1", "master": "c1 c2", "worker": "w1", NoPool: "x1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("nodes by pool (-want +got):\n%s", diff)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "node x1 belongs to 2 custom pools (gpu, infra)") {
		t.Errorf("warnings: %q", warnings)
	}
}
