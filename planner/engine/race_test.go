//go:build race

package engine_test

// raceDetector: built with -race, whose slowdown (several times) makes a
// policy's time limit trip before the memory and size limits the hostile
// tests check; make test runs those without it.
const raceDetector = true
