package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/scheme"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/mco/mcoguard"
	"github.com/ndp-dev/ndp/osupdate"
)

// The fuzzed node: it runs fuzzFrom (recorded on its host) and is told to
// move to the target MachineConfig the fuzzer gives.
const (
	fuzzNode    = "node-0"
	fuzzFrom    = "rendered-worker-old"
	fuzzTo      = "rendered-worker-new"
	fuzzBootID  = "boot-2"
	fuzzOldBoot = "boot-1"
)

var (
	fuzzSchemeOnce sync.Once
	fuzzScheme     *runtime.Scheme
	fuzzDecoder    runtime.Decoder
)

// fuzzCodecs is the scheme the daemon's client decodes the cluster's
// objects with, built once.
func fuzzCodecs() (*runtime.Scheme, runtime.Decoder) {
	fuzzSchemeOnce.Do(func() {
		fuzzScheme = scheme.New()
		fuzzDecoder = serializer.NewCodecFactory(fuzzScheme).UniversalDeserializer()
	})
	return fuzzScheme, fuzzDecoder
}

// fuzzFromSpec is the config the fuzzed host runs.
func fuzzFromSpec() mcfgv1.MachineConfigSpec {
	return mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: []byte(`{"ignition":{"version":"3.4.0"},
	  "storage":{"files":[{"path":"/etc/chrony.conf","mode":420,"contents":{"source":"data:,pool%20a"}}]},
	  "systemd":{"units":[{"name":"foo.service","enabled":true,"contents":"[Service]\nExecStart=/bin/true\n"}]}}`)}}
}

// fuzzPlan is a plan stored by the plan controller, with its hash.
func fuzzPlan(from, to string, drain, reboot bool, actions ...ndpmcv1.PlanAction) ndpmcv1.PostConfigActions {
	p := ndpmcv1.PostConfigActions{From: from, Actions: actions, Drain: drain, Reboot: reboot, PolicyRevision: "sha256:0123",
		Reasons: []ndpmcv1.PlanReason{{Change: "file /etc/chrony.conf: contents changed", Policy: "chrony", Actions: actions}}}
	p.PlanHash = p.Hash(to)
	return p
}

func restart(unit string) ndpmcv1.PlanAction {
	return ndpmcv1.PlanAction{Type: ndpmcv1.RestartAction, Restart: &ndpmcv1.PlanService{ServiceName: unit}}
}

func reload(unit string) ndpmcv1.PlanAction {
	return ndpmcv1.PlanAction{Type: ndpmcv1.ReloadAction, Reload: &ndpmcv1.PlanService{ServiceName: unit}}
}

var (
	daemonReload  = ndpmcv1.PlanAction{Type: ndpmcv1.DaemonReloadAction}
	rebootAction  = ndpmcv1.PlanAction{Type: ndpmcv1.RebootAction}
	noneAction    = ndpmcv1.PlanAction{Type: ndpmcv1.NoneAction}
	packageUpdate = ndpmcv1.PlanAction{Type: ndpmcv1.PackageUpdateAction}
)

// fuzzTarget is the target MachineConfig as the API server returns it.
func fuzzTarget(tb testing.TB, name, ign string, spec map[string]any, plans ...ndpmcv1.PostConfigActions) []byte {
	tb.Helper()
	s := map[string]any{"config": json.RawMessage(ign)}
	for k, v := range spec {
		s[k] = v
	}
	b, err := json.Marshal(map[string]any{
		"apiVersion": "machineconfiguration.openshift.io/v1",
		"kind":       "MachineConfig",
		"metadata":   map[string]any{"name": name, "labels": map[string]string{ndpmcv1.RenderedForLabel: "worker"}},
		"spec":       s,
		"status":     map[string]any{"observedGeneration": 1, "postConfigActions": plans},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// fuzzJournal is a journal the daemon wrote for a plan, with the first
// done steps done and the next one started.
func fuzzJournal(tb testing.TB, plan ndpmcv1.PostConfigActions, osChange bool, done int, started bool, mutate func(*Journal)) []byte {
	tb.Helper()
	j := newJournal(fuzzTo, &plan, "worker", fuzzOldBoot, osChange, false)
	j.Started = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := range j.Steps {
		if i < done {
			j.Steps[i].Started, j.Steps[i].Done, j.Steps[i].BootID = true, true, fuzzOldBoot
		}
		if i == done && started {
			j.Steps[i].Started, j.Steps[i].BootID = true, fuzzOldBoot
			if j.Steps[i].Action != nil && j.Steps[i].Action.Type != ndpmcv1.DaemonReloadAction {
				j.Steps[i].Marker = &UnitMarker{InvocationID: "0"}
			}
		}
	}
	if mutate != nil {
		mutate(j)
	}
	b, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

const fuzzToIgn = `{"ignition":{"version":"3.4.0"},
  "storage":{"files":[{"path":"/etc/chrony.conf","mode":420,"contents":{"source":"data:,pool%20b"}}]},
  "systemd":{"units":[{"name":"foo.service","enabled":true,"contents":"[Service]\nExecStart=/bin/false\n","dropins":[{"name":"10-x.conf","contents":"[Service]\n"}]}]}}`

func addDaemonSeeds(f *testing.F) {
	chrony := fuzzPlan(fuzzFrom, fuzzTo, false, false, restart("chronyd.service"))
	crio := fuzzPlan(fuzzFrom, fuzzTo, true, false, daemonReload, reload("crio.service"), restart("kubelet.service"))
	reboot := fuzzPlan(fuzzFrom, fuzzTo, true, true, rebootAction)
	none := fuzzPlan(fuzzFrom, fuzzTo, false, false, noneAction)
	packages := fuzzPlan(fuzzFrom, fuzzTo, false, false, packageUpdate, restart("chronyd.service"))
	packagesReboot := fuzzPlan(fuzzFrom, fuzzTo, true, true, packageUpdate, rebootAction)
	tampered := chrony
	tampered.Actions = []ndpmcv1.PlanAction{restart("sshd.service")}

	target := func(plans ...ndpmcv1.PostConfigActions) []byte {
		return fuzzTarget(f, fuzzTo, fuzzToIgn, nil, plans...)
	}
	osTarget := fuzzTarget(f, fuzzTo, fuzzToIgn, map[string]any{"osImageURL": "quay.io/ocp@sha256:1", "kernelArguments": []string{"nosmt"}, "kernelType": "realtime"}, reboot)
	full, err := os.ReadFile("../examples/machineconfigs/chrony/new.yaml")
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []struct{ target, journal []byte }{
		// Fresh updates: no journal yet.
		{target(chrony), nil},
		{target(crio), nil},
		{osTarget, nil},
		{target(none), nil},
		{target(packages), nil},
		{target(packagesReboot), nil},
		{target(), nil},         // the plan is not written yet
		{target(tampered), nil}, // refused: planHash mismatch
		{target(fuzzPlan("rendered-worker-other", fuzzTo, false, false, noneAction), chrony), nil},
		{full, nil}, // YAML, and a plan for another config
		{nil, nil},
		// Resumed updates, at every kind of step.
		{target(chrony), fuzzJournal(f, chrony, false, 3, true, nil)},
		{target(crio), fuzzJournal(f, crio, false, 1, true, nil)},
		{target(crio), fuzzJournal(f, crio, false, 5, true, nil)},
		{target(crio), fuzzJournal(f, crio, false, 7, false, nil)},
		{osTarget, fuzzJournal(f, reboot, true, 6, true, nil)}, // the reboot happened
		{osTarget, fuzzJournal(f, reboot, true, 3, false, nil)},
		// A package update, answered (no reboot), at its restart-services step.
		{target(packages), fuzzJournal(f, packages, false, 8, true, func(j *Journal) {
			j.Packages = &osupdate.Outcome{Restart: []string{answeredService}}
			for i := range j.Steps[:8] {
				j.Steps[i].Skipped = j.Steps[i].When == WhenRebootAsked
			}
		})},
		// Its answer lost: the steps that follow it cannot run.
		{target(packages), fuzzJournal(f, packages, false, 5, false, nil)},
		// Finished and failed updates.
		{target(chrony), fuzzJournal(f, chrony, false, 5, false, func(j *Journal) { j.Completed = true })},
		{target(crio), fuzzJournal(f, crio, false, 4, true, func(j *Journal) {
			j.Failed = &Failure{Step: "files", Error: "disk full", At: j.Started}
		})},
		// Corrupt journals: truncated, emptied, the wrong shape, another plan.
		{target(chrony), fuzzJournal(f, chrony, false, 3, true, nil)[:200]},
		{target(chrony), []byte("null")},
		{target(chrony), []byte("{}")},
		{target(chrony), []byte(`{"to":"` + fuzzTo + `","steps":[{"name":"action"}]}`)},
		{target(chrony), fuzzJournal(f, tampered, false, 3, false, nil)},
	} {
		f.Add(s.target, s.journal)
	}
}

// FuzzDaemonPlan runs the node daemon's Sync on what it decodes from the
// cluster and the host: the target MachineConfig (its status holds the
// plans) and the journal /etc/ndp/journal.json, both arbitrary. The rest
// is real: the daemon and its host file system (a temporary root), with
// fake API clients and a systemd, OS updater and rebooter that record what
// they are asked. Beyond not panicking:
//   - every stored plan that verifies passes Validate, survives the
//     conversion to the planner's actions and back, and lays out a journal;
//   - a journal that does not decode stops the node (Degraded) before
//     anything runs;
//   - whatever the inputs, the daemon only reloads or restarts units,
//     drains and reboots as a plan that verifies says, and writes nothing
//     outside its state directory without one;
//   - a node reported Done runs, on its host, the config it reports.
func FuzzDaemonPlan(f *testing.F) {
	addDaemonSeeds(f)
	sch, decoder := fuzzCodecs()
	f.Fuzz(func(t *testing.T, targetDoc, journal []byte) {
		var target *ndpmcv1.MachineConfig
		if obj, _, err := decoder.Decode(targetDoc, nil, nil); err == nil {
			target, _ = obj.(*ndpmcv1.MachineConfig)
		}
		var verified []*ndpmcv1.PostConfigActions
		desired := fuzzTo
		if target != nil {
			if target.Name != "" {
				desired = target.Name
			}
			for i := range target.Status.PostConfigActions {
				p := &target.Status.PostConfigActions[i]
				if checkStoredPlan(t, p, desired) && p.From == fuzzFrom {
					verified = append(verified, p)
				}
			}
		}
		var decoded Journal
		journalOK := json.Unmarshal(journal, &decoded) == nil
		if journalOK && decoded.Plan.Verify(decoded.To) == nil {
			verified = append(verified, &decoded.Plan)
		}

		r := newFuzzRig(t, sch, target, desired, journal)
		for range 3 {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			_, _ = r.d.Sync(ctx)
			cancel()
			if r.d.rebooting {
				break
			}
		}
		r.check(t, verified, journal, journalOK)
	})
}

// checkStoredPlan holds a stored plan that verifies to what the daemon
// does with it, and says whether it verifies.
func checkStoredPlan(t *testing.T, p *ndpmcv1.PostConfigActions, to string) bool {
	t.Helper()
	if p.Verify(to) != nil {
		return false
	}
	if err := p.Validate(); err != nil {
		t.Fatalf("Verify accepts a plan Validate refuses: %v", err)
	}
	if back := ndpmcv1.PlanActionsFrom(ndpmcv1.NodeDisruptionPolicyActions(p.Actions)); !reflect.DeepEqual(back, p.Actions) {
		t.Fatalf("actions do not survive the conversion: %+v → %+v", p.Actions, back)
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var again ndpmcv1.PostConfigActions
	if err := json.Unmarshal(b, &again); err != nil || again.Verify(to) != nil {
		t.Fatalf("a verified plan no longer verifies after a JSON round trip: %v, %v", err, again.Verify(to))
	}
	for _, osChange := range []bool{false, true} {
		j := newJournal(to, p, "worker", fuzzBootID, osChange, false)
		_ = describePlan(j)
		actions := 0
		for i := range j.Steps {
			_ = j.Steps[i].Title()
			if j.Steps[i].Action != nil {
				actions++
			}
		}
		want := 0
		for _, a := range p.Actions {
			if a.Type != ndpmcv1.NoneAction && a.Type != ndpmcv1.RebootAction {
				want++
			}
		}
		ifAsked := p.RebootIfAsked()
		if actions != want || (j.step(StepReboot) != nil) != (p.Reboot || ifAsked) || (j.step(StepDrain) != nil) != (p.Drain || ifAsked) ||
			(j.step(StepRestartServices) != nil) != ifAsked {
			t.Fatalf("the journal's steps %+v do not follow the plan %+v", j.Steps, p)
		}
	}
	return true
}

// fuzzRig is one node: a host root, the cluster's fakes and the daemon.
type fuzzRig struct {
	d       *Daemon
	k8s     client.Client
	kube    *kubefake.Clientset
	sd      *recordingSystemd
	os      *countingOS
	pkgs    *answeringPackages
	reboots *countingRebooter
	root    string
	before  map[string]bool
}

func newFuzzRig(t *testing.T, sch *runtime.Scheme, target *ndpmcv1.MachineConfig, desired string, journal []byte) *fuzzRig {
	t.Helper()
	h := testHost(t)
	// The host runs the config its journal says it wrote, if it got that far.
	stored := StoredConfig{Name: fuzzFrom, Pool: "worker", Spec: fuzzFromSpec()}
	var j Journal
	if json.Unmarshal(journal, &j) == nil {
		if s := j.step(StepCurrentConfig); s != nil && s.Done {
			stored.Name = j.To
			if target != nil && target.Name == j.To {
				stored.Spec = target.Spec
			}
		}
	}
	if err := h.WriteJSON(CurrentConfigPath, &stored); err != nil {
		t.Fatal(err)
	}
	if len(journal) > 0 {
		if err := os.WriteFile(filepath.Join(h.Path, JournalPath), journal, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	bootID := filepath.Join(t.TempDir(), "boot_id")
	if err := os.WriteFile(bootID, []byte(fuzzBootID+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// With a journal, the node was mid-update: the daemon had reported it Working.
	state := ndpmcv1.StateDone
	if len(journal) > 0 {
		state = ndpmcv1.StateWorking
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fuzzNode, Annotations: map[string]string{
		ndpmcv1.CurrentConfigAnnotation: fuzzFrom, ndpmcv1.DesiredConfigAnnotation: desired, ndpmcv1.StateAnnotation: state,
	}}}
	k8s, kube := fuzzCluster(t, sch, node, target)
	r := &fuzzRig{k8s: k8s, kube: kube, sd: &recordingSystemd{}, os: &countingOS{}, pkgs: &answeringPackages{}, reboots: &countingRebooter{}, root: h.Path}
	r.d = &Daemon{
		NodeName: fuzzNode, Client: k8s, Reader: k8s, MCO: mcoguard.Lookup{Reader: k8s}, Host: h, Systemd: r.sd, OS: r.os, Packages: r.pkgs, Rebooter: r.reboots,
		Drainer:    &Drainer{Client: kube, AttemptTimeout: 5 * time.Second, RetryMin: time.Millisecond, RetryMax: 10 * time.Millisecond},
		Status:     &Status{Client: k8s, Reader: k8s, NodeName: fuzzNode},
		BootIDPath: bootID, PollInterval: time.Second,
	}
	r.before = hostFiles(t, h.Path)
	return r
}

var (
	fuzzClusterOnce sync.Once
	fuzzK8s         applyClient
	fuzzKube        *kubefake.Clientset
)

// fuzzCluster gives the fake API clients holding just the node and the
// target. They are built once per process and emptied for each input:
// building them starts goroutines whose coverage, landing in later inputs
// at random, made every input look new to the fuzzer.
func fuzzCluster(t *testing.T, sch *runtime.Scheme, node *corev1.Node, target *ndpmcv1.MachineConfig) (applyClient, *kubefake.Clientset) {
	t.Helper()
	ctx := context.Background()
	fuzzClusterOnce.Do(func() {
		// NodeHistory has a status subresource, as its CRD says.
		fuzzK8s = applyClient{fake.NewClientBuilder().WithScheme(sch).WithStatusSubresource(&v1alpha1.NodeHistory{}).Build()}
		fuzzKube = kubefake.NewClientset()
	})
	var mcs ndpmcv1.MachineConfigList
	if err := fuzzK8s.List(ctx, &mcs); err != nil {
		t.Fatal(err)
	}
	for i := range mcs.Items {
		if err := fuzzK8s.Delete(ctx, &mcs.Items[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := fuzzK8s.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fuzzNode}}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	if err := fuzzK8s.Delete(ctx, &v1alpha1.NodeHistory{ObjectMeta: metav1.ObjectMeta{Name: fuzzNode}}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	if err := fuzzK8s.Create(ctx, node.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	if target != nil && target.Name != "" {
		target = target.DeepCopy()
		target.ResourceVersion, target.UID, target.Generation = "", "", 0
		_ = fuzzK8s.Create(ctx, target) // an object the fake refuses: the target does not exist
	}
	if err := fuzzKube.CoreV1().Nodes().Delete(ctx, fuzzNode, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	if _, err := fuzzKube.CoreV1().Nodes().Create(ctx, node.DeepCopy(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fuzzKube.ClearActions()
	return fuzzK8s, fuzzKube
}

// check holds the node to the properties of FuzzDaemonPlan.
func (r *fuzzRig) check(t *testing.T, verified []*ndpmcv1.PostConfigActions, journal []byte, journalOK bool) {
	t.Helper()
	var node corev1.Node
	if err := r.k8s.Get(context.Background(), client.ObjectKey{Name: fuzzNode}, &node); err != nil {
		t.Fatal(err)
	}
	state, reason := node.Annotations[ndpmcv1.StateAnnotation], node.Annotations[ndpmcv1.ReasonAnnotation]
	if len(journal) > 0 && !journalOK {
		if len(r.sd.calls) > 0 || r.os.n > 0 || r.reboots.n > 0 {
			t.Fatalf("a journal that does not decode, yet the daemon ran %q, %d OS changes, %d reboots", r.sd.calls, r.os.n, r.reboots.n)
		}
		if state != ndpmcv1.StateDegraded || !strings.Contains(reason, "journal") {
			t.Fatalf("a journal that does not decode: node state %q, reason %q", state, reason)
		}
	}
	planned := func(ok func(p *ndpmcv1.PostConfigActions) bool) bool {
		return slices.ContainsFunc(verified, ok)
	}
	for _, c := range r.sd.calls {
		typ, unit, _ := strings.Cut(c, " ")
		if typ != "Reload" && typ != "Restart" {
			continue
		}
		if !planned(func(p *ndpmcv1.PostConfigActions) bool {
			return slices.ContainsFunc(p.Actions, func(a ndpmcv1.PlanAction) bool { return string(a.Type) == typ && unitOf(&a) == unit }) ||
				(p.RebootIfAsked() && typ == "Restart" && unit == answeredService)
		}) {
			t.Fatalf("the daemon ran %s %s, which no plan that verifies has (%d such plans); reason %q", typ, unit, len(verified), reason)
		}
	}
	if r.pkgs.n > 0 && !planned(func(p *ndpmcv1.PostConfigActions) bool { return p.UpdatesPackages() }) {
		t.Fatalf("the daemon updated the packages, but no plan that verifies says so; reason %q", reason)
	}
	// The fuzzed host answers no reboot: a plan that reboots only if asked
	// does not.
	if r.reboots.n > 0 && !planned(func(p *ndpmcv1.PostConfigActions) bool { return p.Reboot }) {
		t.Fatalf("the daemon rebooted, but no plan that verifies says so; reason %q", reason)
	}
	for _, a := range r.kube.Actions() {
		if a.GetResource().Resource == "pods" && !planned(func(p *ndpmcv1.PostConfigActions) bool { return p.Drain }) {
			t.Fatalf("the daemon drained (%s pods), but no plan that verifies says so; reason %q", a.GetVerb(), reason)
		}
	}
	if len(verified) == 0 {
		if r.os.n > 0 || len(r.sd.calls) > 0 {
			t.Fatalf("no plan verifies, yet the daemon ran %q and %d OS changes", r.sd.calls, r.os.n)
		}
		for p := range hostFiles(t, r.root) {
			if !r.before[p] && !strings.HasPrefix(p, StateDir+"/") {
				t.Fatalf("no plan verifies, yet the daemon wrote %s", p)
			}
		}
	}
	if state == ndpmcv1.StateDone {
		var cur StoredConfig
		found, err := r.d.Host.ReadJSON(CurrentConfigPath, &cur)
		if err != nil || !found || cur.Name != node.Annotations[ndpmcv1.CurrentConfigAnnotation] {
			t.Fatalf("the node is Done with currentConfig %q, but its host runs %q (%v)", node.Annotations[ndpmcv1.CurrentConfigAnnotation], cur.Name, err)
		}
	}
}

// hostFiles lists the files under a host root, as host paths.
func hostFiles(t *testing.T, root string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(root, p)
			out["/"+filepath.ToSlash(rel)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// applyClient is the fake client with server-side apply accepted (the
// fake has no schema for MachineConfigNode).
type applyClient struct{ client.WithWatch }

func (applyClient) Apply(context.Context, runtime.ApplyConfiguration, ...client.ApplyOption) error {
	return nil
}

func (c applyClient) Status() client.SubResourceWriter { return applyStatus{c.WithWatch.Status()} }

type applyStatus struct{ client.SubResourceWriter }

func (applyStatus) Apply(context.Context, runtime.ApplyConfiguration, ...client.SubResourceApplyOption) error {
	return nil
}

// recordingSystemd records what the daemon asks of systemd; every unit is
// active, and each restart is a new run.
type recordingSystemd struct {
	calls []string
	runs  map[string]int
}

func (s *recordingSystemd) record(typ, unit string) { s.calls = append(s.calls, typ+" "+unit) }

func (s *recordingSystemd) DaemonReload(context.Context) error {
	s.record("DaemonReload", "")
	return nil
}

func (s *recordingSystemd) Marker(_ context.Context, unit string) (UnitMarker, error) {
	return UnitMarker{InvocationID: fmt.Sprint(s.runs[unit])}, nil
}

func (s *recordingSystemd) Reload(_ context.Context, unit string) error {
	s.record("Reload", unit)
	return nil
}

func (s *recordingSystemd) Restart(_ context.Context, unit string) error {
	if s.runs == nil {
		s.runs = map[string]int{}
	}
	s.runs[unit]++
	s.record("Restart", unit)
	return nil
}

func (s *recordingSystemd) WaitActive(context.Context, string) error { return nil }
func (s *recordingSystemd) WaitIdle(context.Context, string) error   { return nil }

func (s *recordingSystemd) UnitFileState(context.Context, string) (string, error) {
	return "enabled", nil
}

func (s *recordingSystemd) Enable(_ context.Context, units []string) error {
	s.record("Enable", strings.Join(units, ","))
	return nil
}

func (s *recordingSystemd) Disable(_ context.Context, units []string) error {
	s.record("Disable", strings.Join(units, ","))
	return nil
}

func (s *recordingSystemd) StartUnitIrreversibly(_ context.Context, unit string) error {
	s.record("StartUnitIrreversibly", unit)
	return nil
}

type countingOS struct{ n int }

func (o *countingOS) Check(_, _ osupdate.Config) error { return nil }

func (o *countingOS) Apply(context.Context, osupdate.Config, osupdate.Config) (osupdate.Outcome, error) {
	o.n++
	return osupdate.Outcome{Reboot: true}, nil
}

// answeringPackages answers every package update with a service to
// restart, as needrestart would, and no reboot.
type answeringPackages struct{ n int }

const answeredService = "answered.service"

func (p *answeringPackages) Check() error { return nil }

func (p *answeringPackages) Apply(context.Context) (osupdate.Outcome, error) {
	p.n++
	return osupdate.Outcome{Restart: []string{answeredService}}, nil
}

type countingRebooter struct{ n int }

func (r *countingRebooter) Reboot(context.Context, string) error {
	r.n++
	return nil
}

// TestResumeRefusesStepsNotInThePlan: the journal's steps are not covered
// by the planHash. A journal whose plan verifies but whose steps were
// corrupted made the daemon restart a unit its plan does not name (found by
// FuzzDaemonPlan, testdata/fuzz/FuzzDaemonPlan/4731be6b2f71cce6), and an
// action step without its action panicked. Such a journal is refused.
func TestResumeRefusesStepsNotInThePlan(t *testing.T) {
	sch, _ := fuzzCodecs()
	crio := fuzzPlan(fuzzFrom, fuzzTo, true, false, daemonReload, reload("crio.service"), restart("kubelet.service"))
	target := &ndpmcv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: fuzzTo}, Spec: mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: []byte(fuzzToIgn)}},
		Status: ndpmcv1.MachineConfigStatus{PostConfigActions: []ndpmcv1.PostConfigActions{crio}}}
	run := func(t *testing.T, mutate func(*Journal)) (*fuzzRig, string) {
		t.Helper()
		r := newFuzzRig(t, sch, target, fuzzTo, fuzzJournal(t, crio, false, 5, false, mutate))
		if _, err := r.d.Sync(context.Background()); err != nil {
			t.Fatal(err)
		}
		var node corev1.Node
		if err := r.k8s.Get(context.Background(), client.ObjectKey{Name: fuzzNode}, &node); err != nil {
			t.Fatal(err)
		}
		return r, node.Annotations[ndpmcv1.ReasonAnnotation]
	}
	if r, reason := run(t, nil); !slices.Equal(r.sd.calls, []string{"DaemonReload ", "Reload crio.service", "Restart kubelet.service"}) {
		t.Fatalf("an intact journal: ran %q, reason %q", r.sd.calls, reason)
	}
	for name, mutate := range map[string]func(*Journal){
		"another unit":        func(j *Journal) { j.Steps[7].Action.Restart.ServiceName = "sshd.service" },
		"no unit":             func(j *Journal) { j.Steps[7].Action.Restart = nil },
		"no action":           func(j *Journal) { j.Steps[7].Action = nil },
		"another number":      func(j *Journal) { j.Steps[7].Number = 2 },
		"a reboot added":      func(j *Journal) { j.Steps = append(j.Steps[:8], append([]Step{{Name: StepReboot}}, j.Steps[8:]...)...) },
		"an action dropped":   func(j *Journal) { j.Steps = append(j.Steps[:6], j.Steps[7:]...) },
		"no steps":            func(j *Journal) { j.Steps = nil },
		"an unknown step":     func(j *Journal) { j.Steps[5].Name = "format-disk" },
		"the drain dropped":   func(j *Journal) { j.Steps = j.Steps[2:] },
		"current-config gone": func(j *Journal) { j.Steps = append(j.Steps[:4], j.Steps[5:]...) },
	} {
		t.Run(name, func(t *testing.T) {
			r, reason := run(t, mutate)
			if len(r.sd.calls) > 0 || r.reboots.n > 0 || !strings.Contains(reason, "its steps are not the steps of its plan") {
				t.Fatalf("ran %q, %d reboots; reason %q", r.sd.calls, r.reboots.n, reason)
			}
		})
	}
}
