//go:build !race

package policyset

const raceDetector = false
