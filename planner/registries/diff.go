package registries

import (
	"maps"
	"math"
	"reflect"
	"slices"
	"sort"
	"time"
)

// MirrorState is a mirror as CRI-O uses it.
type MirrorState struct {
	Location string `json:"location"`
	// PullFromMirror is the effective value (see Registry.EffectivePullFromMirror).
	PullFromMirror string `json:"pullFromMirror"`
	Insecure       bool   `json:"insecure"`
}

// RegistryState is a registry as CRI-O uses it. Mirrors keep their file
// order, which is the order CRI-O tries them in.
type RegistryState struct {
	Scope    string        `json:"scope"`
	Prefix   string        `json:"prefix"`
	Location string        `json:"location"`
	Blocked  bool          `json:"blocked"`
	Insecure bool          `json:"insecure"`
	Mirrors  []MirrorState `json:"mirrors,omitempty"`
}

// RegistryChange is a registry present in both configs whose own endpoint or
// flags differ. Fields is a sorted subset of prefix, location, blocked,
// insecure; Old and New give the values so policies can tell direction (e.g.
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
// Fields is a sorted subset of pullFromMirror, insecure and Old holds the
// previous state.
type MirrorChange struct {
	Scope          string       `json:"scope"`
	Location       string       `json:"location"`
	PullFromMirror string       `json:"pullFromMirror"`
	Insecure       bool         `json:"insecure"`
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
	// credential-helpers, aliases and any unmodelled key (see Config.Other).
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

// State returns the registry as CRI-O uses it, with effective pull-from-mirror.
func (r *Registry) State() RegistryState {
	s := RegistryState{
		Scope:    r.Scope(),
		Prefix:   r.Prefix,
		Location: r.Location,
		Blocked:  r.Blocked,
		Insecure: r.Insecure,
	}
	for _, m := range r.Mirrors {
		s.Mirrors = append(s.Mirrors, MirrorState{Location: m.Location, PullFromMirror: r.EffectivePullFromMirror(m), Insecure: m.Insecure})
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
			d.RegistriesAdded = append(d.RegistriesAdded, n.State())
		case n == nil:
			d.RegistriesRemoved = append(d.RegistriesRemoved, o.State())
		default:
			d.diffRegistry(scope, o.State(), n.State())
		}
	}

	if old.ShortNameMode != new.ShortNameMode {
		d.OtherChanged = append(d.OtherChanged, "short-name-mode")
	}
	if !slices.Equal(old.CredentialHelpers, new.CredentialHelpers) {
		d.OtherChanged = append(d.OtherChanged, "credential-helpers")
	}
	if !maps.Equal(old.Aliases, new.Aliases) {
		d.OtherChanged = append(d.OtherChanged, "aliases")
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
	if o.Prefix != n.Prefix {
		fields = append(fields, "prefix")
	}
	if len(fields) > 0 {
		d.RegistriesChanged = append(d.RegistriesChanged, RegistryChange{Scope: scope, Fields: fields, Old: o, New: n})
	}

	oldM, newM := mirrorByLocation(o.Mirrors), mirrorByLocation(n.Mirrors)
	for _, loc := range sortedKeys(oldM, newM) {
		om, ook := oldM[loc]
		nm, nok := newM[loc]
		switch {
		case !ook:
			d.MirrorsAdded = append(d.MirrorsAdded, MirrorChange{Scope: scope, Location: loc, PullFromMirror: nm.PullFromMirror, Insecure: nm.Insecure})
		case !nok:
			d.MirrorsRemoved = append(d.MirrorsRemoved, MirrorChange{Scope: scope, Location: loc, PullFromMirror: om.PullFromMirror, Insecure: om.Insecure})
		default:
			var mf []string
			if om.Insecure != nm.Insecure {
				mf = append(mf, "insecure")
			}
			if om.PullFromMirror != nm.PullFromMirror {
				mf = append(mf, "pullFromMirror")
			}
			if len(mf) > 0 {
				prev := om
				d.MirrorsChanged = append(d.MirrorsChanged, MirrorChange{Scope: scope, Location: loc, PullFromMirror: nm.PullFromMirror, Insecure: nm.Insecure, Fields: mf, Old: &prev})
			}
		}
	}
	if reordered(locations(o.Mirrors), locations(n.Mirrors)) {
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

func mirrorByLocation(ms []MirrorState) map[string]MirrorState {
	m := make(map[string]MirrorState, len(ms))
	for _, x := range ms {
		m[x.Location] = x
	}
	return m
}

func locations(ms []MirrorState) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Location
	}
	return out
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
