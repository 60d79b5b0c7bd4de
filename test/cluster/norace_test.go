//go:build !race

package cluster

const slowRegoTestRange = 600
