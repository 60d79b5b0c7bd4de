package mcoentries_test

import (
	"context"
	"maps"
	"net/url"
	"slices"
	"strings"
	"testing"

	igntypes "github.com/coreos/ignition/v2/config/v3_5/types"
	"github.com/google/go-cmp/cmp"
	operatorv1 "github.com/openshift/api/operator/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/internal/testkit/policytest"
	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/mco/mcoentries"
	"github.com/ndp-dev/ndp/planner"
	"github.com/ndp-dev/ndp/planner/loader"
	"github.com/ndp-dev/ndp/planner/policy"
)

var (
	restartChrony = policy.RestartAction("chronyd.service")
	reloadCrio    = policy.ReloadAction("crio.service")
)

func files(fs ...operatorv1.NodeDisruptionPolicySpecFile) []operatorv1.NodeDisruptionPolicySpecFile {
	return fs
}

func file(p string, as ...policy.Action) operatorv1.NodeDisruptionPolicySpecFile {
	return operatorv1.NodeDisruptionPolicySpecFile{Path: p, Actions: as}
}

func TestStatic(t *testing.T) {
	pooled := policytest.File("pooled", 100, "/etc/chrony.conf", policytest.Reboot)
	pooled.PoolSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "infra"}}
	tests := []struct {
		name      string
		pols      []policy.Policy
		want      []operatorv1.NodeDisruptionPolicySpecFile
		withheld  []string // subjects
		wantUnits int
	}{{
		name: "one entry",
		pols: []policy.Policy{policytest.File("chrony", 100, "/etc/chrony.conf", restartChrony)},
		want: files(file("/etc/chrony.conf", restartChrony)),
	}, {
		name: "a final slash is the same path",
		pols: []policy.Policy{policytest.File("app", 100, "/etc/app/", restartChrony)},
		want: files(file("/etc/app", restartChrony)),
	}, {
		name: "equal priority: both apply",
		pols: []policy.Policy{policytest.File("a", 100, "/etc/x", restartChrony), policytest.File("b", 100, "/etc/x", reloadCrio)},
		want: files(file("/etc/x", restartChrony, reloadCrio)),
	}, {
		name: "higher priority wins",
		pols: []policy.Policy{policytest.File("a", 100, "/etc/x", restartChrony), policytest.File("b", 200, "/etc/x", reloadCrio)},
		want: files(file("/etc/x", reloadCrio)),
	}, {
		name: "a directory over the MCO's defaults keeps them where ndp's defaults agree, and overrides the MCO-only ones",
		pols: []policy.Policy{policytest.File("etc", 100, "/etc", restartChrony)},
		// ndp's default policy has no entry for the MCO's iri-registry
		// paths: beneath /etc ndp decides them by the user entry; and it has
		// one the MCO lacks (None), which must not lower the MCO's own
		// decision (no entry: Reboot) that /etc's entry would replace.
		want: files(
			file("/etc", restartChrony),
			file("/etc/iri-registry", restartChrony),
			file("/etc/mco/internal-registry-pull-secret.json", policytest.Reboot),
			file("/etc/pki/ca-trust/source/anchors/iri-root-ca.crt", restartChrony),
		),
	}, {
		name:     "for some pools only: withheld",
		pols:     []policy.Policy{policytest.File("chrony", 100, "/etc/chrony.conf", restartChrony), pooled},
		withheld: []string{"file /etc/chrony.conf"},
	}, {
		name: "a Rego policy that names the path: withheld",
		pols: []policy.Policy{policytest.File("chrony", 100, "/etc/chrony.conf", restartChrony),
			policytest.Rego("chronyrego", 100, "package ndp.policy.chronyrego\n\nimport data.ndp.lib\n\nclaims contains {\"change\": c.id, \"match\": c.path, \"actions\": lib.reboot} if {\n\tsome c in lib.file_changes\n\tc.path == \"/etc/chrony.conf\"\n\tcontains(c.new.data, \"server\")\n}\n")},
		withheld: []string{"file /etc/chrony.conf"},
	}, {
		name: "a Rego policy that claims every file by contents, naming no path: the probe sees it",
		pols: []policy.Policy{policytest.File("chrony", 100, "/etc/chrony.conf", restartChrony),
			policytest.Rego("any", 100, "package ndp.policy.any\n\nimport data.ndp.lib\n\nclaims contains {\"change\": c.id, \"match\": c.path, \"actions\": lib.reboot} if {\n\tsome c in lib.file_changes\n\tc.op == \"changed\"\n}\n")},
		withheld: []string{"file /etc/chrony.conf"},
	}, {
		name:     "registries.conf: the MCO's own rule",
		pols:     []policy.Policy{policytest.File("reg", 100, "/etc/containers/registries.conf", reloadCrio)},
		withheld: []string{"file /etc/containers/registries.conf"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl := policytest.Planner(t, tt.pols...)
			res, err := mcoentries.Static(context.Background(), mcoentries.StaticInput{Planner: pl, Policies: append([]policy.Policy{policy.DefaultPolicy()}, tt.pols...)})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, res.Entries.Files); diff != "" {
				t.Errorf("files (-want +got):\n%s\nunexpressed: %v", diff, res.Unexpressed)
			}
			var got []string
			for _, u := range res.Unexpressed {
				got = append(got, u.Subject)
			}
			if diff := cmp.Diff(tt.withheld, got); diff != "" {
				t.Errorf("withheld (-want +got):\n%s\n%v", diff, res.Unexpressed)
			}
		})
	}
}

func loadPlan(t *testing.T, pl *planner.Planner, dir string) (*machineconfig.Config, *machineconfig.Config, *planner.Plan) {
	t.Helper()
	from, to := testkit.ReadConfig(t, dir+"/old.yaml"), testkit.ReadConfig(t, dir+"/new.yaml")
	p, err := pl.Plan(context.Background(), planner.Request{From: from, To: to})
	if err != nil {
		t.Fatal(err)
	}
	return from, to, p
}

func TestForUpdate(t *testing.T) {
	kubeletLive, _, err := loader.Load("../../examples/policies/kubelet-live.yaml")
	if err != nil {
		t.Fatal(err)
	}
	chrony, _, err := loader.Load("../../examples/policies/chrony.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		pols    []policy.Policy
		dir     string
		entries []string
		before  string
		after   string
	}{
		{"chrony restart", chrony, "chrony", []string{"file:/etc/chrony.conf"}, "drain and reboot", "Restart chronyd.service"},
		{"maxPods: restart the kubelet", kubeletLive, "kubelet-maxpods", []string{"file:/etc/kubernetes/kubelet.conf"}, "drain and reboot", "Restart kubelet.service"},
		{"cpuManagerPolicy: ndp reboots too, nothing to write", kubeletLive, "kubelet-cpumanager", nil, "drain and reboot", "drain and reboot"},
		{"os image: the MCO's fixed rule, as ndp", nil, "os-image-bump", nil, "drain and reboot", "drain and reboot"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl := policytest.Planner(t, tt.pols...)
			from, to, plan := loadPlan(t, pl, "../../examples/machineconfigs/"+tt.dir)
			res, err := mcoentries.ForUpdate(mcoentries.Update{From: from, To: to, Plan: plan}, mcoentries.Entries{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.entries, mcoentries.Subjects(res.Entries)); diff != "" {
				t.Errorf("entries (-want +got):\n%s", diff)
			}
			if res.Before != tt.before || res.After != tt.after || !res.Equal {
				t.Errorf("before %q after %q equal %v, want %q %q true; %v", res.Before, res.After, res.Equal, tt.before, tt.after, res.Unexpressed)
			}
		})
	}
}

func TestForPending(t *testing.T) {
	kubeletLive, _, err := loader.Load("../../examples/policies/kubelet-live.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pl := policytest.Planner(t, kubeletLive...)
	from, to, plan := loadPlan(t, pl, "../../examples/machineconfigs/kubelet-maxpods")
	cfrom, cto, cplan := loadPlan(t, pl, "../../examples/machineconfigs/kubelet-cpumanager")
	generated := map[string]string{"file:/etc/kubernetes/kubelet.conf": "99-worker-generated-kubelet"}
	guarded := func(src string) bool { return !strings.HasPrefix(src, "01-") }
	move := func(pool string, f, t *machineconfig.Config, p *planner.Plan, src map[string]string) mcoentries.Move {
		return mcoentries.Move{Pool: pool, Update: mcoentries.Update{From: f, To: t, Plan: p}, Sources: src}
	}
	tests := []struct {
		name  string
		moves []mcoentries.Move
		want  []string
		notes int
	}{
		{"one move", []mcoentries.Move{move("worker", from, to, plan, generated)}, []string{"file:/etc/kubernetes/kubelet.conf"}, 0},
		{"two pools, the same change", []mcoentries.Move{move("worker", from, to, plan, generated), move("infra", from, to, plan, generated)}, []string{"file:/etc/kubernetes/kubelet.conf"}, 0},
		// infra's nodes move to a cpuManagerPolicy: ndp reboots them, which
		// a kubelet.conf entry restarting the kubelet would not.
		{"another pool needs a reboot of the same path", []mcoentries.Move{move("worker", from, to, plan, generated), move("infra", cfrom, cto, cplan, generated)}, nil, 1},
		{"a template's file: no guard holds it", []mcoentries.Move{move("worker", from, to, plan, map[string]string{"file:/etc/kubernetes/kubelet.conf": "01-worker-kubelet"})}, nil, 1},
		{"source unknown", []mcoentries.Move{move("worker", from, to, plan, nil)}, nil, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, notes, err := mcoentries.ForPending(tt.moves, mcoentries.Entries{}, guarded)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, mcoentries.Subjects(got)); diff != "" {
				t.Errorf("entries (-want +got):\n%s\nnotes: %v", diff, notes)
			}
			if len(notes) != tt.notes {
				t.Errorf("notes: %v, want %d", notes, tt.notes)
			}
		})
	}
}

// filesConfig is a config of these files and nothing else.
func filesConfig(name string, files map[string]string) *machineconfig.Config {
	var ign igntypes.Config
	ign.Ignition.Version = igntypes.MaxVersion.String()
	for _, p := range slices.Sorted(maps.Keys(files)) {
		ign.Storage.Files = append(ign.Storage.Files, igntypes.File{
			Node:          igntypes.Node{Path: p, Overwrite: ptr.To(true)},
			FileEmbedded1: igntypes.FileEmbedded1{Mode: ptr.To(0o644), Contents: igntypes.Resource{Source: ptr.To("data:," + url.PathEscape(files[p]))}},
		})
	}
	return &machineconfig.Config{Name: name, Ignition: ign}
}

// A per-update entry for a changed path also decides, in the MCO, the
// changed files beneath it: those need entries of their own, or the MCO
// does less than ndp's plan (found by mco/mcorules/export_agreement_test.go,
// case 1783: kubelet.conf and kubelet.conf/a/b.conf).
func TestForUpdateEntryOverAnotherChange(t *testing.T) {
	exact := policytest.Rego("exact", 100, "package ndp.policy.exact\n\nimport data.ndp.lib\n\n"+
		"claims contains {\"change\": c.id, \"match\": c.path, \"actions\": [lib.restart(\"chronyd.service\")]} if {\n\tsome c in lib.file_changes\n\tc.path == \"/etc/app\"\n}\n")
	pl := policytest.Planner(t, exact)
	from := filesConfig("old", map[string]string{"/etc/app": "a\n", "/etc/app/x.conf": "a\n"})
	to := filesConfig("new", map[string]string{"/etc/app": "b\n", "/etc/app/x.conf": "b\n"})
	plan, err := pl.Plan(context.Background(), planner.Request{From: from, To: to})
	if err != nil {
		t.Fatal(err)
	}
	if !plan.Reboot {
		t.Fatalf("ndp's plan %v: want a reboot, /etc/app/x.conf is claimed by no policy", plan.Actions)
	}
	res, err := mcoentries.ForUpdate(mcoentries.Update{From: from, To: to, Plan: plan}, mcoentries.Entries{})
	if err != nil {
		t.Fatal(err)
	}
	want := files(file("/etc/app", restartChrony), file("/etc/app/x.conf", policytest.Reboot))
	if diff := cmp.Diff(want, mcoentries.Sorted(res.Entries).Files); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
	if !res.Equal || res.After != "drain and reboot" {
		t.Errorf("after %q equal %v, want drain and reboot, true; %v", res.After, res.Equal, res.Unexpressed)
	}
}

// The MCO runs its registries.conf check (Special: reload CRI-O, drain
// when unsafe) only when nothing else drains or reboots: whether it drains
// must be asked of it alone, not read from a decision that reboots for
// another file (found by mco/mcorules/export_agreement_test.go, case 4896).
func TestForUpdateRegistriesDrainBesideAReboot(t *testing.T) {
	pl := policytest.Planner(t, policytest.File("app", 100, "/etc/app", restartChrony))
	const reg = "unqualified-search-registries = [\"registry.access.redhat.com\"]\n"
	from := filesConfig("old", map[string]string{"/etc/app": "a\n", "/etc/containers/registries.conf": reg})
	// A key registries.conf does not know: ndp cannot tell it safe and
	// drains; the MCO's decoder ignores it (safe, no drain).
	to := filesConfig("new", map[string]string{"/etc/app": "b\n", "/etc/containers/registries.conf": reg + "key = 1\n"})
	plan, err := pl.Plan(context.Background(), planner.Request{From: from, To: to})
	if err != nil {
		t.Fatal(err)
	}
	if got := mcoentries.PlanEffect(plan.Actions, plan.Drain, plan.Reboot); got != "drain, Reload crio.service, Restart chronyd.service" {
		t.Fatalf("ndp's plan: %s, want drain, Reload crio.service, Restart chronyd.service", got)
	}
	res, err := mcoentries.ForUpdate(mcoentries.Update{From: from, To: to, Plan: plan}, mcoentries.Entries{})
	if err != nil {
		t.Fatal(err)
	}
	want := files(file("/etc/app", restartChrony), file("/etc/containers/registries.conf", reloadCrio, policytest.Drain))
	if diff := cmp.Diff(want, mcoentries.Sorted(res.Entries).Files); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
	if !res.Equal {
		t.Errorf("after %q, not ndp's plan: %v", res.After, res.Unexpressed)
	}
}
