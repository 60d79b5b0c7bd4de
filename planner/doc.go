// Package planner turns a change between two rendered MachineConfigs into a
// plan: it diffs them (planner/changeset), evaluates the policy set
// (planner/engine) and resolves the claims — the most specific claim wins
// each change, ties to priority — into ordered post-config actions, a drain
// and a reboot, with the reason for each change. It also holds what the
// what-if of a policy edit compares (Outcome, DecisionChanges) and the probe
// a policy must pass before it joins a set (Probe, CheckPolicy). The plan
// rule — which plans a pool needs and whether a stored one stands — is not
// here: it is render.PlanGroups and the MachineConfig status's StandingPlan
// (docs/design.md#the-plan-rule).
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
