package nodedisruptionpolicy

import (
	"context"
	"os"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/ndp-dev/ndp/apis/scheme"
	"github.com/ndp-dev/ndp/planner/engine"
	"github.com/ndp-dev/ndp/policyset"
	"github.com/ndp-dev/ndp/webhook/internal/webhooktest"
	"github.com/ndp-dev/ndp/webhook/preview"
)

func TestMain(m *testing.M) { os.Exit(webhooktest.Main(m)) }

// policyValidation validates against webhooktest.PendingUpdate's pool,
// whose nodes are given.
func policyValidation(t *testing.T, nodes ...*corev1.Node) *PolicyValidation {
	t.Helper()
	c, active := webhooktest.PendingUpdate(t, nodes...)
	return &PolicyValidation{
		Checker:   &policyset.PolicyChecker{Client: c, Active: active},
		Decoder:   admission.NewDecoder(scheme.New()),
		Previewer: preview.NewPreviewer(c, active),
	}
}

func TestPolicyDryRunWhatIf(t *testing.T) {
	done := func(n string) *corev1.Node {
		return webhooktest.Node(n, "rendered-worker-a", "Done", "rendered-worker-a")
	}
	h := policyValidation(t, done("w1"), done("w2"), done("w3"))
	ctx := context.Background()

	resp := h.Handle(ctx, webhooktest.PolicyRequest(admissionv1.Create, "chrony", webhooktest.ChronyNDP, true))
	want := "pool worker, 3 nodes rendered-worker-a → rendered-worker-b: Reboot → Restart chronyd.service (no drain)"
	if !resp.Allowed || len(resp.Warnings) != 1 || resp.Warnings[0] != want {
		t.Errorf("a dry-run create: allowed %t, warnings %q; want %q", resp.Allowed, resp.Warnings, want)
	}
	// A real create is validated, not previewed.
	if resp := h.Handle(ctx, webhooktest.PolicyRequest(admissionv1.Create, "chrony", webhooktest.ChronyNDP, false)); !resp.Allowed || len(resp.Warnings) != 0 {
		t.Errorf("a create: allowed %t, warnings %q", resp.Allowed, resp.Warnings)
	}
	// An invalid policy is still denied, dry-run or not, with no what-if.
	broken := strings.Replace(webhooktest.ChronyNDP, `"files"`, `"rego":"package ndp.policy.chrony\n\nx := := 1\n","files"`, 1)
	if resp := h.Handle(ctx, webhooktest.PolicyRequest(admissionv1.Create, "chrony", broken, true)); resp.Allowed || len(resp.Warnings) != 0 || !strings.Contains(resp.Result.Message, "rego_parse_error") {
		t.Errorf("a broken policy: allowed %t, warnings %q, %v", resp.Allowed, resp.Warnings, resp.Result)
	}

	// The default policy is the controller's.
	if resp := h.Handle(ctx, webhooktest.PolicyRequest(admissionv1.Delete, "default", `{"apiVersion":"ndp.dev/v1alpha1","kind":"NodeDisruptionPolicy","metadata":{"name":"default"}}`, true)); !resp.Allowed ||
		len(resp.Warnings) != 1 || !strings.HasPrefix(resp.Warnings[0], "NodeDisruptionPolicy default cannot be deleted: ndp-controller restores it at once") {
		t.Errorf("a dry-run delete of the default: allowed %t, warnings %q", resp.Allowed, resp.Warnings)
	}
	// Deleting a policy that is not active changes nothing.
	if resp := h.Handle(ctx, webhooktest.PolicyRequest(admissionv1.Delete, "chrony", webhooktest.ChronyNDP, true)); !resp.Allowed ||
		len(resp.Warnings) != 1 || resp.Warnings[0] != "no pending plan changes: NodeDisruptionPolicy chrony is not in the active set (never accepted)" {
		t.Errorf("a dry-run delete of an inactive policy: allowed %t, warnings %q", resp.Allowed, resp.Warnings)
	}
	// A real delete is allowed, untouched.
	if resp := h.Handle(ctx, webhooktest.PolicyRequest(admissionv1.Delete, "chrony", webhooktest.ChronyNDP, false)); !resp.Allowed || len(resp.Warnings) != 0 {
		t.Errorf("a delete: allowed %t, warnings %q", resp.Allowed, resp.Warnings)
	}
}

// Nodes already executing the stored plan keep it: the plan controller
// does not replace it under them.
func TestPolicyWhatIfUpdatingNodesKeepTheirPlan(t *testing.T) {
	h := policyValidation(t,
		webhooktest.Node("w1", "rendered-worker-a", "Working", "rendered-worker-b"),
		webhooktest.Node("w2", "rendered-worker-a", "Done", "rendered-worker-a"))
	resp := h.Handle(context.Background(), webhooktest.PolicyRequest(admissionv1.Create, "chrony", webhooktest.ChronyNDP, true))
	want := "pool worker, 2 nodes rendered-worker-a → rendered-worker-b: Reboot → Restart chronyd.service (no drain) (1 node already updating keeps Reboot)"
	if !resp.Allowed || len(resp.Warnings) != 1 || resp.Warnings[0] != want {
		t.Errorf("allowed %t, warnings %q; want %q", resp.Allowed, resp.Warnings, want)
	}
}

// The what-if never turns an allowed request into a denial: whatever goes
// wrong is one warning.
func TestPolicyWhatIfFailsOpen(t *testing.T) {
	h := policyValidation(t, webhooktest.Node("w1", "rendered-worker-a", "Done", "rendered-worker-a"))
	ctx := context.Background()

	// No policy active yet (a replica that just started).
	h.Previewer.Active = policyset.NewActivePolicies(engine.Options{})
	resp := h.Handle(ctx, webhooktest.PolicyRequest(admissionv1.Create, "chrony", webhooktest.ChronyNDP, true))
	if !resp.Allowed || len(resp.Warnings) != 1 || resp.Warnings[0] != "ndp: no what-if preview: no NodeDisruptionPolicy is active yet" {
		t.Errorf("no active set: allowed %t, warnings %q", resp.Allowed, resp.Warnings)
	}

	// An unreadable cluster.
	h = policyValidation(t, webhooktest.Node("w1", "rendered-worker-a", "Done", "rendered-worker-a"))
	h.Previewer.Client = webhooktest.Unreachable{}
	resp = h.Handle(ctx, webhooktest.PolicyRequest(admissionv1.Create, "chrony", webhooktest.ChronyNDP, true))
	if !resp.Allowed || len(resp.Warnings) != 1 || !strings.HasPrefix(resp.Warnings[0], "ndp: no what-if preview: ") || !strings.Contains(resp.Warnings[0], "connection refused") {
		t.Errorf("an unreadable cluster: allowed %t, warnings %q", resp.Allowed, resp.Warnings)
	}

	// A panic below is recovered.
	h.Previewer.Client = nil
	resp = h.Handle(ctx, webhooktest.PolicyRequest(admissionv1.Create, "chrony", webhooktest.ChronyNDP, true))
	if !resp.Allowed || len(resp.Warnings) != 1 || !strings.HasPrefix(resp.Warnings[0], "ndp: no what-if preview: internal error: ") {
		t.Errorf("a panic: allowed %t, warnings %q", resp.Allowed, resp.Warnings)
	}
}
