package cluster

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/internal/testkit"
	"github.com/ndp-dev/ndp/internal/testkit/builder"
	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/nodeconfig"
)

const generatedConfigsWebhook = "generatedconfigs.preview.ndp.dev"

const workerPoolLabel = "pools.operator.machineconfiguration.openshift.io/worker"

// The pool's own kubelet.conf, with fields a KubeletConfig leaves alone.
const workerKubeletConf = builder.WorkerKubeletConf + "kubeAPIQPS: 50\nkubeAPIBurst: 100\nsystemReserved:\n  ephemeral-storage: 1Gi\n"

func kubeletConfigObject(name, spec string) *mcfgv1.KubeletConfig {
	return &mcfgv1.KubeletConfig{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: mcfgv1.KubeletConfigSpec{
		MachineConfigPoolSelector: &metav1.LabelSelector{MatchLabels: map[string]string{workerPoolLabel: ""}},
		KubeletConfig:             &runtime.RawExtension{Raw: []byte(spec)},
	}}
}

func kubeletConfigYAML(name, spec string) string {
	return `apiVersion: machineconfiguration.openshift.io/v1
kind: KubeletConfig
metadata:
  name: ` + name + `
spec:
  machineConfigPoolSelector:
    matchLabels:
      ` + workerPoolLabel + `: ""
  kubeletConfig:
    ` + spec + "\n"
}

// fileOf is the contents of path in a MachineConfig.
func fileOf(t *testing.T, mc *ndpmcv1.MachineConfig, path string) string {
	t.Helper()
	cfg := parseMC(t, mc)
	for i := range cfg.Ignition.Storage.Files {
		if f := &cfg.Ignition.Storage.Files[i]; f.Path == path {
			data, err := machineconfig.FileContents(cfg, f)
			if err != nil {
				t.Fatal(err)
			}
			return string(data)
		}
	}
	t.Fatalf("MachineConfig %s has no %s", mc.Name, path)
	return ""
}

func waitKubeletConfig(t *testing.T, name string, ok func(*mcfgv1.KubeletConfig) bool) *mcfgv1.KubeletConfig {
	t.Helper()
	return waitObject(t, name, "KubeletConfig as expected", ok)
}

func lastCondition(kc *mcfgv1.KubeletConfig) mcfgv1.KubeletConfigCondition {
	if n := len(kc.Status.Conditions); n > 0 {
		return kc.Status.Conditions[n-1]
	}
	return mcfgv1.KubeletConfigCondition{}
}

func TestKubeletConfigRendersTheGeneratedMachineConfig(t *testing.T) {
	ctx := context.Background()
	pool := machineConfigPool("worker")
	pool.Labels = map[string]string{workerPoolLabel: ""}
	create(t, pool)
	create(t, sourceMC("00-worker", "worker").WithFile("/etc/motd", "hello").Build())
	create(t, sourceMC("01-worker-kubelet", "worker").WithFile(nodeconfig.KubeletConfPath, workerKubeletConf).Build())
	target := waitPool(t, "worker", func(p *mcfgv1.MachineConfigPool) bool { return len(p.Spec.Configuration.Source) == 3 }).Spec.Configuration.Name
	create(t, node("worker-a", "worker", target))
	create(t, node("worker-b", "worker", target))
	// The shipped policy that reads inside kubelet.conf.
	shipped, err := os.ReadFile("../../examples/policies/kubelet-live.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := kubectlFile(t, string(shipped), "apply"); err != nil {
		t.Fatalf("applying examples/policies/kubelet-live.yaml: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		_ = k8s.Delete(context.Background(), &v1alpha1.NodeDisruptionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "kubelet-live"}})
	})
	waitCondition(t, "kubelet-live", v1alpha1.ConditionAccepted, metav1.ConditionTrue)

	// A server dry-run previews the plan of the MachineConfig it would
	// generate; nothing is written.
	out, err := kubectlFile(t, kubeletConfigYAML("max-pods", "maxPods: 500"), "apply", "--dry-run=server")
	printed(t, "a KubeletConfig dry-run", "Warning: creating KubeletConfig max-pods: pool worker, 2 nodes: Restart kubelet.service, no drain, no reboot (policy kubelet-live: maxPods changed)", out, err)
	// The CPU manager's state is only cleared at boot: the same dry-run
	// with cpuManagerPolicy says drain and reboot, and why.
	out, err = kubectlFile(t, kubeletConfigYAML("cpu-manager", "cpuManagerPolicy: static\n    reservedSystemCPUs: \"0\""), "apply", "--dry-run=server")
	printed(t, "a KubeletConfig dry-run", "Warning: creating KubeletConfig cpu-manager: pool worker, 2 nodes: Reboot, drains 2 nodes, reboots 2 nodes (policy kubelet-live: cpuManagerPolicy, reservedSystemCPUs changed: the CPU, memory and topology managers' state is only cleared at boot)", out, err)
	mustNotExist(t, &ndpmcv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: "99-worker-generated-kubelet"}})

	// Invalid KubeletConfigs are refused, naming the field, by the same
	// check the controller makes.
	for spec, want := range map[string]string{
		"maxPod: 500":              `spec.kubeletConfig: unknown field "maxPod"`,
		"cpuManagerPolicy: bogus":  `spec.kubeletConfig.cpuManagerPolicy: "bogus" is not one of "none", "static"`,
		"clusterDomain: x.example": "spec.kubeletConfig.clusterDomain: is not allowed to be set",
	} {
		out, err := kubectlFile(t, kubeletConfigYAML("invalid", spec), "apply", "--dry-run=server")
		if err == nil || !strings.Contains(out, want) {
			t.Errorf("dry-run of %q: %v\n%s\nwant %q", spec, err, out, want)
		}
	}

	// Applied: 99-worker-generated-kubelet holds the pool's kubelet.conf
	// with the KubeletConfig merged over it.
	kc := kubeletConfigObject("max-pods", `{"maxPods": 500}`)
	kc.Spec.LogLevel = ptr.To[int32](4)
	create(t, kc)
	mc := waitMachineConfig(t, "99-worker-generated-kubelet", func(*ndpmcv1.MachineConfig) bool { return true })
	if ref := metav1.GetControllerOf(mc); ref == nil || ref.Kind != "KubeletConfig" || ref.Name != "max-pods" || mc.Labels[ndpmcv1.RoleLabel] != "worker" {
		t.Errorf("owner %+v, labels %v", ref, mc.Labels)
	}
	conf, err := nodeconfig.DecodeBaseKubeletConfig([]byte(fileOf(t, mc, nodeconfig.KubeletConfPath)), "the generated MachineConfig")
	if err != nil || conf.MaxPods != 500 || *conf.KubeAPIQPS != 50 || conf.ClusterDomain != "cluster.local" {
		t.Errorf("merged kubelet.conf: %+v, %v", conf, err)
	}
	if got := fileOf(t, mc, nodeconfig.KubeletLogLevelPath); got != "[Service]\nEnvironment=\"KUBELET_LOG_LEVEL=4\"\n" {
		t.Errorf("log level drop-in %q", got)
	}
	got := waitKubeletConfig(t, "max-pods", func(kc *mcfgv1.KubeletConfig) bool {
		return lastCondition(kc).Type == mcfgv1.KubeletConfigSuccess && kc.Status.ObservedGeneration == kc.Generation
	})
	if v, ok := got.Annotations[nodeconfig.MCNameSuffixAnnotation]; !ok || v != "" || !slices.Contains(got.Finalizers, "99-worker-generated-kubelet") {
		t.Errorf("annotations %v, finalizers %v", got.Annotations, got.Finalizers)
	}
	waitEvent(t, "max-pods", "MachineConfigRendered")
	// ... and the pool's rendered config has it.
	rendered := waitPool(t, "worker", func(p *mcfgv1.MachineConfigPool) bool {
		return slices.ContainsFunc(p.Spec.Configuration.Source, func(r corev1.ObjectReference) bool { return r.Name == "99-worker-generated-kubelet" })
	}).Spec.Configuration.Name
	var rmc ndpmcv1.MachineConfig
	if err := k8s.Get(ctx, client.ObjectKey{Name: rendered}, &rmc); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(fileOf(t, &rmc, nodeconfig.KubeletConfPath), "maxPods: 500") {
		t.Errorf("the rendered config %s does not hold the merged kubelet.conf", rendered)
	}
	// Its status holds the plan from the nodes' config: the kubelet
	// restarted (after a daemon-reload for the log level), no drain.
	planned := waitMachineConfig(t, rendered, func(mc *ndpmcv1.MachineConfig) bool { return mc.Status.PlanFrom(target) != nil })
	p := planned.Status.PlanFrom(target)
	var actions []string
	for _, a := range p.Actions {
		actions = append(actions, a.String())
	}
	if got := strings.Join(actions, ", "); got != "DaemonReload, Restart kubelet.service" || p.Drain || p.Reboot {
		t.Errorf("plan from %s: %s, drain %t, reboot %t; want DaemonReload, Restart kubelet.service without drain or reboot\n%+v", target, got, p.Drain, p.Reboot, p.Reasons)
	}

	// One that got in without the webhook: Failure naming the field, and
	// no MachineConfig written.
	restore := withoutWebhook(t, generatedConfigsWebhook, kubeletConfigObject("probe", `{"maxPod": 1}`))
	create(t, kubeletConfigObject("bogus", `{"cpuManagerPolicy": "bogus"}`))
	failed := waitKubeletConfig(t, "bogus", func(kc *mcfgv1.KubeletConfig) bool { return lastCondition(kc).Type == mcfgv1.KubeletConfigFailure })
	if c := lastCondition(failed); c.Status != corev1.ConditionFalse || !strings.Contains(c.Message, "spec.kubeletConfig.cpuManagerPolicy") {
		t.Errorf("failure condition %+v", c)
	}
	waitEvent(t, "bogus", "Invalid")
	mustNotExist(t, &ndpmcv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: "99-worker-generated-kubelet-1"}})
	if err := k8s.Delete(ctx, failed); err != nil {
		t.Fatal(err)
	}
	testkit.Until(t, "the failed KubeletConfig is gone", func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Name: "bogus"}, &mcfgv1.KubeletConfig{}))
	})
	restore()

	// A second KubeletConfig for the pool gets the -1 suffix; deleting it
	// deletes its MachineConfig.
	second := kubeletConfigObject("pids", `{"podPidsLimit": 2048}`)
	create(t, second)
	mc1 := waitMachineConfig(t, "99-worker-generated-kubelet-1", func(*ndpmcv1.MachineConfig) bool { return true })
	if !strings.Contains(fileOf(t, mc1, nodeconfig.KubeletConfPath), "podPidsLimit: 2048") {
		t.Errorf("99-worker-generated-kubelet-1:\n%s", fileOf(t, mc1, nodeconfig.KubeletConfPath))
	}
	waitKubeletConfig(t, "pids", func(kc *mcfgv1.KubeletConfig) bool { return kc.Annotations[nodeconfig.MCNameSuffixAnnotation] == "1" })
	if err := k8s.Delete(ctx, second); err != nil {
		t.Fatal(err)
	}
	testkit.Until(t, "99-worker-generated-kubelet-1 is deleted with its KubeletConfig", func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Name: "99-worker-generated-kubelet-1"}, &ndpmcv1.MachineConfig{})) &&
			apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Name: "pids"}, &mcfgv1.KubeletConfig{}))
	})

	// A ContainerRuntimeConfig: the CRI-O drop-ins in
	// 99-worker-generated-containerruntime.
	crc := &mcfgv1.ContainerRuntimeConfig{ObjectMeta: metav1.ObjectMeta{Name: "pids-limit"}, Spec: mcfgv1.ContainerRuntimeConfigSpec{
		MachineConfigPoolSelector: &metav1.LabelSelector{MatchLabels: map[string]string{workerPoolLabel: ""}},
		ContainerRuntimeConfig:    &mcfgv1.ContainerRuntimeConfiguration{PidsLimit: ptr.To[int64](2048), LogLevel: "debug"},
	}}
	create(t, crc)
	cmc := waitMachineConfig(t, "99-worker-generated-containerruntime", func(*ndpmcv1.MachineConfig) bool { return true })
	if got := fileOf(t, cmc, nodeconfig.CRIODropInPidsLimitPath); got != "[crio]\n  [crio.runtime]\n    pids_limit = 2048\n" {
		t.Errorf("pids limit drop-in %q", got)
	}
	if got := fileOf(t, cmc, nodeconfig.CRIODropInLogLevelPath); got != "[crio]\n  [crio.runtime]\n    log_level = \"debug\"\n" {
		t.Errorf("log level drop-in %q", got)
	}

	// Deleting the first removes its MachineConfig too.
	if err := k8s.Delete(ctx, kc); err != nil {
		t.Fatal(err)
	}
	testkit.Until(t, "99-worker-generated-kubelet is deleted with its KubeletConfig", func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Name: "99-worker-generated-kubelet"}, &ndpmcv1.MachineConfig{}))
	})
}
