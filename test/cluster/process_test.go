package cluster

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/internal/output"
	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/webhook"
)

// The shipped binary, run as a second replica: it stands by (this test
// process leads), serves the webhooks anyway, with a self-signed
// certificate it generates when none is mounted, and injects the CA into
// its webhook configuration.
func TestControllerProcessServesWithASelfSignedCertificate(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs ndp-controller")
	}
	ctx := context.Background()
	// Policies are validated by the process alone.
	withoutPolicyWebhook(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "ndp-controller")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/ndp-controller").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	const ns, cfgName, hookName = "ndp-e2e", "ndp-webhook-e2e", "e2e.validate.ndp.dev"
	create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	port, probes := testkit.FreePort(t), testkit.FreePort(t)
	// Called for policies labelled for this test only, by URL (no Service
	// here), without a CA bundle: the process injects it.
	create(t, &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: cfgName},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    hookName,
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To(fmt.Sprintf("https://localhost:%d%s", port, webhook.PolicyPath))},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}, Rule: admissionregistrationv1.Rule{APIGroups: []string{"ndp.dev"}, APIVersions: []string{"v1alpha1"}, Resources: []string{"nodedisruptionpolicies"}}}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"ndp.dev/e2e": "true"}},
			TimeoutSeconds:          ptr.To[int32](15),
		}}})

	var logs output.Buffer
	cmd := exec.Command(bin, "--kubeconfig", kubeconfig,
		"--leader-election-namespace=default", "--metrics-bind-address=0",
		"--health-probe-bind-address", fmt.Sprintf("127.0.0.1:%d", probes),
		"--webhook-port", strconv.Itoa(port),
		"--webhook-cert-dir", filepath.Join(dir, "mounted"), // nothing mounted
		"--webhook-self-signed-dir", filepath.Join(dir, "self-signed"),
		"--namespace", ns, "--webhook-configuration", cfgName, "--webhook-cert-extra-names", "localhost")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_ = cmd.Wait()
		}
	}
	t.Cleanup(stop)
	defer func() {
		if t.Failed() {
			t.Logf("ndp-controller output:\n%s", logs.String())
		}
	}()

	testkit.Until(t, "ndp-controller is ready (webhook server started)", func() bool {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", probes))
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	var secret corev1.Secret
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "ndp-webhook-self-signed"}, &secret); err != nil || len(secret.Data["ca.crt"]) == 0 {
		t.Fatalf("the self-signed Secret: %v", err)
	}
	var cfg admissionregistrationv1.ValidatingWebhookConfiguration
	if err := k8s.Get(ctx, client.ObjectKey{Name: cfgName}, &cfg); err != nil || !bytes.Equal(cfg.Webhooks[0].ClientConfig.CABundle, secret.Data["ca.crt"]) {
		t.Fatalf("the CA bundle was not injected (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "self-signed", "tls.crt")); err != nil {
		t.Fatal(err)
	}

	broken := `apiVersion: ndp.dev/v1alpha1
kind: NodeDisruptionPolicy
metadata:
  name: e2e-broken
  labels: {ndp.dev/e2e: "true"}
spec:
  rego: |
    package ndp.policy.e2e_broken

    x := := 1
`
	out, err := kubectlFile(t, broken, "apply")
	if err == nil || !strings.Contains(out, `admission webhook "`+hookName+`" denied the request`) || !strings.Contains(out, `NodeDisruptionPolicy "e2e-broken" spec.rego:3:`) {
		t.Errorf("through the process's webhook (%v):\n%s", err, out)
	}

	// The standby keeps an active set of its own (the policy controller runs
	// on every replica): a policy that takes another's package is refused.
	create(t, newPolicy("e2e-owner", v1alpha1.NodeDisruptionPolicySpec{Rego: "package ndp.policy.e2e_shared\n\nclaims := set()\n"}))
	intruder := strings.NewReplacer("e2e-broken", "e2e-intruder", "e2e_broken", "e2e_shared", "x := := 1", "claims := set()").Replace(broken)
	t.Cleanup(func() { _, _ = kubectl(t, "delete", "nodedisruptionpolicy", "e2e-intruder", "--ignore-not-found") })
	var lastOut string
	defer func() {
		if t.Failed() {
			t.Logf("last kubectl apply of the intruder:\n%s", lastOut)
		}
	}()
	testkit.Until(t, "the standby refuses a policy that takes an active one's package", func() bool {
		out, err := kubectlFile(t, intruder, "apply")
		lastOut = out
		if err == nil {
			// Admitted before the standby's set had the owner: take it
			// back, or later applies are no-ops that no webhook checks.
			_, _ = kubectl(t, "delete", "nodedisruptionpolicy", "e2e-intruder", "--ignore-not-found")
			return false
		}
		return err != nil && strings.Contains(out, `package ndp.policy.e2e_shared is already owned by policy "e2e-owner"`)
	})

	// Stopped, it fails closed.
	stop()
	start := time.Now()
	out, err = kubectlFile(t, strings.ReplaceAll(strings.ReplaceAll(broken, "e2e-broken", "e2e-valid"), "x := := 1", "claims := set()"), "apply")
	if err == nil || !strings.Contains(out, `failed calling webhook "`+hookName+`"`) {
		t.Errorf("with the process stopped (%v, after %s):\n%s", err, time.Since(start), out)
	}
}
