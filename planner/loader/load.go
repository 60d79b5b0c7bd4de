package loader

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	yamlv3 "go.yaml.in/yaml/v3"
	kjson "sigs.k8s.io/json"

	"github.com/ndp-dev/ndp/apis/v1alpha1"
	"github.com/ndp-dev/ndp/machineconfig"
	"github.com/ndp-dev/ndp/planner/policy"
	"github.com/ndp-dev/ndp/planner/sandbox"
)

// Load reads policies from files: NodeDisruptionPolicy YAML or JSON
// (one or more documents), Rego modules (*.rego; *_test.rego are their
// tests), OPA bundles (*.tar.gz), and directories of them (recursively, in
// name order). Loose .rego files of one package root form one policy named
// after that root, priority 100. Loose *_test.rego files join the policy
// whose package they test; the others are returned apart, for `ndp test`.
func Load(paths ...string) (pols []policy.Policy, looseTests []policy.Module, err error) {
	l := &loader{regoByRoot: map[string]int{}}
	for _, p := range paths {
		if err := l.load(p, true); err != nil {
			return nil, nil, err
		}
	}
	return l.policies, l.attachTests(), nil
}

type loader struct {
	policies   []policy.Policy
	regoByRoot map[string]int // index into policies
	tests      []policy.Module
}

func (l *loader) load(path string, explicit bool) error {
	info, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("policy %s: %w", path, unwrapPathError(err))
	}
	if info.IsDir() {
		entries, err := os.ReadDir(path)
		if err != nil {
			return fmt.Errorf("policy %s: %w", path, unwrapPathError(err))
		}
		for _, e := range entries { // os.ReadDir sorts by name
			if err := l.load(filepath.Join(path, e.Name()), false); err != nil {
				return err
			}
		}
		return nil
	}
	switch {
	case strings.HasSuffix(path, ".tar.gz") || strings.HasSuffix(path, ".tgz"):
		return l.loadBundle(path)
	case strings.HasSuffix(path, ".rego"):
		return l.loadRego(path)
	case strings.HasSuffix(path, ".yaml"), strings.HasSuffix(path, ".yml"), strings.HasSuffix(path, ".json"):
		return l.loadYAML(path)
	case explicit:
		return fmt.Errorf("policy %s: unsupported file type (expected .yaml, .yml, .json, .rego, .tar.gz or a directory)", path)
	}
	return nil // other files in a directory (READMEs) are not policies
}

func readLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, unwrapPathError(err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("larger than the limit of %d bytes", limit)
	}
	return data, nil
}

// unwrapPathError drops the path os errors repeat, since callers name it.
func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func (l *loader) loadRego(path string) error {
	data, err := readLimited(path, policy.MaxModuleBytes)
	if err != nil {
		return fmt.Errorf("policy %s: %w", path, err)
	}
	m := policy.Module{Filename: path, Source: string(data)}
	if strings.HasSuffix(path, "_test.rego") {
		l.tests = append(l.tests, m)
		return nil
	}
	// The package decides which policy a loose module belongs to; a parse
	// error is reported by the engine, with its line, under the file's name.
	root := strings.TrimSuffix(filepath.Base(path), ".rego")
	if mod, err := ast.ParseModuleWithOpts(path, m.Source, ast.ParserOptions{RegoVersion: ast.RegoV1, Capabilities: sandbox.Capabilities}); err == nil && mod != nil {
		if r, err := policy.Root(mod); err == nil {
			root = r
		}
	}
	i, ok := l.regoByRoot[root]
	if !ok {
		i = len(l.policies)
		l.regoByRoot[root] = i
		l.policies = append(l.policies, policy.Policy{Name: root, Priority: v1alpha1.UserDefaultPriority, Origin: path})
	}
	l.policies[i].Modules = append(l.policies[i].Modules, m)
	return nil
}

// attachTests gives each loose *_test.rego to the loose-Rego policy whose
// package it tests (ndp.policy.<root>[_test]...) and returns the others.
func (l *loader) attachTests() []policy.Module {
	var loose []policy.Module
	for _, t := range l.tests {
		root := ""
		if mod, err := ast.ParseModuleWithOpts(t.Filename, t.Source, ast.ParserOptions{RegoVersion: ast.RegoV1, Capabilities: sandbox.Capabilities}); err == nil && mod != nil {
			if r, err := policy.Root(mod); err == nil {
				root = strings.TrimSuffix(r, "_test")
			}
		}
		if i, ok := l.regoByRoot[root]; ok && root != "" {
			l.policies[i].Tests = append(l.policies[i].Tests, t)
		} else {
			loose = append(loose, t)
		}
	}
	return loose
}

func (l *loader) loadYAML(path string) error {
	data, err := readLimited(path, policy.MaxPolicySetSize)
	if err != nil {
		return fmt.Errorf("policy %s: %w", path, err)
	}
	docs, err := ParseNodeDisruptionPolicies(path, data)
	if err != nil {
		return err
	}
	l.policies = append(l.policies, docs...)
	return nil
}

// ParseNodeDisruptionPolicies decodes one or more NodeDisruptionPolicy
// documents. Unknown fields are errors (a typo must not silently drop a
// rule); errors carry the file, the document and, where known, the line.
func ParseNodeDisruptionPolicies(file string, data []byte) ([]policy.Policy, error) {
	dec := yamlv3.NewDecoder(bytes.NewReader(data))
	var out []policy.Policy
	for doc := 1; ; doc++ {
		var node yamlv3.Node
		err := dec.Decode(&node)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, &machineconfig.InputError{Object: file, Err: fmt.Errorf("malformed YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))}
		}
		if len(node.Content) == 0 || node.Content[0].Kind == yamlv3.ScalarNode && node.Content[0].Tag == "!!null" {
			continue // an empty document between separators
		}
		p, err := decodePolicyNode(file, doc, &node)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, &machineconfig.InputError{Object: file, Err: errors.New("no NodeDisruptionPolicy documents")}
	}
	return out, nil
}

func decodePolicyNode(file string, doc int, node *yamlv3.Node) (policy.Policy, error) {
	object := fmt.Sprintf("%s: document %d", file, doc)
	var generic any
	if err := node.Decode(&generic); err != nil {
		return policy.Policy{}, &machineconfig.InputError{Object: object, Line: node.Line, Err: err}
	}
	raw, err := json.Marshal(generic)
	if err != nil {
		return policy.Policy{}, &machineconfig.InputError{Object: object, Err: err}
	}
	var ndp v1alpha1.NodeDisruptionPolicy
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ndp); err != nil {
		return policy.Policy{}, &machineconfig.InputError{Object: object, Err: fmt.Errorf("not a valid NodeDisruptionPolicy: %s", strings.TrimPrefix(err.Error(), "json: "))}
	}
	// encoding/json matches field names case-insensitively; the API server
	// does not, and drops (or refuses) "Priority" where it wants "priority".
	// A document the cluster reads otherwise is refused, naming the field.
	if strictErrs, err := kjson.UnmarshalStrict(raw, &v1alpha1.NodeDisruptionPolicy{}, kjson.DisallowUnknownFields); err == nil && len(strictErrs) > 0 {
		return policy.Policy{}, &machineconfig.InputError{Object: object, Err: fmt.Errorf("not a valid NodeDisruptionPolicy: %v (field names are case-sensitive)", strictErrs[0])}
	}
	if ndp.Kind != v1alpha1.Kind || ndp.APIVersion != v1alpha1.GroupVersion.String() {
		return policy.Policy{}, &machineconfig.InputError{Object: object, Field: "kind", Err: fmt.Errorf("is %s %s, expected %s %s", ndp.APIVersion, ndp.Kind, v1alpha1.GroupVersion, v1alpha1.Kind)}
	}
	regoLine := blockOffset(node, "spec", "rego")
	testsLine := blockOffset(node, "spec", "regoTests")
	return policy.FromAPI(file, &ndp, regoLine, testsLine), nil
}

// blockOffset is the line before the first line of a scalar at keys, so
// that Rego line n is file line n+offset.
func blockOffset(doc *yamlv3.Node, keys ...string) int {
	n := doc
	if n.Kind == yamlv3.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	for _, k := range keys {
		if n.Kind != yamlv3.MappingNode {
			return 0
		}
		var next *yamlv3.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == k {
				next = n.Content[i+1]
			}
		}
		if next == nil {
			return 0
		}
		n = next
	}
	if n.Style&(yamlv3.LiteralStyle|yamlv3.FoldedStyle) != 0 {
		return n.Line // the block starts on the line after the indicator
	}
	return n.Line - 1
}

func (l *loader) loadBundle(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("policy %s: %w", path, unwrapPathError(err))
	}
	defer f.Close()
	p, err := ReadBundle(path, f, nil)
	if err != nil {
		return err
	}
	l.policies = append(l.policies, p)
	return nil
}
