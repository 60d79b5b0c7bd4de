package mcorules

import (
	"fmt"
	"maps"
	"reflect"
	"slices"

	"github.com/BurntSushi/toml"
	igntypes "github.com/coreos/ignition/v2/config/v3_5/types"
	"github.com/vincent-petithory/dataurl"
	"go.podman.io/image/v5/pkg/sysregistriesv2"
)

// registriesChangeSafe is the MCO's judgement of a registries.conf change
// (drain.go isSafeContainerRegistryConfChanges): the file of each config is
// taken from its data URL as is (a gzip-compressed one is not decompressed,
// and fails to decode as TOML, as in the MCO), decoded as TOML into
// sysregistriesv2's V2RegistriesConf without the library's normalisation,
// and the change is unsafe — the node is drained — when
//   - an unqualified-search-registries entry was removed or reordered;
//   - a registry (by prefix, or location without one) was removed;
//   - a kept registry's prefix, location, blocked or insecure changed,
//     one of its mirrors was removed, a kept mirror's pull-from-mirror
//     changed to anything but digest-only, or a mirror was added that is
//     not digest-only (unless the registry is mirror-by-digest-only);
//   - a new registry has a mirror that is not digest-only, or has no
//     mirror and is not mirror-by-digest-only.
//
// Anything else — comments, order of tables, new search registries at the
// end, credential helpers, aliases — is safe. why says which rule decided.
func registriesChangeSafe(from, to *igntypes.Config) (safe bool, why string, err error) {
	oldData, err := registriesData(from)
	if err != nil {
		return false, "", fmt.Errorf("old %s: failed decoding its data URL: %w", RegistriesConfPath, err)
	}
	newData, err := registriesData(to)
	if err != nil {
		return false, "", fmt.Errorf("new %s: failed decoding its data URL: %w", RegistriesConfPath, err)
	}
	if why := toml11Syntax(string(oldData)); why != "" {
		return false, "", fmt.Errorf("old %s: failed decoding TOML: %s", RegistriesConfPath, why)
	}
	if why := toml11Syntax(string(newData)); why != "" {
		return false, "", fmt.Errorf("new %s: failed decoding TOML: %s", RegistriesConfPath, why)
	}
	var o, n sysregistriesv2.V2RegistriesConf
	if _, err := toml.Decode(string(oldData), &o); err != nil {
		return false, "", fmt.Errorf("old %s: failed decoding TOML: %w", RegistriesConfPath, err)
	}
	if _, err := toml.Decode(string(newData), &n); err != nil {
		return false, "", fmt.Errorf("new %s: failed decoding TOML: %w", RegistriesConfPath, err)
	}

	if len(o.UnqualifiedSearchRegistries) > len(n.UnqualifiedSearchRegistries) {
		return false, "unsafe: an unqualified-search-registries entry was removed", nil
	}
	for i, r := range o.UnqualifiedSearchRegistries {
		if n.UnqualifiedSearchRegistries[i] != r {
			return false, fmt.Sprintf("unsafe: unqualified-search-registries entry %d changed from %q to %q", i, r, n.UnqualifiedSearchRegistries[i]), nil
		}
	}
	oldRegs, newRegs := byScope(o.Registries), byScope(n.Registries)
	for _, scope := range slices.Sorted(maps.Keys(oldRegs)) {
		if _, ok := newRegs[scope]; !ok {
			return false, fmt.Sprintf("unsafe: registry %s was removed", scope), nil
		}
	}
	for _, scope := range slices.Sorted(maps.Keys(newRegs)) {
		nr := newRegs[scope]
		or, ok := oldRegs[scope]
		if !ok {
			if !allDigestOnly(nr) {
				return false, fmt.Sprintf("unsafe: registry %s was added with a mirror that is not digest-only", scope), nil
			}
			continue
		}
		if reflect.DeepEqual(or, nr) {
			continue
		}
		switch {
		case or.Prefix != nr.Prefix:
			return false, fmt.Sprintf("unsafe: registry %s: prefix changed", scope), nil
		case or.Location != nr.Location:
			return false, fmt.Sprintf("unsafe: registry %s: location changed", scope), nil
		case or.Blocked != nr.Blocked:
			return false, fmt.Sprintf("unsafe: registry %s: blocked changed", scope), nil
		case or.Insecure != nr.Insecure:
			return false, fmt.Sprintf("unsafe: registry %s: insecure changed", scope), nil
		}
		for _, m := range or.Mirrors {
			if _, found := findMirror(m.Location, nr.Mirrors); !found {
				return false, fmt.Sprintf("unsafe: registry %s: mirror %s was removed", scope, m.Location), nil
			}
		}
		for _, m := range nr.Mirrors {
			om, found := findMirror(m.Location, or.Mirrors)
			if found && m.PullFromMirror != om.PullFromMirror && m.PullFromMirror != sysregistriesv2.MirrorByDigestOnly {
				return false, fmt.Sprintf("unsafe: registry %s: mirror %s pull-from-mirror changed from %q to %q", scope, m.Location, om.PullFromMirror, m.PullFromMirror), nil
			}
			if !found && m.PullFromMirror != sysregistriesv2.MirrorByDigestOnly && !nr.MirrorByDigestOnly {
				return false, fmt.Sprintf("unsafe: registry %s: mirror %s was added without pull-from-mirror = digest-only", scope, m.Location), nil
			}
		}
	}
	return true, "safe: no registry, mirror or search entry removed or loosened; added mirrors are digest-only", nil
}

// registriesData is the first registries.conf entry with contents, as
// bytes of its data URL; none is empty.
func registriesData(cfg *igntypes.Config) ([]byte, error) {
	for _, f := range cfg.Storage.Files {
		if f.Path == RegistriesConfPath && f.Contents.Source != nil {
			du, err := dataurl.DecodeString(*f.Contents.Source)
			if err != nil {
				return nil, err
			}
			return du.Data, nil
		}
	}
	return nil, nil
}

// byScope keys registries by prefix, or location without one; a later
// table of the same scope replaces an earlier one.
func byScope(regs []sysregistriesv2.Registry) map[string]sysregistriesv2.Registry {
	out := make(map[string]sysregistriesv2.Registry, len(regs))
	for _, r := range regs {
		scope := r.Location
		if r.Prefix != "" {
			scope = r.Prefix
		}
		out[scope] = r
	}
	return out
}

func findMirror(loc string, ms []sysregistriesv2.Endpoint) (sysregistriesv2.Endpoint, bool) {
	for _, m := range ms {
		if m.Location == loc {
			return m, true
		}
	}
	return sysregistriesv2.Endpoint{}, false
}

func allDigestOnly(r sysregistriesv2.Registry) bool {
	if len(r.Mirrors) == 0 {
		return r.MirrorByDigestOnly
	}
	for _, m := range r.Mirrors {
		if m.PullFromMirror != sysregistriesv2.MirrorByDigestOnly {
			return false
		}
	}
	return true
}
