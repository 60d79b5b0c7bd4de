//go:build !race

package testkit

// RaceDetector: built without -race (race.go).
const RaceDetector = false
