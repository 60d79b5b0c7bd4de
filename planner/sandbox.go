package planner

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

func isRemovedBuiltin(name string) bool {
	for _, p := range removedBuiltinPrefixes {
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

// sandboxCapabilities is this OPA version's capabilities without the
// removed builtins and with no network access.
var sandboxCapabilities = func() *ast.Capabilities {
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

// explainRemovedBuiltin rewrites OPA's "undefined function http.send" so
// that the policy author learns the builtin is forbidden, not misspelt.
func explainRemovedBuiltin(msg string) string {
	const undefined = "undefined function "
	i := strings.Index(msg, undefined)
	if i < 0 {
		return msg
	}
	name := msg[i+len(undefined):]
	if j := strings.IndexAny(name, " ,:"); j >= 0 {
		name = name[:j]
	}
	if !isRemovedBuiltin(name) {
		return msg
	}
	return msg[:i] + "builtin " + name + " is not allowed in ndp policies (no network, runtime, time or randomness: plans must be reproducible)"
}
