# A short pattern whose repetitions expand to a large compiled program:
# 40 bytes of pattern, about 30,000 instructions.
package ndp.policy.regex_huge_program

claims contains {"change": c.id, "actions": [{"type": "None"}]} if {
	some c in input.changes
	regex.match(concat("", ["[a-z]{1000}" | some _ in numbers.range(1, 30)]), c.id)
}
