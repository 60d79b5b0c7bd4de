package cluster

// Waits the cluster tests share: for an object, a pool, a plan, a
// condition, an event, each within testkit.Patience.

import (
	"context"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/planner"
)

// waitObject polls the named cluster-scoped object until ok accepts it, and
// returns it.
func waitObject[T any, P interface {
	*T
	client.Object
}](t testing.TB, name, what string, ok func(P) bool) P {
	t.Helper()
	var got P
	testkit.Until(t, name+": "+what, func() bool {
		got = P(new(T))
		return k8s.Get(context.Background(), client.ObjectKey{Name: name}, got) == nil && ok(got)
	})
	return got
}

// waitPool polls a pool until ok accepts it.
func waitPool(t *testing.T, name string, ok func(*mcfgv1.MachineConfigPool) bool) *mcfgv1.MachineConfigPool {
	t.Helper()
	return waitObject(t, name, "pool as expected", ok)
}

func renderCondition(p *mcfgv1.MachineConfigPool) *mcfgv1.MachineConfigPoolCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == mcfgv1.MachineConfigPoolRenderDegraded {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// waitMachineConfig polls a MachineConfig until ok accepts it.
func waitMachineConfig(t *testing.T, name string, ok func(*ndpmcv1.MachineConfig) bool) *ndpmcv1.MachineConfig {
	t.Helper()
	return waitObject(t, name, "MachineConfig as expected", ok)
}

func parseMC(t *testing.T, mc *ndpmcv1.MachineConfig) *machineconfig.Config {
	t.Helper()
	cfg, err := machineconfig.New(mc.Name, mc.Spec)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func poolCondition(t *testing.T, pool string, want corev1.ConditionStatus) mcfgv1.MachineConfigPoolCondition {
	t.Helper()
	var found mcfgv1.MachineConfigPoolCondition
	waitPool(t, pool, func(p *mcfgv1.MachineConfigPool) bool {
		for _, c := range p.Status.Conditions {
			if c.Type == ndpmcv1.ConditionRegistriesDegraded && c.Status == want {
				found = c
				return true
			}
		}
		return false
	})
	return found
}

// waitPlans polls a MachineConfig until its plans satisfy ok.
func waitPlans(t *testing.T, name string, ok func([]ndpmcv1.PostConfigActions) bool) []ndpmcv1.PostConfigActions {
	t.Helper()
	return waitObject(t, name, "plans as expected", func(mc *ndpmcv1.MachineConfig) bool {
		return ok(mc.Status.PostConfigActions)
	}).Status.PostConfigActions
}

// waitCondition polls a policy until its condition has the status wanted
// for the current generation, and returns the policy.
func waitCondition(t *testing.T, name, typ string, want metav1.ConditionStatus) *v1alpha1.NodeDisruptionPolicy {
	t.Helper()
	return waitObject(t, name, "condition "+typ+" is "+string(want), func(p *v1alpha1.NodeDisruptionPolicy) bool {
		c := meta.FindStatusCondition(p.Status.Conditions, typ)
		return c != nil && c.Status == want && c.ObservedGeneration == p.Generation
	})
}

func chronyPlan(t *testing.T) *planner.Plan {
	t.Helper()
	p := active.Planner()
	if p == nil {
		t.Fatal("no active policy set")
	}
	old, err := machineconfig.Parse("old", []byte(`{"kind":"MachineConfig","metadata":{"name":"a"},"spec":{"config":{"ignition":{"version":"3.4.0"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	new, err := machineconfig.Parse("new", []byte(`{"kind":"MachineConfig","metadata":{"name":"b"},"spec":{"config":{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/etc/chrony.conf","contents":{"source":"data:,x"}}]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := p.Plan(context.Background(), planner.Request{From: old, To: new})
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

func actionTypes(p *planner.Plan) string {
	var s []string
	for _, a := range p.Actions {
		s = append(s, string(a.Type))
	}
	return strings.Join(s, ",")
}

func waitEvent(t *testing.T, object, reason string) {
	t.Helper()
	testkit.Until(t, "a "+reason+" event for "+object, func() bool {
		var list eventsv1.EventList
		if err := k8s.List(context.Background(), &list); err != nil {
			return false
		}
		for _, e := range list.Items {
			if e.Regarding.Name == object && e.Reason == reason {
				return true
			}
		}
		return false
	})
}

func metricCount(t *testing.T, name string) uint64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			n += m.GetHistogram().GetSampleCount()
		}
	}
	return n
}

// printed checks that a kubectl command succeeded and printed want.
func printed(t *testing.T, what, want, out string, err error) {
	t.Helper()
	if err != nil || !strings.Contains(out, want) {
		t.Errorf("%s, printed (%v):\n%s\nwant %q", what, err, out, want)
	}
}

func renderedCount(t *testing.T, pool string) int {
	t.Helper()
	var list ndpmcv1.MachineConfigList
	if err := k8s.List(context.Background(), &list, client.MatchingLabels{ndpmcv1.RenderedForLabel: pool}); err != nil {
		t.Fatal(err)
	}
	return len(list.Items)
}
