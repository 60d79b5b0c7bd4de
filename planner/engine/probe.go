package engine

import (
	"path"
	"sort"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/ndp-dev/ndp/planner/policy"
)

// A policy's tests may pass while its rules blow up on a real change: the
// probe evaluates a policy set, before it becomes active, on a synthetic
// change set under the same sandbox limits as planning. The change set has
// one change of every kind (a file added, changed and removed, a unit, the
// SSH keys, the password hash, every OS field, storage.luks, a registries.conf change
// with a semantic diff), plus a changed file for every absolute path, and a
// changed unit for every unit name, that the candidate policies' Rego
// mentions (at most maxProbeLiterals of each), so that rules keyed on one
// path run too. It costs one evaluation of a small change set.

// maxProbeLiterals bounds the changes made from a policy's literals.
const maxProbeLiterals = 32

// Literals collects the absolute paths and unit names in the Rego of the
// named policies.
func (e *Engine) Literals(names []string) (paths, units []string) {
	seenPath, seenUnit := map[string]bool{}, map[string]bool{}
	for _, name := range names {
		for _, mod := range e.src.ParsedOf(name) {
			ast.WalkTerms(mod, func(t *ast.Term) bool {
				s, ok := t.Value.(ast.String)
				if !ok {
					return false
				}
				switch v := string(s); {
				case probePath(v) != "" && !seenPath[probePath(v)] && len(paths) < maxProbeLiterals:
					seenPath[probePath(v)] = true
					paths = append(paths, probePath(v))
				case len(v) <= policy.MaxServiceName && policy.ServiceNamePattern.MatchString(v) && !seenUnit[v] && len(units) < maxProbeLiterals:
					seenUnit[v] = true
					units = append(units, v)
				}
				return false
			})
		}
	}
	sort.Strings(paths)
	sort.Strings(units)
	return paths, units
}

// probePath turns a literal into a file path to change: the literal if it
// is a clean absolute path, a file inside it if it names a directory.
func probePath(s string) string {
	if len(s) < 2 || len(s) > 255 || s[0] != '/' || strings.ContainsAny(s, " \t\n\"'\\*?[]{}$%") {
		return ""
	}
	if strings.HasSuffix(s, "/") {
		s += "ndp-probe"
	}
	if path.Clean(s) != s {
		return ""
	}
	return s
}
