package nodeconfig

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"github.com/vincent-petithory/dataurl"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"

	"github.com/ndp-dev/ndp/machineconfig"
)

// baseKubelet is a pool's kubelet.conf, as the MCO's templates write it
// (abridged).
const baseKubelet = `kind: KubeletConfiguration
apiVersion: kubelet.config.k8s.io/v1beta1
authentication:
  x509:
    clientCAFile: /etc/kubernetes/kubelet-ca.crt
  anonymous:
    enabled: false
cgroupDriver: systemd
cgroupRoot: /
clusterDNS:
  - 172.30.0.10
clusterDomain: cluster.local
containerLogMaxSize: 50Mi
maxPods: 250
kubeAPIQPS: 50
kubeAPIBurst: 100
podPidsLimit: 4096
protectKernelDefaults: true
rotateCertificates: true
serializeImagePulls: false
staticPodPath: /etc/kubernetes/manifests
systemCgroups: /system.slice
systemReserved:
  ephemeral-storage: 1Gi
featureGates:
  RotateKubeletServerCertificate: true
serverTLSBootstrap: true
tlsMinVersion: VersionTLS12
evictionHard:
  memory.available: 100Mi
  nodefs.available: 10%
`

func kubeletConfig(name, spec string) *mcfgv1.KubeletConfig {
	kc := &mcfgv1.KubeletConfig{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: mcfgv1.KubeletConfigSpec{MachineConfigPoolSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pools.operator.machineconfiguration.openshift.io/worker": ""}}}}
	if spec != "" {
		kc.Spec.KubeletConfig = &runtime.RawExtension{Raw: []byte(spec)}
	}
	return kc
}

func decodeOut(t *testing.T, files []File, path string) []byte {
	t.Helper()
	for _, f := range files {
		if f.Path == path {
			return f.Data
		}
	}
	t.Fatalf("no %s among %d files", path, len(files))
	return nil
}

func TestKubeletFilesMergeAsTheMCO(t *testing.T) {
	base, err := DecodeBaseKubeletConfig([]byte(baseKubelet), "test")
	if err != nil {
		t.Fatal(err)
	}
	kc := kubeletConfig("set-max-pods", `{"maxPods": 500, "cpuManagerPolicy": "static", "reservedSystemCPUs": "0-1",
		"kubeAPIQPS": 100, "evictionHard": {"memory.available": "500Mi"}, "protectKernelDefaults": false,
		"systemReserved": {"memory": "2Gi", "pid": "1000"}, "featureGates": null}`)
	kc.Spec.LogLevel = ptr.To[int32](4)
	if err := ValidateKubeletConfig(kc); err != nil {
		t.Fatal(err)
	}
	files, err := KubeletFiles(kc, []byte(baseKubelet), "test")
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range files {
		paths = append(paths, f.Path)
	}
	if diff := cmp.Diff([]string{NodeSizingEnvPath, KubeletLogLevelPath, KubeletConfPath}, paths); diff != "" {
		t.Errorf("files, in the MCO's order (-want +got):\n%s", diff)
	}
	conf := decodeOut(t, files, KubeletConfPath)
	if !strings.HasPrefix(string(conf), "apiVersion: kubelet.config.k8s.io/v1beta1\n") {
		t.Errorf("kubelet.conf is not the MCO's YAML encoding:\n%s", conf)
	}
	got, err := DecodeBaseKubeletConfig(conf, "output")
	if err != nil {
		t.Fatal(err)
	}
	// What the MCO's generateKubeletIgnFiles makes of the same input: the
	// set fields override, maps merge by key, the system-reserved memory
	// goes to the node-sizing file, protectKernelDefaults: false is
	// honoured, reservedSystemCPUs clears systemReservedCgroup and enforces
	// allocatable on pods only.
	want := base.DeepCopy()
	want.TypeMeta = metav1.TypeMeta{Kind: "KubeletConfiguration", APIVersion: "kubelet.config.k8s.io/v1beta1"}
	want.MaxPods = 500
	want.CPUManagerPolicy = "static"
	want.ReservedSystemCPUs = "0-1"
	want.KubeAPIQPS = ptr.To[int32](100)
	want.EvictionHard = map[string]string{"memory.available": "500Mi", "nodefs.available": "10%"}
	want.ProtectKernelDefaults = false
	want.SystemReserved = map[string]string{"ephemeral-storage": "1Gi", "pid": "1000"}
	want.EnforceNodeAllocatable = []string{"pods"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("merged kubelet.conf (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff("[Service]\nEnvironment=\"KUBELET_LOG_LEVEL=4\"\n", string(decodeOut(t, files, KubeletLogLevelPath))); diff != "" {
		t.Error(diff)
	}
	if diff := cmp.Diff("NODE_SIZING_ENABLED=false\nSYSTEM_RESERVED_MEMORY=2Gi\nSYSTEM_RESERVED_CPU=500m\nSYSTEM_RESERVED_ES=1Gi\n", string(decodeOut(t, files, NodeSizingEnvPath))); diff != "" {
		t.Error(diff)
	}

	// Removing a field from the KubeletConfig gives the base's value back:
	// the base never holds an earlier KubeletConfig's merge.
	files, err = KubeletFiles(kubeletConfig("set-max-pods", `{"kubeAPIQPS": 100}`), []byte(baseKubelet), "test")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := DecodeBaseKubeletConfig(decodeOut(t, files, KubeletConfPath), "output"); got.MaxPods != 250 || got.CPUManagerPolicy != "" {
		t.Errorf("maxPods %d, cpuManagerPolicy %q: want the base's", got.MaxPods, got.CPUManagerPolicy)
	}
}

func TestKubeletTLSSecurityProfile(t *testing.T) {
	kc := kubeletConfig("tls", "")
	kc.Spec.TLSSecurityProfile = &configv1.TLSSecurityProfile{Type: configv1.TLSProfileModernType}
	files, err := KubeletFiles(kc, []byte(baseKubelet), "test")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := DecodeBaseKubeletConfig(decodeOut(t, files, KubeletConfPath), "output")
	if got.TLSMinVersion != "VersionTLS13" || !cmp.Equal(got.TLSCipherSuites, []string{"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"}) {
		t.Errorf("modern profile: %s %v", got.TLSMinVersion, got.TLSCipherSuites)
	}
	kc.Spec.TLSSecurityProfile = &configv1.TLSSecurityProfile{Type: configv1.TLSProfileCustomType}
	files, _ = KubeletFiles(kc, []byte(baseKubelet), "test")
	if got, _ := DecodeBaseKubeletConfig(decodeOut(t, files, KubeletConfPath), "output"); got.TLSMinVersion != "VersionTLS12" || len(got.TLSCipherSuites) == 0 {
		t.Errorf("a custom profile without a spec is Intermediate: %s %v", got.TLSMinVersion, got.TLSCipherSuites)
	}
}

func TestValidateKubeletConfig(t *testing.T) {
	for _, tc := range []struct {
		name, spec string
		logLevel   *int32
		autoSizing *bool
		field      string // "" when valid
	}{
		{name: "valid", spec: `{"maxPods": 100, "topologyManagerPolicy": "single-numa-node", "evictionSoft": {"memory.available": "1Gi"}, "evictionSoftGracePeriod": {"memory.available": "1m30s"}}`},
		{name: "empty", spec: ""},
		{name: "unknown field", spec: `{"maxPod": 100}`, field: "spec.kubeletConfig"},
		{name: "wrong type", spec: `{"maxPods": "many"}`, field: "spec.kubeletConfig"},
		{name: "cpuManagerPolicy", spec: `{"cpuManagerPolicy": "bogus"}`, field: "spec.kubeletConfig.cpuManagerPolicy"},
		{name: "memoryManagerPolicy", spec: `{"memoryManagerPolicy": "static"}`, field: "spec.kubeletConfig.memoryManagerPolicy"},
		{name: "topologyManagerScope", spec: `{"topologyManagerScope": "node"}`, field: "spec.kubeletConfig.topologyManagerScope"},
		{name: "reservedSystemCPUs", spec: `{"reservedSystemCPUs": "0-x"}`, field: "spec.kubeletConfig.reservedSystemCPUs"},
		{name: "maxPods", spec: `{"maxPods": -1}`, field: "spec.kubeletConfig.maxPods"},
		{name: "kubeAPIBurst", spec: `{"kubeAPIBurst": -5}`, field: "spec.kubeletConfig.kubeAPIBurst"},
		{name: "image GC order", spec: `{"imageGCHighThresholdPercent": 50, "imageGCLowThresholdPercent": 60}`, field: "spec.kubeletConfig.imageGCLowThresholdPercent"},
		{name: "eviction signal", spec: `{"evictionHard": {"memory.free": "1Gi"}}`, field: "spec.kubeletConfig.evictionHard.memory.free"},
		{name: "eviction value", spec: `{"evictionHard": {"memory.available": "110%"}}`, field: "spec.kubeletConfig.evictionHard.memory.available"},
		{name: "soft without grace", spec: `{"evictionSoft": {"memory.available": "1Gi"}}`, field: "spec.kubeletConfig.evictionSoft.memory.available"},
		// the MCO's validateUserKubeletConfig (TestKubeletConfigDenylistedOptions)
		{name: "cgroupDriver", spec: `{"cgroupDriver": "cgroupfs"}`, field: "spec.kubeletConfig.cgroupDriver"},
		{name: "clusterDNS", spec: `{"clusterDNS": ["10.0.0.1"]}`, field: "spec.kubeletConfig.clusterDNS"},
		{name: "clusterDomain", spec: `{"clusterDomain": "x.local"}`, field: "spec.kubeletConfig.clusterDomain"},
		{name: "featureGates", spec: `{"featureGates": {"Foo": true}}`, field: "spec.kubeletConfig.featureGates"},
		{name: "staticPodPath", spec: `{"staticPodPath": "/x"}`, field: "spec.kubeletConfig.staticPodPath"},
		{name: "failSwapOn", spec: `{"failSwapOn": false}`, field: "spec.kubeletConfig.failSwapOn"},
		{name: "swapBehavior", spec: `{"memorySwap": {"swapBehavior": "LimitedSwap"}}`, field: "spec.kubeletConfig.memorySwap.swapBehavior"},
		{name: "systemReserved with autoSizing", spec: `{"systemReserved": {"memory": "1Gi"}}`, autoSizing: ptr.To(true), field: "spec.kubeletConfig.systemReserved"},
		{name: "systemReservedCgroup", spec: `{"systemReservedCgroup": "/a.slice", "systemCgroups": "/b.slice"}`, field: "spec.kubeletConfig.systemReservedCgroup"},
		{name: "logLevel high", logLevel: ptr.To[int32](11), field: "spec.logLevel"},
		{name: "logLevel low", logLevel: ptr.To[int32](0), field: "spec.logLevel"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kc := kubeletConfig("kc", tc.spec)
			kc.Spec.LogLevel, kc.Spec.AutoSizingReserved = tc.logLevel, tc.autoSizing
			err := ValidateKubeletConfig(kc)
			if tc.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			ie, ok := err.(*InvalidError)
			if !ok || ie.Field != tc.field || !strings.Contains(err.Error(), `KubeletConfig "kc"`) {
				t.Fatalf("error %v (%T), want field %s", err, err, tc.field)
			}
		})
	}
	if err := ValidateKubeletConfig(kubeletConfig("kc", `{"maxPod": 1}`)); !strings.Contains(err.Error(), `unknown field "maxPod"`) {
		t.Errorf("the unknown field is not named: %v", err)
	}
}

// The merged file is checked too: a soft threshold in the KubeletConfig
// whose grace period nobody gives, with the base's soft thresholds.
func TestKubeletFilesCheckTheMergedFile(t *testing.T) {
	base := baseKubelet + "kubeReservedCgroup: /kube.slice\n"
	_, err := KubeletFiles(kubeletConfig("kc", `{"reservedSystemCPUs": "0"}`), []byte(base), "MachineConfig \"01-worker-kubelet\"")
	if ie, ok := err.(*InvalidError); !ok || !strings.HasPrefix(ie.Field, "reservedSystemCPUs of /etc/kubernetes/kubelet.conf") {
		t.Fatalf("error %v", err)
	}
	if _, err := KubeletFiles(kubeletConfig("kc", ""), []byte(baseKubelet+"notAField: 1\n"), "MachineConfig \"01-worker-kubelet\""); err == nil || !strings.Contains(err.Error(), `unknown field "notAField"`) {
		t.Errorf("a base field the types do not know: %v", err)
	}
}

func crc(name string, cfg mcfgv1.ContainerRuntimeConfiguration) *mcfgv1.ContainerRuntimeConfig {
	return &mcfgv1.ContainerRuntimeConfig{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: mcfgv1.ContainerRuntimeConfigSpec{ContainerRuntimeConfig: &cfg}}
}

// The MCO's storage.conf template (templates/common/_base/files/container-storage.yaml), abridged.
const baseStorage = `[storage]
driver = "overlay"
runroot = "/var/run/containers/storage"
graphroot = "/var/lib/containers/storage"
[storage.options]
additionalimagestores = [
]
size = ""
override_kernel_check = "true"
[storage.options.thinpool]
`

func TestContainerRuntimeFilesAsTheMCO(t *testing.T) {
	q := func(s string) *resource.Quantity { v := resource.MustParse(s); return &v }
	for _, tc := range []struct {
		name string
		cfg  mcfgv1.ContainerRuntimeConfiguration
		want []File
	}{
		// TestCreateCRIODropinFiles in the MCO's helpers_test.go
		{name: "logSizeMax", cfg: mcfgv1.ContainerRuntimeConfiguration{LogSizeMax: q("10G")},
			want: []File{{CRIODropInLogSizeMaxPath, []byte("[crio]\n  [crio.runtime]\n    log_size_max = 10000000000\n")}}},
		{name: "zero logSizeMax writes nothing", cfg: mcfgv1.ContainerRuntimeConfiguration{LogSizeMax: q("0k")}},
		{name: "every drop-in", cfg: mcfgv1.ContainerRuntimeConfiguration{PidsLimit: ptr.To[int64](2048), LogLevel: "debug", DefaultRuntime: "crun"},
			want: []File{
				{CRIODropInLogLevelPath, []byte("[crio]\n  [crio.runtime]\n    log_level = \"debug\"\n")},
				{CRIODropInPidsLimitPath, []byte("[crio]\n  [crio.runtime]\n    pids_limit = 2048\n")},
				{CRIODropInDefaultRuntimePath, []byte("[crio]\n  [crio.runtime]\n    default_runtime = \"crun\"\n")},
			}},
		{name: "overlaySize", cfg: mcfgv1.ContainerRuntimeConfiguration{OverlaySize: q("10G")},
			want: []File{{StorageConfPath, []byte(`[storage]
  driver = "overlay"
  runroot = "/var/run/containers/storage"
  graphroot = "/var/lib/containers/storage"
  [storage.options]
    size = "10G"
    force_mask = 0
    auto-userns-min-size = 0
    auto-userns-max-size = 0
`)}}}, // re-encoded through containers/storage's OptionsConfig, as the MCO does: options it does not know are dropped
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := crc("c", tc.cfg)
			if err := ValidateContainerRuntimeConfig(c); err != nil {
				t.Fatal(err)
			}
			got, err := ContainerRuntimeFiles(c, []byte(baseStorage), "test")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b []byte) bool { return string(a) == string(b) })); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if _, err := ContainerRuntimeFiles(crc("c", mcfgv1.ContainerRuntimeConfiguration{OverlaySize: q("1G")}), nil, "test"); !IsInvalid(err) {
		t.Errorf("overlaySize without a storage.conf: %v", err)
	}
}

func TestValidateContainerRuntimeConfig(t *testing.T) {
	q := func(s string) *resource.Quantity { v := resource.MustParse(s); return &v }
	for _, tc := range []struct {
		name  string
		cfg   mcfgv1.ContainerRuntimeConfiguration
		field string
	}{
		{name: "valid", cfg: mcfgv1.ContainerRuntimeConfiguration{PidsLimit: ptr.To[int64](20), LogSizeMax: q("9k"), LogLevel: "trace", DefaultRuntime: "runc", OverlaySize: q("0")}},
		{name: "pidsLimit 0", cfg: mcfgv1.ContainerRuntimeConfiguration{PidsLimit: ptr.To[int64](0)}},
		{name: "pidsLimit low", cfg: mcfgv1.ContainerRuntimeConfiguration{PidsLimit: ptr.To[int64](19)}, field: "spec.containerRuntimeConfig.pidsLimit"},
		{name: "pidsLimit -1", cfg: mcfgv1.ContainerRuntimeConfiguration{PidsLimit: ptr.To[int64](-1)}, field: "spec.containerRuntimeConfig.pidsLimit"},
		{name: "logSizeMax", cfg: mcfgv1.ContainerRuntimeConfiguration{LogSizeMax: q("8k")}, field: "spec.containerRuntimeConfig.logSizeMax"},
		{name: "overlaySize", cfg: mcfgv1.ContainerRuntimeConfiguration{OverlaySize: q("-1G")}, field: "spec.containerRuntimeConfig.overlaySize"},
		{name: "logLevel", cfg: mcfgv1.ContainerRuntimeConfiguration{LogLevel: "verbose"}, field: "spec.containerRuntimeConfig.logLevel"},
		{name: "defaultRuntime", cfg: mcfgv1.ContainerRuntimeConfiguration{DefaultRuntime: "kata"}, field: "spec.containerRuntimeConfig.defaultRuntime"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateContainerRuntimeConfig(crc("c", tc.cfg))
			if tc.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if ie, ok := err.(*InvalidError); !ok || ie.Field != tc.field {
				t.Fatalf("error %v, want field %s", err, tc.field)
			}
		})
	}
}

func TestManagedName(t *testing.T) {
	pool := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "worker", Labels: map[string]string{"pools.operator.machineconfiguration.openshift.io/worker": ""}}}
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"pools.operator.machineconfiguration.openshift.io/worker": ""}}
	t0 := metav1.NewTime(time.Unix(1000, 0))
	t1 := metav1.NewTime(time.Unix(2000, 0))
	first := Owner{Name: "a", Selector: sel, Created: t0}
	firstDone := Owner{Name: "a", Selector: sel, Created: t0, Annotations: map[string]string{MCNameSuffixAnnotation: ""}}
	second := Owner{Name: "b", Selector: sel, Created: t1}
	other := Owner{Name: "c", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"x": "y"}}}
	for _, tc := range []struct {
		name string
		cfg  Owner
		all  []Owner
		want string
	}{
		{"alone", first, []Owner{first}, "99-worker-generated-kubelet"},
		{"another pool's does not count", first, []Owner{first, other}, "99-worker-generated-kubelet"},
		{"second", second, []Owner{firstDone, second}, "99-worker-generated-kubelet-1"},
		{"third", Owner{Name: "d", Selector: sel, Created: t1}, []Owner{firstDone, {Name: "b", Selector: sel, Annotations: map[string]string{MCNameSuffixAnnotation: "1"}}, {Name: "d", Selector: sel, Created: t1}}, "99-worker-generated-kubelet-2"},
		{"annotation kept", Owner{Name: "b", Selector: sel, Annotations: map[string]string{MCNameSuffixAnnotation: "3"}}, []Owner{firstDone, {Name: "b", Selector: sel, Annotations: map[string]string{MCNameSuffixAnnotation: "3"}}}, "99-worker-generated-kubelet-3"},
		{"older without annotation: its finalizer", Owner{Name: "a", Selector: sel, Created: t0, Finalizers: []string{"99-worker-generated-kubelet-2"}}, []Owner{{Name: "a", Selector: sel, Created: t0}, second}, "99-worker-generated-kubelet-2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ManagedName(KindKubelet, pool, tc.cfg, tc.all, func(string) bool { return true })
			if err != nil || got != tc.want {
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	full := []Owner{firstDone, {Name: "z", Selector: sel, Annotations: map[string]string{MCNameSuffixAnnotation: "9"}}, second}
	if _, err := ManagedName(KindContainerRuntime, pool, second, full, nil); err == nil || !strings.Contains(err.Error(), "maximum") {
		t.Errorf("an eleventh config: %v", err)
	}
	if !IsGeneratedName(KindKubelet, "worker", "99-worker-generated-kubelet-4") || IsGeneratedName(KindKubelet, "worker", "99-worker-generated-kubelet-x") ||
		IsGeneratedName(KindKubelet, "worker", "99-worker-generated-containerruntime") || Suffix(KindKubelet, "worker", "99-worker-generated-kubelet-4") != "4" {
		t.Error("IsGeneratedName / Suffix")
	}
}

func TestIgnitionIsTheMCOsFiles(t *testing.T) {
	raw, err := Ignition([]File{{Path: KubeletLogLevelPath, Data: []byte("[Service]\n")}})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := machineconfig.New("test", mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: raw}})
	if err != nil {
		t.Fatal(err)
	}
	f := cfg.Ignition.Storage.Files[0]
	if f.Path != KubeletLogLevelPath || *f.Mode != 0o644 || !*f.Overwrite || *f.Contents.Source != dataurl.EncodeBytes([]byte("[Service]\n")) {
		t.Errorf("%+v", f)
	}
	var _ kubeletv1beta1.KubeletConfiguration
}

// The base's systemReservedCgroup and enforceNodeAllocatable after a
// KubeletConfig, as the MCO's controller (at the reference commit) leaves
// them: kept unless the user enforces node allocatable without the system
// reservation; reservedSystemCPUs drops the reservation's enforcement and
// keeps pods first.
func TestKubeletFilesSystemReservedCgroup(t *testing.T) {
	base := baseKubelet + "systemReservedCgroup: /system.slice\nenforceNodeAllocatable:\n- pods\n- system-reserved-compressible\n"
	for _, tc := range []struct {
		name    string
		spec    string
		cgroup  string
		enforce []string
	}{
		{"maxPods only: kept", `{"maxPods": 200}`, "/system.slice", []string{"pods", "system-reserved-compressible"}},
		{"enforce pods only: cleared", `{"enforceNodeAllocatable": ["pods"]}`, "", []string{"pods"}},
		{"enforce system-reserved: kept", `{"enforceNodeAllocatable": ["pods", "system-reserved"]}`, "/system.slice", []string{"pods", "system-reserved"}},
		{"reserved CPUs: cleared, pods kept", `{"reservedSystemCPUs": "0-1"}`, "", []string{"pods"}},
		{"reserved CPUs without pods: pods first", `{"reservedSystemCPUs": "0-1", "enforceNodeAllocatable": ["system-reserved"]}`, "", []string{"pods"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files, err := KubeletFiles(kubeletConfig("kc", tc.spec), []byte(base), "MachineConfig \"01-worker-kubelet\"")
			if err != nil {
				t.Fatal(err)
			}
			got, err := DecodeBaseKubeletConfig(decodeOut(t, files, KubeletConfPath), "out")
			if err != nil {
				t.Fatal(err)
			}
			if got.SystemReservedCgroup != tc.cgroup || !cmp.Equal(got.EnforceNodeAllocatable, tc.enforce) {
				t.Errorf("systemReservedCgroup %q, enforceNodeAllocatable %q; want %q, %q", got.SystemReservedCgroup, got.EnforceNodeAllocatable, tc.cgroup, tc.enforce)
			}
		})
	}
}
