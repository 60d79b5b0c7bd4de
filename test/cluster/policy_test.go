package cluster

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/controllers/nodedisruptionpolicy"
	"github.com/ndp-dev/ndp/internal/bundletest"
	"github.com/ndp-dev/ndp/planner/engine"
	"github.com/ndp-dev/ndp/policies"
	"github.com/ndp-dev/ndp/policyset"
)

func TestValidPolicyIsAcceptedAndActive(t *testing.T) {
	start := time.Now()
	create(t, newPolicy("chrony", chronySpec()))
	got := waitCondition(t, "chrony", v1alpha1.ConditionAccepted, metav1.ConditionTrue)
	t.Logf("accepted after %s", time.Since(start).Round(time.Millisecond))
	if got.Status.Revision == "" || got.Status.Rules != 1 || got.Status.ObservedGeneration != got.Generation {
		t.Errorf("status: %+v", got.Status)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionActive); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Active: %+v", c)
	}
	if plan := chronyPlan(t); actionTypes(plan) != "Restart" || plan.Reasons[0].Policy != "chrony" {
		t.Errorf("the active set does not plan with the policy: %+v", plan)
	}
	waitEvent(t, "chrony", "Accepted")
	if n := metricCount(t, "ndp_policy_compile_duration_seconds"); n == 0 {
		t.Error("no compile duration recorded")
	}
}

func TestRegoSyntaxErrorIsRejectedWithItsLine(t *testing.T) {
	withoutPolicyWebhook(t)
	create(t, newPolicy("syntax", v1alpha1.NodeDisruptionPolicySpec{Rego: "package ndp.policy.syntax\n\nclaims contains {\"change\": c.id if {\n\tsome c in input.changes\n}\n"}))
	got := waitCondition(t, "syntax", v1alpha1.ConditionAccepted, metav1.ConditionFalse)
	c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionAccepted)
	if c.Reason != nodedisruptionpolicy.ReasonCompileError || !strings.Contains(c.Message, `NodeDisruptionPolicy "syntax" spec.rego:3:`) || !strings.Contains(c.Message, "rego_parse_error") {
		t.Errorf("Accepted: %+v", c)
	}
	if d := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionDegraded); d == nil || d.Status != metav1.ConditionTrue {
		t.Errorf("Degraded: %+v", d)
	}
	waitEvent(t, "syntax", "Rejected")
}

func TestForbiddenBuiltinIsRejected(t *testing.T) {
	withoutPolicyWebhook(t)
	create(t, newPolicy("exfil", v1alpha1.NodeDisruptionPolicySpec{Rego: "package ndp.policy.exfil\n\nclaims contains {\"change\": c.id, \"actions\": [{\"type\": \"None\"}]} if {\n\tsome c in input.changes\n\thttp.send({\"method\": \"GET\", \"url\": \"http://x\"})\n}\n"}))
	got := waitCondition(t, "exfil", v1alpha1.ConditionAccepted, metav1.ConditionFalse)
	if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionAccepted); !strings.Contains(c.Message, "builtin http.send is not allowed") || !strings.Contains(c.Message, "spec.rego:5:") {
		t.Errorf("Accepted: %+v", c)
	}
}

const noneRego = `package ndp.policy.units

claims contains {"change": c.id, "actions": [{"type": "None"}]} if {
	some c in input.changes
	c.kind == "unit"
}
`

func TestFailingRegoTestsAreNotActivated(t *testing.T) {
	withoutPolicyWebhook(t)
	create(t, newPolicy("units", v1alpha1.NodeDisruptionPolicySpec{Rego: noneRego, RegoTests: `package ndp.policy.units_test

import data.ndp.policy.units

test_units_need_a_restart if {
	claims := units.claims with input.changes as [{"id": "unit:a.service", "kind": "unit", "name": "a.service"}]
	count(claims) == 0
}
`}))
	got := waitCondition(t, "units", v1alpha1.ConditionAccepted, metav1.ConditionFalse)
	c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionAccepted)
	if c.Reason != nodedisruptionpolicy.ReasonTestsFailed || !strings.Contains(c.Message, "test_units_need_a_restart") {
		t.Errorf("Accepted: %+v", c)
	}
	if a := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionActive); a == nil || a.Status != metav1.ConditionFalse {
		t.Errorf("Active: %+v", a)
	}
	if _, ok := active.Get("units"); ok {
		t.Error("a policy whose tests fail is in the active set")
	}
}

func TestBrokenEditKeepsThePreviousRevision(t *testing.T) {
	p := newPolicy("chrony-edit", chronySpec())
	p.Spec.Files[0].Path = "/etc/chrony.conf"
	prio := int32(150)
	p.Spec.Priority = &prio
	create(t, p)
	good := waitCondition(t, "chrony-edit", v1alpha1.ConditionAccepted, metav1.ConditionTrue)
	rev := good.Status.Revision

	withoutPolicyWebhook(t)
	good.Spec.Rego = "package ndp.policy.chrony_edit\n\nx := := 1\n"
	if err := k8s.Update(context.Background(), good); err != nil {
		t.Fatal(err)
	}
	bad := waitCondition(t, "chrony-edit", v1alpha1.ConditionAccepted, metav1.ConditionFalse)
	if a := meta.FindStatusCondition(bad.Status.Conditions, v1alpha1.ConditionActive); a == nil || a.Status != metav1.ConditionTrue || a.Reason != nodedisruptionpolicy.ReasonPreviousActive || !strings.Contains(a.Message, rev) {
		t.Errorf("Active: %+v, want the previous revision %s", a, rev)
	}
	if bad.Status.Revision != rev {
		t.Errorf("revision %s, want the previous %s", bad.Status.Revision, rev)
	}
	if pol, ok := active.Get("chrony-edit"); !ok || pol.Revision() != rev {
		t.Errorf("the active set lost the last good revision")
	}
	if plan := chronyPlan(t); actionTypes(plan) != "Restart" {
		t.Errorf("plans no longer use the last good revision: %+v", plan)
	}

	// A controller that restarts meanwhile starts with an empty set: it
	// activates the recorded spec again rather than losing the revision.
	restarted := policyset.NewActivePolicies(engine.Options{})
	r := &nodedisruptionpolicy.Reconciler{Client: k8s, Recorder: events.NewFakeRecorder(10), Active: restarted}
	if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKey{Name: "chrony-edit"}}); err != nil {
		t.Fatal(err)
	}
	if pol, ok := restarted.Get("chrony-edit"); !ok || pol.Revision() != rev {
		t.Errorf("after a restart the last good revision is not active")
	}
	after := waitCondition(t, "chrony-edit", v1alpha1.ConditionActive, metav1.ConditionTrue)
	if a := meta.FindStatusCondition(after.Status.Conditions, v1alpha1.ConditionActive); a.Reason != nodedisruptionpolicy.ReasonPreviousActive || after.Status.Revision != rev {
		t.Errorf("after a restart: %+v, revision %s", a, after.Status.Revision)
	}
}

func TestDefaultPolicyIsRestored(t *testing.T) {
	ctx := context.Background()
	def := waitCondition(t, policies.DefaultPolicyName, v1alpha1.ConditionAccepted, metav1.ConditionTrue)
	if def.Spec.Priority == nil || *def.Spec.Priority != 0 || def.Status.Rules != 5 {
		t.Errorf("default policy: priority %v, rules %d", def.Spec.Priority, def.Status.Rules)
	}
	want := nodedisruptionpolicy.DefaultNodeDisruptionPolicy().Spec

	// An edit that breaks the default's tests is refused at admission;
	// one that passes them is undone by the controller.
	broken := def.DeepCopy()
	broken.Spec.Rego = "package ndp.policy.defaults\n"
	if err := k8s.Update(ctx, broken); err == nil || !strings.Contains(err.Error(), "Rego tests failed") {
		t.Errorf("an edit that fails the default's tests: %v", err)
	}
	edited := def.DeepCopy()
	prio := int32(999)
	edited.Spec.Priority = &prio
	if err := k8s.Update(ctx, edited); err != nil {
		t.Fatal(err)
	}
	waitObject(t, policies.DefaultPolicyName, "restored after an edit", func(p *v1alpha1.NodeDisruptionPolicy) bool {
		return p.Generation > edited.Generation && *p.Spec.Priority == 0 && p.Spec.Rego == want.Rego
	})
	waitEvent(t, policies.DefaultPolicyName, nodedisruptionpolicy.ReasonRestored)

	if err := k8s.Delete(ctx, def); err != nil {
		t.Fatal(err)
	}
	waitObject(t, policies.DefaultPolicyName, "recreated after deletion", func(p *v1alpha1.NodeDisruptionPolicy) bool { return p.UID != def.UID })
	waitCondition(t, policies.DefaultPolicyName, v1alpha1.ConditionAccepted, metav1.ConditionTrue)
}

func TestCRDRejectsInvalidActions(t *testing.T) {
	ctx := context.Background()
	action := func(typ string) operatorv1.NodeDisruptionPolicySpecAction {
		return operatorv1.NodeDisruptionPolicySpecAction{Type: operatorv1.NodeDisruptionPolicySpecActionType(typ)}
	}
	eleven := make([]operatorv1.NodeDisruptionPolicySpecAction, 11)
	for i := range eleven {
		eleven[i] = action("DaemonReload")
	}
	for _, tc := range []struct {
		name    string
		actions []operatorv1.NodeDisruptionPolicySpecAction
		want    string
	}{
		{"reboot-with-others", []operatorv1.NodeDisruptionPolicySpecAction{action("Reboot"), action("Drain")}, "Reboot action can only be specified standalone"},
		{"reload-without-service", []operatorv1.NodeDisruptionPolicySpecAction{action("Reload")}, "reload is required when type is Reload"},
		{"bad-service-name", []operatorv1.NodeDisruptionPolicySpecAction{restart("chronyd")}, "Invalid ${SERVICETYPE} in service name"},
		{"eleven-actions", eleven, "must have at most 10 items"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPolicy("invalid-"+tc.name, v1alpha1.NodeDisruptionPolicySpec{Files: []operatorv1.NodeDisruptionPolicySpecFile{{Path: "/etc/x", Actions: tc.actions}}})
			err := k8s.Create(ctx, p, client.DryRunAll)
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("the API server accepted or misreported it: %v", err)
			}
		})
	}
	if err := k8s.Create(ctx, newPolicy("valid", chronySpec()), client.DryRunAll); err != nil {
		t.Errorf("a valid policy is refused: %v", err)
	}
}

func TestKubectlGetNodeDisruptionPolicies(t *testing.T) {
	create(t, newPolicy("chrony-kubectl", chronySpec()))
	waitCondition(t, "chrony-kubectl", v1alpha1.ConditionAccepted, metav1.ConditionTrue)
	def := waitCondition(t, policies.DefaultPolicyName, v1alpha1.ConditionAccepted, metav1.ConditionTrue)
	if def.Status.Rules == 0 {
		t.Fatal("the default policy reports no rules")
	}
	defaultRules := strconv.Itoa(int(def.Status.Rules))
	for _, resource := range []string{"nodedisruptionpolicies", "ndp"} {
		out, err := kubectl(t, "get", resource)
		if err != nil {
			t.Fatalf("kubectl get %s: %v\n%s", resource, err, out)
		}
		rows := map[string][]string{}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			f := strings.Fields(line)
			rows[f[0]] = f
		}
		if h := strings.Join(rows["NAME"], " "); h != "NAME PRIORITY RULES ACCEPTED AGE" {
			t.Errorf("kubectl get %s header %q\n%s", resource, h, out)
		}
		// chrony-kubectl has no priority set (100 applies, the column is empty).
		if r := rows["chrony-kubectl"]; len(r) != 4 || r[1] != "1" || r[2] != "True" {
			t.Errorf("chrony-kubectl row %q\n%s", r, out)
		}
		if r := rows[policies.DefaultPolicyName]; len(r) != 5 || r[1] != "0" || r[2] != defaultRules || r[3] != "True" {
			t.Errorf("default row %q\n%s", r, out)
		}
	}
}

func TestSignedBundleFromExamples(t *testing.T) {
	ctx := context.Background()
	private, public := bundletest.Keys(t, "rsa")
	signed := bundletest.Build(t, "../../examples/bundles/haproxy", private)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "haproxy-policy"}, BinaryData: map[string][]byte{"bundle.tar.gz": signed}}
	create(t, cm)
	create(t, newPolicy("haproxy", v1alpha1.NodeDisruptionPolicySpec{BundleRef: &v1alpha1.BundleReference{Namespace: "default", Name: "haproxy-policy", PublicKey: string(public)}}))
	got := waitCondition(t, "haproxy", v1alpha1.ConditionAccepted, metav1.ConditionTrue)
	if got.Status.Rules != 2 {
		t.Errorf("rules %d, want the bundle's 2 claims rules", got.Status.Rules)
	}

	// A second bundle may not take roots the first one has (the webhook
	// refuses it; a policy that got in anyway is rejected).
	withoutPolicyWebhook(t)
	create(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "haproxy-copy"}, BinaryData: map[string][]byte{"bundle.tar.gz": signed}})
	create(t, newPolicy("haproxy-copy", v1alpha1.NodeDisruptionPolicySpec{BundleRef: &v1alpha1.BundleReference{Namespace: "default", Name: "haproxy-copy", PublicKey: string(public)}}))
	copyPolicy := waitCondition(t, "haproxy-copy", v1alpha1.ConditionAccepted, metav1.ConditionFalse)
	if c := meta.FindStatusCondition(copyPolicy.Status.Conditions, v1alpha1.ConditionAccepted); c.Reason != nodedisruptionpolicy.ReasonBundleError || !strings.Contains(c.Message, `overlaps root "ndp/policy/haproxy"`) {
		t.Errorf("overlapping bundle: %+v", c)
	}

	// One byte changed in the bundle's policy: the controller re-reads the
	// ConfigMap, rejects the bundle and keeps the verified revision.
	cm.BinaryData["bundle.tar.gz"] = bundletest.Alter(t, signed, "haproxy.rego")
	if err := k8s.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	p := waitObject(t, "haproxy", "the altered bundle is rejected", func(p *v1alpha1.NodeDisruptionPolicy) bool {
		return meta.IsStatusConditionFalse(p.Status.Conditions, v1alpha1.ConditionAccepted)
	})
	if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionAccepted); c.Reason != nodedisruptionpolicy.ReasonBundleError || !strings.Contains(c.Message, "digest mismatch") {
		t.Errorf("Accepted: %+v", c)
	}
	if p.Status.Revision != got.Status.Revision {
		t.Errorf("the verified revision was dropped")
	}
}

// The shipped deployment manifests are valid for a real API server.
func TestDeployManifestsApply(t *testing.T) {
	// A server dry-run does not create the namespace its objects go in.
	ensureNamespace(t, "ndp-system")
	for _, f := range []string{controllerRoles(t), "../../manifests/deploy/ndp-controller.yaml", daemonRole, daemonDeploy, daemonAdmission} {
		if out, err := kubectl(t, "apply", "--dry-run=server", "-f", f); err != nil {
			t.Errorf("kubectl apply --dry-run=server -f %s: %v\n%s", f, err, out)
		}
	}
	// The webhook configuration is installed already (by envtest, pointed
	// at this process): check the shipped one under another name.
	raw, err := os.ReadFile("../../manifests/webhook/webhook.yaml")
	if err != nil {
		t.Fatal(err)
	}
	renamed := strings.Replace(string(raw), "kind: ValidatingWebhookConfiguration\nmetadata:\n  name: ndp-webhook\n", "kind: ValidatingWebhookConfiguration\nmetadata:\n  name: ndp-webhook-shipped\n", 1)
	if renamed == string(raw) {
		t.Fatal("no ValidatingWebhookConfiguration ndp-webhook in manifests/webhook/webhook.yaml")
	}
	if out, err := kubectlFile(t, renamed, "apply", "--dry-run=server"); err != nil || !strings.Contains(out, "validatingwebhookconfiguration.admissionregistration.k8s.io/ndp-webhook-shipped created (server dry run)") {
		t.Errorf("kubectl apply --dry-run=server of manifests/webhook/webhook.yaml: %v\n%s", err, out)
	}
}

// A policy rejected because of another one is accepted once that one goes.
func TestRejectedPolicyIsRetried(t *testing.T) {
	withoutPolicyWebhook(t)
	rego := "package ndp.policy.shared\n\nclaims := set()\n"
	owner := newPolicy("owner", v1alpha1.NodeDisruptionPolicySpec{Rego: rego})
	create(t, owner)
	waitCondition(t, "owner", v1alpha1.ConditionAccepted, metav1.ConditionTrue)
	create(t, newPolicy("intruder", v1alpha1.NodeDisruptionPolicySpec{Rego: rego}))
	got := waitCondition(t, "intruder", v1alpha1.ConditionAccepted, metav1.ConditionFalse)
	if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionAccepted); !strings.Contains(c.Message, `already owned by policy "owner"`) {
		t.Errorf("Accepted: %+v", c)
	}
	if err := k8s.Delete(context.Background(), owner); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, "intruder", v1alpha1.ConditionAccepted, metav1.ConditionTrue)
}
