package clusterdiff

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/yaml"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/mco/mcorender"
	"github.com/ndp-dev/ndp/render"
)

// The benchmarks time `ndp diff` on a change set of 10 objects against a
// real cluster's snapshot grown to 5 pools and 20 rendered configs of
// 150–190 KB (../shared/mco-ref/realconfigs/no-version-upgrading), beside
// the floor: the same process decoding the snapshot and stopping (a
// --delete of an object the snapshot lacks fails right after decoding).
// make bench prints both and their ratio.

func BenchmarkDiffProcess(b *testing.B) {
	state, changes := benchSnapshot(b)
	bin := filepath.Join(testkit.KubectlNdp(b), "kubectl-ndp")
	b.Run("diff", func(b *testing.B) {
		for b.Loop() {
			runNdp(b, bin, 1, "diff", "--state", state, "-f", changes, "-o", "json")
		}
	})
	b.Run("floor", func(b *testing.B) {
		for b.Loop() {
			runNdp(b, bin, 2, "diff", "--state", state, "--delete", "machineconfig/not-in-the-snapshot")
		}
	})
}

func BenchmarkDiffInProcess(b *testing.B) {
	state, changes := benchSnapshot(b)
	ctx := context.Background()
	b.Run("diff", func(b *testing.B) {
		for b.Loop() {
			st, _, err := LoadSnapshot(state)
			if err != nil {
				b.Fatal(err)
			}
			apply, err := LoadManifests([]string{changes})
			if err != nil {
				b.Fatal(err)
			}
			r, err := Diff(ctx, st, ChangeSet{Apply: apply}, Options{})
			if err != nil {
				b.Fatal(err)
			}
			if !r.Changed {
				b.Fatal("nothing changed")
			}
		}
	})
	b.Run("floor", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := LoadSnapshot(state); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func runNdp(b *testing.B, bin string, want int, args ...string) {
	cmd := exec.Command(bin, args...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = nil, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		b.Fatal(err)
	}
	if code != want {
		b.Fatalf("%s: exit %d, want %d\n%s", strings.Join(args, " "), code, want, stderr.String())
	}
}

// benchSnapshot writes the snapshot (one List, as `oc get -o yaml` prints
// it) and the change set's directory, and returns their paths.
func benchSnapshot(b testing.TB) (state, changes string) {
	b.Helper()
	files, _ := filepath.Glob(filepath.Join(testkit.RequireMCORef(b, "realconfigs", "no-version-upgrading"), "*.yaml"))
	if len(files) == 0 {
		b.Fatal("no MachineConfig in mco-ref/realconfigs/no-version-upgrading")
	}
	var objs []client.Object
	var base []*ndpmcv1.MachineConfig
	cc := &mcfgv1.ControllerConfig{ObjectMeta: metav1.ObjectMeta{Name: controllerConfigName}}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		var mc ndpmcv1.MachineConfig
		if err := yaml.Unmarshal(data, &mc); err != nil {
			b.Fatal(err)
		}
		objs = append(objs, &mc)
		if strings.HasPrefix(mc.Name, "rendered-") {
			cc.Spec.BaseOSContainerImage, cc.Spec.BaseOSExtensionsContainerImage = mc.Spec.OSImageURL, mc.Spec.BaseOSExtensionsContainerImage
		} else {
			base = append(base, &mc)
		}
	}
	objs = append(objs, cc)
	// Three custom pools beside master and worker, each with a config of
	// its own and three older renderings its nodes may still run.
	pools := map[string]*mcfgv1.MachineConfigPool{}
	for _, name := range []string{"master", "worker", "infra", "gpu", "storage"} {
		roles := []string{name}
		if name != "master" && name != "worker" {
			roles = []string{"worker", name}
			for v := 0; v < 4; v++ {
				mc := &ndpmcv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: "99-" + name + "-tuning", Labels: map[string]string{ndpmcv1.RoleLabel: name}}}
				mc.Spec.Config.Raw = []byte(fmt.Sprintf(`{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/etc/sysctl.d/90-%s.conf","mode":420,"overwrite":true,"contents":{"source":"data:,vm.swappiness%%3D%d"}}]}}`, name, v))
				if v == 3 {
					base = append(base, mc) // the one in force
				}
				rendered := renderBench(b, name, roles, append(base, mc), cc)
				objs = append(objs, rendered)
			}
		}
		p := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"pools.operator.machineconfiguration.openshift.io/" + name: ""}},
			Spec: mcfgv1.MachineConfigPoolSpec{
				MachineConfigSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: ndpmcv1.RoleLabel, Operator: metav1.LabelSelectorOpIn, Values: roles}}},
				NodeSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/" + name: ""}},
			}}
		current := renderBench(b, name, roles, base, cc)
		p.Spec.Configuration.Name = current.Name
		p.Status.MachineCount, p.Status.UpdatedMachineCount = 10, 10
		pools[name] = p
		objs = append(objs, current, p)
		for i := 0; i < 10; i++ {
			n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, i),
				Labels:      map[string]string{"node-role.kubernetes.io/" + name: ""},
				Annotations: map[string]string{ndpmcv1.CurrentConfigAnnotation: current.Name}}}
			objs = append(objs, n)
		}
	}
	if n := countRendered(objs); n < 20 {
		b.Fatalf("the snapshot has %d rendered configs, want 20", n)
	}
	dir := b.TempDir()
	state = filepath.Join(dir, "state.yaml")
	writeList(b, state, objs)
	changes = filepath.Join(dir, "changes")
	if err := os.MkdirAll(changes, 0o755); err != nil {
		b.Fatal(err)
	}
	for name, text := range benchChangeSet {
		if err := os.WriteFile(filepath.Join(changes, name+".yaml"), []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return state, changes
}

func renderBench(b testing.TB, pool string, roles []string, mcs []*ndpmcv1.MachineConfig, cc *mcfgv1.ControllerConfig) *ndpmcv1.MachineConfig {
	var sources []render.Source
	for _, mc := range mcs {
		for _, r := range roles {
			if mc.Labels[ndpmcv1.RoleLabel] == r {
				sources = append(sources, render.SourceOf(mc, nil))
			}
		}
	}
	r, err := mcorender.Merge(pool, render.Order(sources), mcorender.BaseOf(cc))
	if err != nil {
		b.Fatal(err)
	}
	return &ndpmcv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: r.Name, Labels: map[string]string{ndpmcv1.RenderedForLabel: pool}}, Spec: r.Spec}
}

func countRendered(objs []client.Object) int {
	n := 0
	for _, o := range objs {
		if strings.HasPrefix(o.GetName(), "rendered-") {
			n++
		}
	}
	return n
}

// writeList writes objs as a v1 List, as `oc get … -o yaml` does.
func writeList(b testing.TB, path string, objs []client.Object) {
	items := make([]runtime.RawExtension, len(objs))
	for i, o := range objs {
		gvk, err := apiutil.GVKForObject(o, Scheme)
		if err != nil {
			b.Fatal(err)
		}
		o.GetObjectKind().SetGroupVersionKind(gvk)
		items[i] = runtime.RawExtension{Object: o}
	}
	data, err := yaml.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		b.Fatal(err)
	}
}

// benchChangeSet is a pull request of 10 objects: MachineConfigs for four
// pools, a KubeletConfig, a ContainerRuntimeConfig, two mirror sets, a
// NodeDisruptionPolicy and a RolloutPolicy.
var benchChangeSet = map[string]string{
	"mc-worker": mcYAML("99-worker-chrony", "worker", "/etc/chrony.conf", "pool%20ntp.example.com%20iburst"),
	"mc-master": mcYAML("99-master-chrony", "master", "/etc/chrony.conf", "pool%20ntp.example.com%20iburst"),
	"mc-infra":  mcYAML("99-infra-tuning", "infra", "/etc/sysctl.d/90-infra.conf", "vm.swappiness%3D10"),
	"mc-gpu":    mcYAML("99-gpu-modules", "gpu", "/etc/modules-load.d/gpu.conf", "nvidia"),
	"kubelet":   "apiVersion: machineconfiguration.openshift.io/v1\nkind: KubeletConfig\nmetadata:\n  name: max-pods\nspec:\n  machineConfigPoolSelector:\n    matchLabels:\n      pools.operator.machineconfiguration.openshift.io/worker: \"\"\n  kubeletConfig:\n    maxPods: 300\n",
	"crio":      "apiVersion: machineconfiguration.openshift.io/v1\nkind: ContainerRuntimeConfig\nmetadata:\n  name: pids\nspec:\n  machineConfigPoolSelector:\n    matchLabels:\n      pools.operator.machineconfiguration.openshift.io/gpu: \"\"\n  containerRuntimeConfig:\n    pidsLimit: 4096\n",
	"idms":      "apiVersion: config.openshift.io/v1\nkind: ImageDigestMirrorSet\nmetadata:\n  name: quay-mirror\nspec:\n  imageDigestMirrors:\n  - source: quay.io/example\n    mirrors:\n    - mirror.example.com/example\n",
	"itms":      "apiVersion: config.openshift.io/v1\nkind: ImageTagMirrorSet\nmetadata:\n  name: docker-mirror\nspec:\n  imageTagMirrors:\n  - source: docker.io/library\n    mirrors:\n    - mirror.example.com/library\n",
	"policy":    "apiVersion: ndp.dev/v1alpha1\nkind: NodeDisruptionPolicy\nmetadata:\n  name: chrony\nspec:\n  files:\n  - path: /etc/chrony.conf\n    actions:\n    - type: Restart\n      restart:\n        serviceName: chronyd.service\n",
	"rollout":   "apiVersion: ndp.dev/v1alpha1\nkind: RolloutPolicy\nmetadata:\n  name: workers\nspec:\n  poolSelector:\n    matchLabels:\n      pools.operator.machineconfiguration.openshift.io/worker: \"\"\n  windows:\n  - days: [Sat]\n    start: \"22:00\"\n    end: \"04:00\"\n    holds: [Reboot, Drain]\n",
}

func mcYAML(name, role, path, data string) string {
	return fmt.Sprintf("apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\nmetadata:\n  name: %s\n  labels:\n    machineconfiguration.openshift.io/role: %s\nspec:\n  config:\n    ignition:\n      version: 3.4.0\n    storage:\n      files:\n      - path: %s\n        mode: 420\n        overwrite: true\n        contents:\n          source: data:,%s\n", name, role, path, data)
}
