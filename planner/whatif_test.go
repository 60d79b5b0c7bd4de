package planner_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	operatorv1 "github.com/openshift/api/operator/v1"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/internal/testkit/builder"
	"github.com/ndp-dev/ndp/internal/testkit/policytest"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/changeset"
	"github.com/ndp-dev/ndp/planner/policy"
)

func chronyPolicy() policy.Policy {
	return policy.Policy{Name: "chrony", Priority: 100, Files: []operatorv1.NodeDisruptionPolicySpecFile{{
		Path: "/etc/chrony.conf", Actions: []policy.Action{policy.RestartAction("chronyd.service")}}}}
}

func TestOutcomeString(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    planner.Outcome
		want string
	}{
		{"reboot drains", planner.Outcome{Actions: []policy.Action{{Type: policy.ActionReboot}}, Drain: true, Reboot: true}, "Reboot"},
		{"package update", planner.Outcome{Actions: []policy.Action{{Type: policy.ActionPackageUpdate}}}, "PackageUpdate (no drain; drain and reboot if the host asks)"},
		{"package update, drained", planner.Outcome{Actions: []policy.Action{{Type: policy.ActionPackageUpdate}}, Drain: true}, "PackageUpdate (drain; reboot if the host asks)"},
		{"package update and reboot", planner.Outcome{Actions: []policy.Action{{Type: policy.ActionPackageUpdate}, {Type: policy.ActionReboot}}, Drain: true, Reboot: true}, "PackageUpdate, Reboot"},
		{"single-node reboot", planner.Outcome{Actions: []policy.Action{{Type: policy.ActionReboot}}, Reboot: true}, "Reboot (no drain)"},
		{"restart", planner.Outcome{Actions: []policy.Action{policy.RestartAction("chronyd.service")}}, "Restart chronyd.service (no drain)"},
		{"reload with a drain", planner.Outcome{Actions: []policy.Action{policy.ReloadAction("crio.service")}, Drain: true}, "Reload crio.service (drain)"},
		{"several", planner.Outcome{Actions: []policy.Action{{Type: policy.ActionDaemonReload}, policy.RestartAction("kubelet.service")}}, "DaemonReload, Restart kubelet.service (no drain)"},
		{"nothing", planner.Outcome{Actions: []policy.Action{{Type: policy.ActionNone}}}, "None (no drain)"},
		{"no actions at all", planner.Outcome{}, "None (no drain)"},
		{"unreconcilable", planner.Outcome{Unreconcilable: true}, "unreconcilable (cannot be applied in place)"},
		{"failure", planner.Outcome{Err: "evaluation took longer than 2s"}, "planning fails: evaluation took longer than 2s"},
	} {
		if got := tc.o.String(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// The what-if of a policy: without it chrony reboots, with it chronyd
// restarts; the text is the webhook's and the CLI's.
func TestPlanChangeOfAPolicy(t *testing.T) {
	from := builder.MachineConfig("rendered-worker-1a2b").Config(t)
	to := builder.MachineConfig("rendered-worker-7a8b").WithFiles(builder.File("/etc/chrony.conf", "pool ntp.example.com iburst")).Config(t)
	before := plan(t, policytest.Planner(t), from, to)
	after := plan(t, policytest.Planner(t, chronyPolicy()), from, to)

	c := planner.PlanChange{Before: planner.OutcomeOf(before, nil), After: planner.OutcomeOf(after, nil)}
	if !c.Changed() {
		t.Fatal("adding the chrony policy changes nothing")
	}
	if got, want := c.String(), "Reboot → Restart chronyd.service (no drain)"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	back := planner.PlanChange{Before: c.After, After: c.Before}
	if got, want := back.String(), "Restart chronyd.service (no drain) → Reboot"; got != want {
		t.Errorf("removing the policy: %q, want %q", got, want)
	}

	// The decision that changed, for the CLI's explanation.
	d := planner.DecisionChanges(before, after)
	if len(d) != 1 || d[0].Change != "file /etc/chrony.conf: added" {
		t.Fatalf("decision changes: %+v", d)
	}
	if got, want := planner.FormatDecision(d[0].Before)+" → "+planner.FormatDecision(d[0].After), "no policy: Reboot → policy chrony: Restart chronyd.service"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	if d := planner.DecisionChanges(before, before); len(d) != 0 {
		t.Errorf("a plan differs from itself: %+v", d)
	}
}

// Another revision that plans the same is no change: reasons, revision and
// hash are not what a node does.
func TestPlanChangeIgnoresRevisionAndReasons(t *testing.T) {
	from := builder.MachineConfig("a").Config(t)
	to := builder.MachineConfig("b").WithFiles(builder.File("/etc/chrony.conf", "x"), builder.File("/var/lib/kubelet/config.json", "{}")).Config(t)
	unrelated := policy.Policy{Name: "unrelated", Priority: 100, Files: []operatorv1.NodeDisruptionPolicySpecFile{{
		Path: "/etc/unrelated.conf", Actions: []policy.Action{policy.RestartAction("unrelated.service")}}}}
	before := plan(t, policytest.Planner(t, chronyPolicy()), from, to)
	after := plan(t, policytest.Planner(t, chronyPolicy(), unrelated), from, to)
	if before.PolicyRevision == after.PolicyRevision {
		t.Fatal("the revisions are the same")
	}
	c := planner.PlanChange{Before: planner.OutcomeOf(before, nil), After: planner.OutcomeOf(after, nil)}
	if c.Changed() {
		t.Errorf("an unrelated policy changed the plan: %s", c)
	}
	if got, want := c.String(), "no change: Restart chronyd.service (no drain)"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}

// A plan stored in MachineConfig status compares with the planner's own.
func TestStoredOutcomeComparesWithThePlan(t *testing.T) {
	from := builder.MachineConfig("a").Config(t)
	to := builder.MachineConfig("b").WithFiles(builder.File("/etc/chrony.conf", "x")).Config(t)
	p := plan(t, policytest.Planner(t, chronyPolicy()), from, to)
	stored := p.PostConfigActions()
	if c := (planner.PlanChange{Before: planner.StoredOutcome(&stored), After: planner.OutcomeOf(p, nil)}); c.Changed() {
		t.Errorf("the stored plan differs from itself: %s", c)
	}
	rebootStored := ndpmcv1.PostConfigActions{From: "a", Actions: []ndpmcv1.PlanAction{{Type: ndpmcv1.RebootAction}}, Drain: true, Reboot: true}
	c := planner.PlanChange{Before: planner.StoredOutcome(&rebootStored), After: planner.OutcomeOf(p, nil)}
	if got, want := c.String(), "Reboot → Restart chronyd.service (no drain)"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	// Same actions, other order: a node does something else.
	two := planner.Outcome{Actions: []policy.Action{policy.RestartAction("a.service"), policy.RestartAction("b.service")}}
	swapped := planner.Outcome{Actions: []policy.Action{policy.RestartAction("b.service"), policy.RestartAction("a.service")}}
	if two.Equal(swapped) {
		t.Error("the order of actions is ignored")
	}
	if drained := (planner.Outcome{Actions: two.Actions, Drain: true}); two.Equal(drained) {
		t.Error("the drain is ignored")
	}
}

// A plan that becomes unreconcilable or fails is a change, and says so.
func TestPlanChangeToNoPlan(t *testing.T) {
	reboot := planner.Outcome{Actions: []policy.Action{{Type: policy.ActionReboot}}, Drain: true, Reboot: true}
	for _, tc := range []struct {
		after planner.Outcome
		want  string
	}{
		{planner.OutcomeOf(nil, errors.New("evaluating policies: deadline")), "Reboot → planning fails: evaluating policies: deadline"},
		{planner.OutcomeOf(&planner.Plan{Unreconcilable: []changeset.Unreconcilable{{Field: "spec.config.storage.disks"}}}, nil), "Reboot → unreconcilable (cannot be applied in place)"},
	} {
		c := planner.PlanChange{Before: reboot, After: tc.after}
		if !c.Changed() || c.String() != tc.want {
			t.Errorf("%q (changed %t), want %q", c.String(), c.Changed(), tc.want)
		}
	}
	same := planner.PlanChange{Before: planner.Outcome{Err: "x"}, After: planner.Outcome{Err: "x"}}
	if same.Changed() {
		t.Error("the same failure twice is a change")
	}
}

// A single-node cluster never drains: the text says so.
func TestPlanChangeSingleNode(t *testing.T) {
	from := builder.MachineConfig("a").Config(t)
	to := builder.MachineConfig("b").WithFiles(builder.File("/etc/chrony.conf", "x")).Config(t)
	p, err := policytest.Planner(t).Plan(context.Background(), planner.Request{From: from, To: to, SingleNode: true})
	if err != nil {
		t.Fatal(err)
	}
	after := plan(t, policytest.Planner(t, chronyPolicy()), from, to)
	c := planner.PlanChange{Before: planner.OutcomeOf(p, nil), After: planner.OutcomeOf(after, nil)}
	if diff := cmp.Diff("Reboot (no drain) → Restart chronyd.service (no drain)", c.String()); diff != "" {
		t.Error(diff)
	}
}
