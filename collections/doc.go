// Package collections is distributed collections over Casty's actors:
// Map, Set, MultiMap, Counter, Register, Queue, Semaphore, Lock and
// Barrier.
package collections
