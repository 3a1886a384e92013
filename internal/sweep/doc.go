// Package sweep watches many coarse deadlines with one timer instead of a
// timer each. It serves actor's call timeouts and mux's request timeouts,
// two modules that may not import each other; it imports nothing of
// theirs.
//
// A timer per waiting call costs each call a trip through the runtime's
// timer heap, and turns a wait on one channel into a select. Timeouts of
// Threshold or more do not need a timer's precision: a Sweeper runs one
// goroutine that expires what is past its deadline and sleeps until the
// earliest one left (at least Every, at most Threshold), so such a
// timeout fires between 0 and Every late (at most 1% of Threshold).
//
// # What the caller must do
//
// The caller keeps the deadlines (in whatever table its waiters already
// live in), each at least Threshold away when registered or followed by a
// Poke, and a sweep
// function that expires those past due and reports how many remain and
// how long until the earliest of them. After registering a deadline it calls Start; when Start
// returns true it runs Run in a goroutine of its own. Run returns when
// nothing is left to watch, so an idle owner keeps no goroutine.
package sweep
