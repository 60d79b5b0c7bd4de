# The shared library of ndp policies: helpers to build claims and actions.
#
# A policy is a package under ndp.policy.<name> with a rule "claims": a set of
#   {"change": <id of an input.changes element>,
#    "actions": [<NodeDisruptionPolicySpecAction>...],
#    "match": <optional: the path or directory ("/etc/foo/") the claim matched>,
#    "reason": <optional: why, shown in the plan>}
# The planner picks, per change, the most specific claim (exact path, then the
# longest directory), ties going to the higher priority.
package ndp.lib

# path_keys are the keys a file change can be claimed under: its own path,
# then each ancestor directory with a trailing "/", most specific first.
path_keys(change) := array.concat([change.path], change.dirs)

reboot := [{"type": "Reboot"}]

none := [{"type": "None"}]

drain := {"type": "Drain"}

daemon_reload := {"type": "DaemonReload"}

reload(service) := {"type": "Reload", "reload": {"serviceName": service}}

restart(service) := {"type": "Restart", "restart": {"serviceName": service}}

# file_changes are the file changes of the change set.
file_changes contains change if {
	some change in input.changes
	change.kind == "file"
}

# file_claims turns a table {path or "dir/": actions} into claims on the
# file changes it covers.
file_claims(table) := {claim |
	some change in file_changes
	some key in path_keys(change)
	actions := table[key]
	claim := {"change": change.id, "match": key, "actions": actions}
}
