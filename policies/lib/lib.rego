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

# package_update is ndp's own action: update the host's packages to what
# its sources and pins now say (apt; update_engine on Flatcar), then reboot
# only if the host asks for it, else restart what needrestart names.
package_update := {"type": "PackageUpdate"}

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

# Reading inside a file. A file change whose contents changed (or that was
# added or removed) carries change.old and change.new ({format, size, text,
# data, omitted}) and, when changed, change.diff: the leaves of the parsed
# documents that differ ({path, op, old, new}) when both sides parsed, else
# the lines added and removed ({op, line, text}). These helpers are
# undefined (or false) on a change without a parsed diff: a policy that
# needs one falls through to its other rules, or to the default.

# data_diff: the change's diff compares parsed documents (json, yaml or
# toml, in any pair: a YAML kubelet.conf replaced by a JSON one is compared
# by value).
data_diff(change) if {
	change.op == "changed"
	_ := change.old.data
	_ := change.new.data
	is_array(change.diff)
}

# changed_keys: the top-level keys that differ ({} when the documents are
# equal; undefined without a parsed diff, or when the document's type
# changed: a map replaced by a list has no keys to name).
changed_keys(change) := {entry.path[0] | some entry in change.diff} if {
	data_diff(change)
	every entry in change.diff {
		count(entry.path) > 0
	}
}

# key_changed: the top-level key differs.
key_changed(change, key) if {
	data_diff(change)
	some entry in change.diff
	count(entry.path) > 0
	entry.path[0] == key
}

# only_keys_changed: the documents parsed on both sides, the diff is
# complete, and every top-level key that differs is in allowed (a set or
# an array). True when the documents are equal (only formatting changed).
only_keys_changed(change, allowed) if {
	data_diff(change)
	not change.diffTruncated
	every entry in change.diff {
		count(entry.path) > 0
		entry.path[0] in allowed
	}
}

# changed_paths: each differing leaf as a dotted string ("a.b.0.c"; ""
# for the whole document).
changed_paths(change) := {concat(".", [sprintf("%v", [p]) | some p in entry.path]) | some entry in change.diff} if {
	data_diff(change)
}

# path_changed: a differing leaf is at or beneath prefix (an array of keys
# and indices, as in change.diff paths), or above it (a whole subtree
# replaced).
path_changed(change, prefix) if {
	data_diff(change)
	some entry in change.diff
	n := min([count(entry.path), count(prefix)])
	array.slice(entry.path, 0, n) == array.slice(prefix, 0, n)
}

# same_data: both sides parse to equal documents (only formatting,
# comments or key order changed).
same_data(change) if {
	data_diff(change)
	count(change.diff) == 0
}

# added_lines and removed_lines: the text of the lines a text diff adds
# and removes, in order (undefined without a text diff).
added_lines(change) := [entry.text | some entry in change.diff; entry.op == "added"] if text_diff(change)

removed_lines(change) := [entry.text | some entry in change.diff; entry.op == "removed"] if text_diff(change)

# text_diff: the change's diff compares lines of text.
text_diff(change) if {
	change.op == "changed"
	is_array(change.diff)
	not data_diff(change)
}
