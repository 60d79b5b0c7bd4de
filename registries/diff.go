package registries

import (
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"sort"
	"time"

	"go.podman.io/image/v5/pkg/sysregistriesv2"
)

// MirrorState is a mirror as CRI-O uses it.
type MirrorState struct {
	Location string `json:"location"`
	// PullFromMirror is the effective value (see EffectivePullFromMirror).
	PullFromMirror string `json:"pullFromMirror"`
	Insecure       bool   `json:"insecure"`
	// NamespaceProxy is the mirror's namespace-proxy ("ns" query parameter).
	NamespaceProxy string `json:"namespaceProxy,omitempty"`
}

// RegistryState is a registry as CRI-O uses it. Mirrors keep their file
// order, which is the order CRI-O tries them in.
type RegistryState struct {
	Scope    string `json:"scope"`
	Prefix   string `json:"prefix"`
	Location string `json:"location"`
	Blocked  bool   `json:"blocked"`
	Insecure bool   `json:"insecure"`
	// NamespaceProxy is the registry's own namespace-proxy.
	NamespaceProxy string        `json:"namespaceProxy,omitempty"`
	Mirrors        []MirrorState `json:"mirrors,omitempty"`
}

// RegistryChange is a registry present in both configs whose own endpoint or
// flags differ. Fields is a sorted subset of blocked, insecure, location,
// namespaceProxy, prefix; Old and New give the values so policies can tell direction (e.g.
// blocked false→true). Mirror changes are reported separately.
type RegistryChange struct {
	Scope  string        `json:"scope"`
	Fields []string      `json:"fields"`
	Old    RegistryState `json:"old"`
	New    RegistryState `json:"new"`
}

// MirrorChange is a mirror added, removed or changed within a registry that
// exists in both configs (mirrors of added/removed registries are in their
// RegistryState). Location, PullFromMirror (effective) and Insecure are the
// new values, or the old ones for a removed mirror. For a changed mirror,
// Fields is a sorted subset of insecure, namespaceProxy, pullFromMirror and
// Old holds the previous state, so a policy can tell the direction of a
// change (e.g. pullFromMirror "all" → "digest-only", which only narrows
// what the mirror is used for).
type MirrorChange struct {
	Scope          string       `json:"scope"`
	Location       string       `json:"location"`
	PullFromMirror string       `json:"pullFromMirror"`
	Insecure       bool         `json:"insecure"`
	NamespaceProxy string       `json:"namespaceProxy,omitempty"`
	Fields         []string     `json:"fields,omitempty"`
	Old            *MirrorState `json:"old,omitempty"`
}

// ConfigDiff is the semantic difference between two registries.conf files;
// it is the Rego input from which the planner decides whether a reload
// suffices. All lists are sorted by scope, then location (or alphabetically).
// (It is not named Diff because Go forbids a type and a function of the same
// name in one package, and the function Diff is the entry point.)
type ConfigDiff struct {
	// SearchChanged reports any change of unqualified-search-registries,
	// including order. SearchAppendedOnly is true when the old list is a
	// strict prefix of the new one (entries only appended at the end).
	SearchChanged      bool     `json:"searchChanged"`
	SearchAppendedOnly bool     `json:"searchAppendedOnly"`
	SearchAdded        []string `json:"searchAdded,omitempty"`
	SearchRemoved      []string `json:"searchRemoved,omitempty"`
	// SearchReordered is true when entries present in both lists changed
	// relative order.
	SearchReordered bool `json:"searchReordered"`

	RegistriesAdded   []RegistryState  `json:"registriesAdded,omitempty"`
	RegistriesRemoved []RegistryState  `json:"registriesRemoved,omitempty"`
	RegistriesChanged []RegistryChange `json:"registriesChanged,omitempty"`

	MirrorsAdded   []MirrorChange `json:"mirrorsAdded,omitempty"`
	MirrorsRemoved []MirrorChange `json:"mirrorsRemoved,omitempty"`
	MirrorsChanged []MirrorChange `json:"mirrorsChanged,omitempty"`
	// MirrorsReordered lists scopes whose mirrors present in both configs
	// changed relative order (mirrors are tried in order).
	MirrorsReordered []string `json:"mirrorsReordered,omitempty"`

	// OtherChanged names other settings that changed: short-name-mode,
	// credential-helpers, aliases, additional-layer-store-auth-helper and
	// any key containers/image does not model (see Config.Other).
	OtherChanged []string `json:"otherChanged,omitempty"`
}

// Empty reports whether the two configs are semantically identical.
func (d ConfigDiff) Empty() bool {
	return !d.SearchChanged && !d.SearchAppendedOnly && !d.SearchReordered &&
		len(d.SearchAdded) == 0 && len(d.SearchRemoved) == 0 &&
		len(d.RegistriesAdded) == 0 && len(d.RegistriesRemoved) == 0 && len(d.RegistriesChanged) == 0 &&
		len(d.MirrorsAdded) == 0 && len(d.MirrorsRemoved) == 0 && len(d.MirrorsChanged) == 0 &&
		len(d.MirrorsReordered) == 0 && len(d.OtherChanged) == 0
}

// State returns the registry as CRI-O uses it, with effective
// pull-from-mirror; its prefix is its scope (as containers/image sets it).
func State(r *Registry) RegistryState {
	s := RegistryState{
		Scope:          Scope(r),
		Prefix:         Scope(r),
		Location:       r.Location,
		Blocked:        r.Blocked,
		Insecure:       r.Insecure,
		NamespaceProxy: r.NamespaceProxy,
	}
	for _, m := range r.Mirrors {
		s.Mirrors = append(s.Mirrors, MirrorState{Location: m.Location, PullFromMirror: EffectivePullFromMirror(r, m), Insecure: m.Insecure, NamespaceProxy: m.NamespaceProxy})
	}
	return s
}

// Diff compares two parsed configs; nil stands for an absent file, which
// containers/image treats as an empty config.
func Diff(old, new *Config) ConfigDiff {
	if old == nil {
		old = &Config{}
	}
	if new == nil {
		new = &Config{}
	}
	var d ConfigDiff
	d.diffSearch(old.UnqualifiedSearchRegistries, new.UnqualifiedSearchRegistries)

	oldRegs, newRegs := registryByScope(old), registryByScope(new)
	for _, scope := range sortedKeys(oldRegs, newRegs) {
		o, n := oldRegs[scope], newRegs[scope]
		switch {
		case o == nil:
			d.RegistriesAdded = append(d.RegistriesAdded, State(n))
		case n == nil:
			d.RegistriesRemoved = append(d.RegistriesRemoved, State(o))
		default:
			d.diffRegistry(scope, State(o), State(n))
		}
	}

	if old.ShortNameMode != new.ShortNameMode {
		d.OtherChanged = append(d.OtherChanged, "short-name-mode")
	}
	if !slices.Equal(credentialHelpers(old), credentialHelpers(new)) {
		d.OtherChanged = append(d.OtherChanged, "credential-helpers")
	}
	if !maps.Equal(aliases(old), aliases(new)) {
		d.OtherChanged = append(d.OtherChanged, "aliases")
	}
	if old.AdditionalLayerStoreAuthHelper != new.AdditionalLayerStoreAuthHelper {
		d.OtherChanged = append(d.OtherChanged, "additional-layer-store-auth-helper")
	}
	for _, k := range sortedKeys(old.Other, new.Other) {
		ov, ook := old.Other[k]
		nv, nok := new.Other[k]
		if ook != nok || !valueEqual(ov, nv) {
			d.OtherChanged = append(d.OtherChanged, k)
		}
	}
	sort.Strings(d.OtherChanged)
	return d
}

// credentialHelpers is the list containers/image uses: an empty list is
// ["containers-auth.json"].
func credentialHelpers(c *Config) []string {
	if len(c.CredentialHelpers) == 0 {
		return []string{sysregistriesv2.AuthenticationFileHelper}
	}
	return c.CredentialHelpers
}

// aliases are the short-name aliases in effect: an empty value only resets
// an alias (of an earlier file), which one file alone does not have.
func aliases(c *Config) map[string]string {
	out := make(map[string]string, len(c.Aliases))
	for k, v := range c.Aliases {
		if v != "" {
			out[k] = v
		}
	}
	return out
}

func (d *ConfigDiff) diffSearch(old, new []string) {
	if slices.Equal(old, new) {
		return
	}
	d.SearchChanged = true
	d.SearchAppendedOnly = len(new) > len(old) && slices.Equal(old, new[:len(old)])
	oldSet, newSet := stringSet(old), stringSet(new)
	for s := range newSet {
		if !oldSet[s] {
			d.SearchAdded = append(d.SearchAdded, s)
		}
	}
	for s := range oldSet {
		if !newSet[s] {
			d.SearchRemoved = append(d.SearchRemoved, s)
		}
	}
	sort.Strings(d.SearchAdded)
	sort.Strings(d.SearchRemoved)
	d.SearchReordered = reordered(old, new)
}

func (d *ConfigDiff) diffRegistry(scope string, o, n RegistryState) {
	var fields []string
	if o.Blocked != n.Blocked {
		fields = append(fields, "blocked")
	}
	if o.Insecure != n.Insecure {
		fields = append(fields, "insecure")
	}
	if o.Location != n.Location {
		fields = append(fields, "location")
	}
	if o.NamespaceProxy != n.NamespaceProxy {
		fields = append(fields, "namespaceProxy")
	}
	if o.Prefix != n.Prefix {
		fields = append(fields, "prefix")
	}
	if len(fields) > 0 {
		d.RegistriesChanged = append(d.RegistriesChanged, RegistryChange{Scope: scope, Fields: fields, Old: o, New: n})
	}

	oldKeys, newKeys := mirrorIDs(o.Mirrors), mirrorIDs(n.Mirrors)
	oldM, newM := mirrorByKey(o.Mirrors, oldKeys), mirrorByKey(n.Mirrors, newKeys)
	for _, key := range sortedKeys(oldM, newM) {
		om, ook := oldM[key]
		nm, nok := newM[key]
		switch {
		case !ook:
			d.MirrorsAdded = append(d.MirrorsAdded, MirrorChange{Scope: scope, Location: nm.Location, PullFromMirror: nm.PullFromMirror, Insecure: nm.Insecure, NamespaceProxy: nm.NamespaceProxy})
		case !nok:
			d.MirrorsRemoved = append(d.MirrorsRemoved, MirrorChange{Scope: scope, Location: om.Location, PullFromMirror: om.PullFromMirror, Insecure: om.Insecure, NamespaceProxy: om.NamespaceProxy})
		default:
			var mf []string
			if om.Insecure != nm.Insecure {
				mf = append(mf, "insecure")
			}
			if om.NamespaceProxy != nm.NamespaceProxy {
				mf = append(mf, "namespaceProxy")
			}
			if om.PullFromMirror != nm.PullFromMirror {
				mf = append(mf, "pullFromMirror")
			}
			if len(mf) > 0 {
				prev := om
				d.MirrorsChanged = append(d.MirrorsChanged, MirrorChange{Scope: scope, Location: nm.Location, PullFromMirror: nm.PullFromMirror, Insecure: nm.Insecure, NamespaceProxy: nm.NamespaceProxy, Fields: mf, Old: &prev})
			}
		}
	}
	if reordered(oldKeys, newKeys) {
		d.MirrorsReordered = append(d.MirrorsReordered, scope)
	}
}

// reordered reports whether the elements common to a and b (first
// occurrences) appear in a different relative order.
func reordered(a, b []string) bool {
	inA, inB := stringSet(a), stringSet(b)
	return !slices.Equal(commonInOrder(a, inB), commonInOrder(b, inA))
}

func commonInOrder(list []string, other map[string]bool) []string {
	seen := make(map[string]bool, len(list))
	var out []string
	for _, s := range list {
		if other[s] && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func stringSet(list []string) map[string]bool {
	m := make(map[string]bool, len(list))
	for _, s := range list {
		m[s] = true
	}
	return m
}

// mirrorIDs identifies a registry's mirrors: by location, and for a
// location listed more than once (containers/image accepts that and tries
// each entry in turn) by location and occurrence.
func mirrorIDs(ms []MirrorState) []string {
	seen := make(map[string]int, len(ms))
	out := make([]string, len(ms))
	for i, m := range ms {
		seen[m.Location]++
		out[i] = m.Location
		if n := seen[m.Location]; n > 1 {
			out[i] = fmt.Sprintf("%s\x00%d", m.Location, n)
		}
	}
	return out
}

func mirrorByKey(ms []MirrorState, keys []string) map[string]MirrorState {
	m := make(map[string]MirrorState, len(ms))
	for i, x := range ms {
		m[keys[i]] = x
	}
	return m
}

// valueEqual compares raw TOML values; unlike reflect.DeepEqual it treats
// equal timestamps (whose *time.Location differs per parse) and NaNs as equal,
// so an untouched unmodelled key is never reported as changed.
func valueEqual(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !valueEqual(xv, yv) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		return ok && slices.EqualFunc(x, y, valueEqual)
	case []map[string]any:
		y, ok := b.([]map[string]any)
		return ok && slices.EqualFunc(x, y, func(p, q map[string]any) bool { return valueEqual(p, q) })
	case time.Time:
		y, ok := b.(time.Time)
		return ok && x.Format(time.RFC3339Nano) == y.Format(time.RFC3339Nano) && x.Location().String() == y.Location().String()
	case float64:
		y, ok := b.(float64)
		return ok && (x == y || math.IsNaN(x) && math.IsNaN(y))
	}
	return reflect.DeepEqual(a, b)
}
