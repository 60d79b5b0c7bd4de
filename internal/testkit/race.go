//go:build race

package testkit

// RaceDetector: built with -race. Suites that time real work size it by
// this (the detector makes Go code several times slower), and build the
// ndp binaries they run as processes the same way.
const RaceDetector = true
