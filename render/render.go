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

	"github.com/ndp-dev/ndp/machineconfig"
)

// Source is one MachineConfig selected by a pool.
type Source struct {
	Name string
	Spec mcfgv1.MachineConfigSpec
	// Config, when set, is Spec already parsed (machineconfig.New): callers
	// that render often (the admission webhook) keep parsed configs, since
	// parsing is most of the cost of a rendering.
	Config *machineconfig.Config
}

// Rendered is a pool's merged config.
type Rendered struct {
	// Name is rendered-<pool>-<digest of the spec>: equal content, equal name.
	Name string
	Spec mcfgv1.MachineConfigSpec
	// Sources maps change ids ("file:/etc/x", "unit:y.service") to the
	// MachineConfig that gave them (ndpmcv1.SourcesAnnotation).
	Sources map[string]string
	// SectionSources maps the fields that can be unreconcilable
	// ("spec.config.storage.disks", "spec.fips"...) to the MachineConfigs
	// that set them, so that an error can name the culprit.
	SectionSources map[string][]string
}

// Merge renders sources in lexicographic name order: a later file or unit
// of the same path or name replaces an earlier one; the core user's SSH
// keys are united and the last password hash wins; kernel arguments are
// appended; extensions are united; the last non-empty osImageURL,
// baseOSExtensionsContainerImage and kernelType win; FIPS is on if any
// source turns it on. Ignition sections only applied at first boot (disks,
// filesystems...) are concatenated so that a change of them is seen.
func Merge(pool string, sources []Source) (*Rendered, error) {
	sorted := slices.Clone(sources)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	var out igntypes.Config
	out.Ignition.Version = igntypes.MaxVersion.String()
	spec := mcfgv1.MachineConfigSpec{}
	origin := map[string]string{}
	files := map[string]int{}
	units := map[string]int{}
	users := map[string]int{}
	var extensions []string
	sections := map[string][]string{}
	for _, src := range sorted {
		cfg := src.Config
		if cfg == nil {
			var err error
			if cfg, err = machineconfig.New(src.Name, src.Spec); err != nil {
				return nil, fmt.Errorf("MachineConfig %q: %w", src.Name, err)
			}
		}
		ign := cfg.Ignition
		for _, f := range ign.Storage.Files {
			replace(&out.Storage.Files, files, f.Path, f)
			origin["file:"+f.Path] = src.Name
		}
		for _, u := range ign.Systemd.Units {
			replace(&out.Systemd.Units, units, u.Name, u)
			origin["unit:"+u.Name] = src.Name
		}
		for _, u := range ign.Passwd.Users {
			i, ok := users[u.Name]
			if !ok {
				// The keys are appended to below: never into a parsed
				// config's array, which callers may share.
				u.SSHAuthorizedKeys = slices.Clone(u.SSHAuthorizedKeys)
				users[u.Name] = len(out.Passwd.Users)
				out.Passwd.Users = append(out.Passwd.Users, u)
				continue
			}
			merged := &out.Passwd.Users[i]
			for _, k := range u.SSHAuthorizedKeys {
				if !slices.Contains(merged.SSHAuthorizedKeys, k) {
					merged.SSHAuthorizedKeys = append(merged.SSHAuthorizedKeys, k)
				}
			}
			if u.PasswordHash != nil {
				merged.PasswordHash = u.PasswordHash
			}
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
		if src.Spec.FIPS {
			sections["spec.fips"] = append(sections["spec.fips"], src.Name)
		}
		out.Passwd.Groups = append(out.Passwd.Groups, ign.Passwd.Groups...)
		out.Storage.Disks = append(out.Storage.Disks, ign.Storage.Disks...)
		out.Storage.Filesystems = append(out.Storage.Filesystems, ign.Storage.Filesystems...)
		out.Storage.Raid = append(out.Storage.Raid, ign.Storage.Raid...)
		out.Storage.Luks = append(out.Storage.Luks, ign.Storage.Luks...)
		out.Storage.Directories = append(out.Storage.Directories, ign.Storage.Directories...)
		out.Storage.Links = append(out.Storage.Links, ign.Storage.Links...)
		out.KernelArguments.ShouldExist = append(out.KernelArguments.ShouldExist, ign.KernelArguments.ShouldExist...)
		out.KernelArguments.ShouldNotExist = append(out.KernelArguments.ShouldNotExist, ign.KernelArguments.ShouldNotExist...)

		s := src.Spec
		spec.KernelArguments = append(spec.KernelArguments, s.KernelArguments...)
		extensions = append(extensions, s.Extensions...)
		spec.FIPS = spec.FIPS || s.FIPS
		for dst, v := range map[*string]string{&spec.OSImageURL: s.OSImageURL, &spec.BaseOSExtensionsContainerImage: s.BaseOSExtensionsContainerImage, &spec.KernelType: s.KernelType} {
			if v != "" {
				*dst = v
			}
		}
	}
	sort.Strings(extensions)
	spec.Extensions = slices.Compact(extensions)
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

// replace puts item in list under key: in place of an earlier item with the
// same key, else at the end. index maps keys to positions in list.
func replace[T any](list *[]T, index map[string]int, key string, item T) {
	if i, ok := index[key]; ok {
		(*list)[i] = item
		return
	}
	index[key] = len(*list)
	*list = append(*list, item)
}
