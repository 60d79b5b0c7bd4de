package nodeconfig

import (
	"fmt"
	"strconv"
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// MCNameSuffixAnnotation records, on a KubeletConfig or
// ContainerRuntimeConfig, the suffix of the MachineConfig it renders to
// ("" for none, "1" for 99-<pool>-generated-kubelet-1), as the MCO's
// ctrlcommon.MCNameSuffixAnnotationKey.
const MCNameSuffixAnnotation = "machineconfiguration.openshift.io/mc-name-suffix"

// MaxMCNameSuffix is the MCO's ctrlcommon.MaxMCNameSuffix: at most ten
// configs of a kind per pool (no suffix, then 1 to 9).
const MaxMCNameSuffix = 9

// Kind is what a generated MachineConfig renders: "kubelet" or
// "containerruntime", the last word of its name.
type Kind string

// The two kinds.
const (
	KindKubelet          Kind = "kubelet"
	KindContainerRuntime Kind = "containerruntime"
)

// BaseName is the generated MachineConfig's name without a suffix:
// 99-<pool>-generated-<kind>.
func BaseName(kind Kind, pool string) string {
	return "99-" + pool + "-generated-" + string(kind)
}

// IsGeneratedName tells whether name is pool's generated MachineConfig of
// kind, with or without a numeric suffix.
func IsGeneratedName(kind Kind, pool, name string) bool {
	base := BaseName(kind, pool)
	if name == base {
		return true
	}
	rest, ok := strings.CutPrefix(name, base+"-")
	if !ok {
		return false
	}
	_, err := strconv.Atoi(rest)
	return err == nil
}

// Owner is what the naming reads of a KubeletConfig or
// ContainerRuntimeConfig.
type Owner struct {
	Name        string
	Annotations map[string]string
	Finalizers  []string
	Created     metav1.Time
	Selector    *metav1.LabelSelector
}

// OwnerOfKubeletConfig is the naming's view of a KubeletConfig.
func OwnerOfKubeletConfig(kc *mcfgv1.KubeletConfig) Owner {
	return Owner{Name: kc.Name, Annotations: kc.Annotations, Finalizers: kc.Finalizers, Created: kc.CreationTimestamp, Selector: kc.Spec.MachineConfigPoolSelector}
}

// OwnerOfContainerRuntimeConfig is the naming's view of a ContainerRuntimeConfig.
func OwnerOfContainerRuntimeConfig(c *mcfgv1.ContainerRuntimeConfig) Owner {
	return Owner{Name: c.Name, Annotations: c.Annotations, Finalizers: c.Finalizers, Created: c.CreationTimestamp, Selector: c.Spec.MachineConfigPoolSelector}
}

// SelectsPool tells whether a config's machineConfigPoolSelector selects
// pool, as the MCO reads it: a nil or empty selector selects nothing.
func SelectsPool(sel *metav1.LabelSelector, pool *mcfgv1.MachineConfigPool) (bool, error) {
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return false, fmt.Errorf("spec.machineConfigPoolSelector: %w", err)
	}
	return !s.Empty() && s.Matches(labels.Set(pool.Labels)), nil
}

// ManagedName is the name of the MachineConfig cfg renders to for pool,
// as the MCO's getManagedKubeletConfigKey and getManagedKeyCtrCfg choose
// it: the first config of a kind for a pool gets 99-<pool>-generated-<kind>,
// the next ones -1, -2 ... (one above the highest suffix recorded in the
// MCNameSuffixAnnotation of the pool's configs); a config keeps the name
// its annotation records; a config without the annotation that is not the
// pool's newest takes the highest-numbered of its finalizers naming an
// existing MachineConfig of the pool (mcExists). all are every config of
// the kind in the cluster, cfg among them. Unlike the MCO, the deprecated
// names with the pool's UID (99-<pool>-<uid>-<kind>) are not looked for.
func ManagedName(kind Kind, pool *mcfgv1.MachineConfigPool, cfg Owner, all []Owner, mcExists func(string) bool) (string, error) {
	base := BaseName(kind, pool.Name)
	if len(all) == 0 {
		return base, nil
	}
	var list []Owner
	for _, o := range all {
		ok, err := SelectsPool(o.Selector, pool)
		if err != nil {
			return "", fmt.Errorf("%s: %w", o.Name, err)
		}
		if ok {
			list = append(list, o)
		}
	}
	for _, o := range list {
		if o.Name != cfg.Name {
			continue
		}
		val, ok := o.Annotations[MCNameSuffixAnnotation]
		if !ok {
			break
		}
		if val != "" {
			return base + "-" + val, nil
		}
		return base, nil
	}
	if len(list) == 1 {
		return base, nil
	}
	if notLatest(list, cfg) {
		latest, max := "", -1
		for _, f := range cfg.Finalizers {
			if mcExists == nil || !mcExists(f) || !strings.HasPrefix(f, base) {
				continue
			}
			suffix := 0
			if f != base {
				rest, ok := strings.CutPrefix(f, base+"-")
				n, err := strconv.Atoi(rest)
				if !ok || err != nil {
					continue
				}
				suffix = n
			}
			if suffix > max {
				latest, max = f, suffix
			}
		}
		if latest != "" {
			return latest, nil
		}
	}
	n := 0
	for _, o := range list {
		if val, ok := o.Annotations[MCNameSuffixAnnotation]; ok && val != "" {
			v, err := strconv.Atoi(val)
			if err != nil {
				return "", fmt.Errorf("%s: annotation %s: %q is not a number", o.Name, MCNameSuffixAnnotation, val)
			}
			n = max(n, v)
		}
	}
	if n+1 > MaxMCNameSuffix {
		return "", fmt.Errorf("pool %s already has the maximum number of %s configs (10): delete an older one first", pool.Name, kind)
	}
	return base + "-" + strconv.Itoa(n+1), nil
}

// Suffix is the value of MCNameSuffixAnnotation for a managed name.
func Suffix(kind Kind, pool, name string) string {
	rest, ok := strings.CutPrefix(name, BaseName(kind, pool)+"-")
	if !ok {
		return ""
	}
	return rest
}

func notLatest(list []Owner, cfg Owner) bool {
	for _, o := range list {
		if o.Created.Time.After(cfg.Created.Time) {
			return true
		}
	}
	return false
}
