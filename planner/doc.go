// Package planner turns a change between two rendered MachineConfigs into a
// plan: it diffs them (planner/changeset), evaluates the policy set
// (planner/engine) and resolves the claims — the most specific claim wins
// each change, ties to priority — into ordered post-config actions, a drain
// and a reboot, with the reason for each change. It also holds the plan
// rule the controllers and the webhook share (which plan a pool's nodes
// follow) and the what-if of a policy edit.
//
// The stages below it, one package each, as in OPA's own layering
// (docs/design.md#layout):
//
//	planner/changeset  the config diff and the path rule
//	planner/policy     the policy model: validation, the defaults, parsed Rego sources
//	planner/loader     policies from files, NodeDisruptionPolicy YAML and OPA bundles
//	planner/sandbox    guarded builtins, the memory watchdog, capabilities
//	planner/engine     compiling a policy set and evaluating it into claims; Rego tests
package planner
