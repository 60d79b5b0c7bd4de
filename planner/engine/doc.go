// Package engine compiles a policy set, the library and the defaults
// included, inside the sandbox, and evaluates a change set into claims:
// which policy claims which change with which actions. When the sandbox
// stops an evaluation the error names the policy responsible. It also runs
// the policies' Rego tests (`ndp test`).
package engine
