package webhook

import (
	"context"
	"os"
	"strings"
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
	"github.com/ndp-dev/ndp/apis/scheme"
	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/internal/testkit/builder"
	"github.com/ndp-dev/ndp/internal/testkit/policytest"
	"github.com/ndp-dev/ndp/planner/engine"
	"github.com/ndp-dev/ndp/planner/policy"
	"github.com/ndp-dev/ndp/policyset"
)

const chronyNDP = `{"apiVersion":"ndp.dev/v1alpha1","kind":"NodeDisruptionPolicy","metadata":{"name":"chrony"},"spec":{"files":[{"path":"/etc/chrony.conf","actions":[{"type":"Restart","restart":{"serviceName":"chronyd.service"}}]}]}}`

func whatIfNode(name, current, state, desired string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"node-role.kubernetes.io/worker": ""},
		Annotations: map[string]string{ndpmcv1.CurrentConfigAnnotation: current, ndpmcv1.DesiredConfigAnnotation: desired, ndpmcv1.StateAnnotation: state}}}
}

// apiServer is a real kube-apiserver and etcd with ndp's and openshift/api's
// CRDs, started once for the package's tests and stopped by TestMain.
var apiServer struct {
	once sync.Once
	cp   *testkit.ControlPlane
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if apiServer.cp != nil {
		_ = apiServer.cp.Stop()
	}
	os.Exit(code)
}

func cluster(t *testing.T) client.Client {
	t.Helper()
	apiServer.once.Do(func() {
		apiServer.cp, apiServer.err = testkit.StartControlPlane(testkit.ControlPlaneOptions{Root: ".."})
	})
	if apiServer.err != nil {
		t.Fatal(apiServer.err)
	}
	return apiServer.cp.Client
}

// policyValidation serves, from a real API server, a pool "worker" whose
// nodes (given by the caller, replacing any earlier test's) run
// rendered-worker-a while its target, rendered-worker-b, adds chrony.conf;
// the target's status holds the default policy's plan, a reboot.
func policyValidation(t *testing.T, nodes ...*corev1.Node) *PolicyValidation {
	t.Helper()
	ctx := context.Background()
	c := cluster(t)
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
	return &PolicyValidation{
		Checker:   &policyset.PolicyChecker{Client: c, Active: active},
		Decoder:   admission.NewDecoder(scheme.New()),
		Previewer: NewPreviewer(c, active),
	}
}

func policyRequest(op admissionv1.Operation, name, object string, dryRun bool) admission.Request {
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: op, Name: name, DryRun: ptr.To(dryRun)}}
	if op == admissionv1.Delete {
		req.OldObject = runtime.RawExtension{Raw: []byte(object)}
	} else {
		req.Object = runtime.RawExtension{Raw: []byte(object)}
	}
	return req
}

func TestPolicyDryRunWhatIf(t *testing.T) {
	done := func(n string) *corev1.Node { return whatIfNode(n, "rendered-worker-a", "Done", "rendered-worker-a") }
	h := policyValidation(t, done("w1"), done("w2"), done("w3"))
	ctx := context.Background()

	resp := h.Handle(ctx, policyRequest(admissionv1.Create, "chrony", chronyNDP, true))
	want := "pool worker, 3 nodes rendered-worker-a → rendered-worker-b: Reboot → Restart chronyd.service (no drain)"
	if !resp.Allowed || len(resp.Warnings) != 1 || resp.Warnings[0] != want {
		t.Errorf("a dry-run create: allowed %t, warnings %q; want %q", resp.Allowed, resp.Warnings, want)
	}
	// A real create is validated, not previewed.
	if resp := h.Handle(ctx, policyRequest(admissionv1.Create, "chrony", chronyNDP, false)); !resp.Allowed || len(resp.Warnings) != 0 {
		t.Errorf("a create: allowed %t, warnings %q", resp.Allowed, resp.Warnings)
	}
	// An invalid policy is still denied, dry-run or not, with no what-if.
	broken := strings.Replace(chronyNDP, `"files"`, `"rego":"package ndp.policy.chrony\n\nx := := 1\n","files"`, 1)
	if resp := h.Handle(ctx, policyRequest(admissionv1.Create, "chrony", broken, true)); resp.Allowed || len(resp.Warnings) != 0 || !strings.Contains(resp.Result.Message, "rego_parse_error") {
		t.Errorf("a broken policy: allowed %t, warnings %q, %v", resp.Allowed, resp.Warnings, resp.Result)
	}

	// The default policy is the controller's.
	if resp := h.Handle(ctx, policyRequest(admissionv1.Delete, "default", `{"apiVersion":"ndp.dev/v1alpha1","kind":"NodeDisruptionPolicy","metadata":{"name":"default"}}`, true)); !resp.Allowed ||
		len(resp.Warnings) != 1 || !strings.HasPrefix(resp.Warnings[0], "NodeDisruptionPolicy default cannot be deleted: ndp-controller restores it at once") {
		t.Errorf("a dry-run delete of the default: allowed %t, warnings %q", resp.Allowed, resp.Warnings)
	}
	// Deleting a policy that is not active changes nothing.
	if resp := h.Handle(ctx, policyRequest(admissionv1.Delete, "chrony", chronyNDP, true)); !resp.Allowed ||
		len(resp.Warnings) != 1 || resp.Warnings[0] != "no pending plan changes: NodeDisruptionPolicy chrony is not in the active set (never accepted)" {
		t.Errorf("a dry-run delete of an inactive policy: allowed %t, warnings %q", resp.Allowed, resp.Warnings)
	}
	// A real delete is allowed, untouched.
	if resp := h.Handle(ctx, policyRequest(admissionv1.Delete, "chrony", chronyNDP, false)); !resp.Allowed || len(resp.Warnings) != 0 {
		t.Errorf("a delete: allowed %t, warnings %q", resp.Allowed, resp.Warnings)
	}
}

// Nodes already executing the stored plan keep it: the plan controller
// does not replace it under them.
func TestPolicyWhatIfUpdatingNodesKeepTheirPlan(t *testing.T) {
	h := policyValidation(t,
		whatIfNode("w1", "rendered-worker-a", "Working", "rendered-worker-b"),
		whatIfNode("w2", "rendered-worker-a", "Done", "rendered-worker-a"))
	resp := h.Handle(context.Background(), policyRequest(admissionv1.Create, "chrony", chronyNDP, true))
	want := "pool worker, 2 nodes rendered-worker-a → rendered-worker-b: Reboot → Restart chronyd.service (no drain) (1 node already updating keeps Reboot)"
	if !resp.Allowed || len(resp.Warnings) != 1 || resp.Warnings[0] != want {
		t.Errorf("allowed %t, warnings %q; want %q", resp.Allowed, resp.Warnings, want)
	}
}

// The what-if never turns an allowed request into a denial: whatever goes
// wrong is one warning.
func TestPolicyWhatIfFailsOpen(t *testing.T) {
	h := policyValidation(t, whatIfNode("w1", "rendered-worker-a", "Done", "rendered-worker-a"))
	ctx := context.Background()

	// No policy active yet (a replica that just started).
	h.Previewer.Active = policyset.NewActivePolicies(engine.Options{})
	resp := h.Handle(ctx, policyRequest(admissionv1.Create, "chrony", chronyNDP, true))
	if !resp.Allowed || len(resp.Warnings) != 1 || resp.Warnings[0] != "ndp: no what-if preview: no NodeDisruptionPolicy is active yet" {
		t.Errorf("no active set: allowed %t, warnings %q", resp.Allowed, resp.Warnings)
	}

	// An unreadable cluster.
	h = policyValidation(t, whatIfNode("w1", "rendered-worker-a", "Done", "rendered-worker-a"))
	h.Previewer.Client = unreachable{}
	resp = h.Handle(ctx, policyRequest(admissionv1.Create, "chrony", chronyNDP, true))
	if !resp.Allowed || len(resp.Warnings) != 1 || !strings.HasPrefix(resp.Warnings[0], "ndp: no what-if preview: ") || !strings.Contains(resp.Warnings[0], "connection refused") {
		t.Errorf("an unreadable cluster: allowed %t, warnings %q", resp.Allowed, resp.Warnings)
	}

	// A panic below is recovered.
	h.Previewer.Client = nil
	resp = h.Handle(ctx, policyRequest(admissionv1.Create, "chrony", chronyNDP, true))
	if !resp.Allowed || len(resp.Warnings) != 1 || !strings.HasPrefix(resp.Warnings[0], "ndp: no what-if preview: internal error: ") {
		t.Errorf("a panic: allowed %t, warnings %q", resp.Allowed, resp.Warnings)
	}
}
