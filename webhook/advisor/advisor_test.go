package advisor

import (
	"context"
	"os"
	"testing"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/ndp-dev/ndp/apis/scheme"
	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/planner/engine"
	"github.com/ndp-dev/ndp/policyset"
	"github.com/ndp-dev/ndp/webhook/internal/webhooktest"
)

func TestMain(m *testing.M) { os.Exit(webhooktest.Main(m)) }

// In advisor mode the previews' answers also depend on MachineConfiguration
// cluster (and Infrastructure and ControllerConfig): a change of it counts
// as a change of the inputs. A kind the API server does not serve (this
// one serves no Infrastructure or ControllerConfig) is not watched, and
// does not stop the watch.
func TestAdvisorWatchesTheMCOsInputs(t *testing.T) {
	cp := webhooktest.ControlPlane(t)
	c := cp.Client
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	informers, err := cache.New(cp.Config, cache.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = informers.Start(ctx) }()
	p := NewPreviewer(c, policyset.NewActivePolicies(engine.Options{}))
	done := make(chan error, 1)
	go func() { done <- p.WatchInputs(ctx, informers) }()
	testkit.Until(t, "the nodes are counted", p.NodesCounted)
	select {
	case err := <-done:
		t.Fatalf("WatchInputs stopped: %v", err)
	default:
	}
	before := p.Inputs()
	mc := &operatorv1.MachineConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}, Spec: operatorv1.MachineConfigurationSpec{
		StaticPodOperatorSpec: operatorv1.StaticPodOperatorSpec{OperatorSpec: operatorv1.OperatorSpec{ManagementState: operatorv1.Managed}},
		// The Go type always sends sshkey: the CRD then wants its actions.
		NodeDisruptionPolicy: operatorv1.NodeDisruptionPolicyConfig{SSHKey: operatorv1.NodeDisruptionPolicySpecSSHKey{Actions: []operatorv1.NodeDisruptionPolicySpecAction{{Type: operatorv1.NoneSpecAction}}}},
	}}
	if err := c.Create(ctx, mc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), mc) })
	testkit.Until(t, "a MachineConfiguration counts as a change of the inputs", func() bool { return p.Inputs() > before }, testkit.Within(30*time.Second))
}
