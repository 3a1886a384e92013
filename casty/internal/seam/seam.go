// Package seam is how casty/castytest reaches into a casty member for
// what is a test harness's business only — seeded randomness, a crash,
// waiting for a settled placement, a deliberately broken rule — without
// widening casty's public API: casty fills the function variables below
// when it is initialised, and castytest calls them. It imports nothing of
// casty's, so both may import it. The network and the clock a test
// injects are public options (casty.WithNetwork, casty.WithClock).
package seam

import "math/rand/v2"

// Member is what a castytest cluster injects into one member.
type Member struct {
	// Rand, if set, is drawn from while the member starts (and never
	// after) for its node ID and for the seeds of its gossip's and its
	// mux node's randomness, instead of crypto/rand and the runtime's
	// entropy, so a cluster's seed fixes its members' IDs (and so the
	// placement) and their random choices.
	Rand *rand.Rand
	// Mutant, if set, breaks one safety rule on purpose, so that a test
	// can measure how soon a simulator catches the break: "write-one-fewer"
	// acknowledges a commit with one replica fewer than its write quorum,
	// "sync-one-fewer" finishes a range's sync with one answer fewer than
	// the read quorum, "quorum-of-set" counts read quorums against the
	// replica set's size instead of the kind's Replicas, and
	// "adopt-newest-only" adopts the newest agreed placement version
	// straight from the one it held, skipping those between. Never set
	// outside castytest's own tests.
	Mutant string
}

// Filled by casty's init.
var (
	// Option returns the casty.Option (as any) that applies m to a member.
	Option func(m *Member) any
	// Crash stops a *casty.System (as any) as a killed process stops: no
	// drain, no LEFT, no hooks, connections dropped at once.
	Crash func(sys any)
	// Settled reports whether a *casty.System (as any) has adopted a
	// placement of n members and has no range sync in flight.
	Settled func(sys any, n int) bool
)
