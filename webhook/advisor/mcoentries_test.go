package advisor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	operatorv1 "github.com/openshift/api/operator/v1"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/ndp-dev/ndp/apis/scheme"
	"github.com/ndp-dev/ndp/internal/testkit/policytest"
	"github.com/ndp-dev/ndp/mco/mcoentries"
	"github.com/ndp-dev/ndp/mco/mcorules"
	"github.com/ndp-dev/ndp/planner/policy"
	"github.com/ndp-dev/ndp/policyset"
	"github.com/ndp-dev/ndp/webhook/internal/webhooktest"
	"github.com/ndp-dev/ndp/webhook/nodedisruptionpolicy"
)

var (
	restartChronyd = policy.RestartAction("chronyd.service")
	reloadChronyd  = policy.ReloadAction("chronyd.service")
	chronyEntry    = operatorv1.NodeDisruptionPolicySpecFile{Path: "/etc/chrony.conf", Actions: []policy.Action{restartChronyd}}
)

const chronyFlow = "{path: /etc/chrony.conf, actions: [{type: Restart, restart: {serviceName: chronyd.service}}]}"

func TestEntriesDiffWarnings(t *testing.T) {
	file := func(p string, as ...policy.Action) operatorv1.NodeDisruptionPolicySpecFile {
		return operatorv1.NodeDisruptionPolicySpecFile{Path: p, Actions: as}
	}
	chrony := mcoentries.Entries{Files: []operatorv1.NodeDisruptionPolicySpecFile{chronyEntry}}
	var many mcoentries.Entries
	for i := range 4 {
		many.Files = append(many.Files, file(fmt.Sprintf("/etc/app-%d/a-rather-long-path/config.toml", i), restartChronyd, reloadChronyd))
	}
	for _, tc := range []struct {
		name      string
		now, next mcoentries.Entries
		want      []string
	}{
		{"no entries", mcoentries.Entries{}, mcoentries.Entries{}, []string{"MCO entries: no change"}},
		{"the same entries", chrony, chrony, []string{"MCO entries: no change"}},
		{"added", mcoentries.Entries{}, chrony, []string{"MCO entries: ndp would add spec.nodeDisruptionPolicy.files: [" + chronyFlow + "]"}},
		{"removed", chrony, mcoentries.Entries{}, []string{"MCO entries: ndp would remove spec.nodeDisruptionPolicy.files: [" + chronyFlow + "]"}},
		{"changed", chrony, mcoentries.Entries{Files: []operatorv1.NodeDisruptionPolicySpecFile{file("/etc/chrony.conf", reloadChronyd)}},
			[]string{"MCO entries: ndp would change spec.nodeDisruptionPolicy.files: [{path: /etc/chrony.conf, actions: [{type: Reload, reload: {serviceName: chronyd.service}}]}] (now Restart chronyd.service)"}},
		{"units and the SSH keys", mcoentries.Entries{Units: []operatorv1.NodeDisruptionPolicySpecUnit{{Name: "a.service", Actions: []policy.Action{policytest.None}}}},
			mcoentries.Entries{
				Units:  []operatorv1.NodeDisruptionPolicySpecUnit{{Name: "a.service", Actions: []policy.Action{policytest.Drain}}, {Name: "b.service", Actions: []policy.Action{policytest.None}}},
				SSHKey: operatorv1.NodeDisruptionPolicySpecSSHKey{Actions: []policy.Action{policytest.None}},
			},
			[]string{
				"MCO entries: ndp would add spec.nodeDisruptionPolicy.units: [{name: b.service, actions: [{type: None}]}], sshkey: {actions: [{type: None}]}",
				"MCO entries: ndp would change spec.nodeDisruptionPolicy.units: [{name: a.service, actions: [{type: Drain}]}] (now None)",
			}},
		{"too many for one line: one a line", mcoentries.Entries{}, many, []string{
			"MCO entries: ndp would add spec.nodeDisruptionPolicy.files: [{path: /etc/app-0/a-rather-long-path/config.toml, actions: [{type: Restart, restart: {serviceName: chronyd.service}}, {type: Reload, reload: {serviceName: chronyd.service}}]}]",
			"MCO entries: ndp would add spec.nodeDisruptionPolicy.files: [{path: /etc/app-1/a-rather-long-path/config.toml, actions: [{type: Restart, restart: {serviceName: chronyd.service}}, {type: Reload, reload: {serviceName: chronyd.service}}]}]",
			"MCO entries: ndp would add spec.nodeDisruptionPolicy.files: [{path: /etc/app-2/a-rather-long-path/config.toml, actions: [{type: Restart, restart: {serviceName: chronyd.service}}, {type: Reload, reload: {serviceName: chronyd.service}}]}]",
			"MCO entries: ndp would add spec.nodeDisruptionPolicy.files: [{path: /etc/app-3/a-rather-long-path/config.toml, actions: [{type: Restart, restart: {serviceName: chronyd.service}}, {type: Reload, reload: {serviceName: chronyd.service}}]}]",
		}},
		{"two changed", mcoentries.Entries{Files: []operatorv1.NodeDisruptionPolicySpecFile{file("/a", restartChronyd), file("/b", policytest.Reboot)}},
			mcoentries.Entries{Files: []operatorv1.NodeDisruptionPolicySpecFile{file("/a", reloadChronyd), file("/b", policytest.None)}},
			[]string{"MCO entries: ndp would change spec.nodeDisruptionPolicy.files: [{path: /a, actions: [{type: Reload, reload: {serviceName: chronyd.service}}]}, {path: /b, actions: [{type: None}]}] (now file /a: Restart chronyd.service; file /b: Reboot)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := entriesDiffWarnings(tc.now, tc.next)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			for _, w := range got {
				if len(w) > MaxWarningBytes {
					t.Errorf("a warning of %d bytes: %q", len(w), w)
				}
			}
		})
	}
}

func TestEntriesNotes(t *testing.T) {
	chrony := policytest.File("chrony", 100, "/etc/chrony.conf", restartChronyd)
	pooled := policytest.File("infra-chrony", 100, "/etc/chrony.conf", policytest.Reboot)
	pooled.PoolSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "infra"}}
	rego := policytest.Rego("app", 100, "package ndp.policy.app\n")
	withheld := mcoentries.Unexpressed{Policy: "chrony", Subject: "file /etc/chrony.conf", Reason: "policy infra-chrony decides /etc/chrony.conf for some pools only, the MCO's policies are cluster-wide"}
	conflict := mcoentries.Conflict{Subject: "file:/etc/chrony.conf", Managers: []string{"admin"}}
	for _, tc := range []struct {
		name      string
		in        mcoEntriesInput
		next      written
		changed   []string
		perUpdate bool
		want      []string
	}{
		{"nothing to say", mcoEntriesInput{edited: "chrony", policy: &chrony}, written{static: &mcoentries.StaticResult{}}, nil, false, nil},
		{"its own entry withheld", mcoEntriesInput{edited: "chrony", policy: &chrony}, written{static: &mcoentries.StaticResult{Unexpressed: []mcoentries.Unexpressed{withheld}}}, nil, false,
			[]string{"MCO entries: not for file /etc/chrony.conf: policy infra-chrony decides /etc/chrony.conf for some pools only, the MCO's policies are cluster-wide"}},
		{"another policy's entry withheld because of it", mcoEntriesInput{edited: "infra-chrony", policy: &pooled},
			written{static: &mcoentries.StaticResult{Unexpressed: []mcoentries.Unexpressed{withheld}}}, []string{"file:/etc/chrony.conf"}, true, []string{
				"MCO entries: not for spec.poolSelector: it applies to some pools only and the MCO's entries are cluster-wide: no static entry; per-update entries only, for the pool an update is in",
				"MCO entries: not for file /etc/chrony.conf (policy chrony): policy infra-chrony decides /etc/chrony.conf for some pools only, the MCO's policies are cluster-wide",
			}},
		{"another policy's entry, untouched", mcoEntriesInput{edited: "other", policy: &policy.Policy{Name: "other"}},
			written{static: &mcoentries.StaticResult{Unexpressed: []mcoentries.Unexpressed{withheld}}}, nil, false, nil},
		{"Rego", mcoEntriesInput{edited: "app", policy: &rego}, written{static: &mcoentries.StaticResult{}}, nil, false,
			[]string{"MCO entries: not for its Rego: a Rego policy decides changes by what changed in them, which the MCO's API cannot say: no static entry"}},
		{"held by the administrator", mcoEntriesInput{edited: "chrony", policy: &chrony},
			written{static: &mcoentries.StaticResult{From: map[string][]string{"file:/etc/chrony.conf": {"chrony"}}}, conflicts: []mcoentries.Conflict{conflict}}, nil, false,
			[]string{"MCO entries: not for file /etc/chrony.conf: MachineConfiguration cluster has another entry for it (field manager admin); ndp does not overwrite it"}},
		{"beyond the MCO's limits", mcoEntriesInput{edited: "chrony", policy: &chrony},
			written{static: &mcoentries.StaticResult{From: map[string][]string{"file:/etc/chrony.conf": {"chrony"}}},
				dropped: []mcoentries.Unexpressed{{Subject: "file /etc/chrony.conf", Reason: "the MCO's API refuses it beside the entries already there: x"}}}, nil, false,
			[]string{"MCO entries: not for file /etc/chrony.conf: the MCO's API refuses it beside the entries already there: x"}},
		{"a deleted policy: only what changes", mcoEntriesInput{edited: "infra-chrony"},
			written{static: &mcoentries.StaticResult{Unexpressed: []mcoentries.Unexpressed{{Policy: "infra-chrony", Subject: "file /etc/x", Reason: "r"}}}}, nil, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := entriesNotes(tc.in, &tc.next, tc.changed, tc.perUpdate)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// The entries' warnings come after the what-if's, within what the API
// server passes on whole.
func TestWithEntriesFitsTheAPIServersLimits(t *testing.T) {
	whatIf := make([]string, 12)
	for i := range whatIf {
		whatIf[i] = strings.Repeat("w", 250)
	}
	entries := []string{MCOEntriesNoChange}
	for i := range 20 {
		entries = append(entries, fmt.Sprintf("MCO: after this, pool p%02d's pending update (3 nodes) restarts chronyd.service instead of draining and rebooting", i))
	}
	got := withEntries(whatIf, entries)
	if n := warningBytes(got); n > MaxWarningsBytes {
		t.Errorf("%d bytes of warnings", n)
	}
	if got[12] != MCOEntriesNoChange || !strings.HasPrefix(got[len(got)-1], "(+") || !strings.HasSuffix(got[len(got)-1], " more, see ndp export machineconfiguration)") {
		t.Errorf("warnings: %q", got[12:])
	}
	if got := withEntries(nil, entries[:3]); len(got) != 3 {
		t.Errorf("everything fits: %q", got)
	}
}

func TestNoMCOEntries(t *testing.T) {
	if got, want := noMCOEntries(fmt.Errorf("listing pools: %w", context.DeadlineExceeded), 2500*time.Millisecond), "MCO entries: no preview: not done within the preview's 2.5s deadline"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	if got, want := noMCOEntries(errors.New("no NodeDisruptionPolicy is active yet"), time.Second), "MCO entries: no preview: no NodeDisruptionPolicy is active yet"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}

// refusing is an API server that cannot be reached.
type refusing struct{ client.Reader }

func (refusing) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return errors.New("connection refused")
}

// machineConfiguration puts MachineConfiguration cluster in the test API
// server, as the MCO's operator and an administrator leave it: admin's
// entries written by the field manager "admin", ndp's applied by the field
// manager ndp as the entries controller applies them, and its status
// current (the spec merged with the MCO's defaults). It is deleted when the
// test ends.
func machineConfiguration(t *testing.T, admin []operatorv1.NodeDisruptionPolicySpecFile, ndp mcoentries.Entries) {
	t.Helper()
	ctx := context.Background()
	c := webhooktest.ControlPlane(t).Client
	mc := &operatorv1.MachineConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}, Spec: operatorv1.MachineConfigurationSpec{
		StaticPodOperatorSpec: operatorv1.StaticPodOperatorSpec{OperatorSpec: operatorv1.OperatorSpec{ManagementState: operatorv1.Managed}},
		NodeDisruptionPolicy: operatorv1.NodeDisruptionPolicyConfig{Files: admin,
			SSHKey: operatorv1.NodeDisruptionPolicySpecSSHKey{Actions: []operatorv1.NodeDisruptionPolicySpecAction{{Type: operatorv1.NoneSpecAction}}}},
	}}
	if err := c.Create(ctx, mc, client.FieldOwner("admin")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Delete(context.Background(), mc); client.IgnoreNotFound(err) != nil {
			t.Error(err)
		}
	})
	if !mcoentries.Empty(ndp) {
		u, err := mcoentries.ApplyObject(ndp, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(mcoentries.FieldManager)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(mc), mc); err != nil {
		t.Fatal(err)
	}
	mc.Status.ObservedGeneration = mc.Generation
	mc.Status.NodeDisruptionPolicyStatus.ClusterPolicies = mcorules.MergePolicies(mc.Spec.NodeDisruptionPolicy)
	if err := c.Status().Update(ctx, mc); err != nil {
		t.Fatal(err)
	}
}

// With --mco-entries, a policy create, update or delete warns what ndp
// would write in MachineConfiguration cluster and what the MCO would then
// do with the pool's pending update (3 nodes on rendered-worker-a going to
// rendered-worker-b, which adds /etc/chrony.conf), dry-run or not.
func TestPolicyMCOEntriesPreview(t *testing.T) {
	done := func(n string) *corev1.Node {
		return webhooktest.Node(n, "rendered-worker-a", "Done", "rendered-worker-a")
	}
	ctx := context.Background()
	// The policy validation as SetupAdvisorWithManager wires it with
	// --mco-entries=static.
	setup := func(t *testing.T, policies ...policy.Policy) (*nodedisruptionpolicy.PolicyValidation, *MCOEntriesPreview) {
		t.Helper()
		c, active := webhooktest.PendingUpdate(t, done("w1"), done("w2"), done("w3"))
		for _, p := range policies {
			if err := active.Put(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		p := NewPreviewer(c, active)
		entries := &MCOEntriesPreview{Previewer: p, Mode: "static", APIReader: c}
		return &nodedisruptionpolicy.PolicyValidation{Checker: &policyset.PolicyChecker{Client: c, Active: active}, Decoder: admission.NewDecoder(scheme.New()),
			Previewer: p.Previewer, Also: entries}, entries
	}
	chrony := policytest.File("chrony", 100, "/etc/chrony.conf", restartChronyd)
	mine := mcoentries.Entries{Files: []operatorv1.NodeDisruptionPolicySpecFile{chronyEntry}}
	add := "MCO entries: ndp would add spec.nodeDisruptionPolicy.files: [" + chronyFlow + "]"
	restarts := "MCO: after this, pool worker's pending update (3 nodes) restarts chronyd.service instead of draining and rebooting"

	t.Run("create, dry-run", func(t *testing.T) {
		h, _ := setup(t)
		machineConfiguration(t, nil, mcoentries.Entries{})
		resp := h.Handle(ctx, webhooktest.PolicyRequest(admissionv1.Create, "chrony", webhooktest.ChronyNDP, true))
		want := []string{"pool worker, 3 nodes rendered-worker-a → rendered-worker-b: Reboot → Restart chronyd.service (no drain)", add, restarts}
		if diff := cmp.Diff(want, resp.Warnings); !resp.Allowed || diff != "" {
			t.Errorf("allowed %t, warnings (-want +got):\n%s", resp.Allowed, diff)
		}
	})
	t.Run("create", func(t *testing.T) {
		h, _ := setup(t)
		machineConfiguration(t, nil, mcoentries.Entries{})
		resp := h.Handle(ctx, webhooktest.PolicyRequest(admissionv1.Create, "chrony", webhooktest.ChronyNDP, false))
		if diff := cmp.Diff([]string{add, restarts}, resp.Warnings); !resp.Allowed || diff != "" {
			t.Errorf("allowed %t, warnings (-want +got):\n%s", resp.Allowed, diff)
		}
	})
	t.Run("update", func(t *testing.T) {
		h, _ := setup(t, chrony)
		machineConfiguration(t, nil, mine)
		reload := strings.Replace(webhooktest.ChronyNDP, `"type":"Restart","restart"`, `"type":"Reload","reload"`, 1)
		resp := h.Handle(ctx, webhooktest.PolicyRequest(admissionv1.Update, "chrony", reload, false))
		want := []string{
			"MCO entries: ndp would change spec.nodeDisruptionPolicy.files: [{path: /etc/chrony.conf, actions: [{type: Reload, reload: {serviceName: chronyd.service}}]}] (now Restart chronyd.service)",
			"MCO: after this, pool worker's pending update (3 nodes) reloads chronyd.service instead of restarting chronyd.service",
		}
		if diff := cmp.Diff(want, resp.Warnings); !resp.Allowed || diff != "" {
			t.Errorf("allowed %t, warnings (-want +got):\n%s", resp.Allowed, diff)
		}
	})
	t.Run("delete, dry-run", func(t *testing.T) {
		h, _ := setup(t, chrony)
		machineConfiguration(t, nil, mine)
		resp := h.Handle(ctx, webhooktest.PolicyRequest(admissionv1.Delete, "chrony", webhooktest.ChronyNDP, true))
		want := []string{
			"MCO entries: ndp would remove spec.nodeDisruptionPolicy.files: [" + chronyFlow + "]",
			"MCO: after this, pool worker's pending update (3 nodes) drains and reboots instead of restarting chronyd.service",
		}
		if !resp.Allowed || len(resp.Warnings) < 2 {
			t.Fatalf("allowed %t, warnings %q", resp.Allowed, resp.Warnings)
		}
		// The what-if's warning first.
		if diff := cmp.Diff(want, resp.Warnings[len(resp.Warnings)-2:]); diff != "" || !strings.HasPrefix(resp.Warnings[0], "pool worker, 3 nodes") {
			t.Errorf("warnings %q (-want +got):\n%s", resp.Warnings, diff)
		}
	})
	t.Run("the administrator's entry holds other actions", func(t *testing.T) {
		h, _ := setup(t)
		machineConfiguration(t, []operatorv1.NodeDisruptionPolicySpecFile{{Path: "/etc/chrony.conf", Actions: []policy.Action{policytest.Reboot}}}, mcoentries.Entries{})
		resp := h.Handle(ctx, webhooktest.PolicyRequest(admissionv1.Create, "chrony", webhooktest.ChronyNDP, false))
		want := []string{
			MCOEntriesNoChange,
			"MCO entries: not for file /etc/chrony.conf: MachineConfiguration cluster has another entry for it (field manager admin); ndp does not overwrite it",
			"MCO: after this, pool worker's pending update (3 nodes) is unchanged: it drains and reboots",
		}
		if diff := cmp.Diff(want, resp.Warnings); !resp.Allowed || diff != "" {
			t.Errorf("allowed %t, warnings (-want +got):\n%s", resp.Allowed, diff)
		}
	})
	t.Run("for some pools only", func(t *testing.T) {
		h, _ := setup(t)
		machineConfiguration(t, nil, mcoentries.Entries{})
		pooled := strings.Replace(webhooktest.ChronyNDP, `"spec":{`, `"spec":{"poolSelector":{"matchLabels":{"pool":"infra"}},`, 1)
		resp := h.Handle(ctx, webhooktest.PolicyRequest(admissionv1.Create, "chrony", pooled, false))
		want := []string{
			MCOEntriesNoChange,
			"MCO entries: not for spec.poolSelector: it applies to some pools only and the MCO's entries are cluster-wide: no static entry",
			"MCO: after this, pool worker's pending update (3 nodes) is unchanged: it drains and reboots",
		}
		if diff := cmp.Diff(want, resp.Warnings); !resp.Allowed || diff != "" {
			t.Errorf("allowed %t, warnings (-want +got):\n%s", resp.Allowed, diff)
		}
	})
	t.Run("no MachineConfiguration", func(t *testing.T) {
		h, _ := setup(t)
		var mc operatorv1.MachineConfiguration
		if err := webhooktest.ControlPlane(t).Client.Get(ctx, client.ObjectKey{Name: "cluster"}, &mc); !apierrors.IsNotFound(err) {
			t.Fatalf("MachineConfiguration cluster: %v", err)
		}
		resp := h.Handle(ctx, webhooktest.PolicyRequest(admissionv1.Create, "chrony", webhooktest.ChronyNDP, false))
		want := []string{"MCO entries: no MachineConfiguration cluster: ndp writes its entries once the MCO's operator has created it"}
		if diff := cmp.Diff(want, resp.Warnings); !resp.Allowed || diff != "" {
			t.Errorf("allowed %t, warnings (-want +got):\n%s", resp.Allowed, diff)
		}
	})
	t.Run("off", func(t *testing.T) {
		h, _ := setup(t)
		if MCOEntriesOn("off") || MCOEntriesOn("") {
			t.Fatal("--mco-entries=off (or unset) keeps entries")
		}
		h.Also = nil // as SetupAdvisorWithManager leaves it then
		machineConfiguration(t, nil, mcoentries.Entries{})
		if resp := h.Handle(ctx, webhooktest.PolicyRequest(admissionv1.Create, "chrony", webhooktest.ChronyNDP, false)); !resp.Allowed || len(resp.Warnings) != 0 {
			t.Errorf("allowed %t, warnings %q", resp.Allowed, resp.Warnings)
		}
	})
	t.Run("an error is a warning", func(t *testing.T) {
		h, entries := setup(t)
		entries.APIReader = refusing{}
		resp := h.Handle(ctx, webhooktest.PolicyRequest(admissionv1.Create, "chrony", webhooktest.ChronyNDP, false))
		if want := []string{"MCO entries: no preview: reading MachineConfiguration cluster: connection refused"}; !resp.Allowed || !cmp.Equal(want, resp.Warnings) {
			t.Errorf("allowed %t, warnings %q", resp.Allowed, resp.Warnings)
		}
		// A panic below is recovered.
		entries.APIReader = webhooktest.Unreachable{}
		resp = h.Handle(ctx, webhooktest.PolicyRequest(admissionv1.Create, "chrony", webhooktest.ChronyNDP, false))
		if !resp.Allowed || len(resp.Warnings) != 1 || !strings.HasPrefix(resp.Warnings[0], "MCO entries: no preview: internal error: ") {
			t.Errorf("allowed %t, warnings %q", resp.Allowed, resp.Warnings)
		}
	})
}
