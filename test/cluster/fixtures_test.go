package cluster

// Fixtures the cluster tests share: objects they create (policies, pools'
// MachineConfigs, nodes) and the webhooks they take out of the way.

import (
	"context"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/internal/testkit/builder"
	"github.com/ndp-dev/ndp/planner/policy"
)

// Names of the shipped webhooks (manifests/webhook/webhook.yaml).
const (
	webhookConfiguration = "ndp-webhook"
	machineConfigWebhook = "machineconfigs.preview.ndp.dev"
	imageMirrorWebhook   = "imagemirrors.preview.ndp.dev"
	policyWebhook        = "nodedisruptionpolicies.validate.ndp.dev"
)

// withoutWebhook takes one webhook out of the API server's configuration
// until the test ends. The objects the test creates meanwhile stand for
// ones that reached the cluster without admission (created before ndp was
// installed, or broken later by another object), which the controllers
// must still handle. probe is an object the webhook denies: the API server
// picks up configuration changes asynchronously, so the helper waits until
// a dry-run of probe is allowed, and after restoring, until it is denied.
// The returned function restores the webhook before the test ends.
func withoutWebhook(t *testing.T, name string, probe client.Object) (restore func()) {
	t.Helper()
	ctx := context.Background()
	var cfg admissionregistrationv1.ValidatingWebhookConfiguration
	if err := k8s.Get(ctx, client.ObjectKey{Name: webhookConfiguration}, &cfg); err != nil {
		t.Fatal(err)
	}
	var removed *admissionregistrationv1.ValidatingWebhook
	kept := cfg.Webhooks[:0]
	for i := range cfg.Webhooks {
		if cfg.Webhooks[i].Name == name {
			removed = cfg.Webhooks[i].DeepCopy()
			continue
		}
		kept = append(kept, cfg.Webhooks[i])
	}
	if removed == nil {
		t.Fatalf("no webhook %s in %s", name, webhookConfiguration)
	}
	cfg.Webhooks = kept
	if err := k8s.Update(ctx, &cfg); err != nil {
		t.Fatal(err)
	}
	probeAllowed := func() bool {
		return k8s.Create(ctx, probe.DeepCopyObject().(client.Object), client.DryRunAll) == nil
	}
	testkit.Until(t, name+" is no longer called", probeAllowed)
	restored := false
	restore = func() {
		if restored {
			return
		}
		restored = true
		var cfg admissionregistrationv1.ValidatingWebhookConfiguration
		if err := k8s.Get(ctx, client.ObjectKey{Name: webhookConfiguration}, &cfg); err != nil {
			t.Fatal(err)
		}
		cfg.Webhooks = append(cfg.Webhooks, *removed)
		if err := k8s.Update(ctx, &cfg); err != nil {
			t.Fatal(err)
		}
		testkit.Until(t, name+" is called again", func() bool { return !probeAllowed() })
	}
	t.Cleanup(restore)
	return restore
}

func restart(svc string) operatorv1.NodeDisruptionPolicySpecAction {
	return policy.RestartAction(svc)
}

func newPolicy(name string, spec v1alpha1.NodeDisruptionPolicySpec) *v1alpha1.NodeDisruptionPolicy {
	return &v1alpha1.NodeDisruptionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
}

func chronySpec() v1alpha1.NodeDisruptionPolicySpec {
	return v1alpha1.NodeDisruptionPolicySpec{Files: []operatorv1.NodeDisruptionPolicySpecFile{{
		Path: "/etc/chrony.conf", Actions: []operatorv1.NodeDisruptionPolicySpecAction{restart("chronyd.service")}}}}
}

// brokenPolicy is denied by the policy webhook.
func brokenPolicy() *v1alpha1.NodeDisruptionPolicy {
	return newPolicy("probe", v1alpha1.NodeDisruptionPolicySpec{Rego: "package ndp.policy.probe\n\nx := := 1\n"})
}

// withoutPolicyWebhook lets the test put policies the webhook would refuse
// into the cluster, to test how the controller handles them.
func withoutPolicyWebhook(t *testing.T) (restore func()) {
	t.Helper()
	return withoutWebhook(t, policyWebhook, brokenPolicy())
}

func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := k8s.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %s: %v", obj.GetName(), err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), obj) })
}

// basePool creates a pool with a base MachineConfig and returns it once it
// targets their rendered config.
func basePool(t *testing.T, pool string) *mcfgv1.MachineConfigPool {
	t.Helper()
	create(t, machineConfigPool(pool))
	create(t, sourceMC("00-"+pool+"-base", pool).WithFile("/etc/kubernetes/kubelet.conf", "base").Build())
	// With the generated registries config: two sources.
	return waitPool(t, pool, func(p *mcfgv1.MachineConfigPool) bool {
		return strings.HasPrefix(p.Spec.Configuration.Name, "rendered-"+pool+"-") && len(p.Spec.Configuration.Source) == 2
	})
}

// previewPool creates a base pool with n nodes running its rendered
// config, which it returns.
func previewPool(t *testing.T, pool string, n int) string {
	t.Helper()
	target := basePool(t, pool).Spec.Configuration.Name
	for i := range n {
		create(t, node(pool+"-"+string(rune('a'+i)), pool, target))
	}
	return target
}

func mustNotExist(t *testing.T, obj client.Object) {
	t.Helper()
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); !apierrors.IsNotFound(err) {
		t.Errorf("%s %s exists after the request (err %v)", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
	}
}

func node(name, pool, current string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels:      map[string]string{"node-role.kubernetes.io/" + pool: ""},
		Annotations: map[string]string{ndpmcv1.CurrentConfigAnnotation: current, ndpmcv1.DesiredConfigAnnotation: current, ndpmcv1.StateAnnotation: "Done"}}}
}

// sourceMC starts a source MachineConfig of pool, on the suite's OS image.
func sourceMC(name, pool string) *builder.MachineConfigBuilder {
	return builder.MachineConfig(name).WithRole(pool).WithOSImageURL("quay.io/os@sha256:1")
}

// renderedMC starts a MachineConfig rendered for pool, on the suite's OS
// image.
func renderedMC(name, pool string) *builder.MachineConfigBuilder {
	return builder.MachineConfig(name).RenderedFor(pool).WithOSImageURL("quay.io/os@sha256:1")
}

// invalidIgnitionMC is denied by the MachineConfig webhook.
func invalidIgnitionMC() *ndpmcv1.MachineConfig {
	return builder.MachineConfig("probe").WithIgnitionVersion("2.2.0").Build()
}

// machineConfigPool is pool name: the MachineConfigs with its role label,
// the nodes with the node-role.kubernetes.io/<name> label.
func machineConfigPool(name string) *mcfgv1.MachineConfigPool {
	return &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: mcfgv1.MachineConfigPoolSpec{
		MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{ndpmcv1.RoleLabel: name}},
		NodeSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/" + name: ""}},
	}}
}
