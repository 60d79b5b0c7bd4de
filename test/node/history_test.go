package node

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/internal/testkit/builder"
)

// withSources sets a rendered config's ndp.dev/sources annotation, as the
// render controller does.
func withSources(mc *ndpmcv1.MachineConfig, sources map[string]string) *ndpmcv1.MachineConfig {
	b, _ := json.Marshal(sources)
	if mc.Annotations == nil {
		mc.Annotations = map[string]string{}
	}
	mc.Annotations[ndpmcv1.SourcesAnnotation] = string(b)
	return mc
}

// history reads the node's NodeHistory; nil while there is none.
func (h *host) history() *v1alpha1.NodeHistory {
	h.t.Helper()
	var nh v1alpha1.NodeHistory
	if err := k8s.Get(context.Background(), client.ObjectKey{Name: h.name}, &nh); err != nil {
		return nil
	}
	return &nh
}

// waitEntry waits for the history's newest entry to be the update to to
// and to satisfy ok, and returns the history.
func (h *host) waitEntry(to, what string, ok func(u *v1alpha1.NodeUpdate) bool, timeout time.Duration) *v1alpha1.NodeHistory {
	h.t.Helper()
	var nh *v1alpha1.NodeHistory
	testkit.Eventually(h.t, what, func() (bool, string) {
		nh = h.history()
		if nh == nil || len(nh.Status.Updates) == 0 {
			return false, "no NodeHistory entry"
		}
		u := &nh.Status.Updates[0]
		return u.To == to && ok(u), describeEntry(u)
	}, testkit.Within(timeout))
	return nh
}

// waitDone waits for the node to be Done on to, and for the history's
// newest entry to say so; the history must then hold n entries, as want
// says which.
func (h *host) waitDone(to string, n int, want string) *v1alpha1.NodeHistory {
	h.t.Helper()
	h.waitState(ndpmcv1.StateDone, to, 2*time.Minute)
	nh := h.waitEntry(to, "the update Done in the history", func(u *v1alpha1.NodeUpdate) bool { return u.Result == v1alpha1.UpdateDone }, time.Minute)
	if len(nh.Status.Updates) != n {
		for _, u := range nh.Status.Updates {
			h.t.Logf("entry: %s", describeEntry(&u))
		}
		h.t.Fatalf("%d entries, want %d: %s", len(nh.Status.Updates), n, want)
	}
	return nh
}

func describeEntry(u *v1alpha1.NodeUpdate) string {
	var steps []string
	for _, s := range u.Steps {
		steps = append(steps, s.Name+"="+s.Result)
	}
	return fmt.Sprintf("%s → %s %s (%s) steps [%s] boots %+v", u.From, u.To, u.Result, u.Message, strings.Join(steps, " "), u.BootIDs)
}

// checkSteps checks the entry's steps: the names in order, each Done with
// a start and an end, in time order.
func checkSteps(t *testing.T, u *v1alpha1.NodeUpdate, want ...string) {
	t.Helper()
	var names []string
	for _, s := range u.Steps {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, want) {
		t.Errorf("steps %v, want %v", names, want)
	}
	last := u.Started.Time
	for _, s := range u.Steps {
		if s.Result != "Done" || s.Started == nil || s.Finished == nil {
			t.Errorf("step %s: result %q, started %v, finished %v", s.Name, s.Result, s.Started, s.Finished)
			continue
		}
		if s.Started.Time.Before(last) || s.Finished.Time.Before(s.Started.Time) {
			t.Errorf("step %s from %s to %s: out of order (previous end %s)", s.Name, s.Started, s.Finished, last)
		}
		last = s.Finished.Time
	}
	if u.Finished == nil || u.Finished.Time.Before(last) {
		t.Errorf("the update finished at %v, before its last step (%s)", u.Finished, last)
	}
}

// checkOwner: the NodeHistory is owned by its Node, not as a controller,
// and does not block the Node's deletion.
func checkOwner(t *testing.T, h *host, nh *v1alpha1.NodeHistory) {
	t.Helper()
	node := h.node()
	if len(nh.OwnerReferences) != 1 {
		t.Fatalf("owners %+v", nh.OwnerReferences)
	}
	o := nh.OwnerReferences[0]
	if o.APIVersion != "v1" || o.Kind != "Node" || o.Name != node.Name || o.UID != node.UID || o.Controller == nil || *o.Controller || o.BlockOwnerDeletion != nil {
		t.Errorf("owner %+v, want Node %s (%s), not controller, not blocking", o, node.Name, node.UID)
	}
}

// An update with a restart, the daemon killed just as the restart step
// starts: the node's NodeHistory holds one entry for it, in progress after
// the crash and then Done, from which config to which, the change with its
// source MachineConfig and the policy that decided it, the plan, each step
// with its times, and the boot.
func TestHistoryOfARestartUpdateAcrossACrash(t *testing.T) {
	h := newHost(t, "node-history-restart")
	from := createMC(t, withSources(builder.MachineConfig("rendered-history-a").WithFileMap(map[string]string{"/etc/chrony.conf": "pool a.example.com iburst\n"}, 0o644).Build(),
		map[string]string{"file:/etc/chrony.conf": "50-chrony-old"}))
	to := withSources(builder.MachineConfig("rendered-history-b").WithFileMap(map[string]string{"/etc/chrony.conf": "pool b.example.com iburst\n"}, 0o644).Build(),
		map[string]string{"file:/etc/chrony.conf": "50-chrony"})
	p := plan(t, from, to, map[string][]operatorv1.NodeDisruptionPolicySpecAction{"/etc/chrony.conf": {restart("chronyd.service")}})
	to.Status.PostConfigActions = []ndpmcv1.PostConfigActions{p}
	createMC(t, to)
	h.traceUnit("chronyd.service", "")
	h.provision(from, map[string]string{"/etc/chrony.conf": "pool a.example.com iburst\n"})
	if nh := h.history(); nh != nil && len(nh.Status.Updates) > 0 {
		t.Fatalf("adopting a config is no update, yet the history has %s", describeEntry(&nh.Status.Updates[0]))
	}
	h.stop()

	// Steps: backup, files, current-config, action (3): killed as it starts.
	h.annotate(map[string]string{ndpmcv1.DesiredConfigAnnotation: to.Name})
	h.start("NDP_DAEMON_CRASH_AT=3:started")
	h.waitExit(2 * time.Minute)
	nh := h.waitEntry(to.Name, "the update in progress in the history", func(u *v1alpha1.NodeUpdate) bool { return u.Result == v1alpha1.UpdateInProgress }, time.Minute)
	started := nh.Status.Updates[0].Started

	h.start()
	nh = h.waitDone(to.Name, 1, "one update, resumed after a crash")
	u := nh.Status.Updates[0]
	if u.From != from.Name || u.To != to.Name || u.Pool != "worker" || u.Executor != v1alpha1.ExecutorNDP || !u.Started.Equal(&started) || u.Message != "" {
		t.Errorf("entry: %s pool %q executor %q started %s (first written %s) message %q", describeEntry(&u), u.Pool, u.Executor, u.Started, started, u.Message)
	}
	if j := h.journal(); j == nil || u.Started.Unix() != j.Started.Unix() {
		t.Errorf("entry started %s, the journal's update %v", u.Started, j)
	}
	wantChanges := []v1alpha1.UpdateChange{{Change: "file /etc/chrony.conf: contents changed", MachineConfigs: []string{"50-chrony"}, DecidedBy: "policy test",
		Actions: []v1alpha1.ForecastAction{{Type: "Restart", Service: "chronyd.service"}}}}
	if got := u.Changes; len(got) != 1 || !equality.Semantic.DeepEqual(got[0].MachineConfigs, wantChanges[0].MachineConfigs) || got[0].Change != wantChanges[0].Change ||
		got[0].DecidedBy != wantChanges[0].DecidedBy || !equality.Semantic.DeepEqual(got[0].Actions, wantChanges[0].Actions) || u.ChangesOmitted != 0 {
		t.Errorf("changes %+v (omitted %d), want %+v", got, u.ChangesOmitted, wantChanges)
	}
	wantPlan := &v1alpha1.UpdatePlan{Source: "MachineConfig " + to.Name + " status", Summary: "Restart chronyd.service",
		Actions: []v1alpha1.ForecastAction{{Type: "Restart", Service: "chronyd.service"}}, PolicyRevision: p.PolicyRevision}
	if !equality.Semantic.DeepEqual(u.Plan, wantPlan) {
		t.Errorf("plan %+v, want %+v", u.Plan, wantPlan)
	}
	checkSteps(t, &u, "backup", "files", "current-config", "action")
	if a := u.Steps[len(u.Steps)-1].Action; a == nil || *a != (v1alpha1.ForecastAction{Type: "Restart", Service: "chronyd.service"}) {
		t.Errorf("the action step's action: %+v", a)
	}
	// The crash shows where it struck.
	if d := u.Steps[len(u.Steps)-1].Detail; d != "resumed after a restart of the daemon" {
		t.Errorf("the action step's detail %q, want it resumed after a restart of the daemon", d)
	}
	if u.BootIDs != (v1alpha1.BootIDs{Before: "boot-1", After: "boot-1"}) {
		t.Errorf("boot IDs %+v, want boot-1 before and after", u.BootIDs)
	}
	checkOwner(t, h, nh)
}

// A drain and reboot update: before the reboot the entry shows the reboot
// step running; after it, Done, with every step from cordon to uncordon and
// the boot IDs before and after the reboot.
func TestHistoryOfADrainAndRebootUpdate(t *testing.T) {
	h := newHost(t, "node-history-reboot")
	from, to, p := rebootUpdate(t, h, "history-reboot", func(from, to *ndpmcv1.MachineConfig) {
		withSources(from, map[string]string{"file:/etc/motd": "99-motd"})
		withSources(to, map[string]string{"file:/etc/motd": "99-motd-2"})
	})
	// Written before the reboot was requested: the reboot is running.
	h.waitEntry(to.Name, "the reboot running in the history", func(u *v1alpha1.NodeUpdate) bool {
		n := len(u.Steps)
		return u.Result == v1alpha1.UpdateInProgress && n > 0 && u.Steps[n-1].Name == "reboot" && u.Steps[n-1].Result == "Running" && u.Steps[n-1].Started != nil
	}, time.Minute)

	h.stop()
	h.setBootID("boot-2")
	h.start()
	nh := h.waitDone(to.Name, 1, "one update with a reboot")
	u := nh.Status.Updates[0]
	if u.From != from.Name || u.Plan == nil || !u.Plan.Drain || !u.Plan.Reboot || u.Plan.Summary != "drain, Reboot" || u.Plan.PolicyRevision != p.PolicyRevision {
		t.Errorf("entry %s, plan %+v", describeEntry(&u), u.Plan)
	}
	checkSteps(t, &u, "cordon", "drain", "backup", "files", "os", "current-config", "reboot", "uncordon")
	if u.BootIDs != (v1alpha1.BootIDs{Before: "boot-1", After: "boot-2"}) {
		t.Errorf("boot IDs %+v, want boot-1 before and boot-2 after", u.BootIDs)
	}
	var motd, osImage *v1alpha1.UpdateChange
	for i := range u.Changes {
		switch c := &u.Changes[i]; {
		case strings.HasPrefix(c.Change, "file /etc/motd:"):
			motd = c
		case strings.HasPrefix(c.Change, "osImageURL"):
			osImage = c
		}
	}
	// No policy claims /etc/motd (so it reboots); the default policy
	// reboots for an OS image.
	if motd == nil || !slices.Equal(motd.MachineConfigs, []string{"99-motd-2"}) || motd.DecidedBy != "(none)" ||
		!slices.Equal(motd.Actions, []v1alpha1.ForecastAction{{Type: "Reboot"}}) {
		t.Errorf("the motd change: %+v (changes %+v)", motd, u.Changes)
	}
	if osImage == nil || osImage.DecidedBy != "policy default" || len(osImage.MachineConfigs) != 0 {
		t.Errorf("the osImageURL change: %+v (changes %+v)", osImage, u.Changes)
	}
	checkOwner(t, h, nh)
}

// A plan the daemon refuses (its hash does not match) is an Unreconcilable
// entry, once however often the daemon looks again; the update that runs
// once the plan is right is a new entry before it.
func TestHistoryOfARefusedUpdate(t *testing.T) {
	h := newHost(t, "node-history-refused")
	h.metricsPort = testkit.FreePort(t)
	from := createMC(t, builder.MachineConfig("rendered-history-refused-a").WithFileMap(map[string]string{"/etc/chrony.conf": "a\n"}, 0o644).Build())
	to := builder.MachineConfig("rendered-history-refused-b").WithFileMap(map[string]string{"/etc/chrony.conf": "b\n"}, 0o644).Build()
	good := plan(t, from, to, map[string][]operatorv1.NodeDisruptionPolicySpecAction{"/etc/chrony.conf": {restart("chronyd.service")}})
	edited := *good.DeepCopy()
	edited.Actions[0] = ndpmcv1.PlanAction{Type: "Reload", Reload: &ndpmcv1.PlanService{ServiceName: "chronyd.service"}}
	to.Status.PostConfigActions = []ndpmcv1.PostConfigActions{edited}
	createMC(t, to)
	h.traceUnit("chronyd.service", "")
	h.provision(from, map[string]string{"/etc/chrony.conf": "a\n"})
	h.annotate(map[string]string{ndpmcv1.DesiredConfigAnnotation: to.Name})

	nh := h.waitEntry(to.Name, "the refusal in the history", func(u *v1alpha1.NodeUpdate) bool { return u.Result == v1alpha1.UpdateUnreconcilable }, time.Minute)
	refusal := nh.Status.Updates[0]
	if refusal.From != from.Name || !strings.Contains(refusal.Message, "planHash mismatch") || refusal.Finished == nil || len(refusal.Steps) != 0 {
		t.Errorf("refusal entry: %s finished %v", describeEntry(&refusal), refusal.Finished)
	}
	// The daemon looks again every 500 ms while it refuses: after three
	// more looks, the refusal is still the one entry, not even rewritten.
	looks := reconciles(t, h.metricsPort)
	testkit.Eventually(t, "three more looks of the daemon", func() (bool, string) {
		n := reconciles(t, h.metricsPort)
		return n >= looks+3, fmt.Sprintf("%d reconciles, %d before", n, looks)
	}, testkit.Within(time.Minute))
	if again := h.history(); again == nil || len(again.Status.Updates) != 1 || again.ResourceVersion != nh.ResourceVersion {
		t.Errorf("the daemon wrote its history again while it refused the same plan: %+v", again)
	}
	setPlans(t, to.Name, good)
	nh = h.waitDone(to.Name, 2, "the update and the one refusal before it")
	if old := nh.Status.Updates[1]; old.Result != v1alpha1.UpdateUnreconcilable || !old.Started.Equal(&refusal.Started) {
		t.Errorf("the refusal after the update: %s started %s (was %s)", describeEntry(&old), old.Started, refusal.Started)
	}
}

// reconciles counts the daemon's Syncs, from controller-runtime's metrics.
func reconciles(t *testing.T, port int) int {
	t.Helper()
	n := 0
	for _, line := range strings.Split(scrape(t, port), "\n") {
		if strings.HasPrefix(line, `controller_runtime_reconcile_total{controller="ndp-daemon",`) {
			var v float64
			if _, err := fmt.Sscan(line[strings.LastIndex(line, " ")+1:], &v); err == nil {
				n += int(v)
			}
		}
	}
	return n
}
