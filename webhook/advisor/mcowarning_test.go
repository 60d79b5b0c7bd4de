package advisor

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	operatorv1 "github.com/openshift/api/operator/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/ndp-dev/ndp/mco/mcorules"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/policy"
)

var (
	reboot  = mcorules.Action{Type: operatorv1.RebootStatusAction}
	none    = mcorules.Action{Type: operatorv1.NoneStatusAction}
	drain   = mcorules.Action{Type: operatorv1.DrainStatusAction}
	special = mcorules.Action{Type: operatorv1.SpecialStatusAction}
)

func restart(s string) mcorules.Action {
	return mcorules.Action{Type: operatorv1.RestartStatusAction, Service: s}
}

func reload(s string) mcorules.Action {
	return mcorules.Action{Type: operatorv1.ReloadStatusAction, Service: s}
}

func TestShorten(t *testing.T) {
	long := strings.Repeat("word ", 100)
	for _, tc := range []struct {
		name, in string
		max      int
		want     string
	}{
		{"fits", "MCO: pool worker", 256, "MCO: pool worker"},
		{"exactly", strings.Repeat("a", 256), 256, strings.Repeat("a", 256)},
		{"cut at a word", "alpha beta gamma delta", 20, "alpha beta" + cutMark},
		{"cut after a separator", "alpha; beta, gamma delta", 20, "alpha; beta" + cutMark},
		{"separators not kept at the end", "alpha; beta, gamma", 17, "alpha" + cutMark},
		{"one long word", strings.Repeat("x", 30), 20, strings.Repeat("x", 20-len(cutMark)) + cutMark},
		{"never inside a character", "ééééééééééééééé", 20, strings.Repeat("é", 5) + cutMark},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := shorten(tc.in, tc.max)
			if got != tc.want {
				t.Errorf("shorten(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
			}
			if len(got) > tc.max || !utf8.ValidString(got) {
				t.Errorf("%q: %d bytes (max %d), valid UTF-8 %v", got, len(got), tc.max, utf8.ValidString(got))
			}
		})
	}
	if got := shorten(long, MaxWarningBytes); len(got) > MaxWarningBytes || !strings.HasSuffix(got, "word"+cutMark) {
		t.Errorf("a long warning: %q (%d bytes)", got, len(got))
	}
}

func TestFitMCOWarnings(t *testing.T) {
	line := func(i, n int) string { return fmt.Sprintf("MCO: pool p%03d, 3 nodes: %s", i, strings.Repeat("x", n)) }
	many := func(count, n int) []string {
		var ws []string
		for i := range count {
			ws = append(ws, line(i, n))
		}
		return ws
	}
	for _, tc := range []struct {
		name      string
		in        []string
		wantKept  int // warnings kept as given (or shortened)
		wantNote  int // N of "(+N more ...)", 0 for none
		shortened bool
	}{
		{"few", many(3, 50), 3, 0, false},
		{"one too long", []string{line(0, 400)}, 1, 0, true},
		{"control characters", []string{"MCO: a\nb\tc"}, 1, 0, false},
		// 201-byte lines: 20 fit in 4096 with the note, the rest are counted.
		{"more than 4 KiB", many(40, 176), 20, 20, false},
		// 256-byte lines: 16 are exactly 4096 bytes.
		{"just 4 KiB", many(16, 231), 16, 0, false},
		// One byte more: the 16th no longer fits with the note after it.
		{"one byte more than 4 KiB", append(many(16, 231), "x"), 15, 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := fitMCOWarnings(tc.in)
			total := 0
			for _, w := range got {
				total += len(w)
				if len(w) > MaxWarningBytes {
					t.Errorf("warning of %d bytes: %q", len(w), w)
				}
				if strings.ContainsAny(w, "\n\t") {
					t.Errorf("control character in %q", w)
				}
			}
			if total > MaxWarningsBytes {
				t.Errorf("%d bytes in all, more than %d", total, MaxWarningsBytes)
			}
			kept := len(got)
			note := 0
			if kept > 0 {
				if _, err := fmt.Sscanf(got[kept-1], moreNote, &note); err == nil {
					kept--
				}
			}
			if kept != tc.wantKept || note != tc.wantNote {
				t.Errorf("kept %d with note %d, want %d and %d: %q", kept, note, tc.wantKept, tc.wantNote, got)
			}
			if kept+note != len(tc.in) {
				t.Errorf("%d kept + %d counted != %d given", kept, note, len(tc.in))
			}
			if tc.shortened != strings.HasSuffix(got[0], cutMark) {
				t.Errorf("shortened %v: %q", tc.shortened, got[0])
			}
		})
	}
}

func TestDecisionPhrase(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    mcorules.Decision
		want [3]string
	}{
		{"reboot", mcorules.Decision{Actions: []mcorules.Action{reboot}, Drain: true, Reboot: true},
			[3]string{"drain and reboot", "drains and reboots", "draining and rebooting"}},
		{"single node", mcorules.Decision{Actions: []mcorules.Action{reboot}, Reboot: true},
			[3]string{"reboot, no drain", "reboots without draining", "rebooting without draining"}},
		{"restart", mcorules.Decision{Actions: []mcorules.Action{restart("chronyd.service")}},
			[3]string{"restart chronyd.service, no drain", "restarts chronyd.service", "restarting chronyd.service"}},
		{"special safe, duplicates said once", mcorules.Decision{Actions: []mcorules.Action{special, special}},
			[3]string{"reload crio.service, no drain", "reloads crio.service", "reloading crio.service"}},
		{"special unsafe", mcorules.Decision{Actions: []mcorules.Action{special}, Drain: true},
			[3]string{"reload crio.service and drain", "reloads crio.service and drains", "reloading crio.service and draining"}},
		{"none", mcorules.Decision{Actions: []mcorules.Action{none}},
			[3]string{"nothing to do (no drain, no reboot)", "does nothing", "doing nothing"}},
		{"drain only", mcorules.Decision{Actions: []mcorules.Action{drain}, Drain: true},
			[3]string{"drain", "drains", "draining"}},
		{"refused", mcorules.Decision{Refused: []string{"spec.config.storage.directories: /var/x added"}},
			[3]string{"refused (spec.config.storage.directories: /var/x added): the nodes go Unreconcilable", "is refused (spec.config.storage.directories: /var/x added)", "being refused (spec.config.storage.directories: /var/x added)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for form, want := range tc.want {
				if got := decisionPhrase(&tc.d, form); got != want {
					t.Errorf("form %d: %q, want %q", form, got, want)
				}
			}
		})
	}
}

func TestMCOPreviewWarning(t *testing.T) {
	chrony := &mcorules.Decision{Actions: []mcorules.Action{reboot}, Drain: true, Reboot: true,
		Rules: []mcorules.Rule{{Change: "file /etc/chrony.conf", Rule: "no node disruption policy", Actions: []mcorules.Action{reboot}}}}
	refused := &mcorules.Decision{Refused: []string{"spec.config.storage.directories: /var/lib/x added"}}
	mirrors := &mcorules.Decision{Actions: []mcorules.Action{special}, Drain: true,
		Rules: []mcorules.Rule{
			{Change: "file /etc/containers/registries.conf", Rule: "file policy /etc/containers/registries.conf", Actions: []mcorules.Action{special}},
			{Change: "file /etc/containers/policy.json", Rule: "file policy /etc/containers/policy.json", Actions: []mcorules.Action{reload("crio.service")}},
		}}
	for _, tc := range []struct {
		name string
		pp   MCOPreview
		want string
	}{
		{"one group", MCOPreview{Pool: "worker", Nodes: 3, Groups: []MCOGroup{{From: "rendered-worker-1", Nodes: 3, Decision: chrony}}},
			"MCO: pool worker, 3 nodes: drain and reboot (file /etc/chrony.conf: no node disruption policy)"},
		{"refused", MCOPreview{Pool: "worker", Nodes: 3, Groups: []MCOGroup{{From: "rendered-worker-1", Nodes: 3, Decision: refused}}},
			"MCO: pool worker, 3 nodes: refused (spec.config.storage.directories: /var/lib/x added): the nodes go Unreconcilable"},
		{"the drain's rule only", MCOPreview{Pool: "worker", Nodes: 1, Groups: []MCOGroup{{From: "a", Nodes: 1, Decision: mirrors}}},
			"MCO: pool worker, 1 node: reload crio.service and drain (file policy /etc/containers/registries.conf)"},
		{"two groups and an up-to-date node", MCOPreview{Pool: "infra", Nodes: 4, UpToDate: 1, Groups: []MCOGroup{{From: "a", Nodes: 2, Decision: chrony}, {From: "b", Nodes: 1, Decision: refused}}},
			"MCO: pool infra, 4 nodes: 2 nodes from a: drain and reboot (file /etc/chrony.conf: no node disruption policy); 1 node from b: refused (spec.config.storage.directories: /var/lib/x added): the nodes go Unreconcilable; 1 node already on it"},
		{"no nodes", MCOPreview{Pool: "empty", Rendered: "rendered-empty-x"}, "MCO: pool empty, 0 nodes: new rendered config rendered-empty-x, no node to update"},
		{"unchanged", MCOPreview{Pool: "master", Nodes: 3, Unchanged: true}, "MCO: pool master, 3 nodes: no change to the rendered config, no node is updated"},
		{"refused twice: the first and a count", MCOPreview{Pool: "worker", Nodes: 1, Groups: []MCOGroup{{From: "a", Nodes: 1, Decision: &mcorules.Decision{Refused: []string{"spec.fips: changed", "spec.config.storage.disks: changed"}}}}},
			"MCO: pool worker, 1 node: refused (spec.fips: changed; +1 more): the nodes go Unreconcilable"},
		{"the daemon fails", MCOPreview{Pool: "worker", Nodes: 2, Groups: []MCOGroup{{From: "a", Nodes: 2, Decision: &mcorules.Decision{Actions: []mcorules.Action{special}, Error: "new /etc/containers/registries.conf: failed decoding TOML: line 3"}}}},
			"MCO: pool worker, 2 nodes: fail (new /etc/containers/registries.conf: failed decoding TOML: line 3): the nodes go Degraded and retry"},
		{"unchanged, pending", MCOPreview{Pool: "master", Nodes: 3, Unchanged: true, Pending: 2}, "MCO: pool master, 3 nodes: no change to the rendered config (2 nodes still moving to it)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.pp.Warning(); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func specRestart(s string) policy.Action {
	return policy.Action{Type: policy.ActionRestart, Restart: &operatorv1.RestartService{ServiceName: operatorv1.NodeDisruptionPolicyServiceName(s)}}
}

func TestNDPWarning(t *testing.T) {
	chronyMCO := &mcorules.Decision{Actions: []mcorules.Action{reboot}, Drain: true, Reboot: true,
		Rules: []mcorules.Rule{{Change: "file /etc/chrony.conf", Rule: "no node disruption policy", Actions: []mcorules.Action{reboot}}}}
	chronyNDP := &planner.Plan{Actions: []policy.Action{specRestart("chronyd.service")},
		Reasons: []planner.Reason{{Change: "file /etc/chrony.conf: contents changed", Policy: "chrony", Match: "/etc/chrony.conf", Actions: []policy.Action{specRestart("chronyd.service")}}}}
	declarative := policy.Policy{Name: "chrony", Files: []operatorv1.NodeDisruptionPolicySpecFile{{Path: "/etc/chrony.conf", Actions: []policy.Action{specRestart("chronyd.service")}}}}
	perPool := declarative
	perPool.PoolSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "infra"}}
	rego := policy.Policy{Name: "chrony", Modules: []policy.Module{{Source: "package x"}}}
	unsafeMCO := &mcorules.Decision{Actions: []mcorules.Action{special}, Drain: true,
		Rules: []mcorules.Rule{{Change: "file /etc/containers/registries.conf", Rule: "file policy /etc/containers/registries.conf", Actions: []mcorules.Action{special}}}}
	reloadCrio := policy.Action{Type: policy.ActionReload, Reload: &operatorv1.ReloadService{ServiceName: "crio.service"}}
	noDrainNDP := &planner.Plan{Actions: []policy.Action{reloadCrio},
		Reasons: []planner.Reason{{Change: "file /etc/containers/registries.conf: contents changed", Policy: "default", Actions: []policy.Action{reloadCrio}}}}
	rebootNDP := &planner.Plan{Actions: []policy.Action{{Type: policy.ActionReboot}}, Drain: true, Reboot: true}
	for _, tc := range []struct {
		name   string
		mco    *mcorules.Decision
		ndp    *planner.Plan
		active map[string]policy.Policy
		want   string
	}{
		{"declarative: the entry", chronyMCO, chronyNDP, map[string]policy.Policy{"chrony": declarative},
			"ndp: pool worker: restart chronyd.service, no drain; for the MCO add spec.nodeDisruptionPolicy.files: [{path: /etc/chrony.conf, actions: [{type: Restart, restart: {serviceName: chronyd.service}}]}]"},
		{"per pool: why not", chronyMCO, chronyNDP, map[string]policy.Policy{"chrony": perPool},
			"ndp: pool worker: restart chronyd.service, no drain; the MCO cannot: policy chrony is for some pools only, the MCO's policies are cluster-wide"},
		{"rego: why not", chronyMCO, chronyNDP, map[string]policy.Policy{"chrony": rego},
			"ndp: pool worker: restart chronyd.service, no drain; the MCO cannot: policy chrony decides /etc/chrony.conf by its contents (Rego)"},
		{"an unsafe registries change: why not", unsafeMCO, noDrainNDP, map[string]policy.Policy{"default": {Name: "default"}},
			"ndp: pool worker: reload crio.service, no drain; the MCO cannot: the MCO drains every unsafe registries.conf change (its Special rule)"},
		{"ndp no better: no line", chronyMCO, rebootNDP, nil, ""},
		{"no ndp plan: no line", chronyMCO, nil, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pp := MCOPreview{Pool: "worker", Nodes: 3, Groups: []MCOGroup{{From: "a", Nodes: 3, Decision: tc.mco, NDP: tc.ndp}}}
			got := pp.NDPWarning(func(n string) (policy.Policy, bool) { p, ok := tc.active[n]; return p, ok })
			if got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
			if len(got) > MaxWarningBytes {
				t.Errorf("%d bytes", len(got))
			}
		})
	}
}

// Where ndpCanBeLess is false the previews do not plan: NDPWarning would
// say nothing for any plan, even the least disruptive.
func TestNDPCanBeLess(t *testing.T) {
	least := &planner.Plan{}
	for _, tc := range []struct {
		name string
		d    *mcorules.Decision
		want bool
	}{
		{"nothing", &mcorules.Decision{}, false},
		{"none action", &mcorules.Decision{Actions: []mcorules.Action{{Type: operatorv1.NoneStatusAction}}}, false},
		{"a restart", &mcorules.Decision{Actions: []mcorules.Action{restart("chronyd.service")}}, true},
		{"a drain", &mcorules.Decision{Actions: []mcorules.Action{{Type: operatorv1.DrainStatusAction}}, Drain: true}, true},
		{"a reboot", &mcorules.Decision{Actions: []mcorules.Action{reboot}, Drain: true, Reboot: true}, true},
		{"refused", &mcorules.Decision{Refused: []string{"a change the daemon refuses"}}, true},
		{"no decision", nil, false},
	} {
		if got := ndpCanBeLess(tc.d); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
		pp := MCOPreview{Pool: "worker", Nodes: 1, Groups: []MCOGroup{{From: "a", Nodes: 1, Decision: tc.d, NDP: least}}}
		if line := pp.NDPWarning(func(string) (policy.Policy, bool) { return policy.Policy{}, false }); line != "" && !ndpCanBeLess(tc.d) {
			t.Errorf("%s: NDPWarning %q where no plan is made", tc.name, line)
		}
	}
}

func TestPendingText(t *testing.T) {
	rb := &mcorules.Decision{Actions: []mcorules.Action{reboot}, Drain: true, Reboot: true}
	rs := &mcorules.Decision{Actions: []mcorules.Action{restart("chronyd.service")}}
	if got, want := pendingText("worker", 2, rb, rs), "MCO: after this, pool worker's pending update (2 nodes) restarts chronyd.service instead of draining and rebooting"; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if got, want := pendingText("worker", 1, rs, rs), "MCO: after this, pool worker's pending update (1 node) is unchanged: it restarts chronyd.service"; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestChangeSubject(t *testing.T) {
	for in, want := range map[string][2]string{
		"file /etc/chrony.conf: contents changed": {"file", "/etc/chrony.conf"},
		"unit chronyd.service: added":             {"unit", "chronyd.service"},
		"file /etc/a: b.conf: mode changed":       {"file", "/etc/a: b.conf"},
		"ssh keys: 1 added, 0 removed":            {"", ""},
		"osImageURL: changed":                     {"", ""},
	} {
		k, s := changeSubject(in)
		if [2]string{k, s} != want {
			t.Errorf("changeSubject(%q) = %q, %q; want %q", in, k, s, want)
		}
	}
}

func TestRuleText(t *testing.T) {
	for _, tc := range []struct{ change, rule, want string }{
		{"file /etc/chrony.conf", "no node disruption policy", "file /etc/chrony.conf: no node disruption policy"},
		{"file /etc/containers/registries.conf", "file policy /etc/containers/registries.conf", "file policy /etc/containers/registries.conf"},
		{"file /etc/containers/registries.d/x.yaml", "file policy /etc/containers/registries.d", "file /etc/containers/registries.d/x.yaml: file policy /etc/containers/registries.d"},
		{"unit chronyd.service", "unit policy chronyd.service", "unit policy chronyd.service"},
		{"osImageURL", "osImageURL: always reboot", "osImageURL: always reboot"},
	} {
		if got := ruleText(mcorules.Rule{Change: tc.change, Rule: tc.rule}); got != tc.want {
			t.Errorf("ruleText(%q, %q) = %q, want %q", tc.change, tc.rule, got, tc.want)
		}
	}
	for _, tc := range []struct{ detail, want string }{
		{"unsafe: registry quay.io/x: mirror m.example.com/x was removed", "file policy /etc/containers/registries.conf: unsafe: registry quay.io/x: mirror m.example.com/x was removed"},
		{"safe: no registry, mirror or search entry removed or loosened; added mirrors are digest-only", "file policy /etc/containers/registries.conf: safe"},
	} {
		r := mcorules.Rule{Change: "file /etc/containers/registries.conf", Rule: "file policy /etc/containers/registries.conf", Detail: tc.detail}
		if got := ruleText(r); got != tc.want {
			t.Errorf("ruleText(detail %q) = %q, want %q", tc.detail, got, tc.want)
		}
	}
}

func TestStaleText(t *testing.T) {
	if s := staleText(mcorules.PolicySource{From: "status", Generation: 3, ObservedGeneration: 3}); s != "" {
		t.Errorf("a current status: %q", s)
	}
	s := staleText(mcorules.PolicySource{From: "spec", Generation: 4, ObservedGeneration: 3, Stale: true})
	for _, want := range []string{"stale", "generation 4, observed 3", "predicted with its spec", "Degraded"} {
		if !strings.Contains(s, want) {
			t.Errorf("%q does not say %q", s, want)
		}
	}
	if len(s) > MaxWarningBytes {
		t.Errorf("%d bytes", len(s))
	}
}

type answerWith admission.Response

func (a answerWith) Handle(context.Context, admission.Request) admission.Response {
	return admission.Response(a)
}

// In advisor mode no answer blocks a change: a denial or an error becomes
// a warning; an admission passes as it is.
func TestNeverDeny(t *testing.T) {
	for _, tc := range []struct {
		name string
		resp admission.Response
		want []string
	}{
		{"denied", admission.Denied("MachineConfig \"x\": spec.config: bad"), []string{"MCO: no preview: MachineConfig \"x\": spec.config: bad"}},
		{"errored", admission.Errored(http.StatusBadRequest, errors.New("decoding: eof")), []string{"MCO: no preview: decoding: eof"}},
		{"allowed", admission.Allowed("").WithWarnings("MCO: pool worker, 3 nodes: drain and reboot"), []string{"MCO: pool worker, 3 nodes: drain and reboot"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := neverDeny{answerWith(tc.resp)}.Handle(context.Background(), admission.Request{})
			if !got.Allowed || !cmp.Equal(got.Warnings, tc.want) {
				t.Errorf("allowed %v, warnings %q; want allowed, %q", got.Allowed, got.Warnings, tc.want)
			}
		})
	}
}
