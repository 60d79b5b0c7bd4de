package policy

import (
	"errors"
	"fmt"
	"strings"

	"github.com/open-policy-agent/opa/topdown"
	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/ndp-dev/ndp/planner/sandbox"
)

// Package is where every policy's modules live: Package.<root>.
const Package = "ndp.policy"

// Root is the first package segment under ndp.policy.
func Root(mod *ast.Module) (string, error) {
	path := mod.Package.Path
	// path[0] is "data".
	if len(path) < 4 || !path[1].Equal(ast.InternedTerm("ndp")) || !path[2].Equal(ast.InternedTerm("policy")) {
		return "", fmt.Errorf("package %s is not under %s: policy packages must be %s.<name>", strings.TrimPrefix(path.String(), "data."), Package, Package)
	}
	root, ok := path[3].Value.(ast.String)
	if !ok {
		return "", fmt.Errorf("package %s: invalid package name", path)
	}
	return string(root), nil
}

// Sources are the Rego modules of a policy set, parsed, with who owns each,
// so that compile, evaluation and test errors point at the author's file,
// line and column and name the policy.
type Sources struct {
	policies map[string]*Policy
	modules  map[string]*Module     // by compiler key
	parsed   map[string]*ast.Module // by compiler key
}

func NewSources() *Sources {
	return &Sources{policies: map[string]*Policy{}, modules: map[string]*Module{}, parsed: map[string]*ast.Module{}}
}

// Parse parses a module as Rego v1 inside the sandbox. p is nil for the
// engine's own modules.
func (s *Sources) Parse(p *Policy, m *Module) (*ast.Module, error) {
	key := m.Key()
	if _, dup := s.modules[key]; dup {
		key = fmt.Sprintf("%s#%d", key, len(s.modules))
	}
	mod, err := ast.ParseModuleWithOpts(key, m.Source, ast.ParserOptions{RegoVersion: ast.RegoV1, Capabilities: sandbox.Capabilities})
	s.modules[key] = m
	if err != nil {
		return nil, s.RegoError(err, p)
	}
	if mod == nil {
		return nil, s.RegoError(errors.New("empty module: a package declaration is required"), p)
	}
	s.parsed[key] = mod
	return mod, nil
}

// RegoError turns OPA errors into a PolicyError per policy, with positions
// in the author's file and forbidden builtins named as such.
func (s *Sources) RegoError(err error, p *Policy) error {
	var astErrs ast.Errors
	if !errors.As(err, &astErrs) {
		var one *ast.Error
		if errors.As(err, &one) {
			astErrs = ast.Errors{one}
		}
	}
	if len(astErrs) == 0 {
		if p != nil {
			return &Error{Policy: p.Name, Origin: p.Origin, Messages: []string{err.Error()}}
		}
		return err
	}
	byPolicy := map[string]*Error{}
	var order []string
	for _, ae := range astErrs {
		msg := sandbox.ExplainRemovedBuiltin(ae.Code + ": " + ae.Message)
		owner := p
		if ae.Location != nil {
			if m, ok := s.modules[ae.Location.File]; ok {
				msg = m.Position(ae.Location.Row, ae.Location.Col) + ": " + msg
				if owner == nil {
					owner = s.ownerOf(m)
				}
			}
		}
		name, origin := "", "ndp policy library"
		if owner != nil {
			name, origin = owner.Name, owner.Origin
		}
		pe, ok := byPolicy[name]
		if !ok {
			pe = &Error{Policy: name, Origin: origin}
			byPolicy[name] = pe
			order = append(order, name)
		}
		pe.Messages = append(pe.Messages, msg)
	}
	if len(order) == 1 {
		return byPolicy[order[0]]
	}
	errs := make([]error, 0, len(order))
	for _, n := range order {
		errs = append(errs, byPolicy[n])
	}
	return errors.Join(errs...)
}

// AddPolicy registers p as the owner of its modules; it returns the policy
// already registered under p's name, if any, and then registers nothing.
func (s *Sources) AddPolicy(p *Policy) (prev *Policy, dup bool) {
	if prev, dup := s.policies[p.Name]; dup {
		return prev, true
	}
	s.policies[p.Name] = p
	return nil, false
}

// ParsedOf are the parsed modules of the named policy (not its tests).
func (s *Sources) ParsedOf(name string) []*ast.Module {
	p := s.policies[name]
	if p == nil {
		return nil
	}
	own := map[*Module]bool{}
	for i := range p.Modules {
		own[&p.Modules[i]] = true
	}
	var out []*ast.Module
	for key, m := range s.modules {
		if mod := s.parsed[key]; mod != nil && own[m] {
			out = append(out, mod)
		}
	}
	return out
}

// PolicyNamed is the registered policy of that name.
func (s *Sources) PolicyNamed(name string) (*Policy, bool) {
	p, ok := s.policies[name]
	return p, ok
}

// ParsedModules are the modules parsed so far, by compiler key.
func (s *Sources) ParsedModules() map[string]*ast.Module { return s.parsed }

func (s *Sources) ownerOf(m *Module) *Policy {
	for _, p := range s.policies {
		for _, list := range [][]Module{p.Modules, p.Tests} {
			for i := range list {
				if &list[i] == m {
					return p
				}
			}
		}
	}
	return nil
}

// EvalError places an evaluation error in the author's file and names the
// policy whose module raised it.
func (s *Sources) EvalError(err error) error {
	var te *topdown.Error
	if errors.As(err, &te) {
		msg := te.Code + ": " + te.Message
		if te.Location != nil {
			if m, ok := s.modules[te.Location.File]; ok {
				msg = m.Position(te.Location.Row, te.Location.Col) + ": " + msg
				if p := s.ownerOf(m); p != nil {
					return &Error{Policy: p.Name, Origin: p.Origin, Messages: []string{msg}}
				}
			}
		}
		return fmt.Errorf("evaluating policies: %s", msg)
	}
	return fmt.Errorf("evaluating policies: %w", err)
}
