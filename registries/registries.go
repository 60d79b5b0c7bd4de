// Package registries is ndp's model of /etc/containers/registries.conf:
//
//   - registries.go reads it with the parser and validator CRI-O itself
//     runs, containers/image's sysregistriesv2
//     (go.podman.io/image/v5/pkg/sysregistriesv2);
//   - diff.go computes a semantic diff between two versions of it;
//   - render.go validates the image-mirror objects (ImageDigestMirrorSets,
//     ImageTagMirrorSets, ImageContentSourcePolicies) and image.config's
//     registry sources, and renders them into a base registries.conf, as
//     the Machine Config Operator's container-runtime-config controller
//     does (Validate, Render): the one rendering of both modes, ndp's
//     registries controller (render.RegistriesConfig) and the advisor's
//     (mcorender.RegistriesIgnition, which adds the MCO's other files);
//   - marshal.go writes a Config as CRI-O's own files are laid out.
//
// The planner feeds the result of Diff to Rego policies that decide whether a change can
// be applied with a CRI-O reload instead of a drain, so the diff ignores
// everything that has no effect on image pulls (comments, key order, order of
// [[registry]] tables) and reports everything else, including keys
// sysregistriesv2 does not model.
//
// Parse accepts exactly the files CRI-O accepts (plus one refusal of its own,
// see checkFoldedKeys), so a file CRI-O would refuse to load is never judged
// as a harmless change.
package registries

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
	"go.podman.io/image/v5/pkg/sysregistriesv2"
	"go.podman.io/image/v5/types"
)

// Values of pull-from-mirror; the empty string means "not set".
const (
	PullFromMirrorAll        = sysregistriesv2.MirrorAll
	PullFromMirrorDigestOnly = sysregistriesv2.MirrorByDigestOnly
	PullFromMirrorTagOnly    = sysregistriesv2.MirrorByTagOnly
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

// Config is a registries.conf as containers/image reads it: its
// V2RegistriesConf, with the registries and the search list as the library
// normalises them (a registry's Prefix is its scope, trailing slashes are
// removed, registries are sorted by prefix and a later table with the same
// prefix is dropped, as CRI-O does), and the other settings as written
// (ShortNameMode, Aliases and CredentialHelpers, which the library validates
// but does not hand back).
type Config struct {
	sysregistriesv2.V2RegistriesConf

	// Other holds the raw values of keys sysregistriesv2 does not model, so
	// that a change in them is reported rather than silently ignored.
	// Top-level keys are stored under their name; unknown keys inside a
	// [[registry]] or [[registry.mirror]] table under a path naming the
	// registry scope and mirror location, e.g. `registry[quay.io].foo` or
	// `registry[quay.io].mirror[mirror.example.com].foo`, so that the path
	// does not depend on table order (a second table or mirror with the same
	// scope or location gets a `#2` suffix).
	Other map[string]any `toml:"-" json:"other,omitempty"`
}

// Registry is one [[registry]] table, containers/image's own type: its
// Endpoint is embedded (inline in TOML), so location and insecure sit at
// registry level.
type Registry = sysregistriesv2.Registry

// Endpoint is a registry's own location or one of its mirrors.
type Endpoint = sysregistriesv2.Endpoint

// Scope is the key identifying a registry: its prefix, or its location when
// no prefix is set (Parse always sets the prefix; Render leaves it empty for
// the registries it adds, as the MCO writes them). containers/image keeps a
// single registry per prefix.
func Scope(r *Registry) string {
	if r.Prefix != "" {
		return r.Prefix
	}
	return r.Location
}

// EffectivePullFromMirror is how a mirror of r is really used: its own
// setting, else "digest-only" when the registry has mirror-by-digest-only,
// else "all" (containers/image's Registry.PullSourcesFromReference).
// Diffing effective values makes equivalent spellings compare equal.
func EffectivePullFromMirror(r *Registry, m Endpoint) string {
	switch {
	case m.PullFromMirror != "":
		return m.PullFromMirror
	case r.MirrorByDigestOnly:
		return PullFromMirrorDigestOnly
	default:
		return PullFromMirrorAll
	}
}

// The keys sysregistriesv2 decodes (its toml tags), compared
// case-insensitively because BurntSushi/toml (and so containers/image)
// falls back to case-insensitive field matching. Any other key is kept in
// Config.Other. TestKnownKeysAreTheLibrarys holds these to the library's
// types, so that a field a new library version adds is not silently
// ignored by the diff.
var (
	topLevelKeys = keySet("unqualified-search-registries", "registry", "short-name-mode", "credential-helpers", "aliases", "additional-layer-store-auth-helper")
	registryKeys = keySet("prefix", "location", "insecure", "pull-from-mirror", "namespace-proxy", "blocked", "mirror-by-digest-only", "mirror")
	mirrorKeys   = keySet("location", "insecure", "pull-from-mirror", "namespace-proxy")
)

func keySet(keys ...string) map[string]bool {
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		m[k] = true
	}
	return m
}

// Parse decodes and validates a registries.conf with containers/image, and
// collects the keys the library ignores. Empty data (or only comments and
// whitespace) is a valid empty config. Registries are returned sorted by
// scope because their order in the file has no meaning.
//
// Refused files give a *SyntaxError (TOML syntax or type errors, with a
// line) or an error wrapping ErrInvalid (the library's validation, with the
// [[registry]] table and mirror where the library's message does not name
// them). Any other error means the library could not be run (e.g. no
// writable temporary directory), not that the file is wrong.
func Parse(data []byte) (*Config, error) {
	lib, tmp, libErr := load(data)
	if libErr != nil && !contentError(libErr, tmp) {
		return nil, fmt.Errorf("registries.conf: cannot run containers/image's parser: %w", libErr)
	}
	var inner error
	if libErr != nil {
		inner = errors.Unwrap(libErr)
		if inner == nil {
			inner = libErr
		}
		if se := asSyntaxError(inner, data); se != nil {
			return nil, se
		}
	}

	// The file as written, in file order, for the settings the library
	// does not hand back, for naming the table an error is in, and for the
	// keys the library ignores.
	var file sysregistriesv2.V2RegistriesConf
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&file)
	if err != nil {
		if inner != nil {
			return nil, invalidFromLibrary(inner, tmp, &file)
		}
		return nil, syntaxError(err, data)
	}
	var raw map[string]any
	if len(md.Undecoded()) > 0 || caseVariantKeys(md) {
		// Second pass only when something was not modelled, or a modelled
		// key is spelled in another case (rare), to keep the values.
		if _, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&raw); err != nil {
			return nil, syntaxError(err, data)
		}
		if err := checkFoldedKeys(raw); err != nil {
			return nil, err
		}
	}
	if inner != nil {
		return nil, invalidFromLibrary(inner, tmp, &file)
	}

	cfg := &Config{}
	cfg.Registries = nilIfEmpty(lib.Registries)
	for i := range cfg.Registries {
		if cfg.Registries[i].Prefix == "" {
			// A prefix of only slashes, which the library trims to ""
			// but does not then set to the location: such a registry
			// matches no image at all. Keep it as "/" (which parses to
			// the same) so that it is not taken for the registry of
			// its location.
			cfg.Registries[i].Prefix = "/"
		}
	}
	cfg.UnqualifiedSearchRegistries = nilIfEmpty(lib.UnqualifiedSearchRegistries)
	cfg.AdditionalLayerStoreAuthHelper = lib.AdditionalLayerStoreAuthHelper
	// The library defaults an empty list to ["containers-auth.json"];
	// keep what the file says (Diff compares the effective lists).
	cfg.CredentialHelpers = nilIfEmpty(file.CredentialHelpers)
	cfg.ShortNameMode = file.ShortNameMode
	if len(file.Aliases) > 0 {
		cfg.Aliases = file.Aliases
	}
	if raw != nil {
		cfg.collectOther(raw, file.Registries)
	}
	return cfg, nil
}

func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

// load runs containers/image's own loading of a registries.conf on data.
// The library validates only what it reads from a file (its parsing and
// postProcessRegistries are unexported), so data goes to a temporary file
// named as the SystemContext's registries.conf, with a drop-in directory
// that does not exist: nothing else is read (not /etc/containers, not the
// user's files, not $CONTAINERS_REGISTRIES_CONF). TryUpdatingCache loads
// without looking at the library's cache but stores the result in it, keyed
// by the path: InvalidateCache drops it again, so the cache does not grow
// with every file parsed (nothing else in ndp uses that cache).
func load(data []byte) (*sysregistriesv2.V2RegistriesConf, string, error) {
	f, err := os.CreateTemp("", "ndp-registries-*.conf")
	if err != nil {
		return nil, "", err
	}
	name := f.Name()
	defer os.Remove(name)
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, name, err
	}
	conf, err := sysregistriesv2.TryUpdatingCache(&types.SystemContext{
		SystemRegistriesConfPath:    name,
		SystemRegistriesConfDirPath: name + ".d", // never created: no drop-ins
	})
	sysregistriesv2.InvalidateCache()
	return conf, name, err
}

// contentError reports whether an error of load is about the file's
// contents: the library wraps those as `loading registries configuration
// "<file>": ...`; anything else is about running it.
func contentError(err error, tmp string) bool {
	return tmp != "" && strings.HasPrefix(err.Error(), fmt.Sprintf("loading registries configuration %q: ", tmp))
}

// invalidFromLibrary turns the library's validation error into an
// ErrInvalid error without the temporary file's name, naming the
// [[registry]] table (and mirror) it is about.
func invalidFromLibrary(err error, tmp string, file *sysregistriesv2.V2RegistriesConf) error {
	msg := libraryMessage(err, tmp)
	if where := locate(msg, tmp, file); where != "" {
		msg = where + ": " + msg
	}
	return fmt.Errorf("%w: %s", ErrInvalid, msg)
}

// libraryMessage is the library's message with the temporary file's name
// replaced; a list of errors (short-name aliases, reported from a map) is
// sorted so that one file always gives one message.
func libraryMessage(err error, tmp string) string {
	msg := err.Error()
	if tmp != "" {
		msg = strings.ReplaceAll(msg, tmp, "registries.conf")
	}
	if lines := strings.Split(msg, "\n"); len(lines) > 1 {
		// "validating short-name aliases: " + one error a line.
		prefix := ""
		if i := strings.Index(lines[0], ": "); strings.HasPrefix(lines[0], "validating ") && i > 0 {
			prefix, lines[0] = lines[0][:i+2], lines[0][i+2:]
		}
		slices.Sort(lines)
		msg = prefix + strings.Join(slices.Compact(lines), "; ")
	}
	return msg
}

// locate names the [[registry]] table, and within it the mirror, that the
// library refuses on its own with the message msg; "" when no single table
// is (the error is about the search list, short names, or two registries
// together). The library checks registries in file order and stops at the
// first bad one, so the first table refused alone is the one the message
// is about. It runs only for a refused file.
func locate(msg, tmp string, file *sysregistriesv2.V2RegistriesConf) string {
	if file == nil {
		return ""
	}
	refusedAlone := func(r Registry) bool {
		data, err := encodeRegistries([]Registry{r})
		if err != nil {
			return false
		}
		_, name, err := load(data)
		return err != nil && contentError(err, name) && libraryMessage(errors.Unwrap(err), name) == msg
	}
	for i, r := range file.Registries {
		if i == 256 {
			break // bound the work on a huge file; the message stands alone
		}
		if !refusedAlone(r) {
			continue
		}
		where := fmt.Sprintf("[[registry]] #%d", i+1)
		own := r
		own.Mirrors = nil
		if refusedAlone(own) {
			return where
		}
		for j, m := range r.Mirrors {
			one := r
			one.Mirrors = []Endpoint{m}
			if refusedAlone(one) {
				return fmt.Sprintf("%s, [[registry.mirror]] #%d", where, j+1)
			}
		}
		return where
	}
	return ""
}

func encodeRegistries(regs []Registry) ([]byte, error) {
	var b bytes.Buffer
	err := toml.NewEncoder(&b).Encode(struct {
		Registries []Registry `toml:"registry"`
	}{regs})
	return b.Bytes(), err
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
// set the same setting ("location" and "Location"). containers/image
// accepts such a file, but BurntSushi/toml keeps whichever key it meets last
// in Go's random map order, so the file has no single meaning: CRI-O may
// read it one way on one node and the other way on the next. This is the
// one refusal ndp adds to the library's.
func checkFoldedKeys(raw map[string]any) error {
	check := func(where string, t map[string]any, modelled map[string]bool) error {
		first := map[string]string{}
		for _, k := range slices.Sorted(maps.Keys(t)) {
			l := strings.ToLower(k)
			if !modelled[l] {
				continue
			}
			if prev, dup := first[l]; dup {
				return fmt.Errorf("%w: %s: keys %q and %q both set %s (containers/image would read either at random)", ErrInvalid, where, prev, k, l)
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
			if err := check(fmt.Sprintf("%s, [[registry.mirror]] #%d", where, j+1), mt, mirrorKeys); err != nil {
				return err
			}
		}
	}
	return nil
}

// lineRe matches the plain errors BurntSushi returns for type mismatches.
var lineRe = regexp.MustCompile(`^toml: line (\d+)(?: \(last key (".*?")\))?: `)

// asSyntaxError is the *SyntaxError for a TOML error of BurntSushi/toml,
// nil for any other error.
func asSyntaxError(err error, data []byte) *SyntaxError {
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
	return nil
}

// syntaxError turns BurntSushi errors into "line N: ..." errors.
func syntaxError(err error, data []byte) error {
	if se := asSyntaxError(err, data); se != nil {
		return se
	}
	return fmt.Errorf("registries.conf: %w", err)
}

func withKey(msg, key string) string {
	if key == "" {
		return msg
	}
	return fmt.Sprintf("%s (key %q)", msg, key)
}

// collectOther stores the values of keys the library ignores in c.Other.
// regs are the file's [[registry]] tables as decoded, in file order like
// the raw tables, to name nested keys by scope and mirror location.
func (c *Config) collectOther(raw map[string]any, regs []Registry) {
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
	seenScope := map[string]int{}
	for i, rt := range tables(lookupFold(raw, "registry")) {
		if i >= len(regs) {
			break
		}
		r := &regs[i]
		scope := strings.TrimRight(r.Prefix, "/")
		if scope == "" {
			scope = strings.TrimRight(r.Location, "/")
		}
		name := occurrence(seenScope, scope, fmt.Sprintf("registry[%s]", scope))
		for k, v := range rt {
			if !registryKeys[strings.ToLower(k)] {
				add(name+"."+k, v)
			}
		}
		seenMirror := map[string]int{}
		for j, mt := range tables(lookupFold(rt, "mirror")) {
			if j >= len(r.Mirrors) {
				break
			}
			loc := strings.TrimRight(r.Mirrors[j].Location, "/")
			mname := occurrence(seenMirror, loc, fmt.Sprintf("%s.mirror[%s]", name, loc))
			for k, v := range mt {
				if !mirrorKeys[strings.ToLower(k)] {
					add(mname+"."+k, v)
				}
			}
		}
	}
}

// occurrence returns name for the first occurrence of key, name#2 for the
// second, and so on.
func occurrence(seen map[string]int, key, name string) string {
	seen[key]++
	if n := seen[key]; n > 1 {
		return fmt.Sprintf("%s#%d", name, n)
	}
	return name
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
		s := Scope(&c.Registries[i])
		if _, dup := m[s]; !dup { // containers/image: the first table wins
			m[s] = &c.Registries[i]
		}
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

// ConfPath is the file whose changes get a semantic diff.
const ConfPath = "/etc/containers/registries.conf"
