// Package render merges a pool's MachineConfigs into its rendered config:
// the first box of the flow (docs/design.md#the-flow), shared by the render controller and
// the admission webhook's in-memory preview. It also renders registries.conf
// from the image-mirror objects (RegistriesConfig), keeps parsed
// MachineConfigs (ConfigCache), and reads what a pool's rendering and plans
// start from (PoolView): its source MachineConfigs, its nodes by current
// config, and whether the cluster is a single node. The controllers and the
// webhook all read these through it, the same way.
package render

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"

	igntypes "github.com/coreos/ignition/v2/config/v3_5/types"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"k8s.io/apimachinery/pkg/runtime"

	ndpmcv1 "github.com/ndp-dev/ndp/apis/machineconfiguration/v1"
	"github.com/ndp-dev/ndp/machineconfig"
)

// Source is one MachineConfig selected by a pool.
type Source struct {
	Name string
	// Role is the MachineConfig's machineconfiguration.openshift.io/role
	// label (ndpmcv1.RoleLabel): configs of role worker merge before the
	// others, as in the MCO.
	Role string
	Spec mcfgv1.MachineConfigSpec
	// Config, when set, is Spec already parsed (machineconfig.New): callers
	// that render often (the admission webhook) keep parsed configs, since
	// parsing is most of the cost of a rendering.
	Config *machineconfig.Config
}

// SourceOf is the Source of a MachineConfig in the cluster.
func SourceOf(mc *ndpmcv1.MachineConfig, cfg *machineconfig.Config) Source {
	return Source{Name: mc.Name, Role: mc.Labels[ndpmcv1.RoleLabel], Spec: mc.Spec, Config: cfg}
}

// Rendered is a pool's merged config.
type Rendered struct {
	// Name is rendered-<pool>-<digest of the spec>: equal content, equal name.
	Name string
	Spec mcfgv1.MachineConfigSpec
	// Sources maps change ids ("file:/etc/x", "unit:y.service") to the
	// MachineConfig that gave them (ndpmcv1.SourcesAnnotation): the last,
	// in merge order, that has the file or unit (or one of its drop-ins).
	Sources map[string]string
	// SectionSources maps the fields that can be unreconcilable
	// ("spec.config.storage.disks", "spec.fips"...) to the MachineConfigs
	// that set them, so that an error can name the culprit.
	SectionSources map[string][]string
}

// Order sorts sources as the MCO's MergeMachineConfigs does
// (pkg/controller/common/helpers.go): the configs of role worker first,
// then the others (a custom pool's own), each in name order, so that a
// custom pool's configs override the worker configs it inherits.
func Order(sources []Source) []Source {
	sorted := slices.Clone(sources)
	sort.SliceStable(sorted, func(i, j int) bool {
		wi, wj := sorted[i].Role == workerRole, sorted[j].Role == workerRole
		if wi != wj {
			return wi
		}
		return sorted[i].Name < sorted[j].Name
	})
	return sorted
}

const workerRole = "worker"

// Merge renders sources as the MCO's MergeMachineConfigs does, after
// checking each as its ValidateMachineConfig does (machineconfig.Validate):
//
//   - order: the configs of role worker, then the others, each by name (Order);
//   - Ignition configs are merged with Ignition's own merge (config/v3_5.Merge,
//     what the MCO calls as ign3.Merge): files, directories and links by
//     path, units by name with their drop-ins by name, users and groups by
//     name, field by field (a later config's set fields win, its unset ones
//     keep the earlier values; lists of keys, such as SSH keys, are united);
//   - a file with no overwrite gets overwrite: true;
//   - kernel arguments are concatenated, in merge order;
//   - extensions are concatenated, in merge order (kernel-devel is refused
//     with a kernel type other than default);
//   - FIPS is on if any source turns it on;
//   - kernelType is the last realtime or 64k-pages asked for, else default;
//   - the last non-empty osImageURL and baseOSExtensionsContainerImage win
//     (the MCO starts from its ControllerConfig's, which ndp has not).
func Merge(pool string, sources []Source) (*Rendered, error) {
	sorted := Order(sources)
	var out igntypes.Config
	out.Ignition.Version = igntypes.MaxVersion.String()
	spec := mcfgv1.MachineConfigSpec{KernelArguments: []string{}, Extensions: []string{}}
	origin := map[string]string{}
	sections := map[string][]string{}
	kernelTypeFrom := ""
	for _, src := range sorted {
		object := fmt.Sprintf("MachineConfig %q", src.Name)
		cfg := src.Config
		if cfg == nil {
			var err error
			if cfg, err = machineconfig.New(object, src.Spec); err != nil {
				return nil, err
			}
		}
		if err := machineconfig.Validate(object, cfg); err != nil {
			return nil, err
		}
		ign := cfg.Ignition
		if ign.Ignition.Version != "" {
			// The merge builds new lists: a parsed config, which callers
			// may share, is never written to.
			out = mergeIgnition(out, ign)
		}
		for _, f := range ign.Storage.Files {
			origin["file:"+f.Path] = src.Name
		}
		for _, u := range ign.Systemd.Units {
			origin["unit:"+u.Name] = src.Name
		}
		for field, n := range map[string]int{
			"spec.config.passwd.groups":       len(ign.Passwd.Groups),
			"spec.config.passwd.users":        len(ign.Passwd.Users),
			"spec.config.storage.disks":       len(ign.Storage.Disks),
			"spec.config.storage.filesystems": len(ign.Storage.Filesystems),
			"spec.config.storage.raid":        len(ign.Storage.Raid),
			"spec.config.storage.luks":        len(ign.Storage.Luks),
			"spec.config.storage.directories": len(ign.Storage.Directories),
			"spec.config.storage.links":       len(ign.Storage.Links),
			"spec.config.kernelArguments":     len(ign.KernelArguments.ShouldExist) + len(ign.KernelArguments.ShouldNotExist),
		} {
			if n > 0 {
				sections[field] = append(sections[field], src.Name)
			}
		}
		s := src.Spec
		if s.FIPS {
			sections["spec.fips"] = append(sections["spec.fips"], src.Name)
		}
		spec.KernelArguments = append(spec.KernelArguments, s.KernelArguments...)
		spec.Extensions = append(spec.Extensions, s.Extensions...)
		spec.FIPS = spec.FIPS || s.FIPS
		if s.KernelType == machineconfig.KernelTypeRealtime || s.KernelType == machineconfig.KernelType64kPages {
			spec.KernelType, kernelTypeFrom = s.KernelType, src.Name
		}
		for dst, v := range map[*string]string{&spec.OSImageURL: s.OSImageURL, &spec.BaseOSExtensionsContainerImage: s.BaseOSExtensionsContainerImage} {
			if v != "" {
				*dst = v
			}
		}
	}
	// The MCO always overwrites a file, Ignition only when told to: the
	// MCO's rendering says so for every file that does not say otherwise,
	// so that a new node scaled into the pool writes it too.
	overwrite := true
	for i := range out.Storage.Files {
		if out.Storage.Files[i].Overwrite == nil {
			out.Storage.Files[i].Overwrite = &overwrite
		}
	}
	if spec.KernelType == "" {
		spec.KernelType = machineconfig.KernelTypeDefault
	} else if i := slices.Index(spec.Extensions, "kernel-devel"); i >= 0 {
		return nil, &machineconfig.InputError{Object: fmt.Sprintf("MachineConfig %q", extensionSource(sorted, "kernel-devel")), Field: "spec.extensions",
			Err: fmt.Errorf("installing the kernel-devel extension is not supported with kernelType %s (set by MachineConfig %q)", spec.KernelType, kernelTypeFrom)}
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	spec.Config = runtime.RawExtension{Raw: raw}
	digest, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(digest)
	return &Rendered{
		Name:           fmt.Sprintf("rendered-%s-%s", pool, hex.EncodeToString(sum[:16])),
		Spec:           spec,
		Sources:        origin,
		SectionSources: sections,
	}, nil
}

// extensionSource is the first source that asks for ext.
func extensionSource(sources []Source, ext string) string {
	for _, s := range sources {
		if slices.Contains(s.Spec.Extensions, ext) {
			return s.Name
		}
	}
	return ""
}
