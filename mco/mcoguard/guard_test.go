package mcoguard

import (
	"context"
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

	"github.com/ndp-dev/ndp/internal/testkit"
)

// countingTransport counts the requests a client sends, and of them the
// DaemonSet's and discovery's.
type countingTransport struct {
	n, daemonSets, discovery atomic.Int64
	next                     http.RoundTripper
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	switch p := r.URL.Path; {
	case strings.Contains(p, "/daemonsets"):
		c.daemonSets.Add(1)
	case !strings.Contains(p, "/clusteroperators"):
		c.discovery.Add(1)
	}
	return c.next.RoundTrip(r)
}

// The Guard on a real API server that first does not serve ClusterOperators
// (plain Kubernetes): it syncs (no ClusterOperator), notices the kind once
// its CRD is installed, follows the ClusterOperator and the DaemonSet
// coming, changing and going — telling its subscribers each time, and
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
	changes := g.Subscribe()
	if _, err := g.Observe(ctx, nil); err == nil || !strings.Contains(err.Error(), "not known yet") {
		t.Errorf("before its first list, Observe answered: %v", err)
	}
	go func() { _ = g.Start(ctx) }()

	// expect waits for a change event after which Observe (for node, when
	// given) says want.
	expect := func(what string, node *corev1.Node, want Observed) {
		t.Helper()
		deadline := time.After(time.Minute)
		for {
			select {
			case <-changes:
				o, err := g.Observe(ctx, node)
				if err == nil && o == want {
					return
				}
			case <-deadline:
				o, err := g.Observe(ctx, node)
				t.Fatalf("%s: no change event with %+v; Observe says %+v, %v", what, want, o, err)
			}
		}
	}
	// quiet asserts that no change event comes while something else changes.
	quiet := func(what string) {
		t.Helper()
		select {
		case <-changes:
			t.Errorf("%s: a change event", what)
		case <-time.After(2 * time.Second):
		}
	}
	expect("the first sync, without the ClusterOperator kind", nil, Observed{})
	// At the start, the DaemonSet is listed and watched, and nothing is
	// discovered (the unserved kind is listed again, at its pace).
	testkit.Until(t, "the DaemonSet listed and watched", func() bool { return counter.daemonSets.Load() >= 2 })
	time.Sleep(time.Second) // anything else the start sends
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
	quiet("another ClusterOperator")
	if err := k8s.Create(ctx, mco); err != nil {
		t.Fatal(err)
	}
	expect("ClusterOperator machine-config created", nil, Observed{ClusterOperator: true})
	mco.Status.Versions = []configv1.OperandVersion{{Name: "operator", Version: "4.20.0"}}
	if err := k8s.Status().Update(ctx, mco); err != nil {
		t.Fatal(err)
	}
	quiet("the ClusterOperator's status written")

	// The daemon's DaemonSet, its nodeSelector, and another DaemonSet.
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: DaemonSetNamespace}}); err != nil {
		t.Fatal(err)
	}
	ds := daemonSet(DaemonSetName, map[string]string{"kubernetes.io/os": "linux"})
	if err := k8s.Create(ctx, daemonSet("machine-config-server", nil)); err != nil {
		t.Fatal(err)
	}
	quiet("another DaemonSet of the namespace")
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

	// Both go.
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
