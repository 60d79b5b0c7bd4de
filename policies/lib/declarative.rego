# The built-in rule behind declarative entries (spec.files, spec.units,
# spec.sshkey of a NodeDisruptionPolicy): the planner writes the entries of
# every policy into data.ndp.declarative, indexed by path, unit name and
# "sshkey", and this rule claims changes from them like any Rego policy.
# Each element of "claims" is [policy name, claim].
package ndp.builtin.declarative

import data.ndp.lib

claims contains [entry.policy, claim] if {
	some change in lib.file_changes
	some key in lib.path_keys(change)
	some entry in data.ndp.declarative.files[key]
	claim := {"change": change.id, "match": key, "actions": entry.actions}
}

claims contains [entry.policy, claim] if {
	some change in input.changes
	change.kind == "unit"
	some entry in data.ndp.declarative.units[change.name]
	claim := {"change": change.id, "match": change.name, "actions": entry.actions}
}

claims contains [entry.policy, claim] if {
	some change in input.changes
	change.kind == "sshkey"
	some entry in data.ndp.declarative.sshkey
	claim := {"change": change.id, "actions": entry.actions}
}
