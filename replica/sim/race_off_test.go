//go:build !race

package sim

// raceSeedShare is 1 without the race detector: every seed runs
// (race_on_test.go).
const raceSeedShare = 1
