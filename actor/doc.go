// Package actor is Casty's activation engine: it turns a (kind, key) into a
// live activation on demand, queues messages on its FIFO mailbox, runs one
// handler at a time (services: up to their concurrency), supervises
// failures, deactivates idle activations and drains everything on Close.
//
// Most programs use it through package casty, whose typed Call helpers
// embed an Envelope in a struct that implements Invoker, so a call costs one
// allocation and no reflection. This package holds the pieces every mode
// shares: Kind (what a type's registration derived: state schema, handlers
// indexed by function pointer, hooks, options), Host (the activations of
// one node), and the error vocabulary.
//
// # Guarantees
//
//   - One activation per (kind, key) per host; a new one never starts before
//     the previous one's Deactivate hook has finished. Messages queued on a
//     deactivating activation move, in order, to its successor.
//   - One handler at a time per activation, in FIFO order; different
//     activations run in parallel. A mailbox holds a goroutine only while it
//     has work, so idle activations cost memory, not goroutines.
//   - A call waits at most until its ctx's deadline (or Config.CallTimeout);
//     a message whose caller gave up before it started is never run.
//   - A panicking handler is a failed call, never a crashed process; the
//     supervisor decides Keep, Reset or Stop; a panicking supervisor means
//     Keep.
//   - A call that would wait on an activation already waiting in its own
//     call chain (A→A, A→B→A) fails at once with ErrReentrancy instead of
//     deadlocking: the chain travels in the handler's ctx.
//   - Close drains: queued and running messages finish, Deactivate hooks run,
//     bounded by Config.DrainTimeout; what still runs then is logged by name.
//
// # Seams for the layer above
//
// The engine keeps no data for the layer above; that layer plugs in
// through Config, as net/http's Handler does:
//
//   - Durability keeps activations' state beyond their life (casty's
//     replication): Restore fills a new activation's state and returns its
//     Session, whose Commit runs after every handler that succeeded (or
//     failed with Keep), before the caller gets its answer, and whose
//     Release runs once when the activation ends. A Restore error fails
//     the queued messages unchanged; a Commit error fails only its own
//     caller and discards the activation (ReasonLost), its queue moving to
//     a fresh one that restores again. The rules are on Durability.
//   - Admit checks a message before it creates an activation (casty
//     verifies there the ring point a remote caller sent).
//   - BeforeWait runs before a caller waits for its activation (casty
//     hands the connection's reader on), and ExternalWaits reports the
//     callers waiting on other nodes, which count toward the spin rule.
//   - Interceptor receives every lifecycle event inline.
//   - Lifecycle is told of every activation that starts and ends (with
//     its reason), observed or not; Host.Queued counts the messages
//     waiting in the mailboxes (casty's metrics use both).
//
// What the layer above needs per kind, per handler or per host (typed
// invokers, replication options, the System a host belongs to) it keeps in
// side tables of its own.
//
// # On its own
//
// This module is the engine under package casty and is released together
// with it, at the same version (RELEASING.md at the repository root); its API
// serves casty's needs. Programs depend on github.com/casty-go/casty/casty.
package actor
