// Package virtual holds the collections' tests that run clusters on
// testing/synctest's virtual clock: seeded fault schedules against Set,
// Counter, Register, Map, Queue and Lock workloads, each checked for lost
// acknowledged writes (the register's history for linearizability, the
// queue's deliveries against its offers, the lock's holders by fencing),
// and the mutant those checks must catch. They live in a test binary of
// their own because casty, mux, actor and yamux pool channels and timers
// process-wide, and one made in a bubble must never be used outside it: a
// test that runs casty outside a bubble (casty.Local in an Example, as
// the collections package's own have) after a bubbled test in the same
// binary could meet one (castytest/doc.go, "On a virtual clock").
package virtual
