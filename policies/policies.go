// Package policies embeds ndp's Rego: the shared library every policy can
// import (data.ndp.lib), the built-in rule that turns declarative entries
// into claims (data.ndp.builtin.declarative), and the default policy that
// reproduces the Machine Config Operator's default behaviour
// (data.ndp.policy.defaults). Each directory carries its Rego tests.
package policies

import "embed"

// FS holds lib/ and default/, Rego sources and their *_test.rego files.
//
//go:embed lib/*.rego default/*.rego
var FS embed.FS

// Directories of FS.
const (
	LibraryDir = "lib"
	DefaultDir = "default"
)

// DefaultPolicyName names the policy made of DefaultDir.
const DefaultPolicyName = "default"
