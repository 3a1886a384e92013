//go:build race

package castytest_test

// raceDetector: timing figures are not held to their goals under -race.
const raceDetector = true
