package v1

import (
	"errors"
	"strings"
	"testing"
)

func chronyPlan() PostConfigActions {
	p := PostConfigActions{
		From:           "rendered-worker-a",
		Actions:        []PlanAction{{Type: "Restart", Restart: &PlanService{ServiceName: "chronyd.service"}}},
		PolicyRevision: "sha256:1",
	}
	p.PlanHash = p.Hash("rendered-worker-b")
	return p
}

func TestVerifyAcceptsItsOwnHash(t *testing.T) {
	p := chronyPlan()
	if err := p.Verify("rendered-worker-b"); err != nil {
		t.Fatal(err)
	}
}

func TestVerifyRefusesEditedPlans(t *testing.T) {
	for name, edit := range map[string]func(p *PostConfigActions){
		"action":   func(p *PostConfigActions) { p.Actions[0].Restart.ServiceName = "sshd.service" },
		"drain":    func(p *PostConfigActions) { p.Drain = true },
		"revision": func(p *PostConfigActions) { p.PolicyRevision = "sha256:2" },
		"from":     func(p *PostConfigActions) { p.From = "rendered-worker-c" },
		"hash":     func(p *PostConfigActions) { p.PlanHash = "sha256:00" },
	} {
		t.Run(name, func(t *testing.T) {
			p := chronyPlan()
			edit(&p)
			var mismatch *HashMismatchError
			if err := p.Verify("rendered-worker-b"); !errors.As(err, &mismatch) || !strings.Contains(err.Error(), "planHash mismatch") {
				t.Fatalf("got %v, want a planHash mismatch", err)
			}
		})
	}
	// The same plan is no plan for another target.
	p := chronyPlan()
	if err := p.Verify("rendered-worker-z"); err == nil {
		t.Fatal("a plan verified for a target it was not made for")
	}
}

func TestValidateRefusesWhatANodeCannotRun(t *testing.T) {
	svc := func(n string) *PlanService { return &PlanService{ServiceName: n} }
	for _, tc := range []struct {
		name    string
		actions []PlanAction
		reboot  bool
		want    string
	}{
		{"unknown type", []PlanAction{{Type: "Explode"}}, false, `unknown action type "Explode"`},
		{"drain as action", []PlanAction{{Type: "Drain"}}, false, `unknown action type "Drain"`},
		{"restart without unit", []PlanAction{{Type: "Restart"}}, false, "Restart names no unit"},
		{"bad unit", []PlanAction{{Type: "Reload", Reload: svc("../etc/passwd")}}, false, "invalid unit name"},
		{"reboot with others", []PlanAction{{Type: "Reboot"}, {Type: "DaemonReload"}}, true, "Reboot must be the only action"},
		{"reboot flag without action", []PlanAction{{Type: "DaemonReload"}}, true, "reboot is true"},
		{"empty", nil, false, "empty"},
		{"crossed unit", []PlanAction{{Type: "Reload", Reload: svc("a.service"), Restart: svc("b.service")}}, false, "another action type"},
		{"package update after a restart", []PlanAction{{Type: "Restart", Restart: svc("a.service")}, {Type: "PackageUpdate"}}, false, "PackageUpdate must be the first action"},
		{"package update twice", []PlanAction{{Type: "PackageUpdate"}, {Type: "PackageUpdate"}}, false, "PackageUpdate must be the first action"},
		{"reboot before a package update", []PlanAction{{Type: "Reboot"}, {Type: "PackageUpdate"}}, true, "Reboot must be the only action"},
		{"package update, reboot and more", []PlanAction{{Type: "PackageUpdate"}, {Type: "Reboot"}, {Type: "DaemonReload"}}, true, "Reboot must be the only action"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := PostConfigActions{From: "a", Actions: tc.actions, Reboot: tc.reboot}
			p.PlanHash = p.Hash("b")
			err := p.Verify("b")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	for _, ok := range []PostConfigActions{
		{From: "a", Actions: []PlanAction{{Type: "DaemonReload"}, {Type: "Reload", Reload: svc("crio.service")}, {Type: "Restart", Restart: svc("kubelet.service")}}},
		{From: "a", Actions: []PlanAction{{Type: "PackageUpdate"}, {Type: "Restart", Restart: svc("kubelet.service")}}},
		{From: "a", Actions: []PlanAction{{Type: "PackageUpdate"}, {Type: "Reboot"}}, Reboot: true},
	} {
		if err := ok.Validate(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestActionsConvertBothWays(t *testing.T) {
	in := []PlanAction{{Type: "DaemonReload"}, {Type: "Reload", Reload: &PlanService{ServiceName: "crio.service"}}, {Type: "Restart", Restart: &PlanService{ServiceName: "kubelet.service"}}}
	back := PlanActionsFrom(NodeDisruptionPolicyActions(in))
	if len(back) != 3 || back[1].String() != "Reload crio.service" || back[2].String() != "Restart kubelet.service" || back[0].String() != "DaemonReload" {
		t.Fatalf("round trip: %v", back)
	}
}

func TestStandingPlan(t *testing.T) {
	stored := MachineConfigStatus{PostConfigActions: []PostConfigActions{
		{From: "c1", PolicyRevision: "sha256:1"},
		{From: "c2", PolicyRevision: "sha256:old"},
	}}
	for _, tc := range []struct {
		name     string
		from     string
		revision string
		updating bool
		want     string // the stored plan's From, "" for nil
	}{
		{name: "made with the active revision: stands", from: "c1", revision: "sha256:1", want: "c1"},
		{name: "another revision, nobody running it: replaced", from: "c2", revision: "sha256:1"},
		{name: "another revision, a node running it: stands", from: "c2", revision: "sha256:1", updating: true, want: "c2"},
		{name: "no stored plan: computed", from: "c3", revision: "sha256:1"},
		{name: "no stored plan, even with a node updating", from: "c3", revision: "sha256:1", updating: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := stored.StandingPlan(tc.from, tc.revision, tc.updating)
			switch {
			case tc.want == "" && got != nil:
				t.Errorf("StandingPlan = plan from %s, want none", got.From)
			case tc.want != "" && (got == nil || got.From != tc.want):
				t.Errorf("StandingPlan = %v, want the plan from %s", got, tc.want)
			}
		})
	}
}
