// Package casty is the public face of Casty for Go: typed virtual actors,
// in one process (Local) or across a leaderless cluster.
//
// An actor is a plain struct. Its exported fields are its state; its
// exported methods with a handler shape are its interface:
//
//	M(ctx) (R, error)   M(ctx, Q) (R, error)   M(ctx) error   M(ctx, Q) error
//
// Declare each kind once, at package level, and call it through typed
// method expressions — the compiler checks the actor type, the argument and
// the result, and there is no code generation:
//
//	type Greeter struct{ Greetings int }
//
//	func (g *Greeter) Greet(ctx context.Context, who string) (string, error) {
//		g.Greetings++
//		return fmt.Sprintf("hello, %s! (greeting #%d)", who, g.Greetings), nil
//	}
//
//	var Greeters = casty.Actor[Greeter]()
//
//	sys := casty.Local()
//	defer sys.Close(ctx)
//	msg, err := casty.Call(ctx, Greeters.Ref(sys, "front-door"), (*Greeter).Greet, "world")
//
// # What Casty guarantees
//
// Each (kind, key) has at most one activation per node, created by the first
// call that reaches it, deactivated after IdleTimeout without messages, by
// Self(ctx).Deactivate(), by a supervisor's Stop or Reset, or by Close. One
// handler runs at a time per activation, in FIFO order; many activations run
// in parallel. Unexported fields are transient: they start at their zero
// value on every activation (rebuild them in an Activate(ctx) error hook, or
// have the system Inject them). Deactivate(ctx) error runs when an
// activation ends gracefully. Neither hook is callable from outside.
//
// Declarations are validated when the package initialises: Actor and
// Message panic, naming the offending field path, if any state field,
// argument or result could not cross the wire. Nothing a caller passes at
// run time panics the process: a function that is not a handler, a zero
// Ref or a nil ctx is an error.
//
// # Errors
//
// Infrastructure failures are sentinels for errors.Is: ErrTimeout (also
// matches context.DeadlineExceeded), ErrActorUnavailable,
// ErrQuorumUnavailable, ErrRangeMoving, ErrUnknownActorType,
// ErrReentrancy. A handler's own failure (an error or a panic) reaches the
// caller as *ActorFailedError carrying kind, key, method, message and the
// supervisor's Directive; Unwrap gives the handler's error.
//
// Definite errors mean the call did not take effect: ErrUnknownActorType,
// ErrReentrancy, ErrActorUnavailable from a closed system, and a handler's
// failure (whose state is kept with Keep, discarded with Reset).
// Indeterminate ones mean it may have: ErrTimeout (the handler may still
// run to completion, unless it had not started — a message whose caller
// gave up before it started is never run), and ErrQuorumUnavailable.
//
// # Reentrancy
//
// Pass the handler's ctx to calls made from a handler: it carries the call
// chain, and a call that would wait on an activation already waiting in the
// chain (A→A, A→B→A) fails at once with ErrReentrancy instead of
// deadlocking. The outer caller sees it wrapped in *ActorFailedError.
//
// # Supervision
//
// A Supervisor (WithSupervisor for the system, Supervise for one kind)
// decides after every failure: Keep (the default) leaves the activation and
// its state, Reset discards it without its Deactivate hook, Stop deactivates
// it gracefully. Failure.Failures counts the activation's consecutive
// failures and resets on success.
//
// # Local mode
//
// Local runs everything in one process and opens no socket. Calls pass their
// arguments and results as Go values, without encoding: do not mutate a
// slice or map after passing it to a call. Kinds declared with Replicas > 1
// run as a single copy; state lives only as long as its activation.
//
// # Cluster mode
//
// Start makes the process a full member: it listens, joins through its
// seeds and keeps a full member list by gossip (package gossip), from which
// every node computes the same token ring (package ring). A call goes
// straight to its key's owner over one multiplexed connection per node
// pair (package mux); a call to a key this node owns runs locally with no
// serialization. Connect makes a lite member that routes the same way but
// owns nothing. Arguments, results and registered error types cross the
// wire as msgpack (package wire); a Ref hashes its key onto the ring once.
// When membership changes, activations whose keys moved are deactivated
// (ReasonMoved) and later calls reach the new owner. Streams use one mux
// stream each, so backpressure is end to end; Spy with ScopeCluster merges
// every member's events.
//
// Replication is not built yet: every actor lives in a single copy, a key
// whose owner dies reactivates elsewhere with fresh state, and Replicas,
// Write and Read are validated but not acted on (also in a one-node
// cluster, which will fence replicated writes once replication lands).
//
// # Where this differs from DESIGN.md
//
//   - Explain[T]() returns (Explanation, error), not the explanation alone:
//     a state type the pager cannot page (a TrackedMap of a mutable value,
//     or of a key that does not encode one to one) is an error to report,
//     not a panic, since Explain is also a tool for inspecting types.
//   - A message over Config.MaxMessage does not switch to a bulk stream of
//     its own: a call to another node whose argument or result encodes
//     larger fails with an error saying so (before sending the argument;
//     after the handler ran for the result). Large data goes through
//     Upload and Stream, which carry it element by element.
//
// # Closing
//
// Close stops accepting calls, lets queued and running messages finish and
// Deactivate hooks run, bounded by Config.DrainTimeout, and from then on
// every call fails with ErrActorUnavailable. A handler that never returns is
// bounded by its caller's ctx; Close gives up on it after the drain timeout
// and logs it by name.
//
// # Modules
//
// go get github.com/casty-go/casty/casty brings the runtime: actor, gossip,
// mux, ring, wire and pager, each its own module at the version this one
// requires. The columnar pager (github.com/casty-go/casty/arrowpager) is an
// optional module of its own. ring, mux, hlc, wire and pager can also be used
// without casty; RELEASING.md at the repository root says how each is
// versioned.
package casty
