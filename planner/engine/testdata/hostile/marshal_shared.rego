# json.marshal of a list that shares one 1 MiB string 1,000 times: 64 KiB of
# terms, 1 GiB of JSON.
package ndp.policy.marshal_shared

mib := concat("", [concat("", ["x" | some _ in numbers.range(1, 1024)]) | some _ in numbers.range(1, 1024)])

claims contains {"change": c.id, "actions": [{"type": "None"}]} if {
	some c in input.changes
	s := json.marshal([mib | some _ in numbers.range(1, 1000)])
	count(s) > 0
}
