# A policy claiming a change through a directory the change is not in.
package ndp.policy.foreign_match

claims contains {"change": c.id, "match": "/var/lib/other/", "actions": [{"type": "None"}]} if {
	some c in input.changes
}
