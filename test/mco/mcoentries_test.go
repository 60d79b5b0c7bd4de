package mco

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/internal/testkit/builder"
)

// The guard's overlay, and its file.
const (
	mcoEntriesOverlay = "overlays/openshift-mco-entries"
	guardManifest     = "../../" + mcoEntriesOverlay + "/guard.yaml"
	guardAnnotation   = "ndp.dev/update-entries"
	kubeletConf       = "/etc/kubernetes/kubelet.conf"
)

// mcoEntriesAudit is advisorAudit with the bodies of what ndp's account
// sends to MachineConfigurations: the test reads what it wrote there.
const mcoEntriesAudit = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Request
  users: ["` + advisorUser + `"]
  resources: [{group: operator.openshift.io, resources: [machineconfigurations]}]
- level: Metadata
  users: ["` + advisorUser + `"]
- level: None
`

// adminEntries are the administrator's own entries, written before ndp
// has any (kubectl apply --server-side --field-manager=admin): one ndp's
// policies never name, and one for a path a policy also declares, with
// other actions (a conflict ndp must report, not overwrite).
var adminEntries = string(builder.MachineConfiguration().
	WithFileActions("/etc/admin.conf", "None").
	WithFileActions("/etc/conflict.conf", "Reload conflict.service").Document())

// conflictPolicy declares /etc/conflict.conf otherwise than the
// administrator's entry.
const conflictPolicy = `apiVersion: ndp.dev/v1alpha1
kind: NodeDisruptionPolicy
metadata:
  name: conflict
spec:
  priority: 100
  files:
  - path: /etc/conflict.conf
    actions: [{type: Restart, restart: {serviceName: conflict.service}}]
`

// cpuManagerKubeletConfig turns on the static CPU manager: kubelet-live
// plans a drain and a reboot, as the MCO does by default.
var cpuManagerKubeletConfig = workerConfigYAML("KubeletConfig", "cpumanager", "cpuManagerPolicy: static\n    cpuManagerReconcilePeriod: 5s")

// autoSizingKubeletConfig has the MCO size the node's reservations: its
// kubelet-config controller writes /etc/node-sizing-enabled.env.
const autoSizingKubeletConfig = `apiVersion: machineconfiguration.openshift.io/v1
kind: KubeletConfig
metadata:
  name: sizing
spec:
  autoSizingReserved: true
  machineConfigPoolSelector:
    matchLabels:
      pools.operator.machineconfiguration.openshift.io/worker: ""
`

// releaseEntries is what an administrator applies, by ndp's field manager,
// to release every entry ndp owns (docs/openshift.md, "Uninstalling").
var releaseEntries = string(builder.MachineConfiguration().Document())

// TestMCOEntries is the acceptance of ndp's entries in the MCO's node
// disruption policy (docs/openshift.md#ndps-policies-in-the-mco), in a
// cluster with the MCO's own controllers (mcc-ref), ndp installed from
// overlays/openshift-mco-entries (ndp-controller --mco-entries=all as its
// service account, the guard ValidatingAdmissionPolicy run by the API
// server), the operator's status update and the MCO's daemon played as the
// MCO does them, the daemon deciding with mco-decide from the
// MachineConfiguration status that stands:
//   - the chrony policy applied: ndp's static entry appears, owned by field
//     manager ndp, the administrator's own entries beside it untouched (and
//     one a policy declares otherwise reported as a conflict, not
//     overwritten);
//   - a maxPods KubeletConfig (kubelet-live: restart the kubelet): ndp
//     writes the per-update entry and its guard annotation, and the played
//     daemon restarts the kubelet without draining or rebooting;
//   - while that entry stands, a cpuManagerPolicy KubeletConfig is refused
//     by the API server, ndp-controller running or stopped; released by a
//     server-side apply of nothing by ndp's field manager (the
//     administrator's entries survive), it is admitted and every node
//     reboots;
//   - the policy deleted: ndp's entries are gone;
//   - the audit log: ndp's account wrote nothing but the advisor's objects
//     and its own entries of MachineConfiguration cluster.
func TestMCOEntries(t *testing.T) {
	t.Parallel() // each starts its own API server and controllers; most of its time is the MCO's render delay
	began, built := beginBesideTheMCO(t)

	// The MCO's controllers run as its service account: the guard never
	// refuses their writes (generated and rendered configs).
	m, auditLog := startAuditedMCO(t, mcoEntriesAudit)
	t.Logf("the MCO's controllers up after %s", time.Since(began).Round(time.Second))
	a := installAdvisorFrom(t, m, <-built, mcoEntriesOverlay)
	t.Logf("ndp installed from %s and ready after %s", mcoEntriesOverlay, time.Since(began).Round(time.Second))
	if !slices.Contains(a.args, "--mco-entries=all") {
		t.Fatalf("the overlay's ndp-controller does not run --mco-entries=all: %v", a.args)
	}
	files := writeFiles(t, map[string]string{"admin.yaml": adminEntries, "conflict.yaml": conflictPolicy,
		"cpumanager.yaml": cpuManagerKubeletConfig, "release.yaml": releaseEntries})

	// The administrator's own entries, before any policy.
	if out, err := a.kubectlRun("apply", "--server-side", "--field-manager=admin", "-f", files["admin.yaml"]); err != nil {
		t.Fatalf("the administrator's entries: %v\n%s", err, out)
	}
	a.playOperator(t)
	admin := a.machineConfiguration(t)
	adminActions := map[string]string{}
	for _, p := range []string{"/etc/admin.conf", "/etc/conflict.conf"} {
		adminActions[p] = entryActions(admin, p)
	}
	checkAdmin := func(t *testing.T, mc *operatorv1.MachineConfiguration) {
		t.Helper()
		for p, want := range adminActions {
			if got := entryActions(mc, p); got != want {
				t.Errorf("the administrator's entry for %s: %s, want %s (untouched)", p, got, want)
			}
			if got := entryOwners(mc, p); !slices.Equal(got, []string{"admin/Apply"}) {
				t.Errorf("the administrator's entry for %s is owned by %v, want admin/Apply only", p, got)
			}
		}
	}

	t.Run("a static entry", func(t *testing.T) {
		a.applyPolicy(t, "../../examples/policies/chrony.yaml")
		a.applyPolicy(t, files["conflict.yaml"])
		a.applyPolicy(t, "../../examples/policies/kubelet-live.yaml")
		mc := a.waitMachineConfiguration(t, "ndp's entry for /etc/chrony.conf", func(mc *operatorv1.MachineConfiguration) (bool, string) {
			return entryActions(mc, "/etc/chrony.conf") != "", describeEntries(mc)
		})
		t.Logf("MachineConfiguration cluster: %s", describeEntries(mc))
		if got, want := entryActions(mc, "/etc/chrony.conf"), `[{"type":"Restart","restart":{"serviceName":"chronyd.service"}}]`; got != want {
			t.Errorf("ndp's entry for /etc/chrony.conf: %s, want %s", got, want)
		}
		if got := entryOwners(mc, "/etc/chrony.conf"); !slices.Equal(got, []string{"ndp/Apply"}) {
			t.Errorf("ndp's entry for /etc/chrony.conf is owned by %v, want ndp/Apply only", got)
		}
		checkAdmin(t, mc)
		if v, ok := mc.Annotations[guardAnnotation]; ok {
			t.Errorf("no update is pending, yet MachineConfiguration cluster has %s=%q", guardAnnotation, v)
		}
		chrony := a.waitPolicyMCO(t, "chrony", func(s *v1alpha1.PolicyMCOStatus) bool { return s.State == v1alpha1.MCOEntriesWritten })
		if !slices.Equal(chrony.Entries, []string{"file /etc/chrony.conf: Restart chronyd.service"}) || len(chrony.Conflicts) > 0 || len(chrony.NotExpressed) > 0 {
			t.Errorf("NodeDisruptionPolicy chrony's status.mco: %+v", *chrony)
		}
		conflict := a.waitPolicyMCO(t, "conflict", func(s *v1alpha1.PolicyMCOStatus) bool { return len(s.Conflicts) > 0 })
		if len(conflict.Conflicts) != 1 || !strings.Contains(conflict.Conflicts[0], "file /etc/conflict.conf") || !strings.Contains(conflict.Conflicts[0], "admin") || len(conflict.Entries) > 0 {
			t.Errorf("NodeDisruptionPolicy conflict's status.mco: %+v; want one conflict naming file /etc/conflict.conf and field manager admin, no entry", *conflict)
		}
		t.Logf("status.mco of chrony: %+v; of conflict: %+v", *chrony, *conflict)
		a.playOperator(t)
		if st := a.machineConfiguration(t); !statusHas(st, "/etc/chrony.conf", "Restart") || !statusHas(st, "/etc/admin.conf", "None") || !statusHas(st, "/etc/conflict.conf", "Reload") {
			t.Errorf("MachineConfiguration cluster's status after the operator's update: %+v", st.Status.NodeDisruptionPolicyStatus.ClusterPolicies.Files)
		}
	})
	if t.Failed() {
		return
	}

	var original, maxPods string
	t.Run("a per-update entry: maxPods restarts the kubelet", func(t *testing.T) {
		original = a.nodesOn(t)
		if out, err := a.kubectlRun("apply", "-f", "../../examples/cluster/kubeletconfig-max-pods.yaml"); err != nil {
			t.Fatalf("kubectl apply -f kubeletconfig-max-pods.yaml: %v\n%s", err, out)
		}
		maxPods, _, _ = a.rendersAnew(t, original)
		t.Logf("the MCO rendered %s (nodes on %s)", maxPods, original)
		mc := a.waitMachineConfiguration(t, "ndp's per-update entry for "+kubeletConf+" and its guard annotation", func(mc *operatorv1.MachineConfiguration) (bool, string) {
			return entryActions(mc, kubeletConf) != "" && mc.Annotations[guardAnnotation] != "", describeEntries(mc)
		})
		t.Logf("MachineConfiguration cluster: %s", describeEntries(mc))
		if got, want := entryActions(mc, kubeletConf), `[{"type":"Restart","restart":{"serviceName":"kubelet.service"}}]`; got != want {
			t.Errorf("ndp's per-update entry for %s: %s, want %s", kubeletConf, got, want)
		}
		if got := entryOwners(mc, kubeletConf); !slices.Equal(got, []string{"ndp/Apply"}) {
			t.Errorf("the entry for %s is owned by %v, want ndp/Apply only", kubeletConf, got)
		}
		if got := mc.Annotations[guardAnnotation]; got != "file:"+kubeletConf {
			t.Errorf("the guard annotation: %q, want %q", got, "file:"+kubeletConf)
		}
		checkAdmin(t, mc)

		// The operator copies the spec to the status; the daemon decides
		// from that. worker-0 goes first; the others wait for their turn,
		// so the entry stands.
		a.playOperator(t)
		if !statusHas(a.machineConfiguration(t), kubeletConf, "Restart") {
			t.Fatalf("the operator's status has no entry for %s", kubeletConf)
		}
		d := a.playDaemon(t, "worker-0", maxPods)
		if !d.Reconcilable || d.Reboot || d.Drain || !d.has("Restart", "kubelet.service") {
			t.Errorf("the MCO's daemon, for %s -> %s with the status that stands: %+v; want Restart kubelet.service, no drain, no reboot", original, maxPods, d)
		}
		// The per-update entry is kubelet-live's decision, not chrony's.
		live := a.waitPolicyMCO(t, "kubelet-live", func(s *v1alpha1.PolicyMCOStatus) bool { return len(s.UpdateEntries) > 0 })
		chrony := a.policyMCO(t, "chrony")
		if chrony == nil || chrony.State != v1alpha1.MCOEntriesWritten || !slices.Equal(chrony.Entries, []string{"file /etc/chrony.conf: Restart chronyd.service"}) {
			t.Fatalf("NodeDisruptionPolicy chrony's status.mco while the per-update entry stands: %+v", chrony)
		}
		t.Logf("status.mco of chrony: %+v; of kubelet-live: %+v", *chrony, *live)
		if !slices.Equal(live.UpdateEntries, []string{"file " + kubeletConf + ": Restart kubelet.service"}) {
			t.Errorf("NodeDisruptionPolicy kubelet-live's status.mco.updateEntries: %v", live.UpdateEntries)
		}
		if len(chrony.UpdateEntries) > 0 {
			t.Errorf("NodeDisruptionPolicy chrony's status.mco.updateEntries lists %v: chrony decided none of the update's changes", chrony.UpdateEntries)
		}
	})
	if t.Failed() {
		return
	}

	var cpuManager string
	t.Run("while the entry stands, cpuManagerPolicy is refused, then reboots every node", func(t *testing.T) {
		refused := func(t *testing.T, when string) {
			t.Helper()
			out, err := a.kubectlRun("apply", "-f", files["cpumanager.yaml"])
			if err == nil {
				t.Fatalf("%s, the cpuManagerPolicy KubeletConfig was admitted while ndp's entry for %s stands:\n%s", when, kubeletConf, out)
			}
			for _, want := range []string{"ndp-mco-update-entries", "file " + kubeletConf, "release-mco-entries"} {
				if !strings.Contains(out, want) {
					t.Errorf("%s, the refusal does not say %q:\n%s", when, want, out)
				}
			}
			t.Logf("%s: kubectl apply -f cpumanager.yaml:\n%s", when, strings.TrimSpace(out))
		}
		refused(t, "ndp-controller running")
		a.stop()
		refused(t, "ndp-controller stopped")

		// Released as the documentation says, ndp stopped: a server-side
		// apply of nothing by its field manager.
		if out, err := a.kubectlRun("apply", "--server-side", "--field-manager=ndp", "-f", files["release.yaml"]); err != nil {
			t.Fatalf("releasing ndp's entries: %v\n%s", err, out)
		}
		mc := a.machineConfiguration(t)
		t.Logf("released: %s", describeEntries(mc))
		for _, p := range []string{"/etc/chrony.conf", kubeletConf} {
			if got := entryActions(mc, p); got != "" {
				t.Errorf("after the release, an entry for %s stands: %s", p, got)
			}
		}
		if v, ok := mc.Annotations[guardAnnotation]; ok {
			t.Errorf("after the release, the guard annotation stands: %q", v)
		}
		checkAdmin(t, mc)
		a.playOperator(t)

		// The guard reads the annotation from the API server's informer:
		// admitted once it has seen the release.
		testkit.Eventually(t, "the cpuManagerPolicy KubeletConfig admitted once ndp's entries are released", func() (bool, string) {
			out, err := a.kubectlRun("apply", "-f", files["cpumanager.yaml"])
			return err == nil, out
		}, testkit.Within(time.Minute), testkit.Every(time.Second))
		cpuManager, _, _ = a.rendersAnew(t, maxPods)
		t.Logf("the MCO rendered %s", cpuManager)
		for _, n := range a.nodes {
			from := a.nodeOn(t, n)
			d := a.playDaemon(t, n, cpuManager)
			if !d.Reconcilable || !d.Reboot || !d.Drain {
				t.Errorf("the MCO's daemon, node %s %s -> %s with the status that stands: %+v; want drain and reboot", n, from, cpuManager, d)
			}
		}
	})
	if t.Failed() {
		return
	}

	t.Run("the policy deleted", func(t *testing.T) {
		a.start(t)
		// Started again, ndp writes its static entry back; no update is
		// pending, so no per-update entry and no guard.
		mc := a.waitMachineConfiguration(t, "ndp's entry for /etc/chrony.conf written again", func(mc *operatorv1.MachineConfiguration) (bool, string) {
			return entryActions(mc, "/etc/chrony.conf") != "", describeEntries(mc)
		})
		if got := entryActions(mc, kubeletConf); got != "" || mc.Annotations[guardAnnotation] != "" {
			t.Errorf("no update is pending, yet: entry for %s %s, guard %q", kubeletConf, got, mc.Annotations[guardAnnotation])
		}
		if out, err := a.kubectlRun("delete", "-f", "../../examples/policies/chrony.yaml"); err != nil {
			t.Fatalf("kubectl delete -f chrony.yaml: %v\n%s", err, out)
		}
		mc = a.waitMachineConfiguration(t, "ndp's entry for /etc/chrony.conf gone", func(mc *operatorv1.MachineConfiguration) (bool, string) {
			return entryActions(mc, "/etc/chrony.conf") == "", describeEntries(mc)
		})
		t.Logf("MachineConfiguration cluster: %s", describeEntries(mc))
		if strings.Contains(a.logs.String(), "a deleted NodeDisruptionPolicy is still in the active set") {
			t.Logf("ndp-controller saw the policy deleted before the policy controller took it out of the active set, and looked again")
		}
		if owned := ownedBy(mc, "ndp"); len(owned) > 0 {
			t.Errorf("ndp still owns entries for %v", owned)
		}
		checkAdmin(t, mc)
		a.playOperator(t)
		if st := a.machineConfiguration(t); statusHas(st, "/etc/chrony.conf", "") || !statusHas(st, "/etc/admin.conf", "None") {
			t.Errorf("MachineConfiguration cluster's status after the operator's update: %+v", st.Status.NodeDisruptionPolicyStatus.ClusterPolicies.Files)
		}
	})

	// Stopped first, so that everything it sent is in the log.
	a.stop()
	w := a.checkAuditWith(t, auditLog, auditAllowance{mcoEntries: true, mcoEntryPaths: []string{"/etc/chrony.conf", kubeletConf}, perUpdatePaths: []string{kubeletConf}})
	if w.applies == 0 || w.withGuard == 0 || !slices.Contains(w.paths, "/etc/chrony.conf") || !slices.Contains(w.paths, kubeletConf) {
		t.Errorf("the audit log does not show ndp's account applying its entries and the guard annotation: %+v", w)
	}
	t.Logf("TestMCOEntries took %s", time.Since(began).Round(time.Second))
}

// TestMCOEntriesGuard runs the guard of ndp's per-update entries
// (overlays/openshift-mco-entries/guard.yaml, a ValidatingAdmissionPolicy
// whose parameter is MachineConfiguration cluster) in a real API server
// with the openshift/api CRDs: while the annotation ndp.dev/update-entries
// lists a subject, a change to it by anyone but the MCO's service accounts
// is refused, with a message naming the entry and how to release it; the
// rest is admitted.
func TestMCOEntriesGuard(t *testing.T) {
	t.Parallel() // each starts its own API server and controllers; most of its time is the MCO's render delay
	// The reference's mcc-ref setup installs the openshift/api CRDs.
	ref := refDir(t)
	ctx := context.Background()
	cp := testkit.NewControlPlane(t, testkit.ControlPlaneOptions{Root: "../..", NoCRDs: true, Kubeconfig: true})
	if out, err := exec.Command(filepath.Join(ref, "mcc-ref"), "setup", "--kubeconfig", cp.Kubeconfig).CombinedOutput(); err != nil {
		t.Fatalf("mcc-ref setup: %v\n%s", err, out)
	}
	admin, err := client.New(cp.Config, client.Options{Scheme: Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	// The MCO's controller, impersonated (bound to cluster-admin, as on
	// OpenShift it may write all it writes).
	if err := admin.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "mco-controller-admin"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: MCONamespace, Name: MCOAccount}},
	}); err != nil {
		t.Fatal(err)
	}
	asMCO := rest.CopyConfig(cp.Config)
	asMCO.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + MCONamespace + ":" + MCOAccount,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + MCONamespace, "system:authenticated"}}
	mco, err := client.New(asMCO, client.Options{Scheme: Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range decodeManifests(t, guardManifest) {
		if err := admin.Create(ctx, u); err != nil {
			t.Fatalf("creating %s %s from guard.yaml: %v", u.GetKind(), u.GetName(), err)
		}
	}

	// What stands before any guard: an administrator's MachineConfigs and
	// KubeletConfig.
	for _, text := range []string{
		machineConfigYAML("50-kubelet", map[string]string{kubeletConf: "a"}),
		machineConfigYAML("50-mixed", map[string]string{kubeletConf: "a", "/etc/other.conf": "a"}),
		machineConfigYAML("50-dir", map[string]string{"/etc/dir/x.conf": "a"}),
		machineConfigUnitYAML("50-unit", "foo.service", "[Unit]\nDescription=a\n"),
		workerConfigYAML("KubeletConfig", "max-pods", "maxPods: 150"),
	} {
		if err := admin.Create(ctx, manifest(t, text)); err != nil {
			t.Fatal(err)
		}
	}

	type request struct {
		name string
		// as is admin or mco.
		as  client.Client
		run func(c client.Client) error
	}
	create := func(text string) func(client.Client) error {
		return func(c client.Client) error { return c.Create(ctx, manifest(t, text), client.DryRunAll) }
	}
	patch := func(apiVersion, kind, name, merge string) func(client.Client) error {
		return func(c client.Client) error {
			u := &unstructured.Unstructured{}
			u.SetAPIVersion(apiVersion)
			u.SetKind(kind)
			u.SetName(name)
			return c.Patch(ctx, u, client.RawPatch(types.MergePatchType, []byte(merge)), client.DryRunAll)
		}
	}
	remove := func(apiVersion, kind, name string) func(client.Client) error {
		return func(c client.Client) error {
			u := &unstructured.Unstructured{}
			u.SetAPIVersion(apiVersion)
			u.SetKind(kind)
			u.SetName(name)
			return c.Delete(ctx, u, client.DryRunAll)
		}
	}
	const mcAPI, cfgAPI = "machineconfiguration.openshift.io/v1", "config.openshift.io/v1"
	mcFiles := func(files map[string]string) string {
		var u map[string]any
		if err := sigsyaml.Unmarshal([]byte(machineConfigYAML("x", files)), &u); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(map[string]any{"spec": u["spec"]})
		return string(b)
	}
	var (
		kubeletMC       = request{"create a MachineConfig writing " + kubeletConf, admin, create(machineConfigYAML("60-kubelet", map[string]string{kubeletConf: "b"}))}
		kubeletMCAsMCO  = request{"create a MachineConfig writing " + kubeletConf + ", as the MCO", mco, create(machineConfigYAML("60-kubelet", map[string]string{kubeletConf: "b"}))}
		otherMC         = request{"create a MachineConfig writing /etc/other.conf", admin, create(machineConfigYAML("60-other", map[string]string{"/etc/other.conf": "b"}))}
		editKubelet     = request{"change " + kubeletConf + " in MachineConfig 50-kubelet", admin, patch(mcAPI, "MachineConfig", "50-kubelet", mcFiles(map[string]string{kubeletConf: "b"}))}
		editOther       = request{"change /etc/other.conf, not " + kubeletConf + ", in MachineConfig 50-mixed", admin, patch(mcAPI, "MachineConfig", "50-mixed", mcFiles(map[string]string{kubeletConf: "a", "/etc/other.conf": "b"}))}
		labelKubelet    = request{"label MachineConfig 50-kubelet (a pool may select it by any label)", admin, patch(mcAPI, "MachineConfig", "50-kubelet", `{"metadata":{"labels":{"example.com/x":"y"}}}`)}
		moveKubelet     = request{"move MachineConfig 50-kubelet to pool infra (its role label)", admin, patch(mcAPI, "MachineConfig", "50-kubelet", `{"metadata":{"labels":{"machineconfiguration.openshift.io/role":"infra"}}}`)}
		annotateKubelet = request{"annotate MachineConfig 50-kubelet", admin, patch(mcAPI, "MachineConfig", "50-kubelet", `{"metadata":{"annotations":{"example.com/x":"y"}}}`)}
		labelOther      = request{"label MachineConfig 50-dir", admin, patch(mcAPI, "MachineConfig", "50-dir", `{"metadata":{"labels":{"example.com/x":"y"}}}`)}
		moveUnit        = request{"move MachineConfig 50-unit to pool infra", admin, patch(mcAPI, "MachineConfig", "50-unit", `{"metadata":{"labels":{"machineconfiguration.openshift.io/role":"infra"}}}`)}
		sizingKC        = request{"create an autoSizingReserved KubeletConfig", admin, create(autoSizingKubeletConfig)}
		deleteKubelet   = request{"delete MachineConfig 50-kubelet (removes " + kubeletConf + ")", admin, remove(mcAPI, "MachineConfig", "50-kubelet")}
		deleteAsMCO     = request{"delete MachineConfig 50-kubelet, as the MCO", mco, remove(mcAPI, "MachineConfig", "50-kubelet")}
		newKC           = request{"create a cpuManagerPolicy KubeletConfig", admin, create(cpuManagerKubeletConfig)}
		newKCAsMCO      = request{"create a cpuManagerPolicy KubeletConfig, as the MCO", mco, create(cpuManagerKubeletConfig)}
		editKC          = request{"change KubeletConfig max-pods's spec", admin, patch(mcAPI, "KubeletConfig", "max-pods", `{"spec":{"kubeletConfig":{"maxPods":200}}}`)}
		labelKC         = request{"label KubeletConfig max-pods", admin, patch(mcAPI, "KubeletConfig", "max-pods", `{"metadata":{"labels":{"example.com/x":"y"}}}`)}
		deleteKC        = request{"delete KubeletConfig max-pods", admin, remove(mcAPI, "KubeletConfig", "max-pods")}
		nodesConfig     = request{"change nodes.config.openshift.io cluster's spec", admin, patch(cfgAPI, "Node", "cluster", `{"spec":{"cgroupMode":"v2"}}`)}
		newCRC          = request{"create a pidsLimit ContainerRuntimeConfig", admin, create(workerConfigYAML("ContainerRuntimeConfig", "pids", "pidsLimit: 2048"))}
		unitMC          = request{"create a MachineConfig with unit foo.service", admin, create(machineConfigUnitYAML("60-unit", "foo.service", "[Unit]\nDescription=b\n"))}
		editUnit        = request{"change unit foo.service in MachineConfig 50-unit", admin, patch(mcAPI, "MachineConfig", "50-unit", `{"spec":{"config":{"systemd":{"units":[{"name":"foo.service","contents":"[Unit]\nDescription=b\n"}]}}}}`)}
		barUnitMC       = request{"create a MachineConfig with unit bar.service", admin, create(machineConfigUnitYAML("60-bar", "bar.service", "[Unit]\n"))}
		sshMC           = request{"create a MachineConfig with an SSH key", admin, create(sshMachineConfigYAML("60-ssh", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExampleExampleExampleExampleExampleExample1 x"))}
		beneathDir      = request{"create a MachineConfig writing /etc/dir/y.conf", admin, create(machineConfigYAML("60-dir", map[string]string{"/etc/dir/y.conf": "b"}))}
		deleteDir       = request{"delete MachineConfig 50-dir (removes /etc/dir/x.conf)", admin, remove(mcAPI, "MachineConfig", "50-dir")}
		siblingOfDir    = request{"create a MachineConfig writing /etc/dirty.conf", admin, create(machineConfigYAML("60-dirty", map[string]string{"/etc/dirty.conf": "b"}))}
		crioDropIn      = request{"create a MachineConfig writing /etc/crio/crio.conf.d/01-ctrcfg-pidsLimit", admin, create(machineConfigYAML("60-crio", map[string]string{"/etc/crio/crio.conf.d/01-ctrcfg-pidsLimit": "b"}))}
		setGuardAsAdmin = func(v string) {
			var merge string
			if v == "" {
				merge = fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, guardAnnotation)
			} else {
				merge = fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, guardAnnotation, v)
			}
			if err := admin.Patch(ctx, &operatorv1.MachineConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}}, client.RawPatch(types.MergePatchType, []byte(merge))); err != nil {
				t.Fatal(err)
			}
		}
	)
	// refusal says why r was refused, "" when it was admitted; another
	// error fails the test.
	refusal := func(r request) string {
		err := r.run(r.as)
		if err == nil {
			return ""
		}
		msg := err.Error()
		if !strings.Contains(msg, "ValidatingAdmissionPolicy 'ndp-mco-update-entries'") {
			t.Fatalf("%s: %v", r.name, err)
		}
		return msg
	}
	// phase sets the guard annotation, waits until the API server refuses
	// (or, with no annotation, admits) sentinel, then checks each request.
	phase := func(t *testing.T, guard string, sentinel request, refused map[string][]request, admitted []request) {
		setGuardAsAdmin(guard)
		testkit.Eventually(t, fmt.Sprintf("the guard in force for %q: %s %s", guard, sentinel.name, map[bool]string{true: "refused", false: "admitted"}[guard != ""]), func() (bool, string) {
			msg := refusal(sentinel)
			return (msg != "") == (guard != ""), msg
		}, testkit.Within(time.Minute))
		for subject, rs := range refused {
			for _, r := range rs {
				msg := refusal(r)
				switch {
				case msg == "":
					t.Errorf("guard %q: %s: admitted, want refused", guard, r.name)
				case !strings.Contains(msg, "for "+subject+":") || !strings.Contains(msg, "kubectl ndp release-mco-entries") || !strings.Contains(msg, "remove the annotation "+guardAnnotation):
					t.Errorf("guard %q: %s: the refusal does not name %q and how to release it: %s", guard, r.name, subject, msg)
				default:
					t.Logf("guard %q: %s: refused", guard, r.name)
				}
			}
		}
		for _, r := range admitted {
			if msg := refusal(r); msg != "" {
				t.Errorf("guard %q: %s: refused, want admitted: %s", guard, r.name, msg)
			} else {
				t.Logf("guard %q: %s: admitted", guard, r.name)
			}
		}
	}

	t.Run("kubelet.conf guarded", func(t *testing.T) {
		phase(t, "file:"+kubeletConf, newKC,
			map[string][]request{"file " + kubeletConf: {kubeletMC, editKubelet, deleteKubelet, labelKubelet, moveKubelet, newKC, editKC, deleteKC, nodesConfig}},
			[]request{otherMC, editOther, annotateKubelet, labelOther, labelKC, newCRC, unitMC, sshMC, kubeletMCAsMCO, newKCAsMCO, deleteAsMCO})
	})
	t.Run("a directory, a CRI-O drop-in, a unit and the SSH keys guarded", func(t *testing.T) {
		phase(t, "file:/etc/dir\nfile:/etc/crio/crio.conf.d/01-ctrcfg-pidsLimit\nunit:foo.service\nsshkey\n", newCRC,
			map[string][]request{
				"file /etc/dir": {beneathDir, deleteDir},
				"file /etc/crio/crio.conf.d/01-ctrcfg-pidsLimit": {newCRC, crioDropIn},
				"unit foo.service": {unitMC, editUnit, moveUnit},
				"sshkey":           {sshMC},
			},
			[]request{siblingOfDir, barUnitMC, kubeletMC, newKC, editKC, otherMC})
	})
	t.Run("autoSizingReserved's file guarded", func(t *testing.T) {
		phase(t, "file:/etc/node-sizing-enabled.env", sizingKC,
			map[string][]request{"file /etc/node-sizing-enabled.env": {sizingKC, editKC}},
			[]request{kubeletMC, newCRC})
	})
	t.Run("no guard", func(t *testing.T) {
		phase(t, "", newKC, nil,
			[]request{kubeletMC, editKubelet, deleteKubelet, labelKubelet, moveKubelet, newKC, sizingKC, editKC, deleteKC, nodesConfig, newCRC, unitMC, editUnit, moveUnit, sshMC, beneathDir, deleteDir})
	})
}

// machineConfiguration reads MachineConfiguration cluster, with its
// managedFields.
func (a *installedAdvisor) machineConfiguration(t *testing.T) *operatorv1.MachineConfiguration {
	t.Helper()
	var mc operatorv1.MachineConfiguration
	if err := a.Client.Get(context.Background(), client.ObjectKey{Name: "cluster"}, &mc); err != nil {
		t.Fatalf("reading MachineConfiguration cluster: %v", err)
	}
	return &mc
}

// waitMachineConfiguration waits until MachineConfiguration cluster
// satisfies ok, and returns it.
func (a *installedAdvisor) waitMachineConfiguration(t *testing.T, what string, ok func(*operatorv1.MachineConfiguration) (bool, string)) *operatorv1.MachineConfiguration {
	t.Helper()
	var mc *operatorv1.MachineConfiguration
	testkit.Eventually(t, "MachineConfiguration cluster: "+what, func() (bool, string) {
		mc = a.machineConfiguration(t)
		return ok(mc)
	}, testkit.Within(3*time.Minute), testkit.Every(250*time.Millisecond))
	return mc
}

// policyMCO is a NodeDisruptionPolicy's status.mco, nil until written.
func (a *installedAdvisor) policyMCO(t *testing.T, name string) *v1alpha1.PolicyMCOStatus {
	t.Helper()
	var p v1alpha1.NodeDisruptionPolicy
	if err := a.Client.Get(context.Background(), client.ObjectKey{Name: name}, &p); err != nil {
		t.Fatalf("reading NodeDisruptionPolicy %s: %v", name, err)
	}
	return p.Status.MCO
}

// waitPolicyMCO waits until a policy's status.mco satisfies ok.
func (a *installedAdvisor) waitPolicyMCO(t *testing.T, name string, ok func(*v1alpha1.PolicyMCOStatus) bool) *v1alpha1.PolicyMCOStatus {
	t.Helper()
	var s *v1alpha1.PolicyMCOStatus
	testkit.Eventually(t, "NodeDisruptionPolicy "+name+"'s status.mco", func() (bool, string) {
		s = a.policyMCO(t, name)
		return s != nil && ok(s), fmt.Sprintf("%+v", s)
	}, testkit.Within(2*time.Minute))
	return s
}

// nodeOn is the config node n runs.
func (a *installedAdvisor) nodeOn(t *testing.T, n string) string {
	t.Helper()
	var node corev1.Node
	if err := a.Client.Get(context.Background(), client.ObjectKey{Name: n}, &node); err != nil {
		t.Fatal(err)
	}
	return node.Annotations[ndpmcv1.CurrentConfigAnnotation]
}

// playDaemon plays the MCO's daemon on node n sent to config: it decides
// the update from the node's current config with mco-decide and the
// policies of MachineConfiguration cluster's status (what the daemon reads
// once the status is current), then reports the node done there.
func (a *installedAdvisor) playDaemon(t *testing.T, n, config string) mcoVerdict {
	t.Helper()
	from := a.nodeOn(t, n)
	d := mcoDecideFromStatus(t, a.Client, a.Dir, from, config)
	t.Logf("the MCO's daemon on %s, %s -> %s: %s (mco-decide from the status: %+v)", n, from, config, d.says(), d)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q,%q:%q,%q:%q}}}`,
		ndpmcv1.CurrentConfigAnnotation, config, ndpmcv1.DesiredConfigAnnotation, config, ndpmcv1.StateAnnotation, ndpmcv1.StateDone)
	if err := a.Client.Patch(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatalf("moving node %s to %s: %v", n, config, err)
	}
	return d
}

// mcoDecideFromStatus is the MCO's daemon's decision for from → to with
// the policies MachineConfiguration cluster's status holds (the daemon
// waits until status.observedGeneration is the spec's generation, then
// reads status.nodeDisruptionPolicyStatus.clusterPolicies). mco-decide
// merges a MachineConfiguration's spec with the MCO's defaults, so it is
// given the status's policies as the spec: merged again with the defaults
// they already hold, they are the same list (the one default no spec can
// hold, registries.conf's Special, is the default's own).
func mcoDecideFromStatus(t *testing.T, c client.Client, refDir, from, to string) mcoVerdict {
	t.Helper()
	var mc operatorv1.MachineConfiguration
	if err := c.Get(context.Background(), client.ObjectKey{Name: "cluster"}, &mc); err != nil {
		t.Fatalf("reading MachineConfiguration cluster: %v", err)
	}
	if mc.Status.ObservedGeneration != mc.Generation {
		t.Fatalf("MachineConfiguration cluster's status is of generation %d, its spec %d: the MCO's daemon would wait for the operator", mc.Status.ObservedGeneration, mc.Generation)
	}
	st := mc.Status.NodeDisruptionPolicyStatus.ClusterPolicies
	var spec operatorv1.NodeDisruptionPolicyConfig
	for _, f := range st.Files {
		if acts, ok := specActions(f.Actions); ok {
			spec.Files = append(spec.Files, operatorv1.NodeDisruptionPolicySpecFile{Path: f.Path, Actions: acts})
		}
	}
	for _, u := range st.Units {
		if acts, ok := specActions(u.Actions); ok {
			spec.Units = append(spec.Units, operatorv1.NodeDisruptionPolicySpecUnit{Name: u.Name, Actions: acts})
		}
	}
	if acts, ok := specActions(st.SSHKey.Actions); ok && len(acts) > 0 {
		spec.SSHKey = operatorv1.NodeDisruptionPolicySpecSSHKey{Actions: acts}
	}
	asSpec := operatorv1.MachineConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: operatorv1.GroupVersion.String(), Kind: "MachineConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: "cluster"},
		Spec:       operatorv1.MachineConfigurationSpec{NodeDisruptionPolicy: spec, IrreconcilableValidationOverrides: mc.Spec.IrreconcilableValidationOverrides},
	}
	data, err := json.Marshal(asSpec)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "machineconfiguration-status.json")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return mcoDecideWith(t, c, refDir, from, to, file)
}

// specActions is a status action list as a spec one; false when it holds
// the MCO's Special, which no spec can.
func specActions(in []operatorv1.NodeDisruptionPolicyStatusAction) ([]operatorv1.NodeDisruptionPolicySpecAction, bool) {
	var out []operatorv1.NodeDisruptionPolicySpecAction
	for _, a := range in {
		s := operatorv1.NodeDisruptionPolicySpecAction{Type: operatorv1.NodeDisruptionPolicySpecActionType(a.Type)}
		switch a.Type {
		case operatorv1.SpecialStatusAction:
			return nil, false
		case operatorv1.ReloadStatusAction:
			s.Reload = &operatorv1.ReloadService{ServiceName: a.Reload.ServiceName}
		case operatorv1.RestartStatusAction:
			s.Restart = &operatorv1.RestartService{ServiceName: a.Restart.ServiceName}
		}
		out = append(out, s)
	}
	return out, true
}

// has says whether the decision runs action typ on service.
func (d mcoVerdict) has(typ, service string) bool {
	for _, a := range d.Actions {
		if a.Type == typ && a.Service == service {
			return true
		}
	}
	return false
}

// entryActions is the spec entry for path's actions as JSON, "" when there
// is none.
func entryActions(mc *operatorv1.MachineConfiguration, path string) string {
	for _, f := range mc.Spec.NodeDisruptionPolicy.Files {
		if f.Path == path {
			b, _ := json.Marshal(f.Actions)
			return string(b)
		}
	}
	return ""
}

// statusHas says whether the status's policies have an entry for path
// whose first action is typ (any, when typ is "").
func statusHas(mc *operatorv1.MachineConfiguration, path, typ string) bool {
	for _, f := range mc.Status.NodeDisruptionPolicyStatus.ClusterPolicies.Files {
		if f.Path == path && (typ == "" || (len(f.Actions) > 0 && string(f.Actions[0].Type) == typ)) {
			return true
		}
	}
	return false
}

// entryOwners lists who owns the spec entry for path, from the
// managedFields ("manager/Operation"), read as the API server wrote them.
func entryOwners(mc *operatorv1.MachineConfiguration, path string) []string {
	key := fmt.Sprintf(`k:{"path":%q}`, path)
	var out []string
	for _, mf := range mc.ManagedFields {
		if slices.Contains(entryKeys(mf), key) {
			out = append(out, mf.Manager+"/"+string(mf.Operation))
		}
	}
	return out
}

// ownedBy lists the spec file entries manager owns.
func ownedBy(mc *operatorv1.MachineConfiguration, manager string) []string {
	var out []string
	for _, mf := range mc.ManagedFields {
		if mf.Manager == manager {
			out = append(out, entryKeys(mf)...)
		}
	}
	return out
}

// entryKeys are the keys of spec.nodeDisruptionPolicy.files a
// managedFields entry holds.
func entryKeys(mf metav1.ManagedFieldsEntry) []string {
	if mf.FieldsV1 == nil || mf.Subresource != "" {
		return nil
	}
	var f map[string]any
	if err := json.Unmarshal(mf.FieldsV1.Raw, &f); err != nil {
		return nil
	}
	spec, _ := f["f:spec"].(map[string]any)
	npc, _ := spec["f:nodeDisruptionPolicy"].(map[string]any)
	files, _ := npc["f:files"].(map[string]any)
	var out []string
	for k := range files {
		if strings.HasPrefix(k, "k:") {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// describeEntries says what MachineConfiguration cluster holds: each
// entry with its owners, the guard annotation, the generations.
func describeEntries(mc *operatorv1.MachineConfiguration) string {
	var parts []string
	for _, f := range mc.Spec.NodeDisruptionPolicy.Files {
		b, _ := json.Marshal(f.Actions)
		parts = append(parts, fmt.Sprintf("%s %s (%s)", f.Path, b, strings.Join(entryOwners(mc, f.Path), ", ")))
	}
	return fmt.Sprintf("files [%s]; %s=%q; generation %d, status of %d", strings.Join(parts, "; "), guardAnnotation, mc.Annotations[guardAnnotation], mc.Generation, mc.Status.ObservedGeneration)
}

// writeFiles writes manifests into a temporary directory, by name.
func writeFiles(t *testing.T, texts map[string]string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	out := map[string]string{}
	for name, text := range texts {
		out[name] = filepath.Join(dir, name)
		if err := os.WriteFile(out[name], []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// decodeManifests reads the objects of a multi-document YAML file.
func decodeManifests(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out
			}
			t.Fatalf("%s: %v", path, err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

// manifest is one object from YAML.
func manifest(t *testing.T, text string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := sigsyaml.Unmarshal([]byte(text), &u.Object); err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	return u
}

// machineConfigYAML is a worker MachineConfig writing files (path →
// contents).
func machineConfigYAML(name string, files map[string]string) string {
	var fs []map[string]any
	for _, p := range sortedKeysOf(files) {
		fs = append(fs, map[string]any{"path": p, "mode": 420, "overwrite": true, "contents": map[string]any{"source": "data:," + files[p]}})
	}
	return workerMachineConfig(name, map[string]any{"storage": map[string]any{"files": fs}})
}

func machineConfigUnitYAML(name, unit, contents string) string {
	return workerMachineConfig(name, map[string]any{"systemd": map[string]any{"units": []any{map[string]any{"name": unit, "contents": contents}}}})
}

func sshMachineConfigYAML(name, key string) string {
	return workerMachineConfig(name, map[string]any{"passwd": map[string]any{"users": []any{map[string]any{"name": "core", "sshAuthorizedKeys": []any{key}}}}})
}

func workerMachineConfig(name string, config map[string]any) string {
	config["ignition"] = map[string]any{"version": "3.5.0"}
	b, _ := json.Marshal(map[string]any{
		"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
		"metadata": map[string]any{"name": name, "labels": map[string]any{"machineconfiguration.openshift.io/role": "worker"}},
		"spec":     map[string]any{"config": config},
	})
	return string(b)
}

// workerConfigYAML is a KubeletConfig or a ContainerRuntimeConfig (kind)
// for the worker pool; settings are the lines of its spec.kubeletConfig or
// spec.containerRuntimeConfig.
func workerConfigYAML(kind, name, settings string) string {
	return fmt.Sprintf(`apiVersion: machineconfiguration.openshift.io/v1
kind: %s
metadata:
  name: %s
spec:
  machineConfigPoolSelector:
    matchLabels:
      pools.operator.machineconfiguration.openshift.io/worker: ""
  %s:
    %s
`, kind, name, strings.ToLower(kind[:1])+kind[1:], settings)
}

func sortedKeysOf(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
