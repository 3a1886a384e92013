// Package hlc is a hybrid logical clock: timestamps that track wall-clock
// time in milliseconds yet are strictly monotonic per node and respect
// causality across nodes. Casty stamps every replicated commit with one, so
// "highest stamp" names the newest version of a key even when physical
// clocks skew or jump backwards.
//
// A Timestamp is (Wall ms, Counter, Node) and is totally ordered in that
// order; the node id only breaks ties between nodes. The zero Timestamp
// means "no version" and sorts before every stamp a Clock issues.
//
// # What it guarantees
//
//   - Clock.Now is strictly increasing per clock, even when the injected
//     physical clock stalls or jumps backwards by any amount: while the
//     physical clock is behind, Wall holds and Counter advances.
//   - Clock.Observe(remote) returns a stamp greater than remote and than
//     everything the clock issued before, and every later Now is greater
//     still: a reply is always stamped after the request that caused it.
//   - The counter never wraps silently: when it would pass math.MaxUint32,
//     Wall advances 1 ms (the clock runs logically ahead of physical time
//     by that millisecond). At one stamp per nanosecond this takes 4 s of
//     wall time inside a single millisecond, so it only happens when
//     observing a remote stamp already at the limit.
//   - Wall is never behind the local physical clock; it is ahead only by
//     what was observed from other nodes. Config.MaxDrift, when set, makes
//     Observe reject remote stamps too far in the future (ErrDrift), so one
//     bad clock cannot drag the cluster forward.
//   - The encoding is compact msgpack (29 bytes for a typical stamp, 1 byte
//     for the zero stamp; see AppendMsgpack), usable as a field of any
//     message encoded with github.com/vmihailenco/msgpack/v5. The decoder is
//     fuzzed and never panics.
//
// # What the caller must do
//
// Inject the physical clock (Config.Physical; SystemMillis for production,
// a fake for tests and simulations) and give every node its own Config.Node.
// Observe every remote stamp you receive before acting on it. After a
// restart, Observe the greatest stamp you persisted, since the physical
// clock may now read earlier than it did before the crash. A Clock is safe
// for concurrent use; a mutex guards its single word of state.
//
// # On its own
//
// The module depends on no other Casty module (only msgpack, for the
// encoding): any system that must order events across nodes by "happened
// after" while staying close to wall-clock time can take it alone with go
// get github.com/casty-go/casty/hlc. The package Example orders the events of
// two clocks whose physical clocks disagree; SPEC.md lets implementations in
// other languages interoperate.
package hlc
