package sandbox

import (
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
)

// removedBuiltinPrefixes are the builtins a policy may not call: anything
// that reaches the network or the runtime, or whose result is not a pure
// function of the input (time, randomness, UUIDs). Plans must be
// reproducible from (policy revision, from, to).
var removedBuiltinPrefixes = []string{
	"http.", "net.", "opa.runtime", "time.", "rand.", "uuid.",
	"io.jwt.decode_verify", "crypto.x509.parse_and_verify_certificates",
	"providers.aws.",
}

// unboundedBuiltinPrefixes are builtins one call of which can take
// unbounded memory or time, out of reach of the evaluation's deadline and
// memory watchdog (OPA cannot stop a builtin midway), and that no node
// disruption policy needs: all paths of a graph (exponential), JSON patches
// (each copy may double the document), Go templates (nested ranges), parsing
// Rego, GraphQL or JSON schemas, signing JWTs (serialising any value), and
// the regex variants that compile patterns past the sandbox's checks
// (guards.go).
var unboundedBuiltinPrefixes = []string{
	"graph.reachable_paths", "json.patch", "strings.render_template",
	"rego.parse_module", "graphql.", "json.match_schema", "json.verify_schema",
	"io.jwt.encode_sign", "io.jwt.encode_sign_raw", "regex.template_match", "regex.globs_match",
}

func matchesPrefix(name string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasSuffix(p, ".") {
			if strings.HasPrefix(name, p) {
				return true
			}
		} else if name == p || strings.HasPrefix(name, p+".") {
			return true
		}
	}
	return false
}

func isRemovedBuiltin(name string) bool {
	return matchesPrefix(name, removedBuiltinPrefixes) || matchesPrefix(name, unboundedBuiltinPrefixes)
}

// Capabilities is this OPA version's capabilities without the
// removed builtins and with no network access.
var Capabilities = func() *ast.Capabilities {
	caps := ast.CapabilitiesForThisVersion()
	kept := caps.Builtins[:0]
	for _, b := range caps.Builtins {
		if !isRemovedBuiltin(b.Name) {
			kept = append(kept, b)
		}
	}
	caps.Builtins = kept
	caps.AllowNet = []string{}
	return caps
}()

// ExplainRemovedBuiltin rewrites OPA's "undefined function http.send" so
// that the policy author learns the builtin is forbidden, not misspelt.
func ExplainRemovedBuiltin(msg string) string {
	const undefined = "undefined function "
	i := strings.Index(msg, undefined)
	if i < 0 {
		return msg
	}
	name := msg[i+len(undefined):]
	if j := strings.IndexAny(name, " ,:"); j >= 0 {
		name = name[:j]
	}
	switch {
	case matchesPrefix(name, removedBuiltinPrefixes):
		return msg[:i] + "builtin " + name + " is not allowed in ndp policies (no network, runtime, time or randomness: plans must be reproducible)"
	case matchesPrefix(name, unboundedBuiltinPrefixes):
		return msg[:i] + "builtin " + name + " is not allowed in ndp policies (one call can take unbounded memory or time, which the sandbox cannot stop)"
	}
	return msg
}
