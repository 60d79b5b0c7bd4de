# A regular expression built at run time: 20,000 alternatives, 120 KiB.
package ndp.policy.regex_huge_pattern

pattern := concat("|", [sprintf("unit-%d", [i]) | some i in numbers.range(1, 20000)])

claims contains {"change": c.id, "actions": [{"type": "None"}]} if {
	some c in input.changes
	regex.match(pattern, c.id)
}
