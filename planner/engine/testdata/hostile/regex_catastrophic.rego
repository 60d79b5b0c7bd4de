# Catastrophic backtracking for a backtracking engine: (x+x+)+y on 100,000
# x's. Go's RE2 runs in linear time, so this one just completes.
package ndp.policy.regex_catastrophic

subject := concat("", ["x" | some _ in numbers.range(1, 100000)])

claims contains {"change": c.id, "actions": [{"type": "None"}]} if {
	some c in input.changes
	regex.match(`^(x+x+)+y$`, subject)
}
