package mco

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	advisorctrl "github.com/ndp-dev/ndp/controllers/advisor"
	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/internal/testkit/docexample"
)

// A second digest-only mirror: adding it is, like the first, a safe
// registries.conf change (the MCO's Special: reload CRI-O, no drain).
const idmsSecondManifest = `apiVersion: config.openshift.io/v1
kind: ImageDigestMirrorSet
metadata:
  name: ubi-minimal-mirror
spec:
  imageDigestMirrors:
  - source: registry.access.redhat.com/ubi9-minimal
    mirrors: [mirror.example.com/ubi9-minimal]
`

// TestAdvisorObservesTheMCOsUpdates is issue 30's acceptance test: ndp's
// advisor, installed from overlays/openshift beside the MCO's own render
// and node controllers (mcc-ref), watches each node through each update the
// MCO's node controller sends it on, while the test plays the MCO's daemon
// and drain controller the way they report (node annotations, cordon,
// MachineConfigNode conditions with their message prefixes, Events in
// openshift-machine-config-operator, a new boot ID and the kubelet's
// Rebooted Event for a reboot):
//   - an ImageDigestMirrorSet added, done as foretold (reload CRI-O, no
//     drain): every node's NodeHistory says Agreed, and so do the
//     forecast's status.observed and its Agreed condition;
//   - a second one added, where the played daemon reboots worker-0 instead
//     of reloading CRI-O: worker-0's update is a Mismatch, with a Warning
//     Event ForecastMismatch naming the node, the update and the boot IDs;
//   - the first one deleted (reload CRI-O and drain), ndp-controller
//     stopped once worker-0's drain is recorded and the drain annotation
//     gone, started again after worker-0 is done: nothing observed is lost
//     and the verdict is Agreed.
func TestAdvisorObservesTheMCOsUpdates(t *testing.T) {
	t.Parallel() // each starts its own API server and controllers; most of its time is the MCO's render delay
	began, built := beginBesideTheMCO(t)
	m := startMCOWith(t, mcoOptions{AsMCOAccount: true})
	a := installAdvisor(t, m, <-built)
	d := &playedDaemon{a: a, boots: map[string]int{}}
	d.ready(t)
	t.Logf("the MCO's controllers and ndp's advisor up, %d Ready workers, after %s", len(a.nodes), time.Since(began).Round(time.Second))

	dir := t.TempDir()
	first, second := filepath.Join(dir, "idms.yaml"), filepath.Join(dir, "idms-2.yaml")
	for f, text := range map[string]string{first: idmsManifest, second: idmsSecondManifest} {
		if err := os.WriteFile(f, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	reloadCrio := []playedAction{{kind: "Reload", service: "crio.service"}}

	t.Run("as foretold", func(t *testing.T) {
		from, to, f := d.update(t, "apply", first, "Special")
		d.playAll(t, to, func(string) playedUpdate { return playedUpdate{actions: reloadCrio} }, nil)
		for _, n := range a.nodes {
			u := d.judged(t, n, from, to)
			if u.Verdict != v1alpha1.VerdictAgreed {
				t.Errorf("node %s: verdict %s, want Agreed; checks %+v; evidence %q", n, u.Verdict, u.Checks, u.Evidence)
			}
		}
		got := d.observed(t, f, func(o *v1alpha1.ForecastObserved) bool { return int(o.Agreed) == len(a.nodes) })
		if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ForecastConditionAgreed); c == nil || c.Status != metav1.ConditionTrue {
			t.Errorf("forecast %s: Agreed %+v, want True", f, c)
		}
	})
	if t.Failed() {
		return
	}

	t.Run("a reboot not foretold", func(t *testing.T) {
		from, to, f := d.update(t, "apply", second, "Special")
		d.playAll(t, to, func(n string) playedUpdate {
			if n == "worker-0" {
				return playedUpdate{reboot: true}
			}
			return playedUpdate{actions: reloadCrio}
		}, nil)
		for _, n := range a.nodes {
			u := d.judged(t, n, from, to)
			want := v1alpha1.VerdictAgreed
			if n == "worker-0" {
				want = v1alpha1.VerdictMismatch
			}
			if u.Verdict != want {
				t.Errorf("node %s: verdict %s, want %s; checks %+v", n, u.Verdict, want, u.Checks)
			}
			if n == "worker-0" {
				var reboot *v1alpha1.UpdateCheck
				for i := range u.Checks {
					if u.Checks[i].What == "reboot" {
						reboot = &u.Checks[i]
					}
				}
				if reboot == nil || reboot.Foretold || reboot.Observed != v1alpha1.ObservedYes || reboot.Result != v1alpha1.CheckMismatch {
					t.Errorf("worker-0's reboot check: %+v", reboot)
				}
			}
		}
		got := d.observed(t, f, func(o *v1alpha1.ForecastObserved) bool {
			return o.Mismatched == 1 && int(o.Agreed) == len(a.nodes)-1
		})
		if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ForecastConditionAgreed); c == nil || c.Status != metav1.ConditionFalse || c.Reason != "Mismatch" {
			t.Errorf("forecast %s: Agreed %+v, want False (Mismatch)", f, c)
		}
		// The Warning Event on the Node names the node, the update and
		// the evidence (the boot IDs), and relates the forecast.
		var ev corev1.Event
		testkit.Eventually(t, "a Warning Event ForecastMismatch about worker-0", func() (bool, string) {
			var list corev1.EventList
			if err := a.Client.List(context.Background(), &list, client.InNamespace("default")); err != nil {
				return false, err.Error()
			}
			var seen []string
			for _, e := range list.Items {
				if e.Reason == "ForecastMismatch" && e.InvolvedObject.Kind == "Node" && e.InvolvedObject.Name == "worker-0" {
					ev = e
					return true, ""
				}
				seen = append(seen, e.Reason+" "+e.InvolvedObject.Name)
			}
			return false, strings.Join(seen, ", ")
		})
		t.Logf("Event %s %s: %s", ev.Type, ev.Reason, ev.Message)
		for _, want := range []string{"worker-0", from + " → " + to, "reboot: foretold no, observed yes", "bootID boot-worker-0-"} {
			if !strings.Contains(ev.Message, want) {
				t.Errorf("the Event's message %q does not say %q", ev.Message, want)
			}
		}
		if ev.Type != corev1.EventTypeWarning || ev.Related == nil || ev.Related.Kind != "UpdateForecast" || ev.Related.Name != f {
			t.Errorf("the Event: type %s, related %+v; want Warning, related UpdateForecast %s", ev.Type, ev.Related, f)
		}
		// The metrics count the mismatch by check, and the verdicts.
		// (The verdict is written before it is counted: wait.)
		testkit.Eventually(t, "the mismatch and the verdicts counted", func() (bool, string) {
			metrics, err := testkit.Scrape(a.metrics)
			if err != nil {
				return false, err.Error()
			}
			for _, want := range []string{`ndp_forecast_mismatches_total{check="reboot",pool="worker"} 1`,
				`ndp_forecast_observed_updates_total{pool="worker",verdict="Mismatch"} 1`,
				fmt.Sprintf(`ndp_forecast_observed_updates_total{pool="worker",verdict="Agreed"} %d`, 2*len(a.nodes)-1)} {
				if !strings.Contains(metrics, want+"\n") {
					return false, "no " + want + " in:\n" + grepLines(metrics, "ndp_forecast_")
				}
			}
			return true, ""
		})
		// What an administrator asks next: kubectl ndp why, through
		// kubectl's plugin mechanism, answers from the NodeHistory.
		why := kubectlNdpWhy(t, a, "worker-0", "--update", "1")
		for _, want := range []string{from + " -> " + to, "Run by:   the MCO's machine-config-daemon, observed by ndp's advisor",
			"Verdict: Mismatch (checked against UpdateForecast " + f + ")", "reboot: foretold no, observed yes -> Mismatch", "Foretold: Special"} {
			if !strings.Contains(why, want) {
				t.Errorf("kubectl ndp why worker-0 does not say %q:\n%s", want, why)
			}
		}
		if out, err := a.kubectlRun("get", "nodehistory", "worker-0", "-o", "yaml"); err == nil {
			t.Logf("kubectl get nodehistory worker-0 -o yaml:\n%s", out)
		}
	})
	if t.Failed() {
		return
	}

	t.Run("ndp restarted midway", func(t *testing.T) {
		from, to, f := d.update(t, "delete", first, "drain, Special")
		restarted := false
		d.playAll(t, to, func(string) playedUpdate { return playedUpdate{drain: true, actions: reloadCrio} }, func(n string, phase string) {
			if n != "worker-0" {
				return
			}
			switch phase {
			case "drained":
				// The drain recorded, then ndp-controller stopped.
				d.step(t, n, to, "drain")
				a.stop()
				t.Logf("ndp-controller stopped after worker-0's drain was recorded")
			case "done":
				a.start(t)
				restarted = true
				t.Logf("ndp-controller started again after worker-0 finished")
			}
		})
		if !restarted {
			t.Fatal("ndp-controller was not restarted")
		}
		for _, n := range a.nodes {
			u := d.judged(t, n, from, to)
			if u.Verdict != v1alpha1.VerdictAgreed {
				t.Errorf("node %s: verdict %s, want Agreed; checks %+v; evidence %q", n, u.Verdict, u.Checks, u.Evidence)
			}
			var drain *v1alpha1.UpdateCheck
			for i := range u.Checks {
				if u.Checks[i].What == "drain" {
					drain = &u.Checks[i]
				}
			}
			if drain == nil || drain.Observed != v1alpha1.ObservedYes || len(stepsOf(u, "drain")) == 0 || len(stepsOf(u, "cordon")) == 0 {
				t.Errorf("node %s: drain check %+v, steps %+v", n, drain, u.Steps)
			}
		}
		d.observed(t, f, func(o *v1alpha1.ForecastObserved) bool { return int(o.Agreed) == len(a.nodes) })
	})
	if !t.Failed() {
		// docs/openshift.md's listing of what was observed: this run's.
		docexample.Check(t, "../..", "advisor-nodehistories", a.exampleRunner(t))
	}
	t.Logf("TestAdvisorObservesTheMCOsUpdates took %s", time.Since(began).Round(time.Second))
}

func stepsOf(u *v1alpha1.NodeUpdate, name string) []v1alpha1.UpdateStep {
	var out []v1alpha1.UpdateStep
	for _, s := range u.Steps {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// playedDaemon plays the MCO's daemon (and its drain controller) on the
// installed advisor's workers: what the MCO's node controller sends them
// to, they do, reporting as the MCO does.
type playedDaemon struct {
	a     *installedAdvisor
	boots map[string]int
}

// playedUpdate is what the played daemon does on one node.
type playedUpdate struct {
	drain, reboot bool
	actions       []playedAction
}

type playedAction struct{ kind, service string }

func (d *playedDaemon) bootID(n string) string { return fmt.Sprintf("boot-%s-%d", n, d.boots[n]) }

// ready makes the workers Ready with a boot ID, so that the MCO's node
// controller sends them, and gives each its MachineConfigNode.
func (d *playedDaemon) ready(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	for _, n := range d.a.nodes {
		d.boots[n] = 1
		var node corev1.Node
		if err := d.a.Client.Get(ctx, client.ObjectKey{Name: n}, &node); err != nil {
			t.Fatal(err)
		}
		node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
		node.Status.NodeInfo.BootID = d.bootID(n)
		if err := d.a.Client.Status().Update(ctx, &node); err != nil {
			t.Fatalf("node %s Ready: %v", n, err)
		}
		cur := node.Annotations[ndpmcv1.CurrentConfigAnnotation]
		mcn := &mcfgv1.MachineConfigNode{ObjectMeta: metav1.ObjectMeta{Name: n}, Spec: mcfgv1.MachineConfigNodeSpec{
			Node: mcfgv1.MCOObjectReference{Name: n}, Pool: mcfgv1.MCOObjectReference{Name: "worker"},
			ConfigVersion: mcfgv1.MachineConfigNodeSpecMachineConfigVersion{Desired: cur}}}
		if err := d.a.Client.Create(ctx, mcn); err != nil {
			t.Fatalf("MachineConfigNode %s: %v", n, err)
		}
	}
}

// update applies or deletes manifest, waits for the MCO to render the
// pool anew and for ndp's forecast of the move (its MCO summary as
// wanted), and returns from, to and the forecast's name.
func (d *playedDaemon) update(t *testing.T, verb, manifest, summary string) (string, string, string) {
	t.Helper()
	from := d.a.nodesOn(t)
	if out, err := d.a.kubectlRun(verb, "-f", manifest); err != nil {
		t.Fatalf("kubectl %s -f %s: %v\n%s", verb, manifest, err, out)
	}
	to, _, _ := d.a.rendersAnew(t, from)
	f := d.a.waitForecast(t, from, to)
	if f.Status.MCO.Summary != summary {
		t.Fatalf("the forecast %s -> %s says %q, want %q", from, to, f.Status.MCO.Summary, summary)
	}
	t.Logf("%s %s: the MCO rendered %s; ndp foretold %q", verb, filepath.Base(manifest), to, summary)
	return from, to, advisorctrl.ForecastName("worker", from, to)
}

// playAll plays the daemon on each node the MCO's node controller sends to
// to (one at a time: maxUnavailable 1), until every worker runs it. hook,
// when set, is called at phases "drained" and "done" of each node.
func (d *playedDaemon) playAll(t *testing.T, to string, what func(string) playedUpdate, hook func(node, phase string)) {
	t.Helper()
	done := map[string]bool{}
	for len(done) < len(d.a.nodes) {
		var next string
		testkit.Eventually(t, "the MCO's node controller sends a worker to "+to, func() (bool, string) {
			var seen []string
			for _, n := range d.a.nodes {
				node := d.node(t, n)
				cur, des := node.Annotations[ndpmcv1.CurrentConfigAnnotation], node.Annotations[ndpmcv1.DesiredConfigAnnotation]
				if cur == to {
					done[n] = true
				}
				if des == to && cur != to {
					next = n
					return true, ""
				}
				seen = append(seen, n+" "+cur+" -> "+des)
			}
			return len(done) == len(d.a.nodes), strings.Join(seen, "; ")
		}, testkit.Within(3*time.Minute))
		if next == "" {
			return
		}
		d.play(t, next, to, what(next), hook)
		done[next] = true
	}
}

func (d *playedDaemon) node(t *testing.T, n string) *corev1.Node {
	t.Helper()
	var node corev1.Node
	if err := d.a.Client.Get(context.Background(), client.ObjectKey{Name: n}, &node); err != nil {
		t.Fatal(err)
	}
	return &node
}

// play updates one node to to as the MCO's daemon does, reporting each
// step where the MCO reports it (MCO-BEHAVIOUR.md §2).
func (d *playedDaemon) play(t *testing.T, n, to string, p playedUpdate, hook func(node, phase string)) {
	t.Helper()
	if hook == nil {
		hook = func(string, string) {}
	}
	d.annotate(t, n, map[string]any{ndpmcv1.StateAnnotation: ndpmcv1.StateWorking})
	d.condition(t, n, "UpdatePrepared", "True", "UpdatePrepared", fmt.Sprintf("Update Compatible. Post Cfg Actions: [] Drain Required: %t", p.drain))
	if p.drain {
		d.event(t, n, "Cordon", "Cordoned node to apply update")
		d.annotate(t, n, map[string]any{advisorctrl.DesiredDrainAnnotation: "drain-" + to})
		// The drain controller: cordon, drain, done.
		d.unschedulable(t, n, true)
		d.condition(t, n, "Cordoned", "True", "UpdateExecutedCordoned", "Cordoned node. The node is reporting Unschedulable = true")
		d.event(t, n, "Drain", "Draining node to update config.")
		d.condition(t, n, "Drained", "Unknown", "UpdateExecutedDrained", "Draining node. The drain will not be complete until desired drainer drain-"+to+" matches current drainer")
		d.annotate(t, n, map[string]any{advisorctrl.LastAppliedDrainAnnotation: "drain-" + to})
		d.condition(t, n, "Drained", "True", "UpdateExecutedDrained", "Drained node. The drain is complete as the desired drainer matches current drainer: drain-"+to)
		hook(n, "drained")
	} else {
		d.condition(t, n, "Drained", "False", "UpdateExecutedDrained", "Node Drain Not required for this update.")
	}
	d.condition(t, n, "AppliedFilesAndOS", "True", "UpdateExecutedAppliedFilesAndOS", "Applied files and new OS config to node. OS did not need an update. SSH Keys did not need an update")
	if p.reboot {
		d.condition(t, n, "RebootedNode", "Unknown", "RebootedNode", "Upgrade requires a reboot. Currently doing this as the post update action.")
		d.event(t, n, "Reboot", "Node will reboot into config "+to)
		d.annotate(t, n, map[string]any{advisorctrl.PostConfigActionAnnotation: "Rebooting"})
		// The node comes back with a new boot; its kubelet says so.
		d.boots[n]++
		node := d.node(t, n)
		node.Status.NodeInfo.BootID = d.bootID(n)
		if err := d.a.Client.Status().Update(context.Background(), node); err != nil {
			t.Fatal(err)
		}
		d.eventIn(t, n, "default", corev1.EventTypeWarning, "kubelet", "Rebooted", fmt.Sprintf("Node %s has been rebooted, boot id: %s", n, d.bootID(n)))
		d.annotate(t, n, map[string]any{advisorctrl.PostConfigActionAnnotation: nil})
		d.condition(t, n, "RebootedNode", "True", "RebootedNode", "Node has rebooted")
	} else {
		for _, act := range p.actions {
			switch act.kind {
			case "Reload":
				d.event(t, n, "ServiceReload", fmt.Sprintf("Config changes do not require reboot. Service %s was reloaded.", act.service))
				d.condition(t, n, "UpdatePostActionComplete", "True", "UpdatePostActionComplete", "Node has reloaded service "+act.service)
			case "Restart":
				d.event(t, n, "ServiceRestart", fmt.Sprintf("Config changes do not require reboot. Service %s was restarted.", act.service))
			}
		}
	}
	// completeUpdate: always an uncordon, then Done.
	d.annotate(t, n, map[string]any{advisorctrl.DesiredDrainAnnotation: "uncordon-" + to})
	d.unschedulable(t, n, false)
	d.annotate(t, n, map[string]any{advisorctrl.LastAppliedDrainAnnotation: "uncordon-" + to})
	d.condition(t, n, "Uncordoned", "True", "UpdateCompleteUncordoned", "UnCordoned node. The node is reporting Unschedulable = false")
	d.event(t, n, "Uncordon", "Update completed for config "+to+" and node has been uncordoned")
	d.event(t, n, "NodeDone", fmt.Sprintf("Setting node %s, currentConfig %s to Done", n, to))
	d.annotate(t, n, map[string]any{ndpmcv1.CurrentConfigAnnotation: to, ndpmcv1.StateAnnotation: ndpmcv1.StateDone})
	d.updated(t, n, to)
	hook(n, "done")
}

func (d *playedDaemon) annotate(t *testing.T, n string, kv map[string]any) {
	t.Helper()
	patch := map[string]any{"metadata": map[string]any{"annotations": kv}}
	if err := d.a.Client.Patch(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, client.RawPatch("application/merge-patch+json", mustJSON(t, patch))); err != nil {
		t.Fatalf("annotating node %s: %v", n, err)
	}
}

func (d *playedDaemon) unschedulable(t *testing.T, n string, on bool) {
	t.Helper()
	patch := map[string]any{"spec": map[string]any{"unschedulable": on}}
	if err := d.a.Client.Patch(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, client.RawPatch("application/merge-patch+json", mustJSON(t, patch))); err != nil {
		t.Fatalf("cordoning node %s: %v", n, err)
	}
}

// condition sets one MachineConfigNode condition, as the MCO's upgrade
// monitor does (lastTransitionTime now).
func (d *playedDaemon) condition(t *testing.T, n, typ, status, reason, msg string) {
	t.Helper()
	ctx := context.Background()
	var mcn mcfgv1.MachineConfigNode
	if err := d.a.Client.Get(ctx, client.ObjectKey{Name: n}, &mcn); err != nil {
		t.Fatal(err)
	}
	meta.SetStatusCondition(&mcn.Status.Conditions, metav1.Condition{Type: typ, Status: metav1.ConditionStatus(status), Reason: reason, Message: msg})
	for i := range mcn.Status.Conditions {
		if mcn.Status.Conditions[i].Type == typ {
			mcn.Status.Conditions[i].LastTransitionTime = metav1.Now()
		}
	}
	if err := d.a.Client.Status().Update(ctx, &mcn); err != nil {
		t.Fatalf("MachineConfigNode %s condition %s: %v", n, typ, err)
	}
}

// updated ends the update on the MachineConfigNode as the MCO does: Updated
// True, and every other condition not already False reset to False with
// the message prefixed "Action during update to <to>: ".
func (d *playedDaemon) updated(t *testing.T, n, to string) {
	t.Helper()
	ctx := context.Background()
	var mcn mcfgv1.MachineConfigNode
	if err := d.a.Client.Get(ctx, client.ObjectKey{Name: n}, &mcn); err != nil {
		t.Fatal(err)
	}
	for i := range mcn.Status.Conditions {
		c := &mcn.Status.Conditions[i]
		if c.Status != metav1.ConditionFalse {
			c.Status, c.Message, c.LastTransitionTime = metav1.ConditionFalse, "Action during update to "+to+": "+c.Message, metav1.Now()
		}
	}
	meta.SetStatusCondition(&mcn.Status.Conditions, metav1.Condition{Type: "Updated", Status: metav1.ConditionTrue, Reason: "Updated", Message: "Node " + n + " Updated"})
	mcn.Status.ConfigVersion = &mcfgv1.MachineConfigNodeStatusMachineConfigVersion{Current: to, Desired: to}
	if err := d.a.Client.Status().Update(ctx, &mcn); err != nil {
		t.Fatalf("MachineConfigNode %s Updated: %v", n, err)
	}
}

// event records one of the MCO daemon's Events about a node (its recorder
// is namespaced: openshift-machine-config-operator).
func (d *playedDaemon) event(t *testing.T, n, reason, msg string) {
	t.Helper()
	d.eventIn(t, n, advisorctrl.MCDEventNamespace, corev1.EventTypeNormal, advisorctrl.MCDEventComponent, reason, msg)
}

func (d *playedDaemon) eventIn(t *testing.T, n, ns, typ, component, reason, msg string) {
	t.Helper()
	now := metav1.Now()
	ref := corev1.ObjectReference{Kind: "Node", Name: n, UID: d.node(t, n).UID}
	if ns != "default" {
		// The MCO's namespaced recorder names its namespace in the
		// reference too: the API server wants them equal.
		ref.Namespace = ns
	}
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: ns, GenerateName: n + "."},
		InvolvedObject: ref,
		Reason:         reason, Message: msg, Type: typ, Count: 1,
		Source:         corev1.EventSource{Component: component, Host: n},
		FirstTimestamp: now, LastTimestamp: now,
	}
	if err := d.a.Client.Create(context.Background(), ev); err != nil {
		t.Fatalf("Event %s about node %s: %v", reason, n, err)
	}
}

// history is node n's update from → to in its NodeHistory, nil until there
// is one.
func (d *playedDaemon) history(t *testing.T, n, from, to string) *v1alpha1.NodeUpdate {
	t.Helper()
	var h v1alpha1.NodeHistory
	if err := d.a.Client.Get(context.Background(), client.ObjectKey{Name: n}, &h); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		t.Fatal(err)
	}
	for i := range h.Status.Updates {
		u := &h.Status.Updates[i]
		if u.From == from && u.To == to && u.Executor == v1alpha1.ExecutorMCO {
			return u
		}
	}
	return nil
}

// step waits until node n's open update to to records a step.
func (d *playedDaemon) step(t *testing.T, n, to, name string) {
	t.Helper()
	testkit.Eventually(t, fmt.Sprintf("node %s's NodeHistory records its %s to %s", n, name, to), func() (bool, string) {
		var h v1alpha1.NodeHistory
		if err := d.a.Client.Get(context.Background(), client.ObjectKey{Name: n}, &h); err != nil {
			return false, err.Error()
		}
		if len(h.Status.Updates) == 0 || h.Status.Updates[0].To != to {
			return false, "no update to " + to
		}
		return len(stepsOf(&h.Status.Updates[0], name)) > 0, fmt.Sprintf("%+v", h.Status.Updates[0].Steps)
	}, testkit.Within(2*time.Minute))
}

// judged waits until node n's update from → to has its verdict.
func (d *playedDaemon) judged(t *testing.T, n, from, to string) *v1alpha1.NodeUpdate {
	t.Helper()
	var u *v1alpha1.NodeUpdate
	testkit.Eventually(t, fmt.Sprintf("node %s's NodeHistory judges its update %s -> %s", n, from, to), func() (bool, string) {
		u = d.history(t, n, from, to)
		if u == nil {
			return false, "no such update"
		}
		return u.Verdict != "" && u.Verdict != v1alpha1.VerdictPending, fmt.Sprintf("result %s, verdict %s", u.Result, u.Verdict)
	}, testkit.Within(2*time.Minute))
	if u.Plan == nil || u.Forecast != advisorctrl.ForecastName("worker", from, to) || u.BootIDs.Before == "" || u.BootIDs.After == "" {
		t.Errorf("node %s's update %s -> %s: plan %+v, forecast %s, boot IDs %+v", n, from, to, u.Plan, u.Forecast, u.BootIDs)
	}
	var steps []string
	for _, s := range u.Steps {
		x := s.Name
		if s.Action != nil {
			x += " " + s.Action.Type + " " + s.Action.Service
		}
		steps = append(steps, x)
	}
	t.Logf("node %s: %s -> %s: %s; steps %v; changes %d", n, from, to, u.Verdict, steps, len(u.Changes))
	if !slices.Contains(steps, "uncordon") {
		t.Errorf("node %s: no uncordon among the steps %v (every MCO update ends with one)", n, steps)
	}
	return u
}

// observed waits until forecast name's status.observed satisfies ok.
func (d *playedDaemon) observed(t *testing.T, name string, ok func(*v1alpha1.ForecastObserved) bool) *v1alpha1.UpdateForecast {
	t.Helper()
	var f v1alpha1.UpdateForecast
	testkit.Eventually(t, "UpdateForecast "+name+"'s status.observed", func() (bool, string) {
		if err := d.a.Client.Get(context.Background(), client.ObjectKey{Name: name}, &f); err != nil {
			return false, err.Error()
		}
		o := f.Status.Observed
		return o != nil && ok(o), fmt.Sprintf("%+v", o)
	}, testkit.Within(2*time.Minute))
	t.Logf("UpdateForecast %s: observed %+v", name, *f.Status.Observed)
	return &f
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// kubectlNdpWhy runs `kubectl ndp why` with this tree's ndp as kubectl's
// plugin, and returns its output.
func kubectlNdpWhy(t *testing.T, a *installedAdvisor, args ...string) string {
	t.Helper()
	dir := testkit.KubectlNdp(t)
	// kubectl passes no flag before a plugin's name on: the kubeconfig
	// goes by the environment.
	cmd := exec.Command(a.kubectl, append([]string{"ndp", "why"}, args...)...)
	cmd.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"), "KUBECONFIG="+a.Kubeconfig)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl ndp why %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("kubectl ndp why %s:\n%s", strings.Join(args, " "), out)
	return string(out)
}

// grepLines keeps the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
