# A comprehension nested in a comprehension: 10^10 products, each cheap.
package ndp.policy.comprehension

claims contains {"change": c.id, "actions": [{"type": "None"}]} if {
	some c in input.changes
	products := [row | some i in numbers.range(1, 100000); row := [[i, j] | some j in numbers.range(1, 100000)]]
	count(products) > 0
}
