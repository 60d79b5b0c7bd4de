package render

import (
	"fmt"
	"slices"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/nodeconfig"
)

// ownerKinds are the kinds whose generated MachineConfigs a base leaves out.
var ownerKinds = map[nodeconfig.Kind]string{nodeconfig.KindKubelet: "KubeletConfig", nodeconfig.KindContainerRuntime: "ContainerRuntimeConfig"}

// GeneratedBase returns the contents of path in what pool's MachineConfigs
// (mcs, as PoolView.Sources lists them) render to without the
// MachineConfigs generated for kind (99-<pool>-generated-<kind>[-N], and
// any MachineConfig a KubeletConfig or ContainerRuntimeConfig of that kind
// controls), and the MachineConfig it comes from; nil when no MachineConfig
// has the file. It is the base a KubeletConfig (kubelet.conf) or a
// ContainerRuntimeConfig (storage.conf) is merged into, as the MCO merges
// into its templates' file: a field removed from the KubeletConfig goes
// back to the pool's own value.
func GeneratedBase(pool string, mcs []*ndpmcv1.MachineConfig, kind nodeconfig.Kind, path string) (data []byte, from string, err error) {
	files, err := GeneratedBaseFiles(pool, mcs, kind, path)
	if err != nil {
		return nil, "", err
	}
	return files[path].Data, files[path].From, nil
}

// BaseFile is a file of a generated MachineConfig's base, and the
// MachineConfig it comes from.
type BaseFile struct {
	Data []byte
	From string
}

// GeneratedBaseFiles is GeneratedBase for several paths of one rendering
// (the registries controller reads registries.conf and policy.json): the
// pool's MachineConfigs are merged once. A path no MachineConfig has is
// absent from the map.
func GeneratedBaseFiles(pool string, mcs []*ndpmcv1.MachineConfig, kind nodeconfig.Kind, paths ...string) (map[string]BaseFile, error) {
	var sources []Source
	for _, mc := range mcs {
		if nodeconfig.IsGeneratedName(kind, pool, mc.Name) {
			continue
		}
		if ref := metav1.GetControllerOf(mc); ref != nil && ref.Kind == ownerKinds[kind] && ref.APIVersion == mcfgv1.GroupVersion.String() {
			continue
		}
		sources = append(sources, SourceOf(mc, nil))
	}
	out := map[string]BaseFile{}
	if len(sources) == 0 {
		return out, nil
	}
	merged, err := Merge(pool, sources)
	if err != nil {
		return nil, err
	}
	cfg, err := machineconfig.New(merged.Name, merged.Spec)
	if err != nil {
		return nil, err
	}
	for i := range cfg.Ignition.Storage.Files {
		f := &cfg.Ignition.Storage.Files[i]
		if !slices.Contains(paths, f.Path) {
			continue
		}
		data, err := machineconfig.FileContents(cfg, f)
		if err != nil {
			return nil, fmt.Errorf("%s of pool %s: %w", f.Path, pool, err)
		}
		out[f.Path] = BaseFile{Data: data, From: merged.Sources["file:"+f.Path]}
	}
	return out, nil
}

// KubeletConfigIgnition validates kc and renders it for pool into the
// Ignition config of its generated MachineConfig: kubelet.conf is the
// pool's (GeneratedBase) with kc merged over it (nodeconfig.KubeletFiles).
// An invalid kc is a *nodeconfig.InvalidError; a pool without kubelet.conf
// is an error of the pool's.
func KubeletConfigIgnition(pool string, mcs []*ndpmcv1.MachineConfig, kc *mcfgv1.KubeletConfig) ([]byte, error) {
	if err := nodeconfig.ValidateKubeletConfig(kc); err != nil {
		return nil, err
	}
	base, from, err := GeneratedBase(pool, mcs, nodeconfig.KindKubelet, nodeconfig.KubeletConfPath)
	if err != nil {
		return nil, err
	}
	if base == nil {
		return nil, fmt.Errorf("pool %s: no MachineConfig of the pool has %s to merge KubeletConfig %q into", pool, nodeconfig.KubeletConfPath, kc.Name)
	}
	files, err := nodeconfig.KubeletFiles(kc, base, fmt.Sprintf("pool %s's MachineConfig %q", pool, from))
	if err != nil {
		return nil, err
	}
	return nodeconfig.Ignition(files)
}

// ContainerRuntimeConfigIgnition validates c and renders it for pool into
// the Ignition config of its generated MachineConfig (the CRI-O drop-ins,
// and the pool's storage.conf with overlaySize set).
func ContainerRuntimeConfigIgnition(pool string, mcs []*ndpmcv1.MachineConfig, c *mcfgv1.ContainerRuntimeConfig) ([]byte, error) {
	if err := nodeconfig.ValidateContainerRuntimeConfig(c); err != nil {
		return nil, err
	}
	var base []byte
	from := ""
	if cfg := c.Spec.ContainerRuntimeConfig; cfg != nil && cfg.OverlaySize != nil && !cfg.OverlaySize.IsZero() {
		var err error
		if base, from, err = GeneratedBase(pool, mcs, nodeconfig.KindContainerRuntime, nodeconfig.StorageConfPath); err != nil {
			return nil, err
		}
	}
	files, err := nodeconfig.ContainerRuntimeFiles(c, base, fmt.Sprintf("pool %s's MachineConfig %q", pool, from))
	if err != nil {
		return nil, err
	}
	return nodeconfig.Ignition(files)
}

// GeneratedMachineConfig is a generated MachineConfig for pool as the MCO
// makes it (ctrlcommon.MachineConfigFromIgnConfig): the pool's role label
// and the Ignition config; the caller sets its owner.
func GeneratedMachineConfig(name, pool string, ignition []byte) *ndpmcv1.MachineConfig {
	return &ndpmcv1.MachineConfig{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{ndpmcv1.RoleLabel: pool}},
		Spec:       mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: ignition}},
	}
}
