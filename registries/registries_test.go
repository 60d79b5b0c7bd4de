package registries

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.podman.io/image/v5/pkg/sysregistriesv2"
)

// cmpConfig lets cmp look into V2RegistriesConf, whose aliases sit in an
// unexported embedded struct.
var cmpConfig = cmp.AllowUnexported(sysregistriesv2.V2RegistriesConf{})

// config builds a Config; Aliases cannot be set in a composite literal
// (they are promoted from the library's unexported embedded struct).
func config(v2 sysregistriesv2.V2RegistriesConf, aliases map[string]string, other map[string]any) *Config {
	c := &Config{V2RegistriesConf: v2, Other: other}
	c.Aliases = aliases
	return c
}

func mustParse(tb testing.TB, s string) *Config {
	tb.Helper()
	c, err := Parse([]byte(s))
	if err != nil {
		tb.Fatalf("Parse(%q): %v", s, err)
	}
	return c
}

// mcoBase is what the MCO renders with no mirror sets configured.
var mcoBase = testdataConf("mco-base.conf")

// mcoIDMS is what the MCO renders for an ImageDigestMirrorSet mirroring the
// release payload, plus an ImageTagMirrorSet and a source with
// mirrorSourcePolicy: NeverContactSource (blocked = true).
var mcoIDMS = testdataConf("mco-idms.conf")

// testdataConf is a registries.conf of testdata/ (FuzzRegistriesConf
// takes them all as seeds: TestdataConfs).
func testdataConf(name string) string {
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestParseEmpty(t *testing.T) {
	for _, in := range []string{"", " \n\t\n", "# registries.conf\n\n   # nothing configured\n"} {
		got, err := Parse([]byte(in))
		if err != nil {
			t.Fatalf("Parse(%q): %v", in, err)
		}
		if diff := cmp.Diff(&Config{}, got, cmpConfig); diff != "" {
			t.Errorf("Parse(%q) mismatch (-want +got):\n%s", in, diff)
		}
	}
}

func TestParseSyntaxErrors(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		wantLine int
		wantMsg  string
	}{
		{"missing value", "unqualified-search-registries = [\"docker.io\"]\n\n[[registry]]\nlocation =\n", 4, "expected value"},
		{"unterminated string", "[[registry]]\nlocation = \"quay.io\n", 2, "strings cannot contain newlines"},
		{"duplicate key", "[[registry]]\nlocation = \"a.io\"\nlocation = \"b.io\"\n", 3, "already been defined"},
		{"bad table header", "# comment\n# comment\n[[registry]\n", 3, "expected end of table array name"},
		{"wrong type for bool", "[[registry]]\nlocation = \"a.io\"\n\nblocked = \"yes\"\n", 4, `incompatible types: TOML value has type string; destination has type boolean (key "registry.blocked")`},
		{"wrong type for list", "unqualified-search-registries = \"docker.io\"\n", 1, "incompatible types"},
		{"wrong type in mirror", "[[registry]]\nlocation = \"a.io\"\n[[registry.mirror]]\nlocation = \"m.io\"\ninsecure = 1\n", 5, `(key "registry.mirror.insecure")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.in))
			if err == nil {
				t.Fatal("Parse succeeded, want error")
			}
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("error %v (%T) is not a *SyntaxError", err, err)
			}
			if se.Line != tt.wantLine {
				t.Errorf("line = %d, want %d (%v)", se.Line, tt.wantLine, err)
			}
			if prefix := fmt.Sprintf("line %d: ", tt.wantLine); !strings.HasPrefix(err.Error(), prefix) {
				t.Errorf("error %q does not start with %q", err, prefix)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("error %q does not contain %q", err, tt.wantMsg)
			}
			if errors.Is(err, ErrInvalid) {
				t.Errorf("syntax error %v should not wrap ErrInvalid", err)
			}
		})
	}
}

func TestParseValidationErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"neither prefix nor location", `
[[registry]]
location = "quay.io"
[[registry]]
blocked = true
`, `[[registry]] #2: invalid condition: both location and prefix are unset`},
		{"both explicitly empty", `
[[registry]]
prefix = ""
location = "/"
`, `[[registry]] #1: invalid condition: both location and prefix are unset`},
		{"invalid pull-from-mirror", `
[[registry]]
location = "quay.io"
[[registry.mirror]]
location = "m.example.com"
pull-from-mirror = "sometimes"
`, `[[registry]] #1, [[registry.mirror]] #1: unsupported pull-from-mirror value "sometimes" for mirror "m.example.com"`},
		{"pull-from-mirror on the registry", `
[[registry]]
location = "quay.io"
pull-from-mirror = "digest-only"
`, `[[registry]] #1: pull-from-mirror must not be set for a non-mirror registry "quay.io"`},
		{"mirror-by-digest-only with pull-from-mirror", `
[[registry]]
location = "quay.io"
[[registry.mirror]]
location = "a.example.com"
[[registry]]
location = "registry.example.com"
mirror-by-digest-only = true
[[registry.mirror]]
location = "m.example.com"
[[registry.mirror]]
location = "n.example.com"
pull-from-mirror = "all"
`, `[[registry]] #2, [[registry.mirror]] #2: cannot set mirror usage mirror-by-digest-only for the registry ("registry.example.com") and pull-from-mirror for per-mirror ("n.example.com") at the same time`},
		{"URI scheme", `
[[registry]]
location = "https://quay.io"
`, `[[registry]] #1: invalid location 'https://quay.io': URI schemes are not supported`},
		{"URI scheme in a mirror", `
[[registry]]
location = "quay.io"
[[registry.mirror]]
location = "m.example.com"
[[registry.mirror]]
location = "http://n.example.com"
`, `[[registry]] #1, [[registry.mirror]] #2: invalid location 'http://n.example.com': URI schemes are not supported`},
		{"mirror without location", `
[[registry]]
location = "quay.io"
[[registry.mirror]]
insecure = true
`, `[[registry]] #1, [[registry.mirror]] #1: invalid condition: mirror location is unset`},
		{"prefix without location", `
[[registry]]
prefix = "quay.io/foo"
`, `[[registry]] #1: invalid condition: location is unset and prefix is not in the format: *.example.com`},
		{"wildcard with a path", `
[[registry]]
prefix = "*.example.com/team"
`, `[[registry]] #1: Wildcarded prefix should be in the format: *.example.com. Current prefix "*.example.com/team" is incorrectly formatted`},
		{"conflicting insecure for one location", `
[[registry]]
prefix = "a.example.com"
location = "mirror.example.com"
insecure = true
[[registry]]
prefix = "b.example.com"
location = "mirror.example.com"
`, `registry 'mirror.example.com' is defined multiple times with conflicting 'insecure' setting`},
		{"bad short-name-mode", `short-name-mode = "sometimes"`, `invalid short-name mode: "sometimes"`},
		{"search entry with a path", `unqualified-search-registries = ["docker.io/library"]`, `Invalid unqualified-search-registries entry "docker.io/library"`},
		{"bad aliases, every one named in a stable order", `
[aliases]
"x/y:1" = "quay.io/x/y"
"z" = "z"
`, `validating short-name aliases: invalid alias "z": must contain registry and repository; invalid short name "x/y:1": must not contain tag`},
		{"v1 mixed with v2", `
unqualified-search-registries = ["docker.io"]
[registries.search]
registries = ["quay.io"]
`, `registries.conf must be in v2 format but is in v1`},
		{"v1 alone", `
[registries.search]
registries = ["quay.io"]
`, `registries.conf must be in v2 format but is in v1`},
		{"keys differing in case", `
[[registry]]
location = "quay.io"
Location = "registry.example.com"
`, `[[registry]] #1: keys "Location" and "location" both set location`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.in))
			if err == nil {
				t.Fatal("Parse succeeded, want error")
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v does not wrap ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

func TestParseNormalises(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want *Config
	}{
		{"scope, defaults, slashes and sorting", testdataConf("scopes.conf"), config(sysregistriesv2.V2RegistriesConf{
			UnqualifiedSearchRegistries: []string{"quay.io", "docker.io"},
			Registries: []Registry{
				{Prefix: "*.example.com", Blocked: true},
				{Prefix: "docker.io", Endpoint: Endpoint{Location: "docker.io", Insecure: true}},
				{Prefix: "quay.io", Endpoint: Endpoint{Location: "quay.io"}, MirrorByDigestOnly: true,
					Mirrors: []Endpoint{{Location: "m.example.com/quay", NamespaceProxy: "quay.io"}}},
			},
		}, nil, nil)},
		{"a later table for the same scope is dropped, as CRI-O does", `
[[registry]]
location = "quay.io"
[[registry]]
location = "registry.example.com"
[[registry]]
prefix = "quay.io/"
location = "quay-mirror.example.com"
`, config(sysregistriesv2.V2RegistriesConf{
			Registries: []Registry{
				{Prefix: "quay.io", Endpoint: Endpoint{Location: "quay.io"}},
				{Prefix: "registry.example.com", Endpoint: Endpoint{Location: "registry.example.com"}},
			},
		}, nil, nil)},
		{"a mirror listed twice is kept twice, as CRI-O does", `
[[registry]]
location = "quay.io"
[[registry.mirror]]
location = "m.example.com"
[[registry.mirror]]
location = "m.example.com/"
pull-from-mirror = "digest-only"
`, config(sysregistriesv2.V2RegistriesConf{
			Registries: []Registry{{Prefix: "quay.io", Endpoint: Endpoint{Location: "quay.io"},
				Mirrors: []Endpoint{{Location: "m.example.com"}, {Location: "m.example.com", PullFromMirror: PullFromMirrorDigestOnly}}}},
		}, nil, nil)},
		{"settings the library does not hand back, and unmodelled keys", testdataConf("unmodelled-keys.conf"), config(sysregistriesv2.V2RegistriesConf{
			ShortNameMode:                  "enforcing",
			CredentialHelpers:              []string{"containers-auth.json", "ecr-login"},
			AdditionalLayerStoreAuthHelper: "helper",
			Registries: []Registry{{Prefix: "quay.io", Endpoint: Endpoint{Location: "quay.io"},
				Mirrors: []Endpoint{{Location: "m.example.com"}}}},
		}, map[string]string{"fedora": "registry.fedoraproject.org/fedora"}, map[string]any{
			"future-setting":                                 "x",
			"registry[quay.io].future-knob":                  int64(3),
			"registry[quay.io]#2.future-knob":                int64(4),
			"registry[quay.io].mirror[m.example.com].weight": []any{int64(1), int64(2)},
		})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, mustParse(t, tt.in), cmpConfig); diff != "" {
				t.Errorf("Parse mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseMCO(t *testing.T) {
	c := mustParse(t, mcoIDMS)
	var got []RegistryState
	for i := range c.Registries {
		got = append(got, State(&c.Registries[i]))
	}
	digest := func(locs ...string) []MirrorState {
		var out []MirrorState
		for _, l := range locs {
			out = append(out, MirrorState{Location: l, PullFromMirror: PullFromMirrorDigestOnly})
		}
		return out
	}
	want := []RegistryState{
		{Scope: "docker.io/library", Prefix: "docker.io/library", Location: "docker.io/library",
			Mirrors: []MirrorState{{Location: "mirror.example.com:8443/dockerhub", PullFromMirror: PullFromMirrorTagOnly}}},
		{Scope: "quay.io/openshift-release-dev/ocp-release", Prefix: "quay.io/openshift-release-dev/ocp-release",
			Location: "quay.io/openshift-release-dev/ocp-release", Mirrors: digest("mirror.example.com:8443/ocp4/openshift4")},
		{Scope: "quay.io/openshift-release-dev/ocp-v4.0-art-dev", Prefix: "quay.io/openshift-release-dev/ocp-v4.0-art-dev",
			Location: "quay.io/openshift-release-dev/ocp-v4.0-art-dev", Mirrors: digest("mirror.example.com:8443/ocp4/openshift4")},
		{Scope: "registry.redhat.io/ubi9", Prefix: "registry.redhat.io/ubi9", Location: "registry.redhat.io/ubi9", Blocked: true,
			Mirrors: digest("mirror.example.com:8443/ubi9", "backup.example.com/ubi9")},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("MCO registries mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"registry.access.redhat.com", "docker.io"}, c.UnqualifiedSearchRegistries); diff != "" {
		t.Errorf("search mismatch (-want +got):\n%s", diff)
	}
}

// baseConf is the old file of most TestDiff cases: a registry with three
// digest-only mirrors and one without.
var baseConf = testdataConf("acme.conf")

func TestDiff(t *testing.T) {
	acmeMirror := func(loc, pfm string) MirrorChange {
		return MirrorChange{Scope: "quay.io/acme", Location: loc, PullFromMirror: pfm}
	}
	regExample := RegistryState{Scope: "registry.example.com", Prefix: "registry.example.com", Location: "registry.example.com"}

	tests := []struct {
		name     string
		old, new string
		want     ConfigDiff
	}{
		{
			name: "comments, whitespace and key order only",
			old:  baseConf,
			new: `
# a new comment
unqualified-search-registries = [ "registry.access.redhat.com",
   "docker.io", ]   # trailing comment
[[registry]]
  location = "quay.io/acme"   # keys swapped
  prefix   = "quay.io/acme"
  [[registry.mirror]]
    pull-from-mirror = "digest-only"
    location = "m1.example.com/acme"
  [[registry.mirror]]
    location = "m2.example.com/acme"
    pull-from-mirror = "digest-only"
  [[registry.mirror]]
    location = "m3.example.com/acme"
    pull-from-mirror = "digest-only"
[[registry]]
  location = "registry.example.com"
`,
		},
		{
			name: "registry order only",
			old:  baseConf,
			new: `unqualified-search-registries = ["registry.access.redhat.com", "docker.io"]
[[registry]]
location = "registry.example.com"
[[registry]]
prefix = "quay.io/acme"
location = "quay.io/acme"
mirror = [
  {location = "m1.example.com/acme", pull-from-mirror = "digest-only"},
  {location = "m2.example.com/acme", pull-from-mirror = "digest-only"},
  {location = "m3.example.com/acme", pull-from-mirror = "digest-only"},
]
`,
		},
		{
			name: "equivalent spellings",
			old: `[[registry]]
location = "quay.io"
[[registry.mirror]]
location = "m.example.com"
[[registry.mirror]]
location = "d.example.com"
pull-from-mirror = "digest-only"
`,
			new: `[[registry]]
prefix = "quay.io/"
location = "quay.io"
[[registry.mirror]]
location = "m.example.com/"
pull-from-mirror = "all"
insecure = false
[[registry.mirror]]
location = "d.example.com"
pull-from-mirror = "digest-only"
`,
		},
		{
			name: "search list appended",
			old:  `unqualified-search-registries = ["registry.access.redhat.com"]`,
			new:  `unqualified-search-registries = ["registry.access.redhat.com", "docker.io", "quay.io"]`,
			want: ConfigDiff{SearchChanged: true, SearchAppendedOnly: true, SearchAdded: []string{"docker.io", "quay.io"}},
		},
		{
			name: "search list set from nothing",
			old:  ``,
			new:  `unqualified-search-registries = ["docker.io"]`,
			want: ConfigDiff{SearchChanged: true, SearchAppendedOnly: true, SearchAdded: []string{"docker.io"}},
		},
		{
			name: "search list prepended",
			old:  `unqualified-search-registries = ["docker.io"]`,
			new:  `unqualified-search-registries = ["quay.io", "docker.io"]`,
			want: ConfigDiff{SearchChanged: true, SearchAdded: []string{"quay.io"}},
		},
		{
			name: "search list reordered",
			old:  `unqualified-search-registries = ["registry.access.redhat.com", "docker.io", "quay.io"]`,
			new:  `unqualified-search-registries = ["docker.io", "registry.access.redhat.com", "quay.io"]`,
			want: ConfigDiff{SearchChanged: true, SearchReordered: true},
		},
		{
			name: "search list entry removed",
			old:  `unqualified-search-registries = ["registry.access.redhat.com", "docker.io"]`,
			new:  `unqualified-search-registries = ["registry.access.redhat.com"]`,
			want: ConfigDiff{SearchChanged: true, SearchRemoved: []string{"docker.io"}},
		},
		{
			name: "search list replaced and reordered",
			old:  `unqualified-search-registries = ["a.io", "b.io", "c.io"]`,
			new:  `unqualified-search-registries = ["c.io", "d.io", "a.io"]`,
			want: ConfigDiff{SearchChanged: true, SearchAdded: []string{"d.io"}, SearchRemoved: []string{"b.io"}, SearchReordered: true},
		},
		{
			name: "registry added with digest-only mirrors",
			old:  baseConf,
			new: baseConf + `
[[registry]]
prefix = ""
location = "registry.redhat.io/ubi9"
[[registry.mirror]]
location = "mirror.example.com/ubi9"
pull-from-mirror = "digest-only"
[[registry.mirror]]
location = "backup.example.com/ubi9"
pull-from-mirror = "digest-only"
`,
			want: ConfigDiff{RegistriesAdded: []RegistryState{{
				Scope: "registry.redhat.io/ubi9", Prefix: "registry.redhat.io/ubi9", Location: "registry.redhat.io/ubi9",
				Mirrors: []MirrorState{
					{Location: "mirror.example.com/ubi9", PullFromMirror: PullFromMirrorDigestOnly},
					{Location: "backup.example.com/ubi9", PullFromMirror: PullFromMirrorDigestOnly},
				},
			}}},
		},
		{
			name: "registry added with tag-only mirror",
			old:  baseConf,
			new: baseConf + `
[[registry]]
prefix = "docker.io/library"
location = "docker.io/library"
[[registry.mirror]]
location = "mirror.example.com/dockerhub"
pull-from-mirror = "tag-only"
insecure = true
`,
			want: ConfigDiff{RegistriesAdded: []RegistryState{{
				Scope: "docker.io/library", Prefix: "docker.io/library", Location: "docker.io/library",
				Mirrors: []MirrorState{{Location: "mirror.example.com/dockerhub", PullFromMirror: PullFromMirrorTagOnly, Insecure: true}},
			}}},
		},
		{
			name: "registries added without mirrors",
			old:  baseConf,
			new: baseConf + `
[[registry]]
location = "insecure.example.com:5000"
insecure = true
[[registry]]
prefix = "*.blocked.example.com"
blocked = true
`,
			want: ConfigDiff{RegistriesAdded: []RegistryState{
				{Scope: "*.blocked.example.com", Prefix: "*.blocked.example.com", Blocked: true},
				{Scope: "insecure.example.com:5000", Prefix: "insecure.example.com:5000", Location: "insecure.example.com:5000", Insecure: true},
			}},
		},
		{
			name: "registry removed",
			old:  baseConf,
			new:  strings.TrimSuffix(baseConf, "[[registry]]\nlocation = \"registry.example.com\"\n"),
			want: ConfigDiff{RegistriesRemoved: []RegistryState{regExample}},
		},
		{
			name: "mirror added",
			old:  baseConf,
			new: strings.Replace(baseConf, "[[registry]]\nlocation = \"registry.example.com\"", `[[registry.mirror]]
location = "m4.example.com/acme"
pull-from-mirror = "digest-only"
insecure = true

[[registry]]
location = "registry.example.com"`, 1),
			want: ConfigDiff{MirrorsAdded: []MirrorChange{{Scope: "quay.io/acme", Location: "m4.example.com/acme", PullFromMirror: PullFromMirrorDigestOnly, Insecure: true}}},
		},
		{
			name: "mirror added in the middle is not a reorder",
			old:  baseConf,
			new: strings.Replace(baseConf, "[[registry.mirror]]\nlocation = \"m2.example.com/acme\"", `[[registry.mirror]]
location = "m0.example.com/acme"

[[registry.mirror]]
location = "m2.example.com/acme"`, 1),
			want: ConfigDiff{MirrorsAdded: []MirrorChange{acmeMirror("m0.example.com/acme", PullFromMirrorAll)}},
		},
		{
			name: "mirror removed",
			old:  baseConf,
			new:  strings.Replace(baseConf, "[[registry.mirror]]\nlocation = \"m2.example.com/acme\"\npull-from-mirror = \"digest-only\"\n", "", 1),
			want: ConfigDiff{MirrorsRemoved: []MirrorChange{acmeMirror("m2.example.com/acme", PullFromMirrorDigestOnly)}},
		},
		{
			name: "mirror changed",
			old:  baseConf,
			new: strings.Replace(strings.Replace(baseConf,
				"location = \"m2.example.com/acme\"\npull-from-mirror = \"digest-only\"", "location = \"m2.example.com/acme\"", 1),
				"location = \"m3.example.com/acme\"\npull-from-mirror = \"digest-only\"", "location = \"m3.example.com/acme\"\npull-from-mirror = \"tag-only\"\ninsecure = true", 1),
			want: ConfigDiff{MirrorsChanged: []MirrorChange{
				{Scope: "quay.io/acme", Location: "m2.example.com/acme", PullFromMirror: PullFromMirrorAll,
					Fields: []string{"pullFromMirror"}, Old: &MirrorState{Location: "m2.example.com/acme", PullFromMirror: PullFromMirrorDigestOnly}},
				{Scope: "quay.io/acme", Location: "m3.example.com/acme", PullFromMirror: PullFromMirrorTagOnly, Insecure: true,
					Fields: []string{"insecure", "pullFromMirror"}, Old: &MirrorState{Location: "m3.example.com/acme", PullFromMirror: PullFromMirrorDigestOnly}},
			}},
		},
		{
			name: "mirrors reordered",
			old:  baseConf,
			new: strings.Replace(strings.Replace(strings.Replace(baseConf,
				"m1.example.com", "TMP", 1), "m3.example.com", "m1.example.com", 1), "TMP", "m3.example.com", 1),
			want: ConfigDiff{MirrorsReordered: []string{"quay.io/acme"}},
		},
		{
			name: "blocked toggled",
			old:  baseConf,
			new:  baseConf + "blocked = true\n",
			want: ConfigDiff{RegistriesChanged: []RegistryChange{{
				Scope: "registry.example.com", Fields: []string{"blocked"},
				Old: regExample,
				New: RegistryState{Scope: "registry.example.com", Prefix: "registry.example.com", Location: "registry.example.com", Blocked: true},
			}}},
		},
		{
			name: "insecure and location changed",
			old: `[[registry]]
prefix = "quay.io/acme"
location = "quay.io/acme"
blocked = true
`,
			new: `[[registry]]
prefix = "quay.io/acme"
location = "acme.example.com:5000/quay"
insecure = true
blocked = true
`,
			want: ConfigDiff{RegistriesChanged: []RegistryChange{{
				Scope: "quay.io/acme", Fields: []string{"insecure", "location"},
				Old: RegistryState{Scope: "quay.io/acme", Prefix: "quay.io/acme", Location: "quay.io/acme", Blocked: true},
				New: RegistryState{Scope: "quay.io/acme", Prefix: "quay.io/acme", Location: "acme.example.com:5000/quay", Insecure: true, Blocked: true},
			}}},
		},
		{
			name: "mirror-by-digest-only turned on changes every mirror",
			old: `[[registry]]
location = "quay.io"
[[registry.mirror]]
location = "a.example.com"
[[registry.mirror]]
location = "b.example.com"
`,
			new: `[[registry]]
location = "quay.io"
mirror-by-digest-only = true
[[registry.mirror]]
location = "a.example.com"
[[registry.mirror]]
location = "b.example.com"
`,
			want: ConfigDiff{MirrorsChanged: []MirrorChange{
				{Scope: "quay.io", Location: "a.example.com", PullFromMirror: PullFromMirrorDigestOnly,
					Fields: []string{"pullFromMirror"}, Old: &MirrorState{Location: "a.example.com", PullFromMirror: PullFromMirrorAll}},
				{Scope: "quay.io", Location: "b.example.com", PullFromMirror: PullFromMirrorDigestOnly,
					Fields: []string{"pullFromMirror"}, Old: &MirrorState{Location: "b.example.com", PullFromMirror: PullFromMirrorAll}},
			}},
		},
		{
			name: "mirror-by-digest-only equals per-mirror digest-only",
			old: `[[registry]]
location = "quay.io"
mirror-by-digest-only = true
[[registry.mirror]]
location = "a.example.com"
`,
			new: `[[registry]]
location = "quay.io"
[[registry.mirror]]
location = "a.example.com"
pull-from-mirror = "digest-only"
`,
		},
		{
			name: "mirror-by-digest-only without mirrors has no effect",
			old:  "[[registry]]\nlocation = \"quay.io\"\n",
			new:  "[[registry]]\nlocation = \"quay.io\"\nmirror-by-digest-only = true\n",
		},
		{
			name: "a later table for the same scope is ignored, as CRI-O does",
			old:  "[[registry]]\nlocation = \"quay.io\"\n[[registry]]\nprefix = \"quay.io\"\nlocation = \"a.example.com\"\n",
			new:  "[[registry]]\nlocation = \"quay.io\"\n[[registry]]\nprefix = \"quay.io\"\nlocation = \"b.example.com\"\nblocked = true\n",
		},
		{
			name: "a mirror listed twice",
			old:  "[[registry]]\nlocation = \"quay.io\"\n[[registry.mirror]]\nlocation = \"m.io\"\npull-from-mirror = \"digest-only\"\n",
			new:  "[[registry]]\nlocation = \"quay.io\"\n[[registry.mirror]]\nlocation = \"m.io\"\npull-from-mirror = \"digest-only\"\n[[registry.mirror]]\nlocation = \"m.io\"\npull-from-mirror = \"tag-only\"\n",
			want: ConfigDiff{MirrorsAdded: []MirrorChange{{Scope: "quay.io", Location: "m.io", PullFromMirror: PullFromMirrorTagOnly}}},
		},
		{
			name: "namespace-proxy of a registry and of a mirror",
			old:  "[[registry]]\nlocation = \"quay.io\"\n[[registry.mirror]]\nlocation = \"m.io\"\n",
			new:  "[[registry]]\nlocation = \"quay.io\"\nnamespace-proxy = \"quay.io\"\n[[registry.mirror]]\nlocation = \"m.io\"\nnamespace-proxy = \"quay.io\"\n",
			want: ConfigDiff{
				RegistriesChanged: []RegistryChange{{Scope: "quay.io", Fields: []string{"namespaceProxy"},
					Old: RegistryState{Scope: "quay.io", Prefix: "quay.io", Location: "quay.io", Mirrors: []MirrorState{{Location: "m.io", PullFromMirror: PullFromMirrorAll}}},
					New: RegistryState{Scope: "quay.io", Prefix: "quay.io", Location: "quay.io", NamespaceProxy: "quay.io", Mirrors: []MirrorState{{Location: "m.io", PullFromMirror: PullFromMirrorAll, NamespaceProxy: "quay.io"}}}}},
				MirrorsChanged: []MirrorChange{{Scope: "quay.io", Location: "m.io", PullFromMirror: PullFromMirrorAll, NamespaceProxy: "quay.io",
					Fields: []string{"namespaceProxy"}, Old: &MirrorState{Location: "m.io", PullFromMirror: PullFromMirrorAll}}},
			},
		},
		{
			name: "defaults spelled out: containers-auth.json, an alias reset",
			old:  "credential-helpers = []\n",
			new:  "credential-helpers = [\"containers-auth.json\"]\n[aliases]\n\"fedora\" = \"\"\n",
		},
		{
			name: "a prefix of slashes matches nothing: not the registry of its location",
			old:  "[[registry]]\nlocation = \"quay.io\"\n",
			new:  "[[registry]]\nprefix = \"/\"\nlocation = \"quay.io\"\n",
			want: ConfigDiff{
				RegistriesAdded:   []RegistryState{{Scope: "/", Prefix: "/", Location: "quay.io"}},
				RegistriesRemoved: []RegistryState{{Scope: "quay.io", Prefix: "quay.io", Location: "quay.io"}},
			},
		},
		{
			name: "unknown top-level key changed",
			old:  baseConf + "\n[future]\nknob = 1\n",
			new:  baseConf + "\n[future]\nknob = 2\n",
			want: ConfigDiff{OtherChanged: []string{"future"}},
		},
		{
			name: "unknown keys added and unchanged",
			old:  "when = 1979-05-27T07:32:00-08:00\n[[registry]]\nlocation = \"quay.io\"\n",
			new:  "when = 1979-05-27T07:32:00-08:00\nadditional-layer-store-auth-helper = \"h\"\n[[registry]]\nlocation = \"quay.io\"\nknob = true\n",
			want: ConfigDiff{OtherChanged: []string{"additional-layer-store-auth-helper", "registry[quay.io].knob"}},
		},
		{
			name: "short-name-mode, credential helpers and aliases",
			old:  "short-name-mode = \"permissive\"\ncredential-helpers = [\"a\", \"b\"]\n[aliases]\nfoo = \"quay.io/foo\"\n",
			new:  "short-name-mode = \"enforcing\"\ncredential-helpers = [\"b\", \"a\"]\n[aliases]\nfoo = \"quay.io/bar\"\n",
			want: ConfigDiff{OtherChanged: []string{"aliases", "credential-helpers", "short-name-mode"}},
		},
		{
			name: "MCO: ImageDigestMirrorSet applied",
			old:  mcoBase,
			new:  mcoIDMS,
			want: ConfigDiff{RegistriesAdded: []RegistryState{
				{Scope: "docker.io/library", Prefix: "docker.io/library", Location: "docker.io/library",
					Mirrors: []MirrorState{{Location: "mirror.example.com:8443/dockerhub", PullFromMirror: PullFromMirrorTagOnly}}},
				{Scope: "quay.io/openshift-release-dev/ocp-release", Prefix: "quay.io/openshift-release-dev/ocp-release", Location: "quay.io/openshift-release-dev/ocp-release",
					Mirrors: []MirrorState{{Location: "mirror.example.com:8443/ocp4/openshift4", PullFromMirror: PullFromMirrorDigestOnly}}},
				{Scope: "quay.io/openshift-release-dev/ocp-v4.0-art-dev", Prefix: "quay.io/openshift-release-dev/ocp-v4.0-art-dev", Location: "quay.io/openshift-release-dev/ocp-v4.0-art-dev",
					Mirrors: []MirrorState{{Location: "mirror.example.com:8443/ocp4/openshift4", PullFromMirror: PullFromMirrorDigestOnly}}},
				{Scope: "registry.redhat.io/ubi9", Prefix: "registry.redhat.io/ubi9", Location: "registry.redhat.io/ubi9", Blocked: true,
					Mirrors: []MirrorState{
						{Location: "mirror.example.com:8443/ubi9", PullFromMirror: PullFromMirrorDigestOnly},
						{Location: "backup.example.com/ubi9", PullFromMirror: PullFromMirrorDigestOnly},
					}},
			}},
		},
		{
			name: "MCO: IDMS gains a mirror and NeverContactSource is dropped",
			old:  mcoIDMS,
			new: strings.Replace(strings.Replace(mcoIDMS, "  blocked = true\n", "", 1),
				"    location = \"mirror.example.com:8443/ocp4/openshift4\"\n    pull-from-mirror = \"digest-only\"\n\n[[registry]]\n  prefix = \"\"\n  location = \"quay.io/openshift-release-dev/ocp-v4.0-art-dev\"",
				"    location = \"mirror.example.com:8443/ocp4/openshift4\"\n    pull-from-mirror = \"digest-only\"\n\n  [[registry.mirror]]\n    location = \"dr.example.com/ocp4/openshift4\"\n    pull-from-mirror = \"digest-only\"\n\n[[registry]]\n  prefix = \"\"\n  location = \"quay.io/openshift-release-dev/ocp-v4.0-art-dev\"", 1),
			want: ConfigDiff{
				RegistriesChanged: []RegistryChange{{
					Scope: "registry.redhat.io/ubi9", Fields: []string{"blocked"},
					Old: RegistryState{Scope: "registry.redhat.io/ubi9", Prefix: "registry.redhat.io/ubi9", Location: "registry.redhat.io/ubi9", Blocked: true,
						Mirrors: []MirrorState{{Location: "mirror.example.com:8443/ubi9", PullFromMirror: PullFromMirrorDigestOnly}, {Location: "backup.example.com/ubi9", PullFromMirror: PullFromMirrorDigestOnly}}},
					New: RegistryState{Scope: "registry.redhat.io/ubi9", Prefix: "registry.redhat.io/ubi9", Location: "registry.redhat.io/ubi9",
						Mirrors: []MirrorState{{Location: "mirror.example.com:8443/ubi9", PullFromMirror: PullFromMirrorDigestOnly}, {Location: "backup.example.com/ubi9", PullFromMirror: PullFromMirrorDigestOnly}}},
				}},
				MirrorsAdded: []MirrorChange{{Scope: "quay.io/openshift-release-dev/ocp-release", Location: "dr.example.com/ocp4/openshift4", PullFromMirror: PullFromMirrorDigestOnly}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Diff(mustParse(t, tt.old), mustParse(t, tt.new))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Diff mismatch (-want +got):\n%s", diff)
			}
			if got.Empty() != cmp.Equal(tt.want, ConfigDiff{}) {
				t.Errorf("Empty() = %v, want %v", got.Empty(), !got.Empty())
			}
			// A change and its reverse are either both empty or both not.
			if back := Diff(mustParse(t, tt.new), mustParse(t, tt.old)); back.Empty() != got.Empty() {
				t.Errorf("reverse Diff Empty() = %v, forward %v", back.Empty(), got.Empty())
			}
		})
	}
}

// TestKnownKeysAreTheLibrarys: the keys Parse takes as modelled (and so
// leaves out of Config.Other) are exactly the toml keys of
// sysregistriesv2's types, which Diff compares. A new library version that
// adds a setting fails here rather than having the diff ignore it.
func TestKnownKeysAreTheLibrarys(t *testing.T) {
	tags := func(typ reflect.Type) []string {
		var out []string
		var walk func(reflect.Type)
		walk = func(typ reflect.Type) {
			for f := range typ.Fields() {
				tag, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
				switch {
				case f.Anonymous && tag == "":
					walk(f.Type)
				case tag != "" && tag != "-":
					out = append(out, tag)
				}
			}
		}
		walk(typ)
		slices.Sort(out)
		return out
	}
	keys := func(m map[string]bool) []string {
		out := make([]string, 0, len(m))
		for k := range m {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	for name, tc := range map[string]struct {
		typ   reflect.Type
		known map[string]bool
	}{
		"top level": {reflect.TypeFor[sysregistriesv2.V2RegistriesConf](), topLevelKeys},
		"registry":  {reflect.TypeFor[sysregistriesv2.Registry](), registryKeys},
		"mirror":    {reflect.TypeFor[sysregistriesv2.Endpoint](), mirrorKeys},
	} {
		if d := cmp.Diff(tags(tc.typ), keys(tc.known)); d != "" {
			t.Errorf("%s: the library's keys (-) and ndp's (+) differ; teach Diff the new setting:\n%s", name, d)
		}
	}
}

func TestDiffAbsentFile(t *testing.T) {
	empty := mustParse(t, "# only a comment\n")
	conf := mustParse(t, "[[registry]]\nlocation = \"quay.io\"\n")
	state := RegistryState{Scope: "quay.io", Prefix: "quay.io", Location: "quay.io"}
	tests := []struct {
		name     string
		old, new *Config
		want     ConfigDiff
	}{
		{"both absent", nil, nil, ConfigDiff{}},
		{"absent to empty", nil, empty, ConfigDiff{}},
		{"empty to absent", empty, nil, ConfigDiff{}},
		{"file created", nil, conf, ConfigDiff{RegistriesAdded: []RegistryState{state}}},
		{"file deleted", conf, nil, ConfigDiff{RegistriesRemoved: []RegistryState{state}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Diff(tt.old, tt.new)); diff != "" {
				t.Errorf("Diff mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDiffJSON(t *testing.T) {
	tests := []struct {
		name string
		d    ConfigDiff
		want string
	}{
		{"empty diff keeps booleans", ConfigDiff{}, `{"searchChanged":false,"searchAppendedOnly":false,"searchReordered":false}`},
		{"camelCase fields", Diff(
			mustParse(t, "[[registry]]\nlocation = \"quay.io\"\n[[registry.mirror]]\nlocation = \"m.io\"\n"),
			mustParse(t, "unqualified-search-registries = [\"quay.io\"]\n[[registry]]\nlocation = \"quay.io\"\nmirror-by-digest-only = true\n[[registry.mirror]]\nlocation = \"m.io\"\n"),
		), `{"searchChanged":true,"searchAppendedOnly":true,"searchAdded":["quay.io"],"searchReordered":false,` +
			`"mirrorsChanged":[{"scope":"quay.io","location":"m.io","pullFromMirror":"digest-only","insecure":false,` +
			`"fields":["pullFromMirror"],"old":{"location":"m.io","pullFromMirror":"all","insecure":false}}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.d)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, string(b)); diff != "" {
				t.Errorf("JSON mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// benchConf renders n registries, each with two mirrors, in the MCO style.
func benchConf(n int, pfm string) []byte {
	var b strings.Builder
	b.WriteString("unqualified-search-registries = [\"registry.access.redhat.com\", \"docker.io\"]\nshort-name-mode = \"\"\n")
	for i := range n {
		fmt.Fprintf(&b, "\n[[registry]]\n  prefix = \"\"\n  location = \"quay.io/team%02d/app\"\n", i)
		for j := range 2 {
			fmt.Fprintf(&b, "\n  [[registry.mirror]]\n    location = \"mirror%d.example.com:8443/team%02d/app\"\n    pull-from-mirror = %q\n", j, i, pfm)
		}
	}
	return []byte(b.String())
}

func BenchmarkParseDiff(b *testing.B) {
	oldData, newData := benchConf(20, "digest-only"), benchConf(20, "all")
	b.SetBytes(int64(len(oldData) + len(newData)))
	b.ReportAllocs()
	for b.Loop() {
		o, err := Parse(oldData)
		if err != nil {
			b.Fatal(err)
		}
		n, err := Parse(newData)
		if err != nil {
			b.Fatal(err)
		}
		if d := Diff(o, n); len(d.MirrorsChanged) != 40 {
			b.Fatalf("got %d mirror changes, want 40", len(d.MirrorsChanged))
		}
	}
}
