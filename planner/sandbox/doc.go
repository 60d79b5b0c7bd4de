// Package sandbox bounds what a policy can do: the capabilities Rego is
// parsed and compiled with (no network, no time, no randomness), guarded
// versions of OPA's builtins that could allocate without bound (Install
// puts them in OPA's global builtin table), the heap watchdog that stops an
// evaluation over its memory budget, and the errors that say which limit
// stopped it. It imports nothing of ndp.
package sandbox
