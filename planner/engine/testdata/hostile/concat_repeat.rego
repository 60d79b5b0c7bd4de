# Rego has no strings.repeat; concat of a list that holds one 1 MiB string
# 10,000 times asks for 10 GiB in a single call.
package ndp.policy.concat_repeat

kib := concat("", ["x" | some _ in numbers.range(1, 1024)])

mib := concat("", [kib | some _ in numbers.range(1, 1024)])

claims contains {"change": c.id, "actions": [{"type": "None"}]} if {
	some c in input.changes
	huge := concat("", [mib | some _ in numbers.range(1, 10000)])
	count(huge) > 0
}
