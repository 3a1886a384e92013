// Package collections is distributed collections over Casty's actors:
// Map, Set, MultiMap, Counter, Register, Queue, Semaphore, Lock and
// Barrier.
//
// # Waiting
//
// Queue.Take, Semaphore.Acquire, Lock.Lock (and Lock.Do) and Barrier.Wait
// wait on the server, not by polling. The caller arrives at the
// collection's shard, which grants at once or records it as a waiter, in
// arrival order; the caller then parks in a waiting-room service that
// runs beside the shard, on the member serving it (casty.Beside), and is
// answered as soon as a grant is recorded for it: an element offered, a
// permit released or expired, a round's last party arrived. Waiters are
// served first come, first served, whichever member or lite member they
// call from.
//
//   - Cancellation. When the caller's ctx ends, it withdraws: it returns
//     ctx.Err() and is granted nothing afterwards. A grant made at that
//     very moment is given back — the permit released, the element put
//     back at the front of the queue — except a barrier's: if its round
//     had tripped, Wait returns nil. A cancelled waiter is never granted
//     something it cannot see.
//   - Failover. Waiters, leases, grants and fencing tokens are the shard's
//     replicated state: the new owner knows the waiters, and parked
//     callers re-park at it, keeping their place.
//     While the owner is away, a waiting call retries casty's
//     infrastructure errors (casty.ErrConnectionLost, ErrActorUnavailable,
//     ErrQuorumUnavailable, ErrTimeout) until its ctx ends.
//   - Dead callers. A parked caller renews its place as it waits; one
//     whose process died is dropped once the TTL option's duration
//     (default 30 s) passes on the owner's clock, and a lease not renewed
//     is reclaimed by then too. Expiries are found by the shard's next
//     call, which a parked waiter makes at least once a second, so a
//     reclaimed permit reaches the next waiter within about a second of
//     its expiry. A caller cut off from the shard for longer than its TTL
//     loses its place and arrives again, at the back.
//   - Delivery. A queue element handed to a taker stays reserved for it
//     until the taker's next call to the queue acknowledges it, so a Take
//     retried after its answer was lost gets the same element, never a
//     second one. An element whose answer was lost and whose taker then
//     gave up without reaching the queue again is dropped after the TTL
//     (it is not put back: its taker may have it).
//   - Fencing. Every permit a semaphore or lock grants carries a token one
//     greater than the last, kept in the replicated state and committed
//     before the grant is answered: tokens strictly increase across owner
//     failovers, and a grant made by a deposed owner is never answered
//     (casty refuses its commit). Lock.Do passes the token to the work it
//     protects; have the resource refuse tokens older than one it saw.
//
// waits.go describes the protocol between the facade, the shard and the
// waiting room.
package collections
