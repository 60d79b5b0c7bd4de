package mcorules

import (
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

func TestTOML11Syntax(t *testing.T) {
	for _, tc := range []struct {
		name, doc, want string // want: "" for TOML 1.0, else a part of the message
	}{
		{"registries", RegistriesBase, ""},
		{"array over lines", "a = [\n  \"x\",\n  \"y\",\n]\n", ""},
		{"inline table on one line", "a = { b = 1, c = \"}\" }\n", ""},
		{"array over lines inside an inline table", "a = { b = [\n1,\n2] }\n", ""},
		{"escaped backslash before e", `a = "\\e"` + "\n", ""},
		{"literal string", `a = '\e\x'` + "\n", ""},
		{"multi-line literal", "a = '''\n\\e {\n'''\n", ""},
		{"comment", "# a = { b = 1,\n# }\n", ""},
		{"date-time with seconds", "a = 1979-05-27T07:32:00Z\nb = 07:32:00\nc = 1979-05-27 07:32:00.5\n", ""},
		{"quoted key", "\"a{\" = 1\n[\"x[\"]\ny = 2\n", ""},
		{"ip in a string", "a = \"[::1]:5000\"\n", ""},
		{"multi-line basic ending in quotes", "a = \"\"\"x\"\"\"\"\"\nb = { c = 1 }\n", ""},
		{"newline in an inline table", "a = { b = 1,\n c = 2 }\n", "line 1: a newline inside an inline table"},
		{"trailing comma", "x = 1\na = { b = 1, }\n", "line 2: a trailing comma"},
		{"escape e", "a = \"x\\ey\"\n", `the escape \e`},
		{"escape x in a multi-line string", "a = \"\"\"\nx\n\\x41\"\"\"\n", `line 3: the escape \x`},
		{"time without seconds", "a = 07:32\n", "a time without seconds"},
		{"date-time without seconds", "a = 1979-05-27T07:32Z\n", "a time without seconds"},
		{"inline table in an array, over lines", "a = [\n { b = 1\n } ]\n", "line 2: a newline inside an inline table"},
	} {
		got := toml11Syntax(tc.doc)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
		// What is flagged is TOML 1.1 that ndp's decoder reads; what is
		// not flagged decodes the same.
		var v map[string]any
		if _, err := toml.Decode(tc.doc, &v); err != nil {
			t.Errorf("%s: not TOML 1.1 either: %v", tc.name, err)
		}
	}
}

func TestTOML11SyntaxFailsTheUpdate(t *testing.T) {
	d, err := Decide(Input{From: cfg("old"), To: cfg("new", setFile(RegistriesConfPath, RegistriesBase+"\n[aliases]\nx = \"a\\x41\"\n")), Policies: Defaults()})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(d.Error, `new /etc/containers/registries.conf: failed decoding TOML: line 13: the escape \x`) || d.Drain {
		t.Errorf("error %q drain %t", d.Error, d.Drain)
	}
}

// FuzzTOML11Syntax: whatever the bytes, no panic, and a flagged document
// is one ndp's TOML 1.1 decoder would not refuse for that reason alone
// (checked on the seeds above by TestTOML11Syntax).
func FuzzTOML11Syntax(f *testing.F) {
	for _, s := range []string{RegistriesBase, "a = { b = 1,\n}", `a = "\e"`, "a = '''x'''''", `a = """\`, "a = 07:3", "=0", "a=[{", "\"", "'''"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_ = toml11Syntax(s)
	})
}
