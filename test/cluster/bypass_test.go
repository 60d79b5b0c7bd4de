package cluster

import (
	"context"
	"testing"

	"github.com/ndp-dev/ndp/internal/testkit"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
