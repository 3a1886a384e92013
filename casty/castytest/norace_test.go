//go:build !race

package castytest_test

const raceDetector = false
