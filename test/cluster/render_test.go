package cluster

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/internal/testkit/builder"
	"github.com/ndp-dev/ndp/registries"
	"github.com/ndp-dev/ndp/render"
)

func TestRenderControllerTargetsARenderedConfig(t *testing.T) {
	ctx := context.Background()
	// The registries controller's 99-edge-generated-registries joins the sources.
	first := basePool(t, "edge")
	create(t, sourceMC("50-edge-chrony", "edge").WithFile("/etc/chrony.conf", "pool x").Build())
	second := waitPool(t, "edge", func(p *mcfgv1.MachineConfigPool) bool {
		return p.Spec.Configuration.Name != first.Spec.Configuration.Name && len(p.Spec.Configuration.Source) == 3
	})
	var rendered ndpmcv1.MachineConfig
	if err := k8s.Get(ctx, client.ObjectKey{Name: second.Spec.Configuration.Name}, &rendered); err != nil {
		t.Fatal(err)
	}
	if len(rendered.OwnerReferences) != 1 || rendered.OwnerReferences[0].Name != "edge" || rendered.Labels[ndpmcv1.RenderedForLabel] != "edge" {
		t.Errorf("rendered config metadata: %+v", rendered.ObjectMeta)
	}
	var sources map[string]string
	if err := json.Unmarshal([]byte(rendered.Annotations[ndpmcv1.SourcesAnnotation]), &sources); err != nil ||
		sources["file:/etc/chrony.conf"] != "50-edge-chrony" || sources["file:"+registries.ConfPath] != render.GeneratedRegistriesName("edge") {
		t.Errorf("sources annotation: %v (%v)", rendered.Annotations, err)
	}

	// A disk cannot be added to running nodes: no rendered config, and the
	// pool names the MachineConfig and the field. (The webhook refuses such
	// a MachineConfig; this one got in while the webhook was down.)
	withoutWebhook(t, machineConfigWebhook, invalidIgnitionMC())
	create(t, sourceMC("60-edge-disk", "edge").WithEntries("storage", "disks", builder.Entry{"device": "/dev/vdb", "wipeTable": true}).Build())
	degraded := waitPool(t, "edge", func(p *mcfgv1.MachineConfigPool) bool {
		c := renderCondition(p)
		return c != nil && c.Status == corev1.ConditionTrue
	})
	c := renderCondition(degraded)
	if !strings.Contains(c.Message, `MachineConfig "60-edge-disk": spec.config.storage.disks`) || c.Reason != "Unreconcilable" {
		t.Errorf("RenderDegraded: %+v", c)
	}
	if degraded.Spec.Configuration.Name != second.Spec.Configuration.Name {
		t.Errorf("the target moved to %s despite the unreconcilable change", degraded.Spec.Configuration.Name)
	}
	var all ndpmcv1.MachineConfigList
	if err := k8s.List(ctx, &all, client.MatchingLabels{ndpmcv1.RenderedForLabel: "edge"}); err != nil {
		t.Fatal(err)
	}
	for i := range all.Items {
		if cfg := parseMC(t, &all.Items[i]); len(cfg.Ignition.Storage.Disks) > 0 {
			t.Errorf("%s renders the unreconcilable disk", all.Items[i].Name)
		}
	}
}

// A pool created after its MachineConfigs gets one first target, with its
// generated registries config: a target rendered without it would move the
// pool's nodes, adopted at it, through one more update (a reboot under the
// default policies) moments later.
func TestRenderWaitsForTheGeneratedRegistriesConfig(t *testing.T) {
	ctx := context.Background()
	const pool = "firstrender"
	create(t, sourceMC("00-"+pool+"-base", pool).WithFile("/etc/kubernetes/kubelet.conf", "base").Build())
	create(t, sourceMC("50-"+pool+"-chrony", pool).WithFile("/etc/chrony.conf", "pool x").Build())
	create(t, machineConfigPool(pool))
	target := waitPool(t, pool, func(p *mcfgv1.MachineConfigPool) bool { return p.Spec.Configuration.Name != "" }).Spec.Configuration
	var names []string
	for _, s := range target.Source {
		names = append(names, s.Name)
	}
	if want := []string{"00-" + pool + "-base", "50-" + pool + "-chrony", render.GeneratedRegistriesName(pool)}; strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("the first target %s has sources %v, want %v", target.Name, names, want)
	}
	var all ndpmcv1.MachineConfigList
	if err := k8s.List(ctx, &all, client.MatchingLabels{ndpmcv1.RenderedForLabel: pool}); err != nil {
		t.Fatal(err)
	}
	if len(all.Items) != 1 {
		t.Errorf("%d rendered configs for the pool, want 1", len(all.Items))
	}
}
