// Package render merges a pool's MachineConfigs into its rendered config:
// the first box of the flow (docs/design.md#the-flow), shared by the render controller and
// the admission webhook's in-memory preview (Merge), and the stage the MCO's
// rendering (mco/mcorender) finishes its own way (Fold). It also renders the
// MachineConfigs ndp generates for a pool: registries.conf from the
// image-mirror objects (registriesconfig.go) and the Ignition of a
// KubeletConfig or ContainerRuntimeConfig over the pool's own files
// (generated.go, on nodeconfig); keeps parsed MachineConfigs (ConfigCache);
// and reads what a pool's rendering and plans start from (PoolView): its
// source MachineConfigs, its nodes by current config, whether the cluster is
// a single node, and the groups of nodes waiting for a plan (Waiting,
// PlanGroups: half of the plan rule). The controllers and the webhook all
// read these through it, the same way. It links no OPA.
package render

import (
	"bytes"
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
	// Generated is set for a MachineConfig an MCO controller wrote (it
	// carries ndpmcv1.GeneratedByControllerVersionAnnotation): 00-worker,
	// 99-worker-generated-kubelet... Its osImageURL and
	// baseOSExtensionsContainerImage never override the ControllerConfig's
	// in the MCO's rendering (mcorender.Merge).
	Generated bool
	Spec      mcfgv1.MachineConfigSpec
	// Config, when set, is Spec already parsed (machineconfig.New): callers
	// that render often (the admission webhook) keep parsed configs, since
	// parsing is most of the cost of a rendering.
	Config *machineconfig.Config
}

// SourceOf is the Source of a MachineConfig in the cluster.
func SourceOf(mc *ndpmcv1.MachineConfig, cfg *machineconfig.Config) Source {
	return Source{
		Name:      mc.Name,
		Role:      mc.Labels[ndpmcv1.RoleLabel],
		Generated: mc.Annotations[ndpmcv1.GeneratedByControllerVersionAnnotation] != "",
		Spec:      mc.Spec,
		Config:    cfg,
	}
}

// Rendered is a pool's merged config.
type Rendered struct {
	// Name is rendered-<pool>-<digest of the spec>: equal content, equal name.
	Name string
	Spec mcfgv1.MachineConfigSpec
	// Sources maps change ids ("file:/etc/x", "unit:y.service",
	// "os:osImageURL") to the MachineConfig that gave them
	// (ndpmcv1.SourcesAnnotation): the last, in merge order, that has the
	// file or unit (or one of its drop-ins) or sets the OS field.
	Sources map[string]string
	// SectionSources maps the fields that can be unreconcilable
	// ("spec.config.storage.disks", "spec.fips"...) to the MachineConfigs
	// that set them, so that an error can name the culprit.
	SectionSources map[string][]string
	// ignition is the merged Ignition config Spec.Config encodes, for
	// Config; nil in a Rendered made elsewhere.
	ignition *igntypes.Config
}

// Config is the rendering parsed and validated as machineconfig.New would
// (with its Sources), without decoding Spec.Config again when the merged
// Ignition config is at hand.
func (r *Rendered) Config() (*machineconfig.Config, error) {
	var cfg *machineconfig.Config
	var err error
	if r.ignition != nil {
		cfg, err = machineconfig.FromIgnition(r.Name, r.Spec, *r.ignition)
	} else {
		cfg, err = machineconfig.New(r.Name, r.Spec)
	}
	if err != nil {
		return nil, err
	}
	cfg.Sources = r.Sources
	return cfg, nil
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
//   - the first config is the base, as it is; each later one is merged into
//     it with Ignition's own merge (config/v3_5.Merge, what the MCO calls as
//     ign3.Merge): files, directories and links by path, units by name with
//     their drop-ins by name, users and groups by name, field by field (a
//     later config's set fields win, its unset ones keep the earlier values;
//     lists of keys, such as SSH keys, are united) — except a file's
//     compression, which goes with its contents: a later file without
//     compression clears an earlier one's gzip;
//   - a file with no overwrite gets overwrite: true;
//   - kernel arguments are concatenated, in merge order;
//   - extensions are concatenated, in merge order (kernel-devel is refused
//     with a kernel type other than default);
//   - FIPS is on if any source turns it on;
//   - kernelType is the last realtime or 64k-pages asked for, else default;
//   - the last non-empty osImageURL and baseOSExtensionsContainerImage win
//     (the MCO starts from its ControllerConfig's, which ndp has not:
//     mcorender.Merge does).
//
// Its name is ndp's own digest of the spec; mcorender.Merge gives the MCO's.
func Merge(pool string, sources []Source) (*Rendered, error) {
	m, err := Fold(sources, false)
	if err != nil {
		return nil, err
	}
	for _, src := range m.Sorted {
		for dst, v := range map[*string]string{&m.Spec.OSImageURL: src.Spec.OSImageURL, &m.Spec.BaseOSExtensionsContainerImage: src.Spec.BaseOSExtensionsContainerImage} {
			if v != "" {
				*dst = v
			}
		}
	}
	raw, err := json.Marshal(m.Ignition)
	if err != nil {
		return nil, err
	}
	m.Spec.Config = runtime.RawExtension{Raw: raw}
	digest, err := json.Marshal(m.Spec)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(digest)
	return &Rendered{
		Name:           fmt.Sprintf("rendered-%s-%s", pool, hex.EncodeToString(sum[:16])),
		Spec:           m.Spec,
		Sources:        m.Origin,
		SectionSources: m.Sections,
	}, nil
}

// Folded is what Merge and the MCO's rendering (mco/mcorender) share: the
// sources validated and merged, but for the images and the encoding of the
// Ignition config, where they differ.
type Folded struct {
	// Sorted are the sources in merge order (Order).
	Sorted   []Source
	Ignition igntypes.Config
	// Spec has all but Config, OSImageURL and BaseOSExtensionsContainerImage.
	Spec mcfgv1.MachineConfigSpec
	// Origin and Sections become the Rendered's Sources and SectionSources.
	Origin   map[string]string
	Sections map[string][]string
}

// Rendered is the rendering named name whose spec (Spec with Config and
// the images set) encodes f.Ignition: its Config() parses no JSON again.
func (f *Folded) Rendered(name string, spec mcfgv1.MachineConfigSpec) *Rendered {
	return &Rendered{Name: name, Spec: spec, Sources: f.Origin, SectionSources: f.Sections, ignition: &f.Ignition}
}

// Fold validates and merges sources (Merge's list, but for the images).
// With mcoValidation, a source's extensions are checked only when it has
// an Ignition config, as the MCO's ValidateMachineConfig does; ndp checks
// them always.
func Fold(sources []Source, mcoValidation bool) (*Folded, error) {
	sorted := Order(sources)
	m := &Folded{
		Sorted:   sorted,
		Spec:     mcfgv1.MachineConfigSpec{KernelArguments: []string{}, Extensions: []string{}},
		Origin:   map[string]string{},
		Sections: map[string][]string{},
	}
	out := igntypes.Config{Ignition: igntypes.Ignition{Version: igntypes.MaxVersion.String()}}
	kernelTypeFrom := ""
	for i, src := range sorted {
		object := fmt.Sprintf("MachineConfig %q", src.Name)
		cfg := src.Config
		if cfg == nil {
			var err error
			if cfg, err = machineconfig.New(object, src.Spec); err != nil {
				return nil, err
			}
		}
		checked := cfg
		if mcoValidation && len(bytes.TrimSpace(src.Spec.Config.Raw)) == 0 && len(cfg.Spec.Extensions) > 0 {
			unchecked := *cfg
			unchecked.Spec.Extensions = nil
			checked = &unchecked
		}
		if err := machineconfig.Validate(object, checked); err != nil {
			return nil, err
		}
		ign := cfg.Ignition
		switch {
		case ign.Ignition.Version == "":
			// No Ignition config: nothing to merge (the MCO skips it too).
		case i == 0:
			// The first config is the base as it is, not merged into an
			// empty one: Ignition's merge of lists of keys would drop
			// duplicates the MCO keeps. Its files are copied, since the
			// defaults below write to them and a parsed config may be
			// shared.
			out = ign
			out.Storage.Files = slices.Clone(ign.Storage.Files)
		default:
			// The merge builds new lists: a parsed config, which callers
			// may share, is never written to.
			out = mergeIgnition(out, withExplicitCompression(ign))
			clearEmptyCompression(out.Storage.Files)
		}
		for _, f := range ign.Storage.Files {
			m.Origin["file:"+f.Path] = src.Name
		}
		for _, u := range ign.Systemd.Units {
			m.Origin["unit:"+u.Name] = src.Name
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
				m.Sections[field] = append(m.Sections[field], src.Name)
			}
		}
		s := src.Spec
		// The OS fields' sources, for the history ("os:<field>", the
		// planner's change ids): the last MachineConfig that sets each.
		for field, set := range map[string]bool{
			"os:osImageURL":                     s.OSImageURL != "",
			"os:baseOSExtensionsContainerImage": s.BaseOSExtensionsContainerImage != "",
			"os:kernelArguments":                len(s.KernelArguments) > 0,
			"os:extensions":                     len(s.Extensions) > 0,
			"os:kernelType":                     s.KernelType != "" && s.KernelType != machineconfig.KernelTypeDefault,
		} {
			if set {
				m.Origin[field] = src.Name
			}
		}
		if s.FIPS {
			m.Sections["spec.fips"] = append(m.Sections["spec.fips"], src.Name)
		}
		m.Spec.KernelArguments = append(m.Spec.KernelArguments, s.KernelArguments...)
		m.Spec.Extensions = append(m.Spec.Extensions, s.Extensions...)
		m.Spec.FIPS = m.Spec.FIPS || s.FIPS
		if s.KernelType == machineconfig.KernelTypeRealtime || s.KernelType == machineconfig.KernelType64kPages {
			m.Spec.KernelType, kernelTypeFrom = s.KernelType, src.Name
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
	if m.Spec.KernelType == "" {
		m.Spec.KernelType = machineconfig.KernelTypeDefault
	} else if slices.Contains(m.Spec.Extensions, "kernel-devel") {
		return nil, &machineconfig.InputError{Object: fmt.Sprintf("MachineConfig %q", extensionSource(sorted, "kernel-devel")), Field: "spec.extensions",
			Err: fmt.Errorf("installing the kernel-devel extension is not supported with kernelType %s (set by MachineConfig %q)", m.Spec.KernelType, kernelTypeFrom)}
	}
	m.Ignition = out
	return m, nil
}

// withExplicitCompression is ign with every file that has no compression
// saying "none" (an empty compression). Ignition's merge takes a file's
// contents and its compression field by field, so a later plain file over an
// earlier gzip one would keep gzip beside plain contents, and a node would
// try to gunzip plain text; an explicit empty compression overrides the
// earlier one (the MCO does the same, helpers.go ignitionMergeSet/Unset
// FilesDefaultCompression). ign's own lists are not written to.
func withExplicitCompression(ign igntypes.Config) igntypes.Config {
	none := ""
	cloned := false
	for i := range ign.Storage.Files {
		if ign.Storage.Files[i].Contents.Compression != nil {
			continue
		}
		if !cloned {
			ign.Storage.Files, cloned = slices.Clone(ign.Storage.Files), true
		}
		ign.Storage.Files[i].Contents.Compression = &none
	}
	return ign
}

// clearEmptyCompression turns the empty compressions withExplicitCompression
// set (and any other) back into none, as the MCO does after each merge.
func clearEmptyCompression(files []igntypes.File) {
	for i := range files {
		if c := files[i].Contents.Compression; c != nil && *c == "" {
			files[i].Contents.Compression = nil
		}
	}
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
