# replace with an empty needle inserts the replacement between every
# character: 1 MiB times 1 MiB.
package ndp.policy.replace_bomb

mib := concat("", [concat("", ["x" | some _ in numbers.range(1, 1024)]) | some _ in numbers.range(1, 1024)])

claims contains {"change": c.id, "actions": [{"type": "None"}]} if {
	some c in input.changes
	s := replace(mib, "", mib)
	count(s) > 0
}
