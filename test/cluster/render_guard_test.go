package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/internal/testkit"
)

const renderedConfigsAdmission = "../../manifests/admission/rendered-configs.yaml"

// TestRenderNoMachineConfigs: a pool whose selector selects no
// MachineConfig is RenderDegraded, as in the MCO's render controller ("no
// MachineConfigs found matching selector"), until one appears.
func TestRenderNoMachineConfigs(t *testing.T) {
	pool := machineConfigPool("nomatch")
	// Not the role label: the registries controller's generated config
	// (role nomatch) is not selected either.
	pool.Spec.MachineConfigSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"example.com/nomatch": "yes"}}
	create(t, pool)
	degraded := waitPool(t, "nomatch", func(p *mcfgv1.MachineConfigPool) bool {
		c := renderCondition(p)
		return c != nil && c.Status == corev1.ConditionTrue
	})
	if c := renderCondition(degraded); c.Reason != "NoMachineConfigs" || !strings.Contains(c.Message, `example.com/nomatch=yes`) {
		t.Errorf("RenderDegraded: %+v", c)
	}
	create(t, sourceMC("00-nomatch", "nomatch").WithLabel("example.com/nomatch", "yes").WithFile("/etc/a", "a").Build())
	waitPool(t, "nomatch", func(p *mcfgv1.MachineConfigPool) bool {
		c := renderCondition(p)
		return c != nil && c.Status == corev1.ConditionFalse && strings.HasPrefix(p.Spec.Configuration.Name, "rendered-nomatch-")
	})
}

// TestRenderedConfigsAreProtected: a hand edit of a rendered config is put
// back by the render controller (the MCO's TestUpdatesGeneratedMachineConfig)
// when the admission policy is not installed, and refused by the policy
// (manifests/admission/rendered-configs.yaml), naming the object, when it is.
func TestRenderedConfigsAreProtected(t *testing.T) {
	ctx := context.Background()
	name := basePool(t, "guard").Spec.Configuration.Name
	// Retried on conflict: the plan controller writes the config's status
	// meanwhile (a new resourceVersion), which says nothing about the edit.
	edit := func(f func(*ndpmcv1.MachineConfig), opts ...client.UpdateOption) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var mc ndpmcv1.MachineConfig
			if err := k8s.Get(ctx, client.ObjectKey{Name: name}, &mc); err != nil {
				return err
			}
			f(&mc)
			return k8s.Update(ctx, &mc, opts...)
		})
	}
	breakIt := func(mc *ndpmcv1.MachineConfig) { mc.Spec.OSImageURL = "why-did-you-change-it" }
	restored := func(mc *ndpmcv1.MachineConfig) bool {
		return mc.Spec.OSImageURL == "quay.io/os@sha256:1" && mc.Labels[ndpmcv1.RenderedForLabel] == "guard"
	}

	// Without the policy: the edit goes through, and the controller puts
	// the spec (and the label) back, with a Warning event. (A policy deleted
	// by an earlier run is unloaded asynchronously: wait for that.)
	testkit.Eventually(t, "no rendered-configs policy in force", func() (bool, string) {
		err := edit(breakIt, client.DryRunAll)
		return err == nil, fmt.Sprint(err)
	}, testkit.Within(policyPatience))
	if err := edit(breakIt); err != nil {
		t.Fatalf("editing %s without the policy: %v", name, err)
	}
	waitMachineConfig(t, name, restored)
	if err := edit(func(mc *ndpmcv1.MachineConfig) { delete(mc.Labels, ndpmcv1.RenderedForLabel) }); err != nil {
		t.Fatal(err)
	}
	waitMachineConfig(t, name, restored)
	testkit.Eventually(t, "a RenderedConfigRestored event", func() (bool, string) {
		var list eventsv1.EventList
		err := k8s.List(ctx, &list, client.InNamespace(metav1.NamespaceDefault))
		for _, e := range list.Items {
			if e.Regarding.Name == "guard" && e.Reason == "RenderedConfigRestored" && e.Type == corev1.EventTypeWarning && strings.Contains(e.Note, name) {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%v, %d events", err, len(list.Items))
	}, testkit.Within(policyPatience))

	// With the policy, as an administrator applies it: the edit is refused
	// for anyone but ndp-controller (this suite's client is a cluster admin).
	if out, err := kubectl(t, "apply", "-f", renderedConfigsAdmission); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if out, err := kubectl(t, "delete", "--ignore-not-found", "-f", renderedConfigsAdmission); err != nil {
			t.Logf("kubectl delete: %v\n%s", err, out)
		}
	})
	want := fmt.Sprintf("MachineConfig %s is the rendered config of pool guard (label ndp.dev/rendered-for): its spec is immutable", name)
	// The API server loads the policy asynchronously: probe with server
	// dry-runs (admission runs, nothing is stored). A real edit that got
	// through before the policy loaded could not be put back by this
	// suite's controller, which runs as the same admin, not as ndp-controller.
	testkit.Eventually(t, "the policy refusing a spec edit", func() (bool, string) {
		err := edit(breakIt, client.DryRunAll)
		if err == nil {
			return false, "the dry-run edit went through"
		}
		return strings.Contains(err.Error(), want), err.Error()
	}, testkit.Within(policyPatience))
	if err := edit(breakIt); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("editing the spec: %v", err)
	}
	err := edit(func(mc *ndpmcv1.MachineConfig) { mc.Labels[ndpmcv1.RenderedForLabel] = "other" })
	if err == nil || !strings.Contains(err.Error(), "its label ndp.dev/rendered-for may not be removed or changed") || !strings.Contains(err.Error(), name) {
		t.Errorf("changing the label: %v", err)
	}
	// Other metadata stays writable.
	if err := edit(func(mc *ndpmcv1.MachineConfig) {
		if mc.Annotations == nil {
			mc.Annotations = map[string]string{}
		}
		mc.Annotations["example.com/note"] = "ok"
	}); err != nil {
		t.Errorf("annotating %s: %v", name, err)
	}
	waitMachineConfig(t, name, restored)
}
