// Package policy is the policy model: a Policy (declarative entries, Rego
// modules and their tests, priority, pool selector) from a
// NodeDisruptionPolicy or a file, its validation, the built-in default
// policy and Rego library, and the parsed Rego sources of a policy set with
// errors placed in the author's file (the analogue of OPA's ast stage).
package policy
