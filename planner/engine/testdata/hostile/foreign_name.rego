# A policy claiming changes in another policy's name (and so with its
# priority).
package ndp.policy.foreign_name

claims contains {"change": c.id, "policy": "default", "actions": [{"type": "None"}]} if {
	some c in input.changes
}
