package mco

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/clusterdiff"
	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/mco/mcorender"
	"github.com/ndp-dev/ndp/mco/mcorules"
	"github.com/ndp-dev/ndp/render"
)

// diffAllClustersEnv set (to anything but "" or "0") runs
// TestDiffAgreesWithTheMCO on every real cluster of
// ../shared/mco-ref/realconfigs (make diff-agreement); unset, on
// 4.16.0-compact alone, which keeps `make test` short.
const diffAllClustersEnv = "NDP_DIFF_ALL_CLUSTERS"

// diffClusters are the real clusters of ../shared/mco-ref/realconfigs.
var diffClusters = []string{"4.16.0-compact", "4.16.0-single-node", "no-version-upgrading", "ocpbugs-60768", "to-multi-arch"}

// diffControllers are the MCO's controllers the test runs: all of
// mcc-ref's but the template controller, so that the cluster's template
// MachineConfigs (00-*, 01-*) stay as they were captured instead of being
// rewritten from mcc-ref's templates.
var diffControllers = []string{"kubelet-config", "container-runtime-config", "render", "node"}

// diffSnapshotKinds is what the offline state is dumped with: `oc get
// mc,mcp,kubeletconfig,containerruntimeconfig,idms,itms,icsp,image.config,
// machineconfiguration,controllerconfig -o yaml`, with ICSP spelled as
// kubectl resolves it against the MCO's CRD (which declares no short name).
const diffSnapshotKinds = "mc,mcp,kubeletconfig,containerruntimeconfig,idms,itms,imagecontentsourcepolicy,image.config,machineconfiguration,controllerconfig"

// TestDiffAgreesWithTheMCO checks clusterdiff.Diff, what `ndp diff`
// predicts, against the MCO itself. For each real cluster, the cluster's
// MachineConfigs are put on an API server beside the MCO's kubelet-config,
// container-runtime-config, render and node controllers (mcc-ref), and the
// change sets of testdata/diff are applied one after another (each over
// the previous ones). Before each, the cluster is read twice, live
// (clusterdiff.ReadLive) and as a snapshot (what `oc get ... -o yaml`
// prints, through clusterdiff.LoadSnapshot), and Diff predicts each pool's
// next rendered config from both; then the change set is applied for real
// (kubectl apply, kubectl delete) and, once the controllers are done, each
// pool's rendered config must be the predicted one, and for each pool that
// moved, the MCO daemon's own decision for the move (mco-decide) must be
// the plan Diff reported: the same actions (as a set: the MCO orders them
// at random), drain and reboot. A table of checks agreed per change set and
// cluster ends the log.
//
// It runs 4.16.0-compact alone (about 1.5 minutes: what `make test` runs);
// with NDP_DIFF_ALL_CLUSTERS=1 (make diff-agreement) all five, at once as
// far as -parallel lets them.
//
// It runs without -race (make test-go's last line): under the detector
// clusterdiff's pure computation takes 386 s instead of 133, the longest
// of make test, and nothing in it runs concurrently.
func TestDiffAgreesWithTheMCO(t *testing.T) {
	if testkit.RaceDetector {
		t.Skip("runs without -race: make test-go runs it on its own")
	}
	t.Parallel() // each starts its own API server and controllers; most of its time is the MCO's render delay
	refDir(t)
	sets := loadDiffChangeSets(t, filepath.Join("testdata", "diff"))
	clusters := diffClusters[:1]
	if v := os.Getenv(diffAllClustersEnv); v != "" && v != "0" {
		clusters = diffClusters
	}
	start := time.Now()
	var mu sync.Mutex
	results := map[string]map[string]diffTally{}
	t.Run("clusters", func(t *testing.T) {
		for _, name := range clusters {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				began := time.Now()
				c := startDiffCluster(t, name)
				got := map[string]diffTally{}
				for _, cs := range sets {
					ok := t.Run(cs.name, func(t *testing.T) { got[cs.name] = c.step(t, cs) })
					if !ok && t.Failed() && got[cs.name].total == 0 {
						break // the cluster is in no state for the next change sets
					}
				}
				mu.Lock()
				results[name] = got
				mu.Unlock()
				t.Logf("%s: %s", name, time.Since(began).Round(time.Second))
			})
		}
	})
	t.Logf("clusterdiff.Diff against the MCO (checks agreed/total: each pool's rendered config from the live and the snapshot state, and for each pool the MCO moved, its daemon's decision against both reports' plans), %s:\n%s",
		time.Since(start).Round(time.Second), diffTable(clusters, sets, results))
}

// diffChangeSet is one directory of testdata/diff: its manifests (*.yaml)
// and, in a file named delete, the objects it deletes (KIND/NAME a line,
// as `ndp diff --delete` takes them).
type diffChangeSet struct {
	name  string
	files []string
	cs    clusterdiff.ChangeSet
}

func loadDiffChangeSets(t *testing.T, dir string) []diffChangeSet {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []diffChangeSet
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		set := diffChangeSet{name: e.Name()}
		sub := filepath.Join(dir, e.Name())
		if set.files, err = filepath.Glob(filepath.Join(sub, "*.yaml")); err != nil {
			t.Fatal(err)
		}
		if len(set.files) > 0 {
			if set.cs.Apply, err = clusterdiff.LoadManifests(set.files); err != nil {
				t.Fatalf("change set %s: %v", set.name, err)
			}
		}
		if data, err := os.ReadFile(filepath.Join(sub, "delete")); err == nil {
			for _, line := range strings.Split(string(data), "\n") {
				if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
					continue
				}
				key, err := clusterdiff.ParseDeletion(line)
				if err != nil {
					t.Fatalf("change set %s: %v", set.name, err)
				}
				set.cs.Delete = append(set.cs.Delete, key)
			}
		} else if !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if len(set.cs.Apply)+len(set.cs.Delete) == 0 {
			t.Fatalf("change set %s: nothing to apply or delete", set.name)
		}
		out = append(out, set)
	}
	if len(out) < 10 {
		t.Fatalf("%s: %d change sets, want at least 10", dir, len(out))
	}
	return out
}

// diffCluster is one real cluster's MachineConfigs beside the MCO's
// controllers.
type diffCluster struct {
	name string
	m    *MCO
	// reader reads with clusterdiff.Scheme, as `ndp diff` does.
	reader client.Client
	pools  []string
	// barrier tells, by pool, whether its barrier MachineConfig exists.
	barrier map[string]bool
}

// generatedName matches the MachineConfigs the MCO's kubelet-config and
// container-runtime-config controllers write (97-worker-generated-kubelet,
// 99-master-generated-registries, 99-worker-generated-kubelet-1...).
var generatedName = regexp.MustCompile(`^[0-9]+-[a-z0-9-]+-generated-(kubelet|registries|containerruntime)(-[0-9]+)?$`)

// startDiffCluster puts cluster's MachineConfigs beside the MCO's
// controllers and waits until the controllers are done with them.
//
// Every MachineConfig of the cluster but its rendered ones is created,
// without its server-set metadata, before the controllers start, except
// those the kubelet-config and container-runtime-config controllers write:
// they are rendered from the cluster's FeatureGate, node config, image
// config and KubeletConfigs, and the running controllers write their own
// from this API server's (what the cluster had in them would be replaced
// at once; single-node's 99-master-generated-kubelet belongs to a
// KubeletConfig the capture does not hold). The template MachineConfigs
// (00-*, 01-*) carry the version of the controller that wrote them, and the
// render controller refuses one of a version other than its own
// ("generated by older version"): on the cluster they carried its running
// controller's version, here they carry mcc-ref's.
func startDiffCluster(t *testing.T, cluster string) *diffCluster {
	t.Helper()
	version := mccRefVersion(t, refDir(t))
	mcs, skipped := realMachineConfigs(t, testkit.RequireMCORef(t, "realconfigs", cluster), version)
	t.Logf("%s: %d MachineConfigs created as captured; not created (rendered, or written by the kubelet-config and container-runtime-config controllers): %s", cluster, len(mcs), strings.Join(skipped, ", "))
	m := startMCOWith(t, mcoOptions{
		Controllers: diffControllers,
		SetupArgs:   []string{"--installer-mcs=false"},
		Kubectl:     true,
		BeforeControllers: func(t *testing.T, m *MCO) {
			for _, u := range mcs {
				if err := m.Client.Create(context.Background(), u); err != nil {
					t.Fatalf("creating MachineConfig %s: %v", u.GetName(), err)
				}
			}
		},
	})
	reader, err := client.New(m.Config, client.Options{Scheme: clusterdiff.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	c := &diffCluster{name: cluster, m: m, reader: reader, barrier: map[string]bool{}}
	var pools mcfgv1.MachineConfigPoolList
	if err := m.Client.List(context.Background(), &pools); err != nil {
		t.Fatal(err)
	}
	for _, p := range pools.Items {
		c.pools = append(c.pools, p.Name)
	}
	sort.Strings(c.pools)
	// The controllers write every pool's generated MachineConfigs once, from
	// objects that are all there before they start.
	for _, pool := range c.pools {
		for _, name := range []string{"97-" + pool + "-generated-kubelet", "98-" + pool + "-generated-kubelet", "99-" + pool + "-generated-registries"} {
			testkit.Eventually(t, "the MCO's controllers write "+name, func() (bool, string) {
				var mc ndpmcv1.MachineConfig
				err := m.Client.Get(context.Background(), client.ObjectKey{Name: name}, &mc)
				return err == nil, fmt.Sprint(err)
			})
		}
	}
	before := c.settle(t)
	t.Logf("%s: pools rendered: %v", cluster, before)
	return c
}

// mccRefVersion is the controller version mcc-ref runs as (its version.Hash,
// which it writes into generated-by-controller-version).
func mccRefVersion(t *testing.T, ref string) string {
	t.Helper()
	out, _ := exec.Command(filepath.Join(ref, "mcc-ref"), "--help").CombinedOutput()
	m := regexp.MustCompile(`version\.Hash=([^,) \n]+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("mcc-ref --help names no version.Hash:\n%s", out)
	}
	return string(m[1])
}

// realMachineConfigs reads a cluster's captured MachineConfigs, rendered
// and controller-generated ones aside (their names are returned), without
// uid, resourceVersion, creationTimestamp, generation, ownerReferences and
// managedFields, a controller-generated one's version set to version.
func realMachineConfigs(t *testing.T, dir, version string) (mcs []*unstructured.Unstructured, skipped []string) {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("%s: no MachineConfigs (%v)", dir, err)
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := sigsyaml.Unmarshal(data, &u.Object); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		name := u.GetName()
		if strings.HasPrefix(name, "rendered-") || generatedName.MatchString(name) {
			skipped = append(skipped, name)
			continue
		}
		for _, f := range []string{"uid", "resourceVersion", "creationTimestamp", "generation", "ownerReferences", "managedFields"} {
			unstructured.RemoveNestedField(u.Object, "metadata", f)
		}
		if ann := u.GetAnnotations(); ann[ndpmcv1.GeneratedByControllerVersionAnnotation] != "" {
			ann[ndpmcv1.GeneratedByControllerVersionAnnotation] = version
			u.SetAnnotations(ann)
		}
		mcs = append(mcs, u)
	}
	return mcs, skipped
}

// diffTally is one change set's checks on one cluster.
type diffTally struct{ agreed, total int }

func (c *diffCluster) check(t *testing.T, tally *diffTally, ok bool, format string, args ...any) {
	t.Helper()
	tally.total++
	if ok {
		tally.agreed++
		return
	}
	t.Errorf(format, args...)
}

// step predicts what a change set does from the live and the snapshot
// state, applies it, waits for the MCO and compares.
func (c *diffCluster) step(t *testing.T, cs diffChangeSet) diffTally {
	ctx := context.Background()
	var tally diffTally
	before := c.configurations(t)
	sourcesBefore := c.sourceVersions(t)
	now := time.Now()

	live, liveNotes, err := clusterdiff.ReadLive(ctx, c.reader)
	if err != nil {
		t.Fatalf("ReadLive: %v", err)
	}
	snapshot := c.snapshot(t)
	offline, offlineNotes, err := clusterdiff.LoadSnapshot(snapshot)
	if err != nil {
		t.Fatalf("LoadSnapshot: %v", err)
	}
	reports := map[string]*clusterdiff.Report{}
	for _, s := range []struct {
		name  string
		state *clusterdiff.Objects
		notes []string
	}{{"live", live, liveNotes}, {"snapshot", offline, offlineNotes}} {
		rep, err := clusterdiff.Diff(ctx, s.state, cs.cs, clusterdiff.Options{Now: now, StateName: s.name + " state"})
		if err != nil {
			t.Errorf("Diff from the %s state: %v", s.name, err)
			continue
		}
		if rep.Mode != clusterdiff.ModeMCO {
			t.Errorf("Diff from the %s state decided in mode %s, want %s (the state holds the ControllerConfig)", s.name, rep.Mode, clusterdiff.ModeMCO)
		}
		rep.Notes = append(s.notes, rep.Notes...)
		reports[s.name] = rep
	}

	predicted := time.Since(now)
	c.apply(t, cs)
	after := c.settle(t, cs)
	settled := time.Since(now) - predicted

	var moves []string
	for _, pool := range c.pools {
		from, to := before[pool], after[pool]
		var pds []*clusterdiff.PoolDiff
		for _, state := range []string{"live", "snapshot"} {
			rep := reports[state]
			pd := poolOf(rep, pool)
			switch {
			case rep == nil:
				c.check(t, &tally, false, "pool %s: no prediction from the %s state", pool, state)
			case pd == nil:
				c.check(t, &tally, false, "pool %s: the report from the %s state has no such pool", pool, state)
			case pd.Error != "":
				c.check(t, &tally, false, "pool %s: from the %s state Diff says the pool cannot be rendered (%s); the MCO renders %s", pool, state, pd.Error, to)
			default:
				ok := pd.From == from && pd.To == to
				c.check(t, &tally, ok, "pool %s, from the %s state: Diff predicts %s -> %s, the MCO went %s -> %s\n%s", pool, state, pd.From, pd.To, from, to, c.explain(t, rep, pd, to, sourcesBefore[pool]))
			}
			pds = append(pds, pd)
		}
		if from == to {
			continue
		}
		verdict := c.decide(t, from, to)
		moves = append(moves, fmt.Sprintf("%s: the MCO's daemon would %s", pool, verdict.says()))
		for i, state := range []string{"live", "snapshot"} {
			pd := pds[i]
			if pd == nil || len(pd.Groups) == 0 {
				c.check(t, &tally, false, "pool %s: the MCO moved %s -> %s and its daemon would do %s; the report from the %s state plans nothing", pool, from, to, verdict.says(), state)
				continue
			}
			g := pd.Groups[0]
			ok, why := planAgrees(g.Plan, verdict)
			c.check(t, &tally, ok, "pool %s, from the %s state: %s -> %s: %s\nthe report's plan: %s\nmco-decide: %s", pool, state, from, to, why, planJSON(g.Plan), verdictJSON(verdict))
		}
	}
	if t.Failed() {
		for state, rep := range reports {
			t.Logf("the report from the %s state:\n%s", state, reportJSON(rep))
		}
	}
	t.Logf("%s: %d/%d agree (predicted in %s, the MCO done in %s); %s", cs.name, tally.agreed, tally.total, predicted.Round(time.Millisecond), settled.Round(time.Millisecond),
		strings.Join(append([]string{movesOf(c.pools, before, after)}, moves...), "; "))
	return tally
}

func poolOf(rep *clusterdiff.Report, name string) *clusterdiff.PoolDiff {
	if rep == nil {
		return nil
	}
	for i := range rep.Pools {
		if rep.Pools[i].Pool == name {
			return &rep.Pools[i]
		}
	}
	return nil
}

func movesOf(pools []string, before, after map[string]string) string {
	var parts []string
	for _, p := range pools {
		if before[p] == after[p] {
			parts = append(parts, p+" unchanged")
		} else {
			parts = append(parts, fmt.Sprintf("%s %s -> %s", p, before[p], after[p]))
		}
	}
	return strings.Join(parts, ", ")
}

// configurations is every pool's spec.configuration.name.
func (c *diffCluster) configurations(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, pool := range c.pools {
		var p mcfgv1.MachineConfigPool
		if err := c.m.Client.Get(context.Background(), client.ObjectKey{Name: pool}, &p); err != nil {
			t.Fatal(err)
		}
		out[pool] = p.Spec.Configuration.Name
	}
	return out
}

// snapshot writes what `oc get <diffSnapshotKinds> -o yaml` prints (a
// List) into a file, with kubectl.
func (c *diffCluster) snapshot(t *testing.T) string {
	t.Helper()
	cmd := exec.Command(c.m.Kubectl, "--kubeconfig", c.m.Kubeconfig, "get", diffSnapshotKinds, "-o", "yaml")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl get %s: %v\n%s", diffSnapshotKinds, err, stderr.String())
	}
	path := filepath.Join(t.TempDir(), "snapshot.yaml")
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// kubectl runs kubectl against the cluster.
func (c *diffCluster) kubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(c.m.Kubectl, append([]string{"--kubeconfig", c.m.Kubeconfig}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// apply applies the change set as a user would: kubectl apply of its
// manifests, kubectl delete of its deletions (which waits until the
// objects are gone: a KubeletConfig's finalizer goes once the controller
// has deleted its MachineConfigs).
func (c *diffCluster) apply(t *testing.T, cs diffChangeSet) {
	t.Helper()
	if len(cs.files) > 0 {
		args := []string{"apply"}
		for _, f := range cs.files {
			args = append(args, "-f", f)
		}
		c.kubectl(t, args...)
	}
	for _, key := range cs.cs.Delete {
		c.kubectl(t, "delete", "--timeout=2m", resourceOf(t, key)+"/"+key.Name)
	}
}

// resourceOf is key's kind as kubectl names it: resource.group.
func resourceOf(t *testing.T, key clusterdiff.Key) string {
	t.Helper()
	for _, k := range clusterdiff.Kinds {
		if k.Group == key.Group && k.Kind == key.Kind {
			if k.Group == "" {
				return k.Resource
			}
			return k.Resource + "." + k.Group
		}
	}
	t.Fatalf("no kind %s", key)
	return ""
}

// settle waits until the MCO's controllers are done with what was applied
// (cs; none at the start) and returns every pool's rendered config then:
//
//   - a KubeletConfig or ContainerRuntimeConfig applied: its controller
//     has written its status for its current generation, which it does
//     after writing its MachineConfigs;
//   - image-mirror objects or image.config applied or deleted: every
//     pool's 99-<pool>-generated-registries holds what the objects make of
//     it now (the controller writes once per event it reads; there is no
//     status to wait on), compared with mcorender.RegistriesIgnition,
//     which Diff renders with: a difference is reported after a minute, and the
//     names then differ;
//   - then, for every pool, a barrier: a MachineConfig with an empty
//     Ignition config (which renders to the same config) is created, or
//     the last one deleted, and the pool's spec.configuration.source must
//     show it. The render controller wrote that source from its cache of
//     MachineConfigs holding every change made before, so the pool's
//     rendered config is then the MCO's answer to all of them. No sleep:
//     a wait on what the controllers show.
func (c *diffCluster) settle(t *testing.T, sets ...diffChangeSet) map[string]string {
	t.Helper()
	ctx := context.Background()
	images := false
	for _, cs := range sets {
		for _, e := range cs.cs.Apply {
			key, _ := clusterdiff.KeyOf(e.Object)
			switch key.Kind {
			case "KubeletConfig", "ContainerRuntimeConfig":
				c.waitObserved(t, key)
			case "ImageDigestMirrorSet", "ImageTagMirrorSet", "ImageContentSourcePolicy", "Image":
				images = true
			}
		}
		for _, key := range cs.cs.Delete {
			switch key.Kind {
			case "ImageDigestMirrorSet", "ImageTagMirrorSet", "ImageContentSourcePolicy", "Image":
				images = true
			}
		}
	}
	if images {
		c.waitRegistries(t)
	}
	for _, pool := range c.pools {
		name := "zz-ndp-diff-barrier-" + pool
		if c.barrier[pool] {
			mc := &ndpmcv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: name}}
			if err := c.m.Client.Delete(ctx, mc); err != nil {
				t.Fatalf("deleting the barrier MachineConfig %s: %v", name, err)
			}
		} else {
			c.m.create(t, &ndpmcv1.MachineConfig{
				ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{ndpmcv1.RoleLabel: pool}},
				Spec:       mcfgv1.MachineConfigSpec{Config: rawJSON(`{"ignition":{"version":"3.5.0"}}`)},
			})
		}
		c.barrier[pool] = !c.barrier[pool]
	}
	out := map[string]string{}
	for _, pool := range c.pools {
		name, want := "zz-ndp-diff-barrier-"+pool, c.barrier[pool]
		testkit.Eventually(t, fmt.Sprintf("the render controller renders pool %s with%s %s", pool, map[bool]string{true: "", false: "out"}[want], name), func() (bool, string) {
			var p mcfgv1.MachineConfigPool
			if err := c.m.Client.Get(ctx, client.ObjectKey{Name: pool}, &p); err != nil {
				return false, err.Error()
			}
			has := slices.ContainsFunc(p.Spec.Configuration.Source, func(r corev1.ObjectReference) bool { return r.Name == name })
			if has != want || p.Spec.Configuration.Name == "" {
				return false, fmt.Sprintf("%s from %d MachineConfigs", p.Spec.Configuration.Name, len(p.Spec.Configuration.Source))
			}
			out[pool] = p.Spec.Configuration.Name
			return true, ""
		}, testkit.Within(3*time.Minute))
	}
	return out
}

// waitObserved waits until the controller of a KubeletConfig or
// ContainerRuntimeConfig has written its status for its generation.
func (c *diffCluster) waitObserved(t *testing.T, key clusterdiff.Key) {
	t.Helper()
	testkit.Eventually(t, fmt.Sprintf("the MCO's controller processes %s", key), func() (bool, string) {
		var gen, observed int64
		var conds []mcfgv1.KubeletConfigCondition
		switch key.Kind {
		case "KubeletConfig":
			var kc mcfgv1.KubeletConfig
			if err := c.m.Client.Get(context.Background(), client.ObjectKey{Name: key.Name}, &kc); err != nil {
				return false, err.Error()
			}
			gen, observed, conds = kc.Generation, kc.Status.ObservedGeneration, kc.Status.Conditions
		default:
			var crc mcfgv1.ContainerRuntimeConfig
			if err := c.m.Client.Get(context.Background(), client.ObjectKey{Name: key.Name}, &crc); err != nil {
				return false, err.Error()
			}
			gen, observed = crc.Generation, crc.Status.ObservedGeneration
			for _, cond := range crc.Status.Conditions {
				conds = append(conds, mcfgv1.KubeletConfigCondition{Type: mcfgv1.KubeletConfigStatusConditionType(cond.Type), Status: cond.Status, Message: cond.Message})
			}
		}
		if observed != gen || len(conds) == 0 {
			return false, fmt.Sprintf("generation %d, status of %d", gen, observed)
		}
		if last := conds[len(conds)-1]; last.Type != mcfgv1.KubeletConfigSuccess {
			t.Logf("%s: the controller's last condition is %s: %s", key, last.Type, last.Message)
		}
		return true, ""
	})
}

// waitRegistries waits until every pool's 99-<pool>-generated-registries
// is what mcorender.RegistriesIgnition makes of the pool's template files and the
// image objects now; after a minute it reports the difference and goes on.
func (c *diffCluster) waitRegistries(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for _, pool := range c.pools {
		name := render.GeneratedRegistriesName(pool)
		for {
			theirs, ours, err := c.generatedPair(pool, name)
			if err == nil && sameIgnition(theirs, ours) {
				break
			}
			if time.Now().After(deadline) {
				if err != nil {
					t.Errorf("%s: %v", name, err)
				} else {
					t.Errorf("after a minute the MCO's %s is not what mcorender.RegistriesIgnition makes of the image objects (-MCO +ndp):\n%s", name, ignitionFilesDiff(theirs, ours))
				}
				break
			}
			time.Sleep(testkit.Interval)
		}
	}
}

// generatedPair is a generated MachineConfig of pool as the MCO wrote it
// and ndp's rendering of it from the same objects (its KubeletConfig or
// ContainerRuntimeConfig, or the image objects, and the pool's other
// MachineConfigs), both Ignition configs.
func (c *diffCluster) generatedPair(pool, name string) (theirs, ours []byte, err error) {
	ctx := context.Background()
	var mc ndpmcv1.MachineConfig
	if err := c.m.Client.Get(ctx, client.ObjectKey{Name: name}, &mc); err != nil {
		return nil, nil, err
	}
	var p mcfgv1.MachineConfigPool
	if err := c.m.Client.Get(ctx, client.ObjectKey{Name: pool}, &p); err != nil {
		return nil, nil, err
	}
	items, err := c.m.SourcesOf(&p)
	if err != nil {
		return nil, nil, err
	}
	var mcs []*ndpmcv1.MachineConfig
	for i := range items {
		mcs = append(mcs, &items[i])
	}
	owner := metav1.GetControllerOf(&mc)
	switch {
	case owner != nil && owner.Kind == "KubeletConfig":
		var kc mcfgv1.KubeletConfig
		if err := c.m.Client.Get(ctx, client.ObjectKey{Name: owner.Name}, &kc); err != nil {
			return nil, nil, err
		}
		ours, err = render.KubeletConfigIgnition(pool, mcs, &kc)
	case owner != nil && owner.Kind == "ContainerRuntimeConfig":
		var crc mcfgv1.ContainerRuntimeConfig
		if err := c.m.Client.Get(ctx, client.ObjectKey{Name: owner.Name}, &crc); err != nil {
			return nil, nil, err
		}
		ours, err = render.ContainerRuntimeConfigIgnition(pool, mcs, &crc)
	case name == render.GeneratedRegistriesName(pool):
		ours, err = c.ndpRegistries(pool, mcs)
	default:
		return mc.Spec.Config.Raw, nil, errNotRendered
	}
	return mc.Spec.Config.Raw, ours, err
}

// errNotRendered: a generated MachineConfig that the test does not render
// with ndp (the node config's and the feature gates' 97- and 98-, which
// Diff keeps as the cluster has them).
var errNotRendered = errors.New("not rendered by the test")

// sourceVersions is, by pool, the resourceVersion of every MachineConfig
// the pool selects, by name.
func (c *diffCluster) sourceVersions(t *testing.T) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	for _, pool := range c.pools {
		var p mcfgv1.MachineConfigPool
		if err := c.m.Client.Get(context.Background(), client.ObjectKey{Name: pool}, &p); err != nil {
			t.Fatal(err)
		}
		mcs, err := c.m.SourcesOf(&p)
		if err != nil {
			t.Fatal(err)
		}
		out[pool] = map[string]string{}
		for _, mc := range mcs {
			out[pool][mc.Name] = mc.ResourceVersion
		}
	}
	return out
}

// sourceChanges names the MachineConfigs created, updated and deleted
// between two sourceVersions of a pool (the barrier MachineConfigs aside).
func sourceChanges(before, after map[string]string) string {
	var out []string
	for name, v := range after {
		switch w, ok := before[name]; {
		case strings.HasPrefix(name, "zz-ndp-diff-barrier-"):
		case !ok:
			out = append(out, name+" (created)")
		case w != v:
			out = append(out, name+" (updated)")
		}
	}
	for name := range before {
		if _, ok := after[name]; !ok && !strings.HasPrefix(name, "zz-ndp-diff-barrier-") {
			out = append(out, name+" (deleted)")
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// ndpRegistries is mcorender.RegistriesIgnition of the cluster's
// image-mirror objects and image config over the pool's template files, as
// Diff renders it.
func (c *diffCluster) ndpRegistries(pool string, mcs []*ndpmcv1.MachineConfig) ([]byte, error) {
	in, err := mcorender.RegistriesInputs(context.Background(), c.reader)
	if err != nil {
		return nil, err
	}
	return mcorender.RegistriesIgnition(pool, mcs, in)
}

// decide is the MCO daemon's decision (mco-decide) for a move of the
// cluster's, with MachineConfiguration cluster as it is.
func (c *diffCluster) decide(t *testing.T, from, to string) mcoVerdict {
	t.Helper()
	dir := t.TempDir()
	mc := dumpObject(t, c.m.Client, dir, &operatorv1.MachineConfiguration{TypeMeta: metav1.TypeMeta{APIVersion: operatorv1.GroupVersion.String(), Kind: "MachineConfiguration"}}, "cluster")
	return mcoDecideWith(t, c.m.Client, c.m.Dir, from, to, mc)
}

// planAgrees compares a report's plan with mco-decide's verdict: refused
// or not, and the same set of actions, drain and reboot.
func planAgrees(p clusterdiff.Plan, v mcoVerdict) (bool, string) {
	mcoRefused := !v.Reconcilable || v.Error != ""
	if mcoRefused || len(p.Refused) > 0 {
		if mcoRefused && len(p.Refused) > 0 {
			return true, ""
		}
		return false, fmt.Sprintf("refused: the report %t, the MCO %t", len(p.Refused) > 0, mcoRefused)
	}
	var theirs []string
	for _, a := range v.Actions {
		theirs = append(theirs, mcorules.Action{Type: operatorv1.NodeDisruptionPolicyStatusActionType(a.Type), Service: a.Service}.String())
	}
	theirs, ours := setOf(theirs), setOf(p.Actions)
	var why []string
	if !slices.Equal(theirs, ours) {
		why = append(why, fmt.Sprintf("actions: the report %q, the MCO %q", ours, theirs))
	}
	if p.Drain != v.Drain {
		why = append(why, fmt.Sprintf("drain: the report %t, the MCO %t", p.Drain, v.Drain))
	}
	if p.Reboot != v.Reboot {
		why = append(why, fmt.Sprintf("reboot: the report %t, the MCO %t", p.Reboot, v.Reboot))
	}
	return len(why) == 0, strings.Join(why, "; ")
}

func setOf(ss []string) []string {
	out := slices.Clone(ss)
	sort.Strings(out)
	return slices.Compact(out)
}

// explain says, for a pool whose predicted rendered config is not the
// MCO's, where they part: whether ndp renders the MCO's own MachineConfigs
// to the MCO's name (then the difference is in the MachineConfigs Diff
// predicted: the generated ones are compared with ndp's rendering of
// them), the specs of the two rendered configs, and the report's causes,
// generated MachineConfigs and notes.
func (c *diffCluster) explain(t *testing.T, rep *clusterdiff.Report, pd *clusterdiff.PoolDiff, to string, before map[string]string) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	fmt.Fprintf(&b, "  causes: %q\n  generated: %s\n  notes: %q\n", pd.Causes, mustJSON(t, rep.Generated), rep.Notes)
	var p mcfgv1.MachineConfigPool
	if err := c.m.Client.Get(ctx, client.ObjectKey{Name: pd.Pool}, &p); err != nil {
		return b.String() + err.Error()
	}
	items, err := c.m.SourcesOf(&p)
	if err != nil {
		return b.String() + err.Error()
	}
	sources := make([]render.Source, len(items))
	for i := range items {
		sources[i] = render.SourceOf(&items[i], nil)
	}
	mine, err := mcorender.Merge(pd.Pool, sources, mcorender.BaseOf(c.m.ControllerConfig(t)))
	if err != nil {
		return b.String() + "  MergeMCO of the MCO's MachineConfigs: " + err.Error()
	}
	var rendered ndpmcv1.MachineConfig
	if err := c.m.Client.Get(ctx, client.ObjectKey{Name: to}, &rendered); err != nil {
		return b.String() + err.Error()
	}
	now := map[string]string{}
	for _, mc := range items {
		now[mc.Name] = mc.ResourceVersion
	}
	fmt.Fprintf(&b, "  the MCO's MachineConfigs of the pool that changed: %s\n", sourceChanges(before, now))
	if mine.Name == to {
		fmt.Fprintf(&b, "  ndp renders the MCO's MachineConfigs of the pool to %s as the MCO does: the difference is in the MachineConfigs Diff predicted\n", to)
	} else {
		fmt.Fprintf(&b, "  ndp renders the MCO's MachineConfigs of the pool to %s, the MCO to %s:\n%s", mine.Name, to, specDiff(rendered.Spec, mine.Spec))
	}
	for _, src := range items {
		if !generatedName.MatchString(src.Name) {
			continue
		}
		theirs, ours, err := c.generatedPair(pd.Pool, src.Name)
		switch {
		case errors.Is(err, errNotRendered):
		case err != nil:
			fmt.Fprintf(&b, "  %s: %v\n", src.Name, err)
		case !sameIgnition(theirs, ours):
			fmt.Fprintf(&b, "  %s: the MCO's differs from ndp's rendering of the same objects (-MCO +ndp):\n%s", src.Name, ignitionFilesDiff(theirs, ours))
		}
	}
	return b.String()
}

// sameIgnition compares two Ignition configs as JSON values.
func sameIgnition(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return cmp.Equal(x, y)
}

// ignitionFilesDiff compares two Ignition configs by their files' contents
// and the rest as JSON.
func ignitionFilesDiff(theirs, ours []byte) string {
	files := func(raw []byte) (map[string]string, any) {
		out := map[string]string{}
		cfg, err := machineconfig.New("", mcfgv1.MachineConfigSpec{Config: rawJSON(string(raw))})
		if err != nil {
			return map[string]string{"error": err.Error()}, nil
		}
		for i := range cfg.Ignition.Storage.Files {
			f := &cfg.Ignition.Storage.Files[i]
			data, err := machineconfig.FileContents(cfg, f)
			if err != nil {
				data = []byte(err.Error())
			}
			out[f.Path] = string(data)
		}
		var rest map[string]any
		_ = json.Unmarshal(raw, &rest)
		if st, ok := rest["storage"].(map[string]any); ok {
			delete(st, "files")
		}
		return out, rest
	}
	tf, tr := files(theirs)
	of, or := files(ours)
	d := cmp.Diff(tf, of)
	if r := cmp.Diff(tr, or); r != "" {
		d += "the rest:\n" + r
	}
	return d
}

func rawJSON(s string) runtime.RawExtension { return runtime.RawExtension{Raw: []byte(s)} }

func planJSON(p clusterdiff.Plan) string {
	p.Changes = nil
	b, _ := json.Marshal(p)
	return string(b)
}

func verdictJSON(v mcoVerdict) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func reportJSON(rep *clusterdiff.Report) string {
	b, _ := json.MarshalIndent(rep, "", "  ")
	return string(b)
}

// diffTable is the results, a row per change set and a column per cluster.
func diffTable(clusters []string, sets []diffChangeSet, results map[string]map[string]diffTally) string {
	var b strings.Builder
	width := len("change set")
	for _, s := range sets {
		width = max(width, len(s.name))
	}
	fmt.Fprintf(&b, "%-*s", width, "change set")
	for _, c := range clusters {
		fmt.Fprintf(&b, "  %*s", max(len(c), 7), c)
	}
	b.WriteString("\n")
	sums := map[string]diffTally{}
	for _, s := range sets {
		fmt.Fprintf(&b, "%-*s", width, s.name)
		for _, c := range clusters {
			cell := "-"
			if r, ok := results[c][s.name]; ok {
				cell = fmt.Sprintf("%d/%d", r.agreed, r.total)
				sum := sums[c]
				sum.agreed += r.agreed
				sum.total += r.total
				sums[c] = sum
			}
			fmt.Fprintf(&b, "  %*s", max(len(c), 7), cell)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "%-*s", width, "all")
	for _, c := range clusters {
		fmt.Fprintf(&b, "  %*s", max(len(c), 7), fmt.Sprintf("%d/%d", sums[c].agreed, sums[c].total))
	}
	b.WriteString("\n")
	return b.String()
}
