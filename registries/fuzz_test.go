package registries_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/ndp-dev/ndp/registries"
)

// fuzzSeeds are registries.conf files as ndp's renderer and administrators
// write them, plus the odd corners of the format; what the MCO renders is
// in testdata/*.conf, which the registries tests share.
var fuzzSeeds = []string{
	"",
	"# only a comment\n",
	// Unmodelled keys of TOML's other types (unmodelled-keys.conf has more).
	"[[registry]]\nlocation = \"quay.io\"\n[[registry.mirror]]\nlocation = \"m.example.com\"\nwhen = 1979-05-27T07:32:00-08:00\nratio = nan\n",
	"[registries.search]\nregistries = [\"quay.io\"]\n",
	"[registries.search]\nregistries = [\"quay.io\"]\n[[registry]]\nlocation = \"a.io\"\n",
	"registry = [{location = \"a.io\", mirror = [{location = \"m.io\", pull-from-mirror = \"all\"}]}]\n",
	"[[registry]]\nlocation = \"a.io\"\n\nblocked = \"yes\"\n",
	"[[registry]]\nprefix = \"quay.io/foo\"\n",
	"[[Registry]]\nLocation = \"a.io\"\nInsecure = true\n",
	"unqualified-search-registries = [\"[::1]:5000\", \"localhost:5000\"]\n",
	"[[registry]]\nlocation = \"a.io\"\n[[registry.mirror]]\nlocation = \"m.io\"\n[[registry.mirror]]\nlocation = \"m.io/\"\n",
	"[aliases]\n\"x\\u0001\" = \"\\u007f\"\n",
	// Settings containers/image models that the old parser did not.
	"additional-layer-store-auth-helper = \"h\"\ncredential-helpers = []\n[aliases]\n\"fedora\" = \"\"\n\"ubi\" = \"registry.access.redhat.com/ubi9\"\n" +
		"[[registry]]\nlocation = \"quay.io\"\nnamespace-proxy = \"q\"\n[[registry.mirror]]\nlocation = \"m.io\"\nnamespace-proxy = \"quay.io\"\n",
	// Duplicates containers/image accepts: the first table of a scope wins,
	// a mirror may be listed twice.
	"[[registry]]\nlocation = \"a.io\"\n[[registry.mirror]]\nlocation = \"m.io\"\n[[registry.mirror]]\nlocation = \"m.io\"\npull-from-mirror = \"tag-only\"\n[[registry]]\nprefix = \"a.io/\"\nlocation = \"b.io\"\nknob = 1\n",
	// Control characters that strconv.Quote writes as \a and \v: not TOML.
	"credential-helpers = [\"a\\u0007\"]\n[aliases]\n\"v\\u000b\" = \"\\u000b\\\\x\"\n",
}

// FuzzRegistriesConf holds Parse (containers/image's sysregistriesv2 with
// ndp's collection of unmodelled keys), Diff and Marshal to their contracts
// on arbitrary input: Parse never panics and says what is wrong with a file
// it refuses (a TOML error with a line of the file, or ErrInvalid); a
// parsed file diffed with itself, or with a second parse of the same bytes,
// is no change; what Marshal writes for a parsed file parses again to
// the same registries (Marshal drops unmodelled keys, by contract), and is
// written again byte for byte; and Render with nothing to add writes the
// same registries.
func FuzzRegistriesConf(f *testing.F) {
	for _, s := range append(fuzzSeeds, registries.TestdataConfs...) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := registries.Parse(data)
		if err != nil {
			checkParseError(t, data, err)
			return
		}
		if d := registries.Diff(c, c); !d.Empty() {
			t.Fatalf("a config diffed with itself: %+v", d)
		}
		again, err := registries.Parse(data)
		if err != nil {
			t.Fatalf("the second parse of the same bytes fails: %v", err)
		}
		if d := registries.Diff(c, again); !d.Empty() {
			t.Fatalf("two parses of the same bytes differ: %+v", d)
		}
		// An absent file is the empty config, in both directions.
		empty := emptyConfig(c)
		if registries.Diff(nil, c).Empty() != empty || registries.Diff(c, nil).Empty() != empty {
			t.Fatalf("diff with an absent file: empty config %t, diffs %+v and %+v", empty, registries.Diff(nil, c), registries.Diff(c, nil))
		}

		rendered := registries.Marshal(c)
		if err := toml10Escapes(rendered); err != nil {
			t.Fatalf("Marshal wrote a registries.conf that CRI-O's TOML 1.0 parser refuses: %v\nrendered:\n%s", err, rendered)
		}
		back, err := registries.Parse(rendered)
		if err != nil {
			t.Fatalf("Marshal wrote a registries.conf that does not parse: %v\ninput:\n%s\nrendered:\n%s", err, data, rendered)
		}
		modelled := *c
		modelled.Other = nil
		if d := registries.Diff(&modelled, back); !d.Empty() {
			t.Fatalf("Marshal does not round-trip: %+v\ninput:\n%s\nrendered:\n%s", d, data, rendered)
		}
		if again := registries.Marshal(back); !bytes.Equal(again, rendered) {
			t.Fatalf("Marshal is not stable:\nfirst:\n%s\nsecond:\n%s", rendered, again)
		}
		out, err := registries.Render(data, registries.Inputs{})
		if err != nil {
			t.Fatalf("rendering nothing over it: %v\ninput:\n%s", err, data)
		}
		if rc, err := registries.Parse(out); err != nil {
			t.Fatalf("rendering nothing over it wrote a registries.conf that does not parse: %v\ninput:\n%s\nrendered:\n%s", err, data, out)
		} else if d := registries.Diff(&modelled, rc); !d.Empty() {
			t.Fatalf("rendering nothing over it changes it: %+v\ninput:\n%s\nrendered:\n%s", d, data, out)
		}
	})
}

// emptyConfig reports whether c means what an absent file means to
// containers/image: no setting, or only its defaults spelled out.
func emptyConfig(c *registries.Config) bool {
	helpers := len(c.CredentialHelpers) == 0 || len(c.CredentialHelpers) == 1 && c.CredentialHelpers[0] == "containers-auth.json"
	for _, v := range c.Aliases {
		if v != "" {
			return false
		}
	}
	return helpers && len(c.UnqualifiedSearchRegistries) == 0 && len(c.Registries) == 0 && c.ShortNameMode == "" &&
		c.AdditionalLayerStoreAuthHelper == "" && len(c.Other) == 0
}

// checkParseError: a refused file is either a TOML error pointing at a line
// of the file, or a semantic error wrapping ErrInvalid. Nothing else: any
// other error means containers/image's parser could not be run at all.
func checkParseError(t *testing.T, data []byte, err error) {
	t.Helper()
	var se *registries.SyntaxError
	switch {
	case errors.As(err, &se):
		if lines := bytes.Count(data, []byte("\n")) + 1; se.Line < 1 || se.Line > lines {
			t.Fatalf("syntax error on line %d of a %d-line file: %v", se.Line, lines, err)
		}
		if strings.TrimSpace(se.Msg) == "" {
			t.Fatalf("syntax error without a message: %#v", se)
		}
	case errors.Is(err, registries.ErrInvalid):
		if strings.Contains(err.Error(), os.TempDir()) {
			t.Fatalf("the error names Parse's temporary file: %v", err)
		}
	default:
		t.Fatalf("unexpected error type %T: %v", err, err)
	}
}

// toml10Escapes checks that every escape Marshal wrote is one of TOML
// 1.0's, which containers/image (CRI-O) parses: \b \t \n \f \r \" \\ and
// \uXXXX. (BurntSushi/toml 1.6 also reads TOML 1.1's \xHH and \e, so
// parsing the output again would not notice them.) Marshal writes
// backslashes only inside its quoted strings.
func toml10Escapes(rendered []byte) error {
	for i := 0; i < len(rendered); i++ {
		if rendered[i] != '\\' {
			continue
		}
		if i+1 == len(rendered) {
			return errors.New("a backslash ends the file")
		}
		switch rendered[i+1] {
		case 'b', 't', 'n', 'f', 'r', '"', '\\':
			i++
		case 'u':
			i += 5
		default:
			return fmt.Errorf("escape \\%c is not TOML 1.0", rendered[i+1])
		}
	}
	return nil
}

// TestMarshalWritesTOMLEscapes: strings with control characters are written
// with TOML's escapes, not Go's (\a, \v and \x are not TOML 1.0, and
// BurntSushi/toml refuses \a and \v), so the registries.conf a base with
// such a string renders to is still readable. (containers/image refuses
// such characters in aliases, so the aliases here are plain.)
func TestMarshalWritesTOMLEscapes(t *testing.T) {
	c := &registries.Config{}
	c.CredentialHelpers = []string{"bell\a", "tab\tnewline\nquote\"backslash\\", "vt\v"}
	c.AdditionalLayerStoreAuthHelper = "nul\x00del\x7fesc\x1b"
	c.Aliases = map[string]string{"fedora": "registry.fedoraproject.org/fedora"}
	c.Registries = []registries.Registry{{Prefix: "quay.io", Endpoint: registries.Endpoint{Location: "quay.io/\x01", NamespaceProxy: "ü\u2028"},
		Mirrors: []registries.Endpoint{{Location: "m.io/é\x02", NamespaceProxy: "\x03"}}}}
	rendered := registries.Marshal(c)
	if err := toml10Escapes(rendered); err != nil {
		t.Fatalf("%v\n%s", err, rendered)
	}
	back, err := registries.Parse(rendered)
	if err != nil {
		t.Fatalf("the rendered file does not parse: %v\n%s", err, rendered)
	}
	if d := registries.Diff(c, back); !d.Empty() {
		t.Fatalf("the rendered file reads differently: %+v\n%s", d, rendered)
	}
}

// TestParseErrorOnTheFirstByte: BurntSushi/toml gives some errors on the
// first byte the offset -1; Parse sliced the file with it and panicked
// (found by FuzzRegistriesConf, testdata/fuzz/FuzzRegistriesConf/7c66d9f49edcb229).
func TestParseErrorOnTheFirstByte(t *testing.T) {
	for _, in := range []string{"\x06", "\x00", "\x7f = 1"} {
		_, err := registries.Parse([]byte(in))
		var se *registries.SyntaxError
		if !errors.As(err, &se) || se.Line != 1 {
			t.Errorf("Parse(%q): %v, want a syntax error on line 1", in, err)
		}
	}
}

// TestParseRejectsKeysDifferingInCase: two keys of one table that differ
// only in case set the same setting, and BurntSushi/toml keeps whichever it
// meets last in Go's random map order: two parses of one file differed
// (found by FuzzRegistriesConf, testdata/fuzz/FuzzRegistriesConf/70c7ea23824330a0).
// containers/image accepts such a file (CRI-O reads it either way), so
// this is a refusal ndp adds to the library's.
func TestParseRejectsKeysDifferingInCase(t *testing.T) {
	for in, want := range map[string]string{
		"[[registry]]\nlocation = \"a.io\"\nLocation = \"b.io\"\n":                                           `[[registry]] #1: keys "Location" and "location" both set location`,
		"[[registry]]\nlocation = \"a.io\"\n[[registry.mirror]]\nlocation = \"m.io\"\nLOCATION = \"n.io\"\n": `[[registry]] #1, [[registry.mirror]] #1: keys "LOCATION" and "location" both set location`,
		"short-name-mode = \"enforcing\"\nShort-Name-Mode = \"disabled\"\n":                                  `top level: keys "Short-Name-Mode" and "short-name-mode" both set short-name-mode`,
	} {
		for range 20 { // the map order the defect depended on changes from run to run
			_, err := registries.Parse([]byte(in))
			if !errors.Is(err, registries.ErrInvalid) || !strings.Contains(err.Error(), want) {
				t.Fatalf("Parse(%q): %v, want %q", in, err, want)
			}
		}
	}
	// One spelling in another case is still read, as containers/image does.
	c, err := registries.Parse([]byte("[[Registry]]\nLocation = \"a.io\"\nInsecure = true\n"))
	if err != nil || len(c.Registries) != 1 || c.Registries[0].Location != "a.io" || !c.Registries[0].Insecure {
		t.Fatalf("case-insensitive keys: %+v, %v", c, err)
	}
}
