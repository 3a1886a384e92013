//go:build race

package sim

// raceSeedShare divides every test's seed count under the race detector.
// The simulator runs each seed on one goroutine, deterministically, so
// the detector learns nothing from more seeds, and each costs it five to
// ten times its plain time; .ci/run runs the full counts (over 1,000 seeds
// in all) without -race as a step of its own.
const raceSeedShare = 5
