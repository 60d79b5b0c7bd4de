// Package registries parses /etc/containers/registries.conf (v2 schema, see
// containers-registries.conf(5)) and computes a semantic diff between two
// versions of it.
//
// The planner feeds the result of Diff to Rego policies that decide whether a change can
// be applied with a CRI-O reload instead of a drain, so the diff ignores
// everything that has no effect on image pulls (comments, key order, order of
// [[registry]] tables) and reports everything else, including keys this
// package does not model.
//
// Parse mirrors the validation of containers/image's sysregistriesv2 so that a
// file CRI-O would refuse to load is never judged as a harmless change.
package registries

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// Values of pull-from-mirror; the empty string means "not set".
const (
	PullFromMirrorAll        = "all"
	PullFromMirrorDigestOnly = "digest-only"
	PullFromMirrorTagOnly    = "tag-only"
)

// ErrInvalid is wrapped by every semantic validation error returned by Parse,
// so callers can tell an invalid config from a TOML syntax error.
var ErrInvalid = errors.New("invalid registries.conf")

// SyntaxError is a TOML syntax (or type) error with the 1-based line it was
// found on, so the planner can point the user at the offending line.
type SyntaxError struct {
	Line int
	Msg  string
	err  error
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

// Unwrap exposes the underlying BurntSushi/toml error.
func (e *SyntaxError) Unwrap() error { return e.err }

// Config is the v2 schema of registries.conf.
type Config struct {
	UnqualifiedSearchRegistries []string          `toml:"unqualified-search-registries" json:"unqualifiedSearchRegistries,omitempty"`
	Registries                  []Registry        `toml:"registry" json:"registries,omitempty"`
	ShortNameMode               string            `toml:"short-name-mode" json:"shortNameMode,omitempty"`
	CredentialHelpers           []string          `toml:"credential-helpers" json:"credentialHelpers,omitempty"`
	Aliases                     map[string]string `toml:"aliases" json:"aliases,omitempty"`

	// Other holds the raw values of keys this package does not model, so that
	// a change in them is reported rather than silently ignored. Top-level
	// keys are stored under their name (e.g. "additional-layer-store-auth-helper",
	// or "registries" for a v1 table); unknown keys inside a [[registry]] or
	// [[registry.mirror]] table under a path naming the registry scope and
	// mirror location, e.g. `registry[quay.io].foo` or
	// `registry[quay.io].mirror[mirror.example.com].foo`, so that the path
	// does not depend on table order.
	Other map[string]any `toml:"-" json:"other,omitempty"`
}

// Endpoint is a registry's own location or one of its mirrors.
type Endpoint struct {
	Location string `toml:"location" json:"location,omitempty"`
	Insecure bool   `toml:"insecure" json:"insecure"`
	// PullFromMirror is only valid on mirrors; Parse rejects it on a registry.
	PullFromMirror string `toml:"pull-from-mirror" json:"pullFromMirror,omitempty"`
}

// Registry is one [[registry]] table. The Endpoint is embedded (inline in
// TOML), as in containers/image, so location/insecure sit at registry level.
type Registry struct {
	// Prefix is normalised by Parse: it is the registry's scope (the prefix
	// as written, or the location when the prefix is empty).
	Prefix string `toml:"prefix" json:"prefix"`
	Endpoint
	Blocked            bool       `toml:"blocked" json:"blocked"`
	MirrorByDigestOnly bool       `toml:"mirror-by-digest-only" json:"mirrorByDigestOnly"`
	Mirrors            []Endpoint `toml:"mirror" json:"mirrors,omitempty"`
}

// Scope is the key identifying a registry: its prefix, or its location when
// no prefix is set. containers/image keeps a single registry per scope.
func (r *Registry) Scope() string {
	if r.Prefix != "" {
		return r.Prefix
	}
	return r.Location
}

// EffectivePullFromMirror is how a mirror is really used: its own setting,
// else "digest-only" when the registry has mirror-by-digest-only, else "all".
// Diffing effective values makes equivalent spellings compare equal.
func (r *Registry) EffectivePullFromMirror(m Endpoint) string {
	switch {
	case m.PullFromMirror != "":
		return m.PullFromMirror
	case r.MirrorByDigestOnly:
		return PullFromMirrorDigestOnly
	default:
		return PullFromMirrorAll
	}
}

// Modelled keys, compared case-insensitively because BurntSushi/toml (and so
// containers/image) falls back to case-insensitive field matching.
var (
	topLevelKeys = keySet("unqualified-search-registries", "registry", "short-name-mode", "credential-helpers", "aliases")
	registryKeys = keySet("prefix", "location", "insecure", "pull-from-mirror", "blocked", "mirror-by-digest-only", "mirror")
	mirrorKeys   = keySet("location", "insecure", "pull-from-mirror")
)

func keySet(keys ...string) map[string]bool {
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		m[k] = true
	}
	return m
}

// Parse decodes, validates and normalises a registries.conf. Empty data (or
// only comments and whitespace) is a valid empty config. Registries are
// returned sorted by scope because their order in the file has no meaning.
func Parse(data []byte) (*Config, error) {
	cfg := &Config{}
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(cfg)
	if err != nil {
		return nil, syntaxError(err, data)
	}
	var raw map[string]any
	if len(md.Undecoded()) > 0 || caseVariantKeys(md) {
		// Second pass only when something was not modelled, or a modelled
		// key is spelled in another case (rare), to keep the values.
		if _, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&raw); err != nil {
			return nil, syntaxError(err, data)
		}
		if err := checkV1Mix(raw, cfg); err != nil {
			return nil, err
		}
		if err := checkFoldedKeys(raw); err != nil {
			return nil, err
		}
	}
	if err := cfg.normalise(); err != nil {
		return nil, err
	}
	if raw != nil {
		cfg.collectOther(raw)
	}
	sort.Slice(cfg.Registries, func(i, j int) bool { return cfg.Registries[i].Prefix < cfg.Registries[j].Prefix })
	return cfg, nil
}

// caseVariantKeys reports whether a key of the file is a modelled key
// spelled in another case ("Location"), which BurntSushi/toml also decodes
// into the field.
func caseVariantKeys(md toml.MetaData) bool {
	for _, k := range md.Keys() {
		for _, seg := range k {
			if l := strings.ToLower(seg); l != seg && (topLevelKeys[l] || registryKeys[l] || mirrorKeys[l]) {
				return true
			}
		}
	}
	return false
}

// checkFoldedKeys rejects a table where two keys differing only in case
// set the same setting ("location" and "Location"): BurntSushi/toml (and
// so containers/image) keeps whichever it meets last in Go's random map
// order, so the file has no single meaning.
func checkFoldedKeys(raw map[string]any) error {
	check := func(where string, t map[string]any, modelled map[string]bool) error {
		first := map[string]string{}
		for _, k := range slices.Sorted(maps.Keys(t)) {
			l := strings.ToLower(k)
			if !modelled[l] {
				continue
			}
			if prev, dup := first[l]; dup {
				return invalid("%s: keys %q and %q both set %s", where, prev, k, l)
			}
			first[l] = k
		}
		return nil
	}
	if err := check("top level", raw, topLevelKeys); err != nil {
		return err
	}
	for i, rt := range tables(lookupFold(raw, "registry")) {
		where := fmt.Sprintf("[[registry]] #%d", i+1)
		if err := check(where, rt, registryKeys); err != nil {
			return err
		}
		for j, mt := range tables(lookupFold(rt, "mirror")) {
			if err := check(fmt.Sprintf("%s: mirror #%d", where, j+1), mt, mirrorKeys); err != nil {
				return err
			}
		}
	}
	return nil
}

// lineRe matches the plain errors BurntSushi returns for type mismatches.
var lineRe = regexp.MustCompile(`^toml: line (\d+)(?: \(last key (".*?")\))?: `)

// syntaxError turns BurntSushi errors into "line N: ..." errors.
func syntaxError(err error, data []byte) error {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		line := pe.Position.Line
		// BurntSushi counts an offending end-of-line as the next line;
		// the byte offset names the line the user has to fix. It is -1
		// for some errors on the very first byte.
		if pe.Position.Len > 0 && pe.Position.Start >= 0 && pe.Position.Start < len(data) {
			line = 1 + bytes.Count(data[:pe.Position.Start], []byte("\n"))
		}
		return &SyntaxError{Line: line, Msg: withKey(pe.Message, pe.LastKey), err: err}
	}
	if m := lineRe.FindStringSubmatchIndex(err.Error()); m != nil {
		s := err.Error()
		line, _ := strconv.Atoi(s[m[2]:m[3]])
		key := ""
		if m[4] >= 0 {
			key = s[m[4]:m[5]]
			if k, uerr := strconv.Unquote(key); uerr == nil {
				key = k
			}
		}
		return &SyntaxError{Line: line, Msg: withKey(s[m[1]:], key), err: err}
	}
	return fmt.Errorf("registries.conf: %w", err)
}

func withKey(msg, key string) string {
	if key == "" {
		return msg
	}
	return fmt.Sprintf("%s (key %q)", msg, key)
}

// checkV1Mix rejects a v1 [registries.*] table next to v2 settings, as
// containers/image does ("mixing sysregistry v1/v2 is not supported"). A
// pure v1 file is kept as the unmodelled key "registries".
func checkV1Mix(raw map[string]any, cfg *Config) error {
	v1, _ := raw["registries"].(map[string]any)
	nonEmptyV1 := false
	for _, k := range []string{"search", "insecure", "block"} {
		if t, ok := v1[k].(map[string]any); ok {
			if l, ok := t["registries"].([]any); ok && len(l) > 0 {
				nonEmptyV1 = true
			}
		}
	}
	if !nonEmptyV1 {
		return nil
	}
	_, alsHelper := raw["additional-layer-store-auth-helper"]
	if len(cfg.Registries) > 0 || len(cfg.UnqualifiedSearchRegistries) > 0 || len(cfg.CredentialHelpers) > 0 ||
		cfg.ShortNameMode != "" || len(cfg.Aliases) > 0 || alsHelper {
		return fmt.Errorf("%w: mixing the v1 [registries.*] tables with v2 settings is not supported", ErrInvalid)
	}
	return nil
}

// cleanLocation applies containers/image's parseLocation: strip trailing
// slashes, reject URI schemes.
func cleanLocation(s string) (string, error) {
	t := strings.TrimRight(s, "/")
	if strings.HasPrefix(t, "http://") || strings.HasPrefix(t, "https://") {
		return "", fmt.Errorf("invalid location %q: URI schemes are not supported", s)
	}
	return t, nil
}

// anchoredDomainRe is docker/reference's DomainRegexp: host[:port], which
// containers/image requires for unqualified-search-registries entries.
var anchoredDomainRe = regexp.MustCompile(`^(?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?$`)

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

// normalise validates the decoded config the way containers/image does and
// rewrites it into canonical form (scope in Prefix, trailing slashes removed).
func (c *Config) normalise() error {
	switch c.ShortNameMode {
	case "", "disabled", "enforcing", "permissive":
	default:
		return invalid("short-name-mode %q: must be one of disabled, enforcing, permissive", c.ShortNameMode)
	}
	for i, s := range c.UnqualifiedSearchRegistries {
		t, err := cleanLocation(s)
		if err != nil {
			return invalid("unqualified-search-registries: %v", err)
		}
		if !anchoredDomainRe.MatchString(t) {
			return invalid("unqualified-search-registries entry %q is not a host[:port]", s)
		}
		c.UnqualifiedSearchRegistries[i] = t
	}

	scopes := make(map[string]int, len(c.Registries))
	for i := range c.Registries {
		r := &c.Registries[i]
		name := fmt.Sprintf("[[registry]] #%d", i+1)
		var err error
		if r.Location, err = cleanLocation(r.Location); err != nil {
			return invalid("%s: %v", name, err)
		}
		if r.Prefix, err = cleanLocation(r.Prefix); err != nil {
			return invalid("%s: prefix: %v", name, err)
		}
		if r.Prefix == "" {
			if r.Location == "" {
				return invalid("%s: neither prefix nor location is set", name)
			}
			r.Prefix = r.Location
		}
		name = fmt.Sprintf("registry %q", r.Prefix)
		// The man page says location defaults to prefix, but containers/image
		// rejects an empty location unless the prefix is a wildcard
		// (*.example.com, matched without rewriting), and CRI-O would refuse
		// such a file; follow the code.
		if r.Location == "" && !strings.HasPrefix(r.Prefix, "*.") {
			return invalid("%s: location is unset and prefix is not of the form *.example.com", name)
		}
		if j, dup := scopes[r.Prefix]; dup {
			return invalid("%s is defined twice ([[registry]] #%d and #%d)", name, j+1, i+1)
		}
		scopes[r.Prefix] = i
		if r.PullFromMirror != "" {
			return invalid("%s: pull-from-mirror is only valid on [[registry.mirror]], not on the registry itself", name)
		}
		seen := make(map[string]bool, len(r.Mirrors))
		for j := range r.Mirrors {
			m := &r.Mirrors[j]
			if m.Location, err = cleanLocation(m.Location); err != nil {
				return invalid("%s: mirror #%d: %v", name, j+1, err)
			}
			if m.Location == "" {
				return invalid("%s: mirror #%d: location is unset", name, j+1)
			}
			if seen[m.Location] {
				return invalid("%s: mirror %q is listed twice", name, m.Location)
			}
			seen[m.Location] = true
			switch m.PullFromMirror {
			case "", PullFromMirrorAll, PullFromMirrorDigestOnly, PullFromMirrorTagOnly:
			default:
				return invalid("%s: mirror %q: unsupported pull-from-mirror %q (want all, digest-only or tag-only)", name, m.Location, m.PullFromMirror)
			}
			if r.MirrorByDigestOnly && m.PullFromMirror != "" {
				return invalid("%s: mirror-by-digest-only cannot be combined with pull-from-mirror on mirror %q", name, m.Location)
			}
		}
	}

	// containers/image rejects one location declared with different
	// insecure/blocked settings under several prefixes.
	byLoc := make(map[string]*Registry, len(c.Registries))
	for i := range c.Registries {
		r := &c.Registries[i]
		key := r.Location
		if key == "" {
			key = r.Prefix
		}
		o, ok := byLoc[key]
		if !ok {
			byLoc[key] = r
			continue
		}
		if o.Insecure != r.Insecure {
			return invalid("location %q is used by registries %q and %q with conflicting insecure settings", key, o.Prefix, r.Prefix)
		}
		if o.Blocked != r.Blocked {
			return invalid("location %q is used by registries %q and %q with conflicting blocked settings", key, o.Prefix, r.Prefix)
		}
	}
	return nil
}

// collectOther stores the values of unmodelled keys in c.Other. It runs after
// normalise so nested keys can be named by scope and mirror location.
func (c *Config) collectOther(raw map[string]any) {
	add := func(k string, v any) {
		if c.Other == nil {
			c.Other = map[string]any{}
		}
		c.Other[k] = v
	}
	for k, v := range raw {
		if !topLevelKeys[strings.ToLower(k)] {
			add(k, v)
		}
	}
	// Registries are still in file order here, matching the raw tables.
	for i, rt := range tables(lookupFold(raw, "registry")) {
		if i >= len(c.Registries) {
			break
		}
		r := &c.Registries[i]
		for k, v := range rt {
			if !registryKeys[strings.ToLower(k)] {
				add(fmt.Sprintf("registry[%s].%s", r.Prefix, k), v)
			}
		}
		for j, mt := range tables(lookupFold(rt, "mirror")) {
			if j >= len(r.Mirrors) {
				break
			}
			for k, v := range mt {
				if !mirrorKeys[strings.ToLower(k)] {
					add(fmt.Sprintf("registry[%s].mirror[%s].%s", r.Prefix, r.Mirrors[j].Location, k), v)
				}
			}
		}
	}
}

func lookupFold(m map[string]any, key string) any {
	if v, ok := m[key]; ok {
		return v
	}
	for k, v := range m {
		if strings.EqualFold(k, key) {
			return v
		}
	}
	return nil
}

// tables accepts both [[array.of.tables]] and inline `key = [{...}]` forms.
func tables(v any) []map[string]any {
	switch t := v.(type) {
	case []map[string]any:
		return t
	case []any:
		out := make([]map[string]any, 0, len(t))
		for _, e := range t {
			m, _ := e.(map[string]any)
			out = append(out, m)
		}
		return out
	}
	return nil
}

// registryByScope indexes a config's registries; nil is the empty config.
func registryByScope(c *Config) map[string]*Registry {
	if c == nil {
		return nil
	}
	m := make(map[string]*Registry, len(c.Registries))
	for i := range c.Registries {
		m[c.Registries[i].Scope()] = &c.Registries[i]
	}
	return m
}

// sortedKeys returns the sorted union of the keys of a and b.
func sortedKeys[V any](a, b map[string]V) []string {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}
