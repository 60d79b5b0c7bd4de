package render_test

import (
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/internal/testkit/builder"
	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/nodeconfig"
	"github.com/ndp-dev/ndp/render"
)

func TestKubeletConfigIgnitionMergesIntoThePoolsOwnKubeletConf(t *testing.T) {
	mcs := []*ndpmcv1.MachineConfig{
		builder.MachineConfig("00-worker").WithRole("worker").WithFile("/etc/kubernetes/kubelet.conf", "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nmaxPods: 100\n").Build(),
		builder.MachineConfig("01-worker-kubelet").WithRole("worker").WithFile("/etc/kubernetes/kubelet.conf", "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nmaxPods: 250\nkubeAPIQPS: 50\n").Build(),
		// An earlier rendering of a KubeletConfig: never the base.
		builder.MachineConfig("99-worker-generated-kubelet").WithRole("worker").WithFile("/etc/kubernetes/kubelet.conf", "maxPods: 7\nkubeAPIBurst: 7\n").Build(),
	}
	base, from, err := render.GeneratedBase("worker", mcs, nodeconfig.KindKubelet, nodeconfig.KubeletConfPath)
	if err != nil || from != "01-worker-kubelet" || !strings.Contains(string(base), "maxPods: 250") {
		t.Fatalf("base from %q: %q, %v", from, base, err)
	}
	kc := &mcfgv1.KubeletConfig{ObjectMeta: metav1.ObjectMeta{Name: "qps"}, Spec: mcfgv1.KubeletConfigSpec{KubeletConfig: &runtime.RawExtension{Raw: []byte(`{"kubeAPIQPS": 100}`)}}}
	ign, err := render.KubeletConfigIgnition("worker", mcs, kc)
	if err != nil {
		t.Fatal(err)
	}
	mc := render.GeneratedMachineConfig("99-worker-generated-kubelet", "worker", ign)
	cfg, err := machineconfig.New(mc.Name, mc.Spec)
	if err != nil {
		t.Fatal(err)
	}
	data, err := machineconfig.FileContents(cfg, &cfg.Ignition.Storage.Files[0])
	if err != nil {
		t.Fatal(err)
	}
	got, err := nodeconfig.DecodeBaseKubeletConfig(data, "rendered")
	if err != nil || got.MaxPods != 250 || *got.KubeAPIQPS != 100 || got.KubeAPIBurst != 0 || mc.Labels[ndpmcv1.RoleLabel] != "worker" {
		t.Errorf("rendered %+v, %v", got, err)
	}

	// A pool with no kubelet.conf is the pool's problem, not the KubeletConfig's.
	if _, err := render.KubeletConfigIgnition("worker", mcs[2:], kc); err == nil || nodeconfig.IsInvalid(err) || !strings.Contains(err.Error(), "no MachineConfig of the pool has /etc/kubernetes/kubelet.conf") {
		t.Errorf("no base: %v", err)
	}
	// An invalid KubeletConfig is refused before anything is rendered.
	kc.Spec.KubeletConfig.Raw = []byte(`{"cpuManagerPolicy": "bogus"}`)
	if _, err := render.KubeletConfigIgnition("worker", mcs, kc); !nodeconfig.IsInvalid(err) || !strings.Contains(err.Error(), "spec.kubeletConfig.cpuManagerPolicy") {
		t.Errorf("invalid: %v", err)
	}
}
