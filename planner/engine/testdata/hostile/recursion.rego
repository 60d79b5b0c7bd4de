# Deep recursion: Rego refuses recursive rules and functions when compiling.
package ndp.policy.recursion

depth(n) := depth(n - 1) + 1 if n > 0

else := 0

claims contains {"change": c.id, "actions": [{"type": "None"}]} if {
	some c in input.changes
	depth(100000) > 0
}
