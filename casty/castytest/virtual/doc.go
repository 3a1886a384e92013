// Package virtual holds castytest's own tests that run clusters on
// testing/synctest's virtual clock: a minute-long partition, the mutants
// seeded fault schedules must catch (the schedules themselves run in the
// schedules package below, whose binary registers one replicated kind
// only). They live in a
// test binary of their own because casty, mux, actor and yamux pool
// channels and timers process-wide, and one made in a bubble must never
// be used outside it: a test that runs casty outside a bubble (casty.Local
// in an Example, say) after a bubbled test in the same binary could meet
// one (castytest/doc.go, "On a virtual clock").
package virtual
