// Package webhooktest holds what the tests of the webhook's packages share:
// a real API server, started once per test binary by the first test that
// asks for it (a package's unit tests start none), and the pool with a
// pending update that a policy edit is previewed against.
package webhooktest

import (
	"context"
	"errors"
	"sync"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/internal/testkit/builder"
	"github.com/ndp-dev/ndp/internal/testkit/policytest"
	"github.com/ndp-dev/ndp/planner/engine"
	"github.com/ndp-dev/ndp/planner/policy"
	"github.com/ndp-dev/ndp/policyset"
)

// ChronyNDP is a NodeDisruptionPolicy that restarts chronyd for
// /etc/chrony.conf, as a request carries it.
const ChronyNDP = `{"apiVersion":"ndp.dev/v1alpha1","kind":"NodeDisruptionPolicy","metadata":{"name":"chrony"},"spec":{"files":[{"path":"/etc/chrony.conf","actions":[{"type":"Restart","restart":{"serviceName":"chronyd.service"}}]}]}}`

// server is a real kube-apiserver and etcd with ndp's and openshift/api's
// CRDs, started once for the test binary and stopped by Main.
var server struct {
	once sync.Once
	cp   *testkit.ControlPlane
	err  error
}

// Main runs a package's tests, then stops the API server if one was
// started: its TestMain is os.Exit(webhooktest.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	if server.cp != nil {
		_ = server.cp.Stop()
	}
	return code
}

// ControlPlane is the test binary's API server, started at the first call
// (for a package directly below webhook/).
func ControlPlane(t testing.TB) *testkit.ControlPlane {
	t.Helper()
	server.once.Do(func() {
		server.cp, server.err = testkit.StartControlPlane(testkit.ControlPlaneOptions{Root: "../.."})
	})
	if server.err != nil {
		t.Fatal(server.err)
	}
	return server.cp
}

// Node is a worker node on current, in state, sent to desired.
func Node(name, current, state, desired string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"node-role.kubernetes.io/worker": ""},
		Annotations: map[string]string{ndpmcv1.CurrentConfigAnnotation: current, ndpmcv1.DesiredConfigAnnotation: desired, ndpmcv1.StateAnnotation: state}}}
}

// PendingUpdate serves, from the API server, a pool "worker" whose nodes
// (given by the caller, replacing any earlier test's) run
// rendered-worker-a while its target, rendered-worker-b, adds chrony.conf;
// the target's status holds the default policy's plan, a reboot. It
// returns an administrator's client and an active set of the default
// policy.
func PendingUpdate(t *testing.T, nodes ...*corev1.Node) (client.Client, *policyset.ActivePolicies) {
	t.Helper()
	ctx := context.Background()
	c := ControlPlane(t).Client
	active := policyset.NewActivePolicies(engine.Options{})
	if err := active.Put(ctx, policy.DefaultPolicy()); err != nil {
		t.Fatal(err)
	}
	a := builder.MachineConfig("rendered-worker-a").RenderedFor("worker").Build()
	b := builder.MachineConfig("rendered-worker-b").RenderedFor("worker").WithFile("/etc/chrony.conf", "pool x").Build()
	plan := policytest.Plan(t, active.Planner(), a, b, "worker")
	if !plan.Reboot {
		t.Fatalf("the default plan: %+v", plan)
	}
	pool := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "worker"}, Spec: mcfgv1.MachineConfigPoolSpec{
		MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{ndpmcv1.RoleLabel: "worker"}},
		NodeSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/worker": ""}},
		Configuration:         mcfgv1.MachineConfigPoolStatusConfiguration{ObjectReference: corev1.ObjectReference{Name: b.Name}},
	}}
	for _, o := range []client.Object{a, b, pool} {
		if err := c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
		t.Fatal(err)
	}
	b.Status.PostConfigActions = []ndpmcv1.PostConfigActions{plan.PostConfigActions()}
	if err := c.Status().Update(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteAllOf(ctx, &corev1.Node{}); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if err := c.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	return c, active
}

// Unreachable is a cluster that cannot be read.
type Unreachable struct{ client.Reader }

// List fails as an API server that cannot be reached.
func (Unreachable) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("connection refused")
}

// PolicyRequest is a NodeDisruptionPolicy admission request.
func PolicyRequest(op admissionv1.Operation, name, object string, dryRun bool) admission.Request {
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: op, Name: name, DryRun: ptr.To(dryRun)}}
	if op == admissionv1.Delete {
		req.OldObject = runtime.RawExtension{Raw: []byte(object)}
	} else {
		req.Object = runtime.RawExtension{Raw: []byte(object)}
	}
	return req
}
