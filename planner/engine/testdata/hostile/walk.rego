# walk over the whole input, building a large output from every node.
package ndp.policy.walk

claims contains {"change": c.id, "actions": [{"type": "None"}]} if {
	some c in input.changes
	paths := [[p, i] | walk(input, [p, _]); some i in numbers.range(1, 5000)]
	count(paths) > 0
}
