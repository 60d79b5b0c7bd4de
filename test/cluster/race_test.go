//go:build race

package cluster

// slowRegoTestRange sizes TestFreshReplicaPlansWithEveryPolicy's slow Rego
// test: -race makes OPA's evaluation five to six times slower, so a sixth
// of the work (250² iterations, not 600²) keeps the check about a second
// long, within the 5s a Rego test may take.
const slowRegoTestRange = 250
