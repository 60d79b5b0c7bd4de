# The shared library of ndp policies: helpers to build claims and actions.
#
# A policy is a package under ndp.policy.<name> with a rule "claims": a set of
#   {"change": <id of an input.changes element>,
#    "actions": [<NodeDisruptionPolicySpecAction>...],
#    "match": <optional: the path the claim matched: the change's own path,
#              or a directory above it, written with or without a final "/">,
#    "reason": <optional: why, shown in the plan>}
# The planner picks, per change, the most specific claim (exact path, then the
# longest directory), ties going to the higher priority.
package ndp.lib

# path_keys are the keys a file change can be claimed under, most specific
# first: its own path, then each ancestor directory. As in the MCO's
# FindClosestFilePolicyPathMatch, a path covers itself and everything beneath
# it whether or not it is written with a final "/": /etc/app and /etc/app/
# both claim /etc/app/conf.d/x.conf, neither claims /etc/app2/x. Each key is
# listed both ways so that tables are looked up, never scanned.
path_keys(change) := array.concat(
	[change.path, concat("", [change.path, "/"])],
	[key | some dir in change.dirs; some key in dir_spellings(dir)],
)

# dir_spellings: a directory with and without its final "/" (the root only
# as "/").
dir_spellings(dir) := [dir] if dir == "/"

else := [dir, trim_suffix(dir, "/")]

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

# file_claims turns a table {path: actions} into claims on the file changes
# each path covers (the path itself and everything beneath it).
file_claims(table) := {claim |
	some change in file_changes
	some key in path_keys(change)
	actions := table[key]
	claim := {"change": change.id, "match": key, "actions": actions}
}
