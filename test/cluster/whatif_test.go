package cluster

import (
	"context"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/internal/testkit"
)

// warningLine runs a kubectl dry-run and returns its warning line that
// starts with prefix ("Warning: " left out). A what-if the replica could
// not make yet (policies still loading after another test's) is retried;
// the test fails if the command fails or never prints the line.
func warningLine(t *testing.T, what, prefix string, dryRun func() (string, error)) (line, out string) {
	t.Helper()
	var err error
	testkit.Until(t, what+" warns "+prefix, func() bool {
		out, err = dryRun()
		if err != nil {
			t.Fatalf("%s: %v\n%s", what, err, out)
		}
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "Warning: "+prefix) {
				line = strings.TrimPrefix(l, "Warning: ")
				return true
			}
		}
		if !strings.Contains(out, "Warning: ndp: no what-if preview: ") {
			t.Fatalf("%s printed no warning starting %q:\n%s", what, prefix, out)
		}
		return false
	})
	return line, out
}

// The what-if of a policy edit: a server dry-run of a NodeDisruptionPolicy
// create, update or delete warns which waiting plans would change, and
// changes nothing.
func TestPolicyDryRunPreviewsPendingPlanChanges(t *testing.T) {
	ctx := context.Background()
	// Three nodes on A, while the pool's target B adds chrony.conf: each
	// waits for the plan A → B, a reboot with the default policy alone.
	a := previewPool(t, "whatif", 3)
	create(t, sourceMC("50-whatif-chrony", "whatif").WithFile("/etc/chrony.conf", "pool ntp.example.com iburst").Build())
	b := waitPool(t, "whatif", func(p *mcfgv1.MachineConfigPool) bool { return len(p.Spec.Configuration.Source) == 3 }).Spec.Configuration.Name
	waitPlans(t, b, func(ps []ndpmcv1.PostConfigActions) bool {
		return len(ps) == 1 && ps[0].From == a && ps[0].Reboot && ps[0].PolicyRevision == active.Planner().Engine.Revision()
	})
	group := "pool whatif, 3 nodes " + a + " → " + b + ": "

	// Creating the chrony policy would make it a restart.
	chrony := newPolicy("whatif-chrony", chronySpec())
	got, out := warningLine(t, "a dry-run create", "pool whatif,", func() (string, error) { return kubectlFile(t, manifest(t, chrony), "apply", "--dry-run=server") })
	if want := group + "Reboot → Restart chronyd.service (no drain)"; got != want {
		t.Errorf("a dry-run create warned\n%q, want\n%q", got, want)
	}
	if !strings.Contains(out, "nodedisruptionpolicy.ndp.dev/whatif-chrony created (server dry run)") {
		t.Errorf("a dry-run create printed:\n%s", out)
	}
	mustNotExist(t, &v1alpha1.NodeDisruptionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "whatif-chrony"}})
	waitPlans(t, b, func(ps []ndpmcv1.PostConfigActions) bool { return len(ps) == 1 && ps[0].Reboot })

	// Created for real, the plan becomes the restart.
	out, err := kubectlFile(t, manifest(t, chrony), "apply")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = kubectl(t, "delete", "nodedisruptionpolicy", "whatif-chrony", "--ignore-not-found") })
	waitCondition(t, "whatif-chrony", v1alpha1.ConditionAccepted, metav1.ConditionTrue)
	restarting := waitPlans(t, b, func(ps []ndpmcv1.PostConfigActions) bool {
		return len(ps) == 1 && len(ps[0].Actions) == 1 && ps[0].Actions[0].Type == "Restart"
	})[0]

	// Deleting it would bring the reboot back; a dry-run deletes nothing.
	got, _ = warningLine(t, "a dry-run delete", "pool whatif,", func() (string, error) {
		return kubectl(t, "delete", "--dry-run=server", "nodedisruptionpolicy", "whatif-chrony")
	})
	if want := group + "Restart chronyd.service (no drain) → Reboot"; got != want {
		t.Errorf("a dry-run delete warned\n%q, want\n%q", got, want)
	}
	var pol v1alpha1.NodeDisruptionPolicy
	if err := k8s.Get(ctx, client.ObjectKey{Name: "whatif-chrony"}, &pol); err != nil || !pol.DeletionTimestamp.IsZero() {
		t.Fatalf("after a dry-run delete: %v, deletion %v", err, pol.DeletionTimestamp)
	}
	generation := pol.Generation

	// An edit that claims a file no waiting plan touches changes nothing,
	// and says so.
	edit := newPolicy("whatif-chrony", chronySpec())
	edit.Spec.Files = append(edit.Spec.Files, operatorv1.NodeDisruptionPolicySpecFile{Path: "/etc/whatif-unrelated.conf", Actions: []operatorv1.NodeDisruptionPolicySpecAction{restart("unrelated.service")}})
	line, out := warningLine(t, "a dry-run edit", "no pending plan changes", func() (string, error) { return kubectlFile(t, manifest(t, edit), "apply", "--dry-run=server") })
	if !strings.HasPrefix(line, "no pending plan changes: the plans of ") {
		t.Errorf("a dry-run edit warned %q", line)
	}
	if strings.Contains(out, "Warning: pool whatif,") {
		t.Errorf("a dry-run edit that changes no plan warned of one:\n%s", out)
	}
	// A label: the spec is unchanged.
	labelled := newPolicy("whatif-chrony", chronySpec())
	labelled.Labels = map[string]string{"team": "infra"}
	out, err = kubectlFile(t, manifest(t, labelled), "apply", "--dry-run=server")
	printed(t, "a dry-run of a label", "Warning: no pending plan changes: the spec is unchanged", out, err)

	// The built-in default cannot be deleted: the controller restores it.
	out, err = kubectl(t, "delete", "--dry-run=server", "nodedisruptionpolicy", "default")
	printed(t, "a dry-run delete of the default", "Warning: NodeDisruptionPolicy default cannot be deleted: ndp-controller restores it at once", out, err)

	// Nothing was stored: the policy, the default and the plan are as they were.
	if err := k8s.Get(ctx, client.ObjectKey{Name: "whatif-chrony"}, &pol); err != nil || pol.Generation != generation {
		t.Errorf("after the dry-runs: %v, generation %d, was %d", err, pol.Generation, generation)
	}
	var def v1alpha1.NodeDisruptionPolicy
	if err := k8s.Get(ctx, client.ObjectKey{Name: "default"}, &def); err != nil || !def.DeletionTimestamp.IsZero() {
		t.Errorf("the default policy after a dry-run delete: %v", err)
	}
	var target ndpmcv1.MachineConfig
	if err := k8s.Get(ctx, client.ObjectKey{Name: b}, &target); err != nil {
		t.Fatal(err)
	}
	if got := target.Status.PlanFrom(a); got == nil || got.PlanHash != restarting.PlanHash {
		t.Errorf("the stored plan changed: %+v, was %+v", got, restarting)
	}

	// A real delete is not previewed (the webhook is called for dry-runs
	// only) and goes through.
	out, err = kubectl(t, "delete", "nodedisruptionpolicy", "whatif-chrony")
	if err != nil || strings.Contains(out, "Warning:") {
		t.Errorf("a real delete (%v):\n%s", err, out)
	}
	waitPlans(t, b, func(ps []ndpmcv1.PostConfigActions) bool { return len(ps) == 1 && ps[0].Reboot })
}
