package executor

import (
	"fmt"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ndp-dev/ndp/alertsilence"
	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/rolloutcontrol"
)

func TestSilenceDisrupted(t *testing.T) {
	for _, c := range []struct {
		n    testNode
		want bool
	}{
		{done("done", "a"), false},
		{testNode{name: "sent", cur: "a", desired: "b", state: ndpmcv1.StateDone}, true},
		{testNode{name: "working", cur: "a", desired: "b", state: ndpmcv1.StateWorking}, true},
		{testNode{name: "granted", cur: "a", desired: "a", state: ndpmcv1.StateDone, granted: true}, true},
		{testNode{name: "asked, not granted", cur: "a", desired: "a", state: ndpmcv1.StateDone, rebootAsked: true}, false},
		{testNode{name: "failed", cur: "a", desired: "b", state: ndpmcv1.StateDegraded}, false},
		{testNode{name: "new, no config", state: ""}, false},
	} {
		if got := silenceDisrupted(c.n.node()); got != c.want {
			t.Errorf("%s: %v, want %v", c.n.name, got, c.want)
		}
	}
}

// A policy that sets only silences holds no start, whatever its
// Alertmanager does: the rollout never reads them.
func TestSilencesHoldNoStart(t *testing.T) {
	p := &v1alpha1.RolloutPolicy{ObjectMeta: metav1.ObjectMeta{Name: "silences"}, Spec: v1alpha1.RolloutPolicySpec{
		Silences: &v1alpha1.NodeSilences{URL: "http://127.0.0.1:1", Matchers: []v1alpha1.SilenceMatcher{`node="{{node}}"`}},
	}}
	nodes := testNodes(done("a", "old"), done("b", "old"))
	d := decideRolloutWith(testPool("new", intOrPercent("1"), false), nodes, testTarget(true, "old"),
		rolloutPolicies{Now: policyNow, Policies: []rolloutcontrol.PolicyInput{{Policy: p}}})
	if got := byName(d); len(got.Send) != 1 || d.Policy.Holding() {
		t.Errorf("a silences-only policy: %+v, holding %v", got, d.Policy.Holding())
	}
}

// The silence controller against a real API server and a real
// Alertmanager: a node sent to a new config gets a silence with the
// administrator's matchers, kept (not doubled) across a restart,
// extended, and expired once the node is done; a node of a pool without
// silences gets none; an Alertmanager that does not answer is an Event,
// and the node's update is not touched.
func TestSilenceController(t *testing.T) {
	am := testkit.StartAlertmanager(t)
	cp := testkit.NewControlPlane(t, testkit.ControlPlaneOptions{Root: "../.."})
	c, ctx := cp.Client, t.Context()
	create := func(o client.Object) {
		t.Helper()
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	pool := func(name string) *mcfgv1.MachineConfigPool {
		return &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"pool": name}}, Spec: mcfgv1.MachineConfigPoolSpec{
			NodeSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/" + name: ""}},
			MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": name}},
		}}
	}
	node := func(name, role string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"node-role.kubernetes.io/" + role: ""},
			Annotations: map[string]string{ndpmcv1.CurrentConfigAnnotation: "rendered-old", ndpmcv1.DesiredConfigAnnotation: "rendered-new", ndpmcv1.StateAnnotation: ndpmcv1.StateWorking}}}
	}
	policy := func(name, selects string, s *v1alpha1.NodeSilences) *v1alpha1.RolloutPolicy {
		return &v1alpha1.RolloutPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.RolloutPolicySpec{
			PoolSelector: metav1.LabelSelector{MatchLabels: map[string]string{"pool": selects}}, Silences: s}}
	}
	for _, p := range []string{"worker", "infra", "db"} {
		create(pool(p))
	}
	create(policy("silence-workers", "worker", &v1alpha1.NodeSilences{URL: am, Comment: "ndp updates {{node}}",
		Matchers: []v1alpha1.SilenceMatcher{`instance=~"{{node}}(:[0-9]+)?"`, `node="{{node}}"`}}))
	paced := policy("paced-infra", "infra", nil)
	paced.Spec.Pacing = &v1alpha1.RolloutPacing{SettleAfter: &metav1.Duration{Duration: time.Minute}}
	create(paced)
	unreachable := fmt.Sprintf("http://127.0.0.1:%d", testkit.FreePort(t))
	create(policy("silence-db", "db", &v1alpha1.NodeSilences{URL: unreachable, Matchers: []v1alpha1.SilenceMatcher{`node="{{node}}"`}}))
	for _, n := range []*corev1.Node{node("worker-1.example", "worker"), node("infra-1", "infra"), node("db-1", "db")} {
		create(n)
	}

	now := time.Now()
	newReconciler := func() (*SilenceReconciler, *events.FakeRecorder) {
		rec := events.NewFakeRecorder(20)
		return &SilenceReconciler{Client: c, Recorder: rec, Silences: &alertsilence.Client{Timeout: time.Second}, Now: func() time.Time { return now }}, rec
	}
	reconcileNode := func(r *SilenceReconciler, name string) (reconcile.Result, error) {
		return r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: name}})
	}
	eventsOf := func(rec *events.FakeRecorder) string {
		var out []string
		for {
			select {
			case e := <-rec.Events:
				out = append(out, e)
			default:
				return strings.Join(out, "\n")
			}
		}
	}
	recordOf := func(name string) *alertsilence.Record {
		t.Helper()
		var n corev1.Node
		if err := c.Get(ctx, client.ObjectKey{Name: name}, &n); err != nil {
			t.Fatal(err)
		}
		r, err := alertsilence.ParseRecord(n.Annotations[v1alpha1.SilenceAnnotation])
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	r, rec := newReconciler()
	res, err := reconcileNode(r, "worker-1.example")
	if err != nil {
		t.Fatal(err)
	}
	kept := recordOf("worker-1.example")
	if kept == nil || kept.URL != am || res.RequeueAfter != 30*time.Minute {
		t.Fatalf("after the first reconcile: record %+v, requeue after %s", kept, res.RequeueAfter)
	}
	testkit.CheckContains(t, "events", eventsOf(rec), "Normal SilenceCreated silence "+kept.ID+" in "+am,
		`instance=~"worker-1.example(:[0-9]+)?", node="worker-1.example"`)
	silences := testkit.AlertmanagerSilences(t, am)
	if len(silences) != 1 || *silences[0].ID != kept.ID || *silences[0].Status.State != "active" || *silences[0].Comment != "ndp updates worker-1.example" {
		t.Fatalf("Alertmanager's silences: %+v", silences)
	}
	var ms []string
	for _, m := range silences[0].Matchers {
		ms = append(ms, fmt.Sprintf("%s %v %v %s", *m.Name, *m.IsRegex, *m.IsEqual, *m.Value))
	}
	if got := strings.Join(ms, "; "); got != `instance true true worker-1\.example(:[0-9]+)?; node false true worker-1.example` {
		t.Errorf("matchers: %s", got)
	}
	if end := time.Time(*silences[0].EndsAt); end.Sub(now.Add(time.Hour)).Abs() > time.Second {
		t.Errorf("ends at %s, want an hour from now", end)
	}

	// A restarted controller reads the annotation: no second silence.
	r, rec = newReconciler()
	if _, err := reconcileNode(r, "worker-1.example"); err != nil {
		t.Fatal(err)
	}
	if n := len(testkit.AlertmanagerSilences(t, am)); n != 1 || eventsOf(rec) != "" {
		t.Errorf("after a restart: %d silences, want 1", n)
	}

	// Half of it gone, still at work: extended in place.
	now = now.Add(40 * time.Minute)
	if _, err := reconcileNode(r, "worker-1.example"); err != nil {
		t.Fatal(err)
	}
	testkit.CheckContains(t, "events", eventsOf(rec), "Normal SilenceExtended silence "+kept.ID)
	silences = testkit.AlertmanagerSilences(t, am)
	if len(silences) != 1 || *silences[0].ID != kept.ID || time.Time(*silences[0].EndsAt).Sub(now.Add(time.Hour)).Abs() > time.Second {
		t.Errorf("extended: %d silences, %s ends %v", len(silences), *silences[0].ID, silences[0].EndsAt)
	}
	now = time.Now()

	// A pool without silences: none.
	if _, err := reconcileNode(r, "infra-1"); err != nil {
		t.Fatal(err)
	}
	if recordOf("infra-1") != nil || len(testkit.AlertmanagerSilences(t, am)) != 1 {
		t.Errorf("a node of a pool without silences got one")
	}

	// Alertmanager does not answer: an Event, an error (retried with
	// backoff), and the node's update as it was.
	if _, err := reconcileNode(r, "db-1"); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("unreachable Alertmanager: %v", err)
	}
	testkit.CheckContains(t, "events", eventsOf(rec), "Warning SilenceFailed could not silence (the update goes on, retried): "+unreachable+": connection refused")
	var db corev1.Node
	if err := c.Get(ctx, client.ObjectKey{Name: "db-1"}, &db); err != nil {
		t.Fatal(err)
	}
	if _, ok := db.Annotations[v1alpha1.SilenceAnnotation]; ok || db.Annotations[ndpmcv1.DesiredConfigAnnotation] != "rendered-new" {
		t.Errorf("db-1 after a failed silence: %v", db.Annotations)
	}

	// Done: expired, the annotation removed.
	testkit.SetNodeConfig(t, c, "rendered-new", "worker-1.example")
	if err := c.Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-1.example"}}, client.RawPatch(types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"`+ndpmcv1.StateAnnotation+`":"`+ndpmcv1.StateDone+`"}}}`))); err != nil {
		t.Fatal(err)
	}
	if _, err := reconcileNode(r, "worker-1.example"); err != nil {
		t.Fatal(err)
	}
	testkit.CheckContains(t, "events", eventsOf(rec), "Normal SilenceExpired silence "+kept.ID+" in "+am+" expired: the node is done")
	if recordOf("worker-1.example") != nil {
		t.Error("the record stays after the node is done")
	}
	silences = testkit.AlertmanagerSilences(t, am)
	if len(silences) != 1 || *silences[0].Status.State != "expired" {
		t.Errorf("after done: %d silences, state %s", len(silences), *silences[0].Status.State)
	}
}
