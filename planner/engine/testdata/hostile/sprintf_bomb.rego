# A format of 5,000 fields a million characters wide: 5 GB from 50 KB.
package ndp.policy.sprintf_bomb

format := concat("", ["%01000000d" | some _ in numbers.range(1, 5000)])

claims contains {"change": c.id, "actions": [{"type": "None"}]} if {
	some c in input.changes
	s := sprintf(format, numbers.range(1, 5000))
	count(s) > 0
}
