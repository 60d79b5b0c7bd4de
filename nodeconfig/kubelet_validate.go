package nodeconfig

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/cpuset"
)

// ValidateKubeletConfig checks a KubeletConfig before anything is
// rendered: spec.logLevel and spec.kubeletConfig by the MCO's
// validateUserKubeletConfig (its fields no user may set), spec.kubeletConfig
// decoded strictly (an unknown field is named), and the values the kubelet
// would refuse (CheckKubelet). The error is an *InvalidError naming the
// field.
func ValidateKubeletConfig(kc *mcfgv1.KubeletConfig) error {
	obj := kubeletObject(kc)
	if kc.Spec.LogLevel != nil && (*kc.Spec.LogLevel < 1 || *kc.Spec.LogLevel > 10) {
		return &InvalidError{Object: obj, Field: "spec.logLevel", Msg: fmt.Sprintf("%d is not in [1,10]", *kc.Spec.LogLevel)}
	}
	c, err := DecodeUserKubeletConfig(kc)
	if err != nil || c == nil {
		return err
	}
	notAllowed := func(field string, v any) error {
		return &InvalidError{Object: obj, Field: "spec.kubeletConfig." + field, Msg: fmt.Sprintf("is not allowed to be set (the MCO manages it), but contains: %v", v)}
	}
	switch {
	case c.CgroupDriver != "":
		return notAllowed("cgroupDriver", c.CgroupDriver)
	case len(c.ClusterDNS) > 0:
		return notAllowed("clusterDNS", c.ClusterDNS)
	case c.ClusterDomain != "":
		return notAllowed("clusterDomain", c.ClusterDomain)
	case len(c.FeatureGates) > 0:
		return notAllowed("featureGates", c.FeatureGates)
	case c.StaticPodPath != "":
		return notAllowed("staticPodPath", c.StaticPodPath)
	case c.FailSwapOn != nil:
		return notAllowed("failSwapOn", *c.FailSwapOn)
	case c.MemorySwap.SwapBehavior != "":
		return notAllowed("memorySwap.swapBehavior", c.MemorySwap.SwapBehavior)
	case len(c.SystemReserved) > 0 && kc.Spec.AutoSizingReserved != nil && *kc.Spec.AutoSizingReserved:
		return &InvalidError{Object: obj, Field: "spec.kubeletConfig.systemReserved", Msg: "cannot be set together with spec.autoSizingReserved"}
	case c.SystemReservedCgroup != "" && c.SystemCgroups != "" && c.SystemReservedCgroup != c.SystemCgroups:
		return &InvalidError{Object: obj, Field: "spec.kubeletConfig.systemReservedCgroup",
			Msg: fmt.Sprintf("%q must match systemCgroups %q", c.SystemReservedCgroup, c.SystemCgroups)}
	}
	if field, msg := CheckKubelet(c); field != "" {
		return &InvalidError{Object: obj, Field: "spec.kubeletConfig." + field, Msg: msg}
	}
	return nil
}

// Values of the kubelet's policies (pkg/kubelet/cm: the CPU manager's
// none and static; the memory manager's None and Static on Linux; the
// topology manager's policies and scopes); "" is the default.
var (
	cpuManagerPolicies      = []string{"", "none", "static"}
	memoryManagerPolicies   = []string{"", kubeletv1beta1.NoneMemoryManagerPolicy, kubeletv1beta1.StaticMemoryManagerPolicy}
	topologyManagerPolicies = []string{"", kubeletv1beta1.NoneTopologyManagerPolicy, kubeletv1beta1.BestEffortTopologyManagerPolicy,
		kubeletv1beta1.RestrictedTopologyManagerPolicy, kubeletv1beta1.SingleNumaNodeTopologyManagerPolicy}
	topologyManagerScopes = []string{"", kubeletv1beta1.ContainerTopologyManagerScope, kubeletv1beta1.PodTopologyManagerScope}
	// evictionSignals are the kubelet's (pkg/kubelet/eviction/api).
	evictionSignals = []string{"memory.available", "nodefs.available", "nodefs.inodesFree", "imagefs.available", "imagefs.inodesFree",
		"containerfs.available", "containerfs.inodesFree", "allocatableMemory.available", "pid.available"}
)

// CheckKubelet returns the first field of c (its JSON path) whose value
// the kubelet refuses, and why; "" when none. It is the subset of the
// kubelet's checks (pkg/kubelet/apis/config/validation, the eviction
// thresholds' parser, the CPU, memory and topology managers' policies)
// that depends on the configuration alone: the kubelet also checks values
// against the node's feature gates and cgroup version, which a controller
// cannot know. Unset (zero) values pass: the kubelet defaults them.
func CheckKubelet(c *kubeletv1beta1.KubeletConfiguration) (field, msg string) {
	oneOf := func(f, v string, allowed []string) (string, string) {
		if slices.Contains(allowed, v) {
			return "", ""
		}
		return f, fmt.Sprintf("%q is not one of %s", v, quoteList(allowed[1:]))
	}
	for _, c := range []struct {
		f, v    string
		allowed []string
	}{
		{"cpuManagerPolicy", c.CPUManagerPolicy, cpuManagerPolicies},
		{"memoryManagerPolicy", c.MemoryManagerPolicy, memoryManagerPolicies},
		{"topologyManagerPolicy", c.TopologyManagerPolicy, topologyManagerPolicies},
		{"topologyManagerScope", c.TopologyManagerScope, topologyManagerScopes},
	} {
		if f, m := oneOf(c.f, c.v, c.allowed); f != "" {
			return f, m
		}
	}
	if c.ReservedSystemCPUs != "" {
		if _, err := cpuset.Parse(c.ReservedSystemCPUs); err != nil {
			return "reservedSystemCPUs", fmt.Sprintf("%q is not a CPU set: %v", c.ReservedSystemCPUs, err)
		}
		if c.KubeReservedCgroup != "" {
			return "reservedSystemCPUs", "cannot be used with kubeReservedCgroup"
		}
	}
	i32 := func(p *int32) int64 {
		if p == nil {
			return 0
		}
		return int64(*p)
	}
	for _, r := range []struct {
		f        string
		v        int64
		min, max int64
	}{
		{"maxPods", int64(c.MaxPods), 0, -1},
		{"podsPerCore", int64(c.PodsPerCore), 0, -1},
		{"kubeAPIQPS", i32(c.KubeAPIQPS), 0, -1},
		{"kubeAPIBurst", int64(c.KubeAPIBurst), 0, -1},
		{"eventRecordQPS", i32(c.EventRecordQPS), 0, -1},
		{"eventBurst", int64(c.EventBurst), 0, -1},
		{"registryPullQPS", i32(c.RegistryPullQPS), 0, -1},
		{"registryBurst", int64(c.RegistryBurst), 0, -1},
		{"maxOpenFiles", c.MaxOpenFiles, 0, -1},
		{"imageGCHighThresholdPercent", i32(c.ImageGCHighThresholdPercent), 0, 100},
		{"imageGCLowThresholdPercent", i32(c.ImageGCLowThresholdPercent), 0, 100},
		{"oomScoreAdj", i32(c.OOMScoreAdj), -1000, 1000},
		{"nodeStatusMaxImages", i32(c.NodeStatusMaxImages), -1, -1},
		{"port", int64(c.Port), 0, 65535},
		{"readOnlyPort", int64(c.ReadOnlyPort), 0, 65535},
		{"healthzPort", i32(c.HealthzPort), 0, 65535},
	} {
		if r.v < r.min {
			return r.f, fmt.Sprintf("%d must not be less than %d", r.v, r.min)
		}
		if r.max >= 0 && r.v > r.max {
			return r.f, fmt.Sprintf("%d must not be more than %d", r.v, r.max)
		}
	}
	if c.ImageGCHighThresholdPercent != nil && c.ImageGCLowThresholdPercent != nil && *c.ImageGCLowThresholdPercent >= *c.ImageGCHighThresholdPercent {
		return "imageGCLowThresholdPercent", fmt.Sprintf("%d must be less than imageGCHighThresholdPercent %d", *c.ImageGCLowThresholdPercent, *c.ImageGCHighThresholdPercent)
	}
	for name, m := range map[string]map[string]string{"evictionHard": c.EvictionHard, "evictionSoft": c.EvictionSoft} {
		for _, signal := range sortedKeys(m) {
			if msg := checkThreshold(signal, m[signal]); msg != "" {
				return name + "." + signal, msg
			}
		}
	}
	for _, signal := range sortedKeys(c.EvictionSoftGracePeriod) {
		if !slices.Contains(evictionSignals, signal) {
			return "evictionSoftGracePeriod." + signal, "unsupported eviction signal"
		}
		d, err := time.ParseDuration(c.EvictionSoftGracePeriod[signal])
		if err != nil || d < 0 {
			return "evictionSoftGracePeriod." + signal, fmt.Sprintf("%q is not a non-negative duration", c.EvictionSoftGracePeriod[signal])
		}
	}
	for _, signal := range sortedKeys(c.EvictionSoft) {
		if _, ok := c.EvictionSoftGracePeriod[signal]; !ok {
			return "evictionSoft." + signal, "a soft eviction threshold needs a grace period (evictionSoftGracePeriod." + signal + ")"
		}
	}
	for _, signal := range sortedKeys(c.EvictionMinimumReclaim) {
		if msg := checkThreshold(signal, c.EvictionMinimumReclaim[signal]); msg != "" {
			return "evictionMinimumReclaim." + signal, msg
		}
	}
	return "", ""
}

// checkThreshold is the kubelet's parseThresholdStatement: a known signal,
// and a percentage in [0%,100%] or a positive quantity.
func checkThreshold(signal, val string) string {
	if !slices.Contains(evictionSignals, signal) {
		return "unsupported eviction signal"
	}
	if p, ok := strings.CutSuffix(val, "%"); ok {
		f, err := strconv.ParseFloat(p, 32)
		if err != nil || f < 0 || f > 100 {
			return fmt.Sprintf("%q is not a percentage between 0%% and 100%%", val)
		}
		return ""
	}
	q, err := resource.ParseQuantity(val)
	if err != nil {
		return fmt.Sprintf("%q is neither a quantity nor a percentage: %v", val, err)
	}
	if q.Sign() <= 0 {
		return fmt.Sprintf("%q must be positive", val)
	}
	return ""
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func quoteList(vs []string) string {
	q := make([]string, len(vs))
	for i, v := range vs {
		q[i] = strconv.Quote(v)
	}
	return strings.Join(q, ", ")
}
