// Package collections is Casty's distributed collections: Map, Set,
// MultiMap, Counter, Register, Queue, Semaphore, Lock and Barrier, each a
// typed facade over ordinary replicated actors.
//
//	prices, err := collections.NewMap[string, float64](sys, "prices")
//	err = prices.Put(ctx, "sku-1234", 49.90)
//	v, ok, err := prices.Get(ctx, "sku-1234")
//	n, err := prices.Size(ctx)
//
// # Nothing new underneath
//
// A collection introduces no mechanism of its own. Its state lives in
// shard actors — one Go actor type, declared as one casty kind per
// replication triple — placed, replicated, fenced and failed over exactly
// like any other actor: a write is acknowledged once a write quorum of the
// shard's replicas holds it, and a crashed owner's shards activate from
// their replicas on the next member. Three families:
//
//   - Sharded by item: Map, Set and MultiMap spread their items over
//     Shards shard actors (default 32), an item going to the shard its
//     encoding hashes to (ring.Shard's rule); Size and Clear ask every
//     shard at once, Items streams them shard by shard.
//   - Striped: Counter splits one integer over Shards stripes; each Add
//     lands on the next stripe in turn, Get sums every stripe.
//   - Single owner: Register, Queue, Semaphore, Lock and Barrier live on one
//     shard actor each; its single writer is what makes CompareAndSwap,
//     FIFO order and fencing tokens correct. They scale by having many
//     named instances.
//
// Shards never idle out (casty.Forever): a collection's items stay in its
// shards' memory for as long as it holds them, on a local system as in a
// cluster, where replicated shards are durable actors — after a failover
// the new owner activates them at once, which also lets a semaphore's
// expired leases and a queue's parked takers be served without a call.
//
// Keys, values and elements are encoded by the facade (msgpack, maps made
// canonical) and shards hold bytes, so none of them needs registering with
// casty.Message, and a Map[string, float64] still type-checks Put and Get.
// A type that cannot cross the wire — a channel, a function, an interface —
// is refused by the constructor, naming the type (ErrNotEncodable); an item
// larger than MaxItem is refused before anything is sent (ErrTooLarge).
//
// # Names, triples and every member
//
// A shard's kind is named after its replication triple,
// "casty.collections.Shard[r3,wmajority,rone]", so any member that receives
// a call materialises the shard with the right replication without the
// collection's constructor having run there. Kinds must be declared on
// every member when the process starts (a member syncs the replicas of the
// kinds it has declared), so this package declares the common triples —
// r1,wone,rone; r3,wmajority,rone (the default); r3,wmajority,rmajority —
// and Declare adds others, at package level like casty.Actor. A member
// serves collections only if its program imports this package: a member
// process that only serves others' calls imports it for its effect:
//
//	import _ "github.com/casty-go/casty/collections"
//
// Each collection's name has a catalog entry recording its type,
// triple and shard count (or permits, or parties); the first operation
// of each opened facade checks it, so the same name opened as another
// type or with other options fails with ErrMismatch instead of silently
// sharing or splitting state.
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
//
// # Where this package departs from the original design
//
// The constructors live here, not in casty, because casty is the lower
// layer: collections import casty, never the reverse, and a program that
// uses no collection links none. They take this package's Options
// (Replicas, Write, Read, Shards, MaxItem, TTL) rather than casty's
// KindOptions, which configure declarations and are opaque outside casty;
// and they return an error, since a bad name, option or type is the
// caller's to handle, not a panic.
package collections
