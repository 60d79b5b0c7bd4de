package mcoguard

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/ndp-dev/ndp/internal/testkit"
)

// countingTransport counts the requests a client sends, and of them the
// DaemonSet's, the ClusterOperator's and discovery's.
type countingTransport struct {
	n, daemonSets, clusterOperators, discovery atomic.Int64
	next                                       http.RoundTripper
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	switch p := r.URL.Path; {
	case strings.Contains(p, "/daemonsets"):
		c.daemonSets.Add(1)
	case strings.Contains(p, "/clusteroperators"):
		c.clusterOperators.Add(1)
	default:
		c.discovery.Add(1)
	}
	return c.next.RoundTrip(r)
}

// The Guard on a real API server that first does not serve ClusterOperators
// (plain Kubernetes): it syncs (no ClusterOperator), notices the kind once
// its CRD is installed, follows the ClusterOperator and the DaemonSet
// coming, changing and going — telling its subscribers once each time, and
// nothing for other ClusterOperators, other DaemonSets or status writes —
// and answers Observe from memory, without a request.
func TestGuardFollowsTheMCOsObjects(t *testing.T) {
	cp := testkit.NewControlPlane(t, testkit.ControlPlaneOptions{Root: "../..", NoCRDs: true})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	k8s := cp.Client

	cfg := rest.CopyConfig(cp.Config)
	counter := &countingTransport{}
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { counter.next = rt; return counter }
	g, err := NewGuardForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	g.NotServedRecheck = 500 * time.Millisecond
	// changes hears every change event the Guard sends: a subscriber's
	// channel holds one (Subscribe), this one all, so that they count.
	changes := make(chan event.GenericEvent, 64)
	g.subs = append(g.subs, changes)
	if _, err := g.Observe(ctx, nil); err == nil || !strings.Contains(err.Error(), "not known yet") {
		t.Errorf("before its first list, Observe answered: %v", err)
	}
	go func() { _ = g.Start(ctx) }()

	// quiet names the writes since the last expect that must send no
	// change event (another object, a status): the next expect's count
	// proves it. Each object has one watch, which the Guard reads in
	// order and whose every event it handles before Observe answers from
	// it: once Observe says what a later write on the same watch made,
	// the Guard has handled the quiet writes before it, and sent what
	// they sent.
	var quiet []string
	// expect waits until Observe (for node, when given) says want, then
	// takes the change events sent meanwhile: one, the change's.
	expect := func(what string, node *corev1.Node, want Observed) {
		t.Helper()
		testkit.Eventually(t, what, func() (bool, string) {
			o, err := g.Observe(ctx, node)
			return err == nil && o == want, fmt.Sprintf("Observe says %+v, %v", o, err)
		}, testkit.Within(time.Minute))
		if n := len(changes); n != 1 {
			t.Errorf("%s: %d change events, want 1 (and none for %s)", what, n, strings.Join(quiet, ", "))
		}
		for len(changes) > 0 {
			<-changes
		}
		quiet = nil
	}
	expect("the first sync, without the ClusterOperator kind", nil, Observed{})
	// At the start, the DaemonSet is listed and watched, and nothing is
	// discovered. The start is over once the unserved kind was listed
	// again, at its pace (anything discovered for it would come first).
	testkit.Until(t, "the DaemonSet listed and watched, the unserved kind listed again", func() bool {
		return counter.daemonSets.Load() >= 2 && counter.clusterOperators.Load() >= 2
	})
	if ds, disc := counter.daemonSets.Load(), counter.discovery.Load(); ds != 2 || disc != 0 {
		t.Errorf("the guard's start sent %d DaemonSet requests (want a list and a watch) and %d others: %d in all", ds, disc, counter.n.Load())
	}

	// Observe answers from memory.
	before := counter.n.Load()
	for range 1000 {
		if _, err := g.Observe(ctx, &corev1.Node{}); err != nil {
			t.Fatal(err)
		}
	}
	if n := counter.n.Load() - before; n > 4 { // a relist of the unserved kind may fall in
		t.Errorf("1,000 Observe calls sent %d requests", n)
	}

	// The ClusterOperator kind appears; machine-config is created.
	if _, err := envtest.InstallCRDs(cp.Config, envtest.CRDInstallOptions{
		Paths: []string{"../../manifests/crds/openshift/0000_00_cluster-version-operator_01_clusteroperators.crd.yaml"}}); err != nil {
		t.Fatal(err)
	}
	other := &configv1.ClusterOperator{ObjectMeta: metav1.ObjectMeta{Name: "ndp"}}
	mco := &configv1.ClusterOperator{ObjectMeta: metav1.ObjectMeta{Name: ClusterOperatorName}}
	testkit.Until(t, "the ClusterOperator kind is served", func() bool { return k8s.Create(ctx, other.DeepCopy()) == nil })
	quiet = append(quiet, "another ClusterOperator")
	if err := k8s.Create(ctx, mco); err != nil {
		t.Fatal(err)
	}
	expect("ClusterOperator machine-config created", nil, Observed{ClusterOperator: true})

	// The daemon's DaemonSet, its nodeSelector, and another DaemonSet.
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: DaemonSetNamespace}}); err != nil {
		t.Fatal(err)
	}
	ds := daemonSet(DaemonSetName, map[string]string{"kubernetes.io/os": "linux"})
	if err := k8s.Create(ctx, daemonSet("machine-config-server", nil)); err != nil {
		t.Fatal(err)
	}
	quiet = append(quiet, "another DaemonSet of the namespace")
	if err := k8s.Create(ctx, ds); err != nil {
		t.Fatal(err)
	}
	linux := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"kubernetes.io/os": "linux"}}}
	windows := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"kubernetes.io/os": "windows"}}}
	expect("the DaemonSet created", linux, Observed{ClusterOperator: true, DaemonSet: true})
	if o, _ := g.Observe(ctx, windows); !o.DaemonSetSkipsNode {
		t.Errorf("the DaemonSet selects linux nodes, yet Observe says it runs on a windows one: %+v", o)
	}
	ds.Spec.Template.Spec.NodeSelector = map[string]string{"kubernetes.io/os": "windows"}
	if err := k8s.Update(ctx, ds); err != nil {
		t.Fatal(err)
	}
	expect("the DaemonSet's nodeSelector changed", linux, Observed{ClusterOperator: true, DaemonSet: true, DaemonSetSkipsNode: true})

	// Both go; first, the ClusterOperator's status is written (its
	// deletion, on the same watch, is the next change).
	mco.Status.Versions = []configv1.OperandVersion{{Name: "operator", Version: "4.20.0"}}
	if err := k8s.Status().Update(ctx, mco); err != nil {
		t.Fatal(err)
	}
	quiet = append(quiet, "the ClusterOperator's status written")
	if err := k8s.Delete(ctx, mco); err != nil {
		t.Fatal(err)
	}
	expect("ClusterOperator machine-config deleted", nil, Observed{DaemonSet: true})
	if err := k8s.Delete(ctx, ds); err != nil {
		t.Fatal(err)
	}
	expect("the DaemonSet deleted", nil, Observed{})
	if v, err := g.Verdict(); err != nil || v.StandDown {
		t.Errorf("with the MCO gone, Verdict = %+v, %v", v, err)
	}
}

func daemonSet(name string, nodeSelector map[string]string) *appsv1.DaemonSet {
	labels := map[string]string{"k8s-app": name}
	return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: DaemonSetNamespace, Name: name},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{NodeSelector: nodeSelector,
				Containers: []corev1.Container{{Name: "c", Image: "example.com/c:1"}}},
		}}}
}
