package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/scheme"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/daemon"
	"github.com/ndp-dev/ndp/internal/controlplane"
	"github.com/ndp-dev/ndp/internal/output"
	"github.com/ndp-dev/ndp/internal/testkit/builder"
	"github.com/ndp-dev/ndp/internal/testkit/policytest"
	"github.com/ndp-dev/ndp/mco/mcoguard"
	"github.com/ndp-dev/ndp/planner/policy"
)

// noUnits is a systemd for plans that run no unit action: every call
// succeeds.
type noUnits struct{}

func (noUnits) DaemonReload(context.Context) error    { return nil }
func (noUnits) Reload(context.Context, string) error  { return nil }
func (noUnits) Restart(context.Context, string) error { return nil }
func (noUnits) Marker(context.Context, string) (daemon.UnitMarker, error) {
	return daemon.UnitMarker{}, nil
}
func (noUnits) WaitActive(context.Context, string) error              { return nil }
func (noUnits) WaitIdle(context.Context, string) error                { return nil }
func (noUnits) UnitFileState(context.Context, string) (string, error) { return "", nil }
func (noUnits) Enable(context.Context, []string) error                { return nil }
func (noUnits) Disable(context.Context, []string) error               { return nil }
func (noUnits) StartUnitIrreversibly(context.Context, string) error   { return nil }

// finishEvicted deletes at once the pods on node that an eviction left
// Terminating, as the node's kubelet would (envtest has none).
func finishEvicted(t *testing.T, node string) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go controlplane.Kubelet(ctx, k8s, node)
}

// The daemon's own code, with nothing but its pod-bound token, the shipped
// role and the admission policies in force, updates its node through a
// plan with a drain: it adopts its config, cordons, evicts the node's pods
// (its own DaemonSet pod stays), writes the file, uncordons and reports
// (annotations, MachineConfigNode, events). The boundaries above take
// nothing it needs.
func TestSecurityDaemonUpdatesItsNodeConfined(t *testing.T) {
	const own, other = "sec-run-a", "sec-run-b"
	ctx := context.Background()
	ensureNamespace(t, "ndp-security")
	pod, d := confinedDaemon(t, own, other)
	web := workloadPod(t, "ndp-security", "web-run", own)
	finishEvicted(t, own)

	// The old and the new config; the plan drains.
	const path = "/etc/ndp-security.conf"
	cfg := func(name, contents string) *ndpmcv1.MachineConfig {
		return renderedMC(name, "security-"+own).WithFiles(builder.File(path, contents).With("mode", 420).With("overwrite", true)).Build()
	}
	from, to := cfg("rendered-security-run-a", "a"), cfg("rendered-security-run-b", "b")
	np := &v1alpha1.NodeDisruptionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "security"}, Spec: v1alpha1.NodeDisruptionPolicySpec{
		Files: []operatorv1.NodeDisruptionPolicySpecFile{{Path: path, Actions: []operatorv1.NodeDisruptionPolicySpecAction{{Type: operatorv1.DrainSpecAction}}}}}}
	p := policytest.Plan(t, policytest.Planner(t, policy.FromAPI("security", np, 0, 0)), from, to, "")
	plan := p.PostConfigActions()
	if !plan.Drain || plan.Reboot {
		t.Fatalf("the plan does not drain without a reboot: %+v", plan)
	}
	create(t, from)
	create(t, to)
	to.Status.PostConfigActions = []ndpmcv1.PostConfigActions{plan}
	if err := k8s.Status().Update(ctx, to); err != nil {
		t.Fatal(err)
	}
	if err := rawPatch(k8s, nodeNamed(own), types.MergePatchType, fmt.Sprintf(`{"metadata":{"annotations":{%q:%q,%q:%q}}}`,
		ndpmcv1.CurrentConfigAnnotation, from.Name, ndpmcv1.DesiredConfigAnnotation, from.Name)); err != nil {
		t.Fatal(err)
	}

	// The daemon, as cmd/ndp-daemon wires it, with the token for every call.
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	for p, data := range map[string]string{"/etc/passwd": "root:x:0:0:root:/root:/bin/bash\n", "/etc/group": "root:x:0:\n"} {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bootID := filepath.Join(dir, "boot_id")
	if err := os.WriteFile(bootID, []byte("boot-1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	host, err := daemon.OpenHost(root, "/etc/systemd/system")
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	cfgToken := rest.AnonymousClientConfig(restConfig)
	cfgToken.BearerToken = daemonToken(t, pod)
	cs, err := kubernetes.NewForConfig(cfgToken)
	if err != nil {
		t.Fatal(err)
	}
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: cs.EventsV1()})
	ectx, stopEvents := context.WithCancel(ctx)
	if err := broadcaster.StartRecordingToSinkWithContext(ectx); err != nil {
		t.Fatal(err)
	}
	defer func() { stopEvents(); broadcaster.Shutdown() }()
	// The MCO's objects watched with the daemon's token, as ndp-daemon does
	// (its role lets it list and watch them by name only).
	guard, err := mcoguard.NewGuardForConfig(cfgToken)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = guard.Start(ectx) }()
	wctx, cancelWait := context.WithTimeout(ctx, time.Minute)
	defer cancelWait()
	if err := guard.WaitSynced(wctx); err != nil {
		t.Fatalf("the daemon's token cannot watch the MCO's objects: %v", err)
	}
	var drainLog output.Buffer
	dm := &daemon.Daemon{
		NodeName: own, Client: d, Reader: d, MCO: guard, Host: host,
		Systemd: noUnits{}, OS: daemon.RecordingOSUpdater{Path: filepath.Join(dir, "os")},
		Rebooter: daemon.RecordingRebooter{Path: filepath.Join(dir, "reboots")},
		Drainer: &daemon.Drainer{Client: cs, AttemptTimeout: 30 * time.Second, EvictRetryDelay: 200 * time.Millisecond,
			RetryMin: 200 * time.Millisecond, RetryMax: 2 * time.Second, Log: &drainLog},
		Status:     &daemon.Status{Client: d, Reader: d, Recorder: broadcaster.NewRecorder(scheme.New(), "ndp-daemon"), NodeName: own},
		BootIDPath: bootID, PollInterval: 500 * time.Millisecond, Log: logr.Discard(),
	}
	syncUntil := func(what string, ok func(*corev1.Node) bool) {
		t.Helper()
		deadline := time.Now().Add(3 * time.Minute)
		for {
			sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
			_, err := dm.Sync(sctx)
			cancel()
			var n corev1.Node
			if gerr := k8s.Get(ctx, client.ObjectKey{Name: own}, &n); gerr != nil {
				t.Fatal(gerr)
			}
			if err == nil && ok(&n) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: last sync: %v; node annotations %v, unschedulable %v; drain log:\n%s", what, err, n.Annotations, n.Spec.Unschedulable, drainLog.String())
			}
			time.Sleep(300 * time.Millisecond)
		}
	}
	done := func(config string) func(*corev1.Node) bool {
		return func(n *corev1.Node) bool {
			return n.Annotations[ndpmcv1.StateAnnotation] == ndpmcv1.StateDone && n.Annotations[ndpmcv1.CurrentConfigAnnotation] == config
		}
	}
	syncUntil("adopting "+from.Name, done(from.Name))
	if err := rawPatch(k8s, nodeNamed(own), types.MergePatchType, fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, ndpmcv1.DesiredConfigAnnotation, to.Name)); err != nil {
		t.Fatal(err)
	}
	syncUntil("updating to "+to.Name, done(to.Name))

	var n corev1.Node
	if err := k8s.Get(ctx, client.ObjectKey{Name: own}, &n); err != nil {
		t.Fatal(err)
	}
	if n.Spec.Unschedulable || n.Annotations[ndpmcv1.ReasonAnnotation] != "" {
		t.Errorf("after the update: unschedulable %v, annotations %v", n.Spec.Unschedulable, n.Annotations)
	}
	if b, err := os.ReadFile(filepath.Join(root, path)); err != nil || string(b) != "b" {
		t.Errorf("%s on the host: %q, %v", path, b, err)
	}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(web), &corev1.Pod{}); !apierrors.IsNotFound(err) {
		t.Errorf("the workload pod after the drain: %v", err)
	}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{}); err != nil {
		t.Errorf("the daemon's own (DaemonSet) pod after the drain: %v", err)
	}
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("machineconfiguration.openshift.io/v1")
	u.SetKind("MachineConfigNode")
	t.Cleanup(func() {
		u.SetName(own)
		_ = k8s.Delete(context.Background(), u)
	})
	if err := k8s.Get(ctx, client.ObjectKey{Name: own}, u); err != nil {
		t.Errorf("MachineConfigNode %s: %v", own, err)
	} else if cur, _, _ := unstructured.NestedString(u.Object, "status", "configVersion", "current"); cur != to.Name {
		t.Errorf("MachineConfigNode %s: status.configVersion.current %q, want %s", own, cur, to.Name)
	}
	// Its NodeHistory got through the role and the own-node policy: created
	// owned by its Node, the update recorded.
	t.Cleanup(func() {
		_ = k8s.Delete(context.Background(), &v1alpha1.NodeHistory{ObjectMeta: metav1.ObjectMeta{Name: own}})
	})
	var nh v1alpha1.NodeHistory
	if err := k8s.Get(ctx, client.ObjectKey{Name: own}, &nh); err != nil {
		t.Errorf("NodeHistory %s: %v", own, err)
	} else if len(nh.Status.Updates) != 1 || nh.Status.Updates[0].To != to.Name || nh.Status.Updates[0].Result != v1alpha1.UpdateDone ||
		len(nh.OwnerReferences) != 1 || nh.OwnerReferences[0].Kind != "Node" || nh.OwnerReferences[0].Name != own {
		t.Errorf("NodeHistory %s: owners %+v, updates %+v", own, nh.OwnerReferences, nh.Status.Updates)
	}
	// Its event about its Node got through the events policy: the end of
	// its drain and reboot (the steps are in the history, not an event
	// each).
	want := map[string]bool{"UpdateComplete": false}
	deadline := time.Now().Add(policyPatience)
	for {
		var list eventsv1.EventList
		if err := k8s.List(ctx, &list, client.InNamespace(metav1.NamespaceDefault)); err != nil {
			t.Fatal(err)
		}
		for _, e := range list.Items {
			if _, ok := want[e.Reason]; ok && e.Regarding.Name == own && e.ReportingController == "ndp-daemon" {
				want[e.Reason] = true
			}
		}
		if want["UpdateComplete"] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon's events about %s (seen: %v)", own, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
