package planner

import (
	"errors"
	"fmt"

	"github.com/open-policy-agent/opa/v1/ast"
)

// sources are the Rego modules of a policy set, parsed, with who owns each,
// so that compile, evaluation and test errors point at the author's file,
// line and column and name the policy.
type sources struct {
	policies map[string]*Policy
	modules  map[string]*Module     // by compiler key
	parsed   map[string]*ast.Module // by compiler key
}

func newSources() *sources {
	return &sources{policies: map[string]*Policy{}, modules: map[string]*Module{}, parsed: map[string]*ast.Module{}}
}

// parse parses a module as Rego v1 inside the sandbox. p is nil for the
// engine's own modules.
func (s *sources) parse(p *Policy, m *Module) (*ast.Module, error) {
	key := m.key()
	if _, dup := s.modules[key]; dup {
		key = fmt.Sprintf("%s#%d", key, len(s.modules))
	}
	mod, err := ast.ParseModuleWithOpts(key, m.Source, ast.ParserOptions{RegoVersion: ast.RegoV1, Capabilities: sandboxCapabilities})
	s.modules[key] = m
	if err != nil {
		return nil, s.regoError(err, p)
	}
	if mod == nil {
		return nil, s.regoError(errors.New("empty module: a package declaration is required"), p)
	}
	s.parsed[key] = mod
	return mod, nil
}

// regoError turns OPA errors into a PolicyError per policy, with positions
// in the author's file and forbidden builtins named as such.
func (s *sources) regoError(err error, p *Policy) error {
	var astErrs ast.Errors
	if !errors.As(err, &astErrs) {
		var one *ast.Error
		if errors.As(err, &one) {
			astErrs = ast.Errors{one}
		}
	}
	if len(astErrs) == 0 {
		if p != nil {
			return &PolicyError{Policy: p.Name, Origin: p.Origin, Messages: []string{err.Error()}}
		}
		return err
	}
	byPolicy := map[string]*PolicyError{}
	var order []string
	for _, ae := range astErrs {
		msg := explainRemovedBuiltin(ae.Code + ": " + ae.Message)
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
			pe = &PolicyError{Policy: name, Origin: origin}
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

func (s *sources) ownerOf(m *Module) *Policy {
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
