package clusterdiff

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/internal/testkit/builder"
	"github.com/ndp-dev/ndp/mco/mcorender"
	"github.com/ndp-dev/ndp/planner/policy"
	"github.com/ndp-dev/ndp/render"
)

const kubeletConf = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncgroupDriver: systemd\nmaxPods: 250\n"

var workerLabels = map[string]string{"pools.operator.machineconfiguration.openshift.io/worker": ""}

// cluster is a small cluster of one worker pool: three nodes, two on the
// pool's rendered config and one still on an older one, and a policy that
// restarts chronyd for /etc/chrony.conf. mco adds the MCO's ControllerConfig
// (ModeMCO). It returns the objects and the pool's rendered config's name.
func cluster(t *testing.T, mco bool) (*Objects, string) {
	t.Helper()
	base := builder.MachineConfig("00-worker").WithRole("worker").
		WithFile("/etc/kubernetes/kubelet.conf", kubeletConf).
		WithFile("/etc/chrony.conf", "pool a\n").Build()
	if mco {
		base.Annotations = map[string]string{ndpmcv1.GeneratedByControllerVersionAnnotation: "test"}
	}
	old := builder.MachineConfig("rendered-worker-old").RenderedFor("worker").WithFile("/etc/kubernetes/kubelet.conf", kubeletConf).Build()
	entries := []Entry{{Object: base}, {Object: old}}
	cc := &mcfgv1.ControllerConfig{ObjectMeta: metav1.ObjectMeta{Name: controllerConfigName}}
	cc.Spec.BaseOSContainerImage = "quay.io/os@sha256:1"
	if mco {
		entries = append(entries, Entry{Object: cc})
	}
	var rendered *render.Rendered
	var err error
	src := []render.Source{render.SourceOf(base, nil)}
	if mco {
		rendered, err = mcorender.Merge("worker", src, mcorender.BaseOf(cc))
	} else {
		rendered, err = render.Merge("worker", src)
	}
	if err != nil {
		t.Fatal(err)
	}
	current := &ndpmcv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: rendered.Name, Labels: map[string]string{ndpmcv1.RenderedForLabel: "worker"}}, Spec: rendered.Spec}
	pool := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "worker", Labels: workerLabels},
		Spec: mcfgv1.MachineConfigPoolSpec{
			MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{ndpmcv1.RoleLabel: "worker"}},
			NodeSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/worker": ""}},
		}}
	pool.Spec.Configuration.Name = rendered.Name
	chrony := &v1alpha1.NodeDisruptionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "chrony"}}
	chrony.Spec.Files = []operatorv1.NodeDisruptionPolicySpecFile{{Path: "/etc/chrony.conf", Actions: []policy.Action{policy.RestartAction("chronyd.service")}}}
	entries = append(entries, Entry{Object: current}, Entry{Object: pool}, Entry{Object: chrony})
	for i, cfg := range []string{rendered.Name, rendered.Name, old.Name} {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-" + string(rune('a'+i)),
			Labels:      map[string]string{"node-role.kubernetes.io/worker": ""},
			Annotations: map[string]string{ndpmcv1.CurrentConfigAnnotation: cfg}}}
		entries = append(entries, Entry{Object: n})
	}
	for i := range entries {
		entries[i].Source = "the cluster"
	}
	o, err := NewObjects(entries...)
	if err != nil {
		t.Fatal(err)
	}
	return o, rendered.Name
}

func change(objs ...client.Object) ChangeSet {
	var cs ChangeSet
	for i, o := range objs {
		cs.Apply = append(cs.Apply, Entry{Object: o, Source: "pr/" + o.GetName() + ".yaml:" + string(rune('1'+i))})
	}
	return cs
}

func chronyMC(contents string) *ndpmcv1.MachineConfig {
	return builder.MachineConfig("99-worker-chrony").WithRole("worker").WithFile("/etc/chrony.conf", contents).Build()
}

func maxPods(n int) *mcfgv1.KubeletConfig {
	kc := &mcfgv1.KubeletConfig{ObjectMeta: metav1.ObjectMeta{Name: "max-pods"}}
	kc.Spec.MachineConfigPoolSelector = &metav1.LabelSelector{MatchLabels: workerLabels}
	kc.Spec.KubeletConfig = &runtime.RawExtension{Raw: []byte(`{"maxPods":` + strconv.Itoa(n) + `}`)}
	return kc
}

func TestDiffPlansEveryGroupOfAPool(t *testing.T) {
	state, current := cluster(t, false)
	r, err := Diff(context.Background(), state, change(chronyMC("pool b\n")), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Mode != ModeNDP || !r.Changed || r.Effect != EffectRestart || len(r.Pools) != 1 {
		t.Fatalf("report: mode %s changed %v effect %s pools %d, want ndp, a change, restart, one pool", r.Mode, r.Changed, r.Effect, len(r.Pools))
	}
	p := r.Pools[0]
	if p.From != current || p.To == current || !p.NodesKnown || p.Nodes != 3 {
		t.Errorf("pool: %s → %s, %d nodes (known %v); want from %s to a new config, 3 known nodes", p.From, p.To, p.Nodes, p.NodesKnown, current)
	}
	if want := []string{"MachineConfig 99-worker-chrony (created)"}; strings.Join(p.Causes, ";") != strings.Join(want, ";") {
		t.Errorf("causes %q, want %q", p.Causes, want)
	}
	if len(p.Groups) != 2 || p.Groups[0].From != current || p.Groups[0].Nodes != 2 || p.Groups[1].From != "rendered-worker-old" || p.Groups[1].Nodes != 1 {
		t.Fatalf("groups %+v, want 2 nodes from %s then 1 from rendered-worker-old", p.Groups, current)
	}
	g := p.Groups[0]
	if g.Plan.By != "ndp" || g.Plan.Effect != EffectRestart || strings.Join(g.Plan.Actions, ",") != "Restart chronyd.service" {
		t.Errorf("plan %+v, want ndp's restart of chronyd", g.Plan)
	}
	found := false
	for _, c := range g.Plan.Changes {
		if strings.HasPrefix(c.Change, "file /etc/chrony.conf") {
			found = true
			if !strings.HasPrefix(c.Rule, "chrony ") || strings.Join(c.Objects, ",") != "MachineConfig 99-worker-chrony" {
				t.Errorf("chrony.conf decided by %q from %q, want policy chrony from MachineConfig 99-worker-chrony", c.Rule, c.Objects)
			}
		}
	}
	if !found {
		t.Errorf("no change of /etc/chrony.conf in %+v", g.Plan.Changes)
	}
	// The older group's plan is its own: chrony.conf added (the policy
	// restarts chronyd for that too).
	if og := p.Groups[1].Plan; og.Effect != EffectRestart || len(og.Changes) != 1 || !strings.Contains(og.Changes[0].Change, "added") {
		t.Errorf("the older group's plan is %+v, want a restart for chrony.conf added", og)
	}
}

func TestDiffPolicyInTheChangeSetPlansTheSameChangeSet(t *testing.T) {
	state, _ := cluster(t, false)
	reload := &v1alpha1.NodeDisruptionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "chrony"}}
	reload.Spec.Files = []operatorv1.NodeDisruptionPolicySpecFile{{Path: "/etc/chrony.conf", Actions: []policy.Action{policy.ReloadAction("chronyd.service")}}}
	r, err := Diff(context.Background(), state, change(chronyMC("pool b\n"), reload), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Pools[0].Groups[0].Plan; got.Effect != EffectReload || strings.Join(got.Actions, ",") != "Reload chronyd.service" {
		t.Errorf("plan %+v, want the change set's policy: reload chronyd", got)
	}
	if r.Objects[1].Operation != OpUpdate {
		t.Errorf("the policy's operation is %s, want update", r.Objects[1].Operation)
	}
}

func TestDiffKubeletConfigGeneratesItsMachineConfig(t *testing.T) {
	state, _ := cluster(t, false)
	r, err := Diff(context.Background(), state, change(maxPods(300)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Generated) != 1 || r.Generated[0].Name != "99-worker-generated-kubelet" || r.Generated[0].Operation != OpCreate || strings.Join(r.Generated[0].Owners, ",") != "KubeletConfig max-pods" {
		t.Fatalf("generated %+v, want 99-worker-generated-kubelet created for KubeletConfig max-pods", r.Generated)
	}
	g := r.Pools[0].Groups[0]
	if g.Plan.Effect != EffectReboot {
		t.Errorf("plan %+v, want a reboot (no policy for kubelet.conf)", g.Plan)
	}
	var objs []string
	for _, c := range g.Plan.Changes {
		objs = append(objs, c.Objects...)
	}
	if want := "KubeletConfig max-pods → MachineConfig 99-worker-generated-kubelet"; !strings.Contains(strings.Join(objs, ";"), want) {
		t.Errorf("changes' objects %q, want %q", objs, want)
	}
}

func TestDiffUnchangedAndDeleted(t *testing.T) {
	state, current := cluster(t, false)
	same, _ := state.Lookup(Key{Group: mcfgv1.GroupName, Kind: "MachineConfig", Name: "00-worker"})
	r, err := Diff(context.Background(), state, ChangeSet{Apply: []Entry{{Object: same.Object, Source: "pr/00-worker.yaml:1"}}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Changed || r.Effect != EffectNone || r.Objects[0].Operation != OpUnchanged || r.Pools[0].To != current {
		t.Errorf("applying the cluster's own object: %+v, want nothing changed", r)
	}
	r, err = Diff(context.Background(), state, ChangeSet{Delete: []Key{{Group: mcfgv1.GroupName, Kind: "MachineConfig", Name: "00-worker"}}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Pools[0].Error == "" || !strings.Contains(r.Pools[0].Error, "would select no MachineConfig") {
		t.Errorf("deleting the pool's only MachineConfig: %+v, want the pool's error", r.Pools[0])
	}
}

func TestDiffRolloutWindow(t *testing.T) {
	state, _ := cluster(t, false)
	data, err := os.ReadFile("../examples/rollout/workers.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var rp v1alpha1.RolloutPolicy
	if err := yaml.Unmarshal(data, &rp); err != nil {
		t.Fatal(err)
	}
	if err := state.Put(Entry{Object: &rp, Source: "the cluster"}); err != nil {
		t.Fatal(err)
	}
	monday := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	r, err := Diff(context.Background(), state, change(maxPods(300)), Options{Now: monday})
	if err != nil {
		t.Fatal(err)
	}
	ro := r.Pools[0].Rollout
	if ro == nil || strings.Join(ro.Policies, ",") != "workers" || !strings.Contains(ro.Held, "Sat") || len(ro.Gates) == 0 {
		t.Errorf("rollout %+v, want held by workers' Saturday window, with its gates", ro)
	}
	// A restart is not held by a window for reboots and drains.
	r, err = Diff(context.Background(), state, change(chronyMC("pool b\n")), Options{Now: monday})
	if err != nil {
		t.Fatal(err)
	}
	if ro := r.Pools[0].Rollout; ro == nil || ro.Held != "" {
		t.Errorf("rollout of a restart %+v, want not held", ro)
	}
}

func TestDiffMCOMode(t *testing.T) {
	state, current := cluster(t, true)
	r, err := Diff(context.Background(), state, change(chronyMC("pool b\n")), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Mode != ModeMCO {
		t.Fatalf("mode %s with a ControllerConfig, want mco", r.Mode)
	}
	g := r.Pools[0].Groups[0]
	if g.From != current || g.Plan.By != "MCO" || g.Plan.Effect != EffectReboot || g.NDP == nil || g.NDP.Effect != EffectRestart {
		t.Fatalf("group %+v, want the MCO's reboot with ndp's restart beside it", g)
	}
	if len(g.Entries) != 1 || g.Entries[0].Subject != "file /etc/chrony.conf" || !g.EntriesExact {
		t.Errorf("entries %+v (exact %v), want one for /etc/chrony.conf that gives ndp's plan", g.Entries, g.EntriesExact)
	}
	// The same change with a MachineConfiguration that restarts chronyd.
	mc := &operatorv1.MachineConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}}
	mc.Spec.NodeDisruptionPolicy.Files = []operatorv1.NodeDisruptionPolicySpecFile{{Path: "/etc/chrony.conf", Actions: []operatorv1.NodeDisruptionPolicySpecAction{{Type: operatorv1.RestartSpecAction, Restart: &operatorv1.RestartService{ServiceName: "chronyd.service"}}}}}
	r, err = Diff(context.Background(), state, change(chronyMC("pool b\n"), mc), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if g := r.Pools[0].Groups[0]; g.Plan.Effect != EffectRestart || len(g.Entries) != 0 {
		t.Errorf("with the MachineConfiguration: %+v, want the MCO's restart and no entries", g)
	}
}

func TestDiffBadInput(t *testing.T) {
	state, _ := cluster(t, false)
	bad := builder.MachineConfig("99-worker-bad").WithRole("worker").WithRawConfig(`{"ignition":{"version":"9.9.9"}}`).Build()
	rego := &v1alpha1.NodeDisruptionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "broken"}}
	rego.Spec.Rego = "package ndp.broken\nclaims contains x if {"
	kc := maxPods(300)
	kc.Spec.KubeletConfig = &runtime.RawExtension{Raw: []byte(`{"maxPods":"many"}`)}
	idms := &configv1.ImageDigestMirrorSet{ObjectMeta: metav1.ObjectMeta{Name: "bad-mirror"}}
	idms.Spec.ImageDigestMirrors = []configv1.ImageDigestMirrors{{Source: "", Mirrors: []configv1.ImageMirror{"mirror.example.com/x"}}}
	for _, tc := range []struct {
		name string
		cs   ChangeSet
		want []string
	}{
		{"invalid Ignition", change(bad), []string{"pr/99-worker-bad.yaml:1", `MachineConfig "99-worker-bad"`, "9.9.9"}},
		{"Rego syntax error", change(rego), []string{"pr/broken.yaml:1", `NodeDisruptionPolicy "broken"`}},
		{"invalid KubeletConfig", change(kc), []string{"pr/max-pods.yaml:1", `KubeletConfig "max-pods"`, "maxPods"}},
		{"invalid mirror set", change(idms), []string{"ImageDigestMirrorSet bad-mirror"}},
		{"deleting what is not there", ChangeSet{Delete: []Key{{Group: mcfgv1.GroupName, Kind: "KubeletConfig", Name: "nope"}}}, []string{"--delete", "KubeletConfig", "nope"}},
		{"the same object twice", change(chronyMC("a"), chronyMC("b")), []string{"99-worker-chrony", "pr/99-worker-chrony.yaml:1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Diff(context.Background(), state, tc.cs, Options{})
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
	// A state without what a pool needs.
	mcoState, _ := cluster(t, true)
	mcoState.Remove(Key{Group: mcfgv1.GroupName, Kind: "MachineConfig", Name: "rendered-worker-old"})
	_, err := Diff(context.Background(), mcoState, change(chronyMC("b")), Options{StateName: "snapshot s.yaml"})
	if err == nil || !strings.Contains(err.Error(), "snapshot s.yaml lacks MachineConfig rendered-worker-old") {
		t.Errorf("a state without a config nodes run: %v", err)
	}
	// A snapshot without a template MachineConfig its pool was rendered from.
	mcoState, _ = cluster(t, true)
	pe, _ := mcoState.Lookup(Key{Group: mcfgv1.GroupName, Kind: "MachineConfigPool", Name: "worker"})
	pool := pe.Object.(*mcfgv1.MachineConfigPool).DeepCopy()
	pool.Spec.Configuration.Source = []corev1.ObjectReference{{Kind: "MachineConfig", Name: "00-worker"}, {Kind: "MachineConfig", Name: "01-worker-kubelet"}}
	if err := mcoState.Put(Entry{Object: pool}); err != nil {
		t.Fatal(err)
	}
	_, err = Diff(context.Background(), mcoState, change(chronyMC("b")), Options{StateName: "snapshot s.yaml"})
	if err == nil || !strings.Contains(err.Error(), "snapshot s.yaml lacks MachineConfig 01-worker-kubelet, which pool worker's configuration") {
		t.Errorf("a state without a template MachineConfig: %v", err)
	}
	mcoState, _ = cluster(t, true)
	mcoState.Remove(Key{Group: mcfgv1.GroupName, Kind: "ControllerConfig", Name: controllerConfigName})
	_, err = Diff(context.Background(), mcoState, change(chronyMC("b")), Options{Mode: ModeMCO, StateName: "snapshot s.yaml"})
	if err == nil || !strings.Contains(err.Error(), "no ControllerConfig") {
		t.Errorf("ModeMCO without a ControllerConfig: %v", err)
	}
}

// A cluster whose MCO renders otherwise than the version ndp follows: the
// pool's configuration is not what its MachineConfigs render to here.
// Its nodes are planned from today's rendering, so that the plans hold the
// change set's changes only, and the new name is marked inexact.
func TestDiffAnotherMCOVersion(t *testing.T) {
	state, rendered := cluster(t, true)
	e, _ := state.Lookup(Key{Group: mcfgv1.GroupName, Kind: "MachineConfig", Name: rendered})
	skewed := e.Object.(*ndpmcv1.MachineConfig).DeepCopy()
	// What an older MCO rendered from the same MachineConfigs: here, a
	// file more, under its own name, which the pool and its nodes run.
	current := "rendered-worker-from-an-older-mco"
	skewed.Name = current
	skewed.Spec.Config.Raw = builder.Ignition().WithFile("/etc/kubernetes/kubelet.conf", kubeletConf).WithFile("/etc/chrony.conf", "pool a\n").WithFile("/etc/older-mco", "x").JSON()
	state.Remove(Key{Group: mcfgv1.GroupName, Kind: "MachineConfig", Name: rendered})
	pe, _ := state.Lookup(Key{Group: mcfgv1.GroupName, Kind: "MachineConfigPool", Name: "worker"})
	pool := pe.Object.(*mcfgv1.MachineConfigPool).DeepCopy()
	pool.Spec.Configuration.Name = current
	objs := []client.Object{skewed, pool}
	for _, n := range []string{"worker-a", "worker-b"} {
		ne, _ := state.Lookup(Key{Kind: "Node", Name: n})
		node := ne.Object.(*corev1.Node).DeepCopy()
		node.Annotations[ndpmcv1.CurrentConfigAnnotation] = current
		objs = append(objs, node)
	}
	for _, o := range objs {
		if err := state.Put(Entry{Object: o, Source: "the cluster"}); err != nil {
			t.Fatal(err)
		}
	}
	r, err := Diff(context.Background(), state, change(chronyMC("pool b\n")), Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := r.Pools[0]
	if !p.Changed || p.ToExact || len(r.Notes) == 0 || !strings.Contains(r.Notes[0], "the new config's name may differ") {
		t.Fatalf("pool %+v, notes %q: want a change, its name inexact, and a note", p, r.Notes)
	}
	g := p.Groups[0]
	if g.From != current || len(g.Plan.Changes) != 1 || g.Plan.Changes[0].Change != "file /etc/chrony.conf" || g.NDP.Effect != EffectRestart {
		t.Errorf("plans %+v / %+v: want only the change set's chrony.conf (not the older MCO's file), ndp restarting chronyd", g.Plan, g.NDP)
	}
	// Nothing in the change set changes the pool: it stays, exactly.
	same, _ := state.Lookup(Key{Group: mcfgv1.GroupName, Kind: "MachineConfig", Name: "00-worker"})
	r, err = Diff(context.Background(), state, ChangeSet{Apply: []Entry{{Object: same.Object, Source: "pr/00-worker.yaml:1"}}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p := r.Pools[0]; p.Changed || p.To != current || !p.ToExact {
		t.Errorf("an unchanged pool on another MCO version: %+v, want unchanged", p)
	}
}

// A pool the change set creates: its nodes (a worker labelled infra)
// move to its first rendered config from the one they run, and the
// controllers write its generated MachineConfigs: the KubeletConfig that
// selects it, its registries.
func TestDiffNewPool(t *testing.T) {
	state, current := cluster(t, false)
	kc := maxPods(300)
	kc.Spec.MachineConfigPoolSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"custom-kubelet": "large-pods"}}
	ne, _ := state.Lookup(Key{Kind: "Node", Name: "worker-a"})
	node := ne.Object.(*corev1.Node).DeepCopy()
	node.Labels["node-role.kubernetes.io/infra"] = ""
	for _, o := range []client.Object{kc, node} {
		if err := state.Put(Entry{Object: o, Source: "the cluster"}); err != nil {
			t.Fatal(err)
		}
	}
	infra := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "infra", Labels: map[string]string{"custom-kubelet": "large-pods"}},
		Spec: mcfgv1.MachineConfigPoolSpec{
			MachineConfigSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: ndpmcv1.RoleLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{"worker", "infra"}}}},
			NodeSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/infra": ""}},
		}}
	r, err := Diff(context.Background(), state, change(infra), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var gen []string
	for _, g := range r.Generated {
		gen = append(gen, g.Operation+" "+g.Name+" for "+strings.Join(g.Owners, ","))
	}
	if want := "create 99-infra-generated-kubelet for KubeletConfig max-pods;create 99-infra-generated-registries for MachineConfigPool infra"; strings.Join(gen, ";") != want {
		t.Errorf("generated %q, want %q", gen, want)
	}
	var p *PoolDiff
	for i := range r.Pools {
		if r.Pools[i].Pool == "infra" {
			p = &r.Pools[i]
		} else if r.Pools[i].Changed {
			t.Errorf("pool %s changes: %+v", r.Pools[i].Pool, r.Pools[i])
		}
	}
	if p == nil || !p.Changed || p.From != "" || strings.Join(p.Causes, ",") != "MachineConfigPool infra (created)" || p.Nodes != 1 {
		t.Fatalf("pool infra %+v: want a new pool of one node", p)
	}
	if len(p.Groups) != 1 || p.Groups[0].From != current || strings.Join(p.Groups[0].Names, ",") != "worker-a" || p.Groups[0].Plan.Effect != EffectReboot {
		t.Errorf("groups %+v: want worker-a moving from %s, rebooting for the new kubelet.conf", p.Groups, current)
	}
}
