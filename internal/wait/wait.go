// Package wait is the tests' one way of waiting for a condition: every
// module's tests poll with For, at the same intervals, and never sleep for
// convergence.
package wait

import (
	"testing"
	"time"
)

// For checks cond until it holds, failing t if within passes first. It
// checks at once, then after pauses that double from 1 ms to at most
// 10 ms: a quick condition is seen within a millisecond, a slow one costs
// a check per 10 ms. what completes "timed out after 5s waiting for ...".
func For(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Until(within, cond) {
		t.Fatalf("timed out after %v waiting for %s", within, what)
	}
}

// Until checks cond as For does and reports whether it held before within
// passed: for a caller that explains a timeout itself (a dump of the
// state it waited on) before failing.
func Until(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for pause := time.Millisecond; !cond(); pause = min(2*pause, 10*time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pause)
	}
	return true
}
