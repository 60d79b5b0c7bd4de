package loader_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/bundle"

	"github.com/ndp-dev/ndp/internal/testkit/builder"
	"github.com/ndp-dev/ndp/planner/changeset"
	"github.com/ndp-dev/ndp/planner/engine"
	"github.com/ndp-dev/ndp/planner/loader"
	"github.com/ndp-dev/ndp/planner/policy"
)

func TestLoadPolicyFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("multi.yaml", `apiVersion: ndp.dev/v1alpha1
kind: NodeDisruptionPolicy
metadata: {name: one}
spec:
  files:
  - {path: /etc/one, actions: [{type: None}]}
---
apiVersion: ndp.dev/v1alpha1
kind: NodeDisruptionPolicy
metadata: {name: two}
spec:
  priority: 7
  rego: |
    package ndp.policy.two

    claims contains {"change": c.id, "actions": [{"type": "None"}]} if {
    	some c in input.changes
    	c.path == "/etc/two"
    }
`)
	write("sub/loose.rego", "package ndp.policy.loose\n\nclaims := set()\n")
	write("sub/loose_test.rego", "package ndp.policy.loose_test\n\nimport data.ndp.policy.loose\n\ntest_empty if count(loose.claims) == 0\n")
	write("sub/README.md", "not a policy")
	pols, loose, err := loader.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(loose) != 0 {
		t.Errorf("the loose test belongs to policy loose: %+v", loose)
	}
	got := map[string]policy.Policy{}
	for _, p := range pols {
		got[p.Name] = p
	}
	if len(got) != 3 || got["two"].Priority != 7 || got["one"].Priority != 100 || len(got["loose"].Tests) != 1 {
		t.Fatalf("policies: %+v", pols)
	}
	// spec.rego's block starts on line 14 of the file: Rego line 1 is file line 14.
	if m := got["two"].Modules[0]; m.LineOffset != 13 || m.Filename != filepath.Join(dir, "multi.yaml") {
		t.Errorf("module position: %+v", m)
	}
	if got, want := claimsOn(t, pols, "/etc/one", "/etc/two"), `one file:/etc/one [{"type":"None"}]; two file:/etc/two [{"type":"None"}]`; got != want {
		t.Errorf("claims: %s, want %s", got, want)
	}
}

// claimsOn compiles the loaded policies and evaluates them on a change that
// adds the given files: the claims, one "policy change actions" each.
func claimsOn(t *testing.T, pols []policy.Policy, paths ...string) string {
	t.Helper()
	e, err := engine.New(context.Background(), pols, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	to := builder.MachineConfig("new")
	for _, p := range paths {
		to.WithFile(p, p)
	}
	cs, err := changeset.Diff(builder.MachineConfig("old").Config(t), to.Config(t))
	if err != nil {
		t.Fatal(err)
	}
	claims, err := e.Evaluate(context.Background(), cs)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range claims {
		actions, _ := json.Marshal(c.Actions)
		out = append(out, c.Policy+" "+c.Change+" "+string(actions))
	}
	slices.Sort(out)
	return strings.Join(out, "; ")
}

func TestLoadPolicyErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, content string
		want          []string
	}{
		{"kind.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", []string{"kind.yaml: document 1", "expected ndp.dev/v1alpha1 NodeDisruptionPolicy"}},
		{"second.yaml", "apiVersion: ndp.dev/v1alpha1\nkind: NodeDisruptionPolicy\nmetadata: {name: a}\n---\napiVersion: ndp.dev/v1alpha1\nkind: NodeDisruptionPolicy\nmetadata: {name: b}\nspec: {prio: 1}\n", []string{"second.yaml: document 2", `unknown field "prio"`}},
		{"broken.yaml", "apiVersion: ndp.dev/v1alpha1\nkind: [\n", []string{"broken.yaml", "line 2", "malformed YAML"}},
		{"empty.yaml", "# nothing\n", []string{"empty.yaml", "no NodeDisruptionPolicy documents"}},
		{"notes.txt", "x", []string{"notes.txt", "unsupported file type"}},
		{"bad.tar.gz", "not a tarball", []string{"bad.tar.gz", "invalid OPA bundle"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name)
			if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			_, _, err := loader.Load(path)
			if err == nil {
				t.Fatal("loaded, want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestLoadBundle(t *testing.T) {
	src := "package ndp.policy.template\n\nimport data.ndp.lib\n\nclaims contains {\"change\": c.id, \"match\": \"/etc/template/\", \"actions\": [lib.restart(\"template.service\")]} if {\n\tsome c in lib.file_changes\n\t\"/etc/template/\" in c.dirs\n}\n"
	test := "package ndp.policy.template_test\n\nimport data.ndp.policy.template\n\ntest_claims if {\n\tcount(template.claims) == 1 with input.changes as [{\"id\": \"file:/etc/template/a\", \"kind\": \"file\", \"path\": \"/etc/template/a\", \"dirs\": [\"/etc/template/\", \"/etc/\", \"/\"]}]\n}\n"
	roots := []string{"ndp/policy/template", "ndp/policy/template_test"}
	b := bundle.Bundle{
		Manifest: bundle.Manifest{Revision: "v1", Roots: &roots, Metadata: map[string]any{"priority": 150}},
		Data:     map[string]any{},
		Modules: []bundle.ModuleFile{
			{URL: "/template.rego", Path: "/template.rego", Raw: []byte(src)},
			{URL: "/template_test.rego", Path: "/template_test.rego", Raw: []byte(test)},
		},
	}
	var buf bytes.Buffer
	if err := bundle.NewWriter(&buf).Write(b); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "template.tar.gz")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	pols, _, err := loader.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(pols) != 1 || pols[0].Name != "template" || pols[0].Priority != 150 || len(pols[0].Modules) != 1 || len(pols[0].Tests) != 1 {
		t.Fatalf("bundle policy: %+v", pols)
	}
	got := claimsOn(t, append([]policy.Policy{policy.DefaultPolicy()}, pols...), "/etc/template/app.conf")
	if want := `template file:/etc/template/app.conf [{"type":"Restart","restart":{"serviceName":"template.service"}}]`; got != want {
		t.Errorf("claims: %s, want %s", got, want)
	}
	var out bytes.Buffer
	if sum, err := engine.RunRegoTests(context.Background(), pols, nil, &out, engine.TestOptions{}); err != nil || sum.Passed == 0 || sum.Failed != 0 {
		t.Errorf("bundle tests: %+v %v\n%s", sum, err, out.String())
	}
}
