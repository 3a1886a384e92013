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
// run time panics the process: a function that is not a handler
// (ErrNotAHandler, whose message says what was passed and what to pass), a
// zero Ref (ErrZeroRef) or an actor's empty key (ErrInvalidKey) is an
// error, and a nil ctx is taken as context.Background().
//
// # Errors
//
// Infrastructure failures are sentinels for errors.Is: ErrTimeout (also
// matches context.DeadlineExceeded), ErrActorUnavailable, ErrConnectionLost,
// ErrQuorumUnavailable, ErrNoReadQuorum, ErrRangeMoving, ErrUnknownActorType,
// ErrReentrancy, ErrCallChainTooLong, ErrOverloaded, ErrForbidden,
// ErrTooManySpies, and the caller's mistakes ErrNotAHandler, ErrZeroRef,
// ErrInvalidKey, ErrInvalidSeed (Start and Connect refuse a seed that is
// not host:port at once). A handler's own failure (an error or a panic) reaches
// the caller as *ActorFailedError carrying kind, key, method, message and the
// supervisor's Directive; Unwrap gives the handler's error. A panic is
// also logged, with its stack, by the member it happened on.
//
// An error a handler returns on purpose — "item not in cart" — is an
// answer, not a failure: return it marked, casty.Answer(err). It bypasses
// the supervisor (a Reset supervisor does not wipe the state for it), the
// state the handler left stands as after a nil error, and the caller gets
// err itself rather than an *ActorFailedError, locally and across nodes.
//
// Definite errors mean the call did not take effect: ErrUnknownActorType,
// ErrReentrancy, ErrCallChainTooLong, ErrOverloaded, ErrActorUnavailable
// from a closed system, ErrNoReadQuorum (an activation that found no read
// quorum of the key's replicas, before anything ran), and a handler's
// failure (whose state is kept with Keep, discarded with Reset). Not
// every ErrActorUnavailable is definite: it also reports a call whose
// handler may have run — a connection lost with the call sent (then it
// matches ErrConnectionLost too), a reply or result that could not be
// decoded, a service call cut short by Close — so a caller that cannot
// tell which from the error treats it as indeterminate, as castytest
// does.
// Indeterminate ones mean it may have: ErrTimeout (the handler may still
// run to completion, unless it had not started — a message whose caller
// gave up before it started is never run), and ErrQuorumUnavailable
// otherwise (a commit that may have reached some replicas; test for
// ErrNoReadQuorum first, which matches it too), and ErrConnectionLost (the connection to the
// member serving the call died with the call sent; it also matches
// ErrActorUnavailable, so test for it first).
//
// # Errors across nodes
//
// A handler's error crosses to a caller on another node as its text, the
// sentinel of this package it matches, and what of it is registered on
// both nodes: the first error of its chain whose type is registered, and
// every registered sentinel it wraps. errors.Is and errors.As then give
// the caller on another node what they give a local caller, and the text
// is the handler's.
//
// Register each sentinel callers test with errors.Is with Errors; its
// text is its wire name, so give each its own:
//
//	var ErrOutOfStock = errors.New("inventory: out of stock")
//
//	var _ = casty.Errors(ErrOutOfStock)
//
// The sentinel returned as is, or wrapped (fmt.Errorf("%s: %w", sku,
// ErrOutOfStock)), matches on the caller's node. Register each error type
// callers read with errors.As as a message:
//
//	type NotInCartError struct{ Item string }
//
//	func (e *NotInCartError) Error() string { return "not in cart: " + e.Item }
//
//	var _ = casty.Message[NotInCartError]()
//
// It arrives as a pointer when its pointer implements error. The chain is
// walked as errors.Is walks it, through fmt.Errorf's %w (one or several)
// and errors.Join. Streams' in-band errors, either way, cross the same
// way.
//
// An error with nothing registered in its chain arrives as its text only,
// and errors.Is and errors.As against it fail on the caller's node: the
// serving member logs it at Warn, naming the kind and handler — once per
// type, or, for the text-only errors of the errors and fmt packages
// (errors.New, fmt.Errorf), once per text and handler, at most four texts
// per handler. An error of this package's or context's crosses by its
// code, and is not logged.
//
// # Reentrancy
//
// Pass the handler's ctx to calls made from a handler: it carries the call
// chain, and a call that would wait on an activation already waiting in the
// chain (A→A, A→B→A) fails at once with ErrReentrancy instead of
// deadlocking. The outer caller sees it wrapped in *ActorFailedError.
//
// # Limits
//
// What a caller — a program's own code, or a peer on the network — can
// make a member hold is bounded, each bound with a typed refusal:
//
//   - Activations: Config.MaxActivations (default 1,000,000) per member or
//     local system. A call needing a new activation on a full member
//     deactivates an idle one first (the least recently used of a sample,
//     gracefully: Deactivate hook, replicated state kept on its replicas,
//     reported as an idle deactivation) and waits for it to be gone; with
//     none idle it fails with ErrOverloaded, definite. A member never
//     holds more: a flood of new keys costs the flood's callers a wait,
//     not the member its memory.
//   - Call chains: MaxCallChain (64) activations waiting in one chain; the
//     call that would make it longer fails with ErrCallChainTooLong, and a
//     member refuses a request naming a longer chain from its count alone,
//     before allocating anything for it (SPEC.md).
//   - Messages: Config.MaxMessage (4 MiB) per call argument, result or
//     stream element, ErrMessageTooLarge; Config.MaxStreams (1024)
//     streams at once per connection. A stream from another member holds
//     at most Config.StreamWindow (256 KiB) of the elements its consumer
//     has not taken, plus one element — up to StreamBuffer (16) elements
//     while its own side of a Duplex waits for credit — and its producer
//     waits once StreamBuffer elements are ahead; a peer that sends past
//     its credit breaks the stream.
//   - Replicated state: Config.MaxReplicatedBytes (default: none);
//     ErrReplicaFull.
//   - The transport's own bounds, at mux's defaults (mux.Config): inbound
//     connections (4096 in all, 256 per remote address), handshakes in
//     progress (128 in all, 8 per remote address, each silent for at most
//     2 s and bounded by Config.HandshakeTimeout; a new connection takes
//     the place of an idle one rather than being refused, so idle
//     connections cannot keep a new member out), lite clients' sessions
//     (1024 in all, 64 per remote address, so the rest stays for members;
//     beyond, a lite client is refused after its handshake), requests
//     handled at once per connection (1024) and the bytes they hold at
//     their decoded size (64 MiB per connection, 1 GiB per node; beyond,
//     refused unrun, which a caller sees as ErrOverloaded), answers to a
//     slow reader waiting
//     for it rather than piling up, partly received messages (16 MiB per
//     connection, 256 MiB per node; beyond, the connection is closed),
//     and 30 s for a partly received message.
//
// README.md ("Limits") lists them all with their defaults.
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
// owns nothing. Both return by ctx's deadline when no seed admits them;
// System.WaitMembers then waits for the rest of the cluster. Arguments, results and registered error types cross the
// wire as msgpack (package wire); a Ref hashes its key onto the ring once.
// When membership changes, activations whose keys moved are deactivated
// (ReasonMoved) and later calls reach the new owner. Streams use one mux
// stream each, counted in elements (StreamBuffer) as well as bytes
// (Config.StreamWindow), so backpressure is end to end, and a stream's ctx
// ends it as it does locally; Spy with ScopeCluster merges
// every member's events.
//
// # Security
//
// Without credentials a cluster is open: whoever reaches a member's port
// joins as a member, calls any actor, reads its state and spies; Start
// logs a warning when such a node listens on a non-loopback address.
// WithClusterSecret makes every connection prove a shared secret by
// challenge and response, and seals (encrypts and authenticates) every
// message after it with keys derived from the secret and the handshake
// (WithAuthOnly leaves messages unsealed); WithTLS with a CA encrypts and
// authenticates, and with TLS.Identity binds each peer's node to its
// certificate. Lite clients then hold a weaker credential
// (WithClientSecret, or a casty://role/client certificate): they call
// actors, and StateOf, Spy, PlacementStatus and AcceptLossVia fail with
// ErrForbidden; an operator credential (WithOperatorSecret,
// casty://role/operator) allows those too.
// Config.MaxSpies (default 64) bounds the spy subscriptions a node serves.
// SECURITY.md at the repository root has the threat model.
//
// # Replication
//
// What a kind keeps is declared with Replicas, Write and Read:
//
//   - Replicas(1) (the default) keeps nothing beyond its activation: the
//     state lives in the owner's memory, and a key whose owner dies, leaves
//     or loses the key reactivates elsewhere from its zero value. Its owner
//     follows the ring of live members.
//   - Replicas(R > 1) keeps the state on R members. Each activation starts
//     from the newest state a read quorum of them holds (fetching only the
//     pages its own copy lacks), and after every handler that changed the
//     state the owner ships the changed pages to the others and answers the
//     caller only once Write of them (counted against R, the owner
//     included) hold the commit. A handler that changed nothing sends
//     nothing; with Read(Majority) it first confirms with a read quorum that
//     no newer owner exists (a linearizable read), with Read(One) it answers
//     from the owner's memory (a deposed owner cut off in a minority may
//     answer stale until its next write is refused; once another member
//     that served the key meanwhile — the views disagreed: a pause, a
//     one-way cut, a lossy link — reaches the owner's copy with its higher
//     ballot, or the owner's anti-entropy pass adopts its copy, or the
//     owner refutes a suspicion of itself, the owner drops its activation
//     (ReasonDeposed) and the next read starts from a read quorum;
//     replica/SPEC.md, "Read(One) and a deposed owner"). An acknowledged write
//     survives the loss of R-W replicas, owner included, and any partition:
//     the side without a quorum gets ErrQuorumUnavailable, and a second
//     owner born of two members' differing views is refused at its first
//     write and discarded. When it is refused before any replica took the
//     commit (its own copy refused it, or a newer owner refused a
//     Read(Majority)'s confirm), the call runs again on the rightful
//     owner: the handler then ran twice, once where nothing it changed took
//     effect. The R copies stay current, not only the Write that answered:
//     a replica handed a key's commits out of order waits briefly for the
//     earlier one, and one that refused a commit after its round was
//     decided gets the full state with the next (ReplicationStats.MissedBasis
//     counts such refusals). replica/SPEC.md has the protocol and the
//     argument. A call made from a member that is itself one of the key's
//     replicas is answered there as soon as that member's copy holds the
//     commit as the acknowledgement that completes Write (an early answer:
//     one network round trip instead of two, and one message fewer: the
//     owner, seeing that member's acknowledgement, sends no reply);
//     handlers that return an Answer error or emit wait for the owner. A
//     Read(Majority) call from such a member is answered there the same
//     way, once its copy confirms the owner's ballot and state.
//
// A commit that fails — fewer than Write acknowledgements within
// Config.ReplicationTimeout (or the caller's deadline) — returns
// ErrQuorumUnavailable, which is indeterminate: a replica may hold the
// commit and a later activation may adopt it. The activation is discarded
// (its state cannot be rolled back), the handler's emits are dropped, and
// the next call restores from the replicas. An activation that reaches no
// read quorum fails before its handler runs; a caller that reached that
// owner then takes the call to the key's next replica (the owner may be
// cut off from the replicas while the caller still reaches it, as a lite
// member between two sides of a partition does), and gets
// ErrQuorumUnavailable only when no replica serves it. A handler that fails under the
// supervisor's Keep has its partial changes committed like a success (the
// owner keeps them, so its replicas must too); under Reset or Stop nothing
// is committed and the next activation restores the last committed state.
// A streaming handler commits once, at its end, whether it finished or
// failed under Keep.
//
// A durable actor — Replicas > 1 and IdleTimeout(Forever) — is activated
// unprompted by its new owner after its owner dies, leaves or loses the
// key, so schedules re-armed from state in Activate keep running;
// Self(ctx).Deactivate() ends it for good (until a call activates it
// again), and so does a supervisor's Stop, which commits the end mark but
// nothing of the failed handler. Self(ctx).DeleteState() replaces a replicated actor's state with
// the empty one on every replica: its next call starts from zero, also
// after a failover. System.Replication reports what a member holds.
//
// Replicated kinds are placed on a ring that changes only by a change a
// majority of its members agreed: a member joins, leaves gracefully, or is
// removed once a majority saw it dead for Config.RemoveDeadAfter
// (placement.go, agree.go); their owner is the first live member of the
// replica set. The member started without Seeds founds the cluster.
// A one-member cluster runs Replicas(3), Write(Majority) at
// ErrQuorumUnavailable (with Write(One) it works); local mode runs every
// kind as a single copy.
//
// # Large state and large messages
//
//   - Explain[T]() reports how each state field is paged for replication,
//     and returns an error, not a panic, for a state type the pager cannot
//     page (a TrackedMap of a mutable value, or of a key that does not
//     encode one to one): it is also a tool for inspecting types.
//   - A message over Config.MaxMessage does not switch to a bulk stream of
//     its own: a call to another node whose argument or result encodes
//     larger fails with ErrMessageTooLarge and a message saying so
//     (before sending the argument; after the handler ran for the result,
//     as an *ActorFailedError). Large data goes through Upload and Stream,
//     which carry it element by element.
//
// # Closing
//
// Close stops accepting calls, lets queued and running messages finish and
// Deactivate hooks run, bounded by Config.DrainTimeout, and from then on
// every call fails with ErrActorUnavailable. A handler that never returns is
// bounded by its caller's ctx; Close gives up on it after the drain timeout
// and logs it by name. A member holding replicated state then announces
// that it leaves and hands its ranges off: it keeps answering the members
// that take them over until each has synced them, bounded by
// Config.HandoffTimeout (handoff.go). The handoff is what lets a
// Write(One) kind, whose acknowledged writes may sit on the leaver alone,
// keep serving after a graceful leave, and any kind when another replica
// is down meanwhile; it changes no rule, so a handoff cut short costs
// availability, never acknowledged data.
//
// The new replicas pull the closing member's ranges through the range
// sync that the replication safety argument already covers
// (replica/SPEC.md). What the closing member sends is what its own
// activations owe their replica sets: as each is drained, before LEFT, it
// sends the spares the commits it skipped and the members behind the
// catch-up their next commit would have carried, and waits for the
// acknowledgements (replica/SPEC.md, "Spare copies"). Where its leave
// makes no member enter a range (a cluster of at most Replicas members),
// no sync runs, and that settle is what puts its acknowledged writes on
// every member that stays.
//
// # Operations
//
// System.Health reports liveness (until Close returns) and readiness
// (joined, settled on its ring with no range sync in flight, not
// draining); HealthHandler serves them as /livez and /readyz for
// container probes. For tools that join as a lite member without the
// program's Go types (cmd/castyctl): MemberTable (every record with its
// state, how long it has held it, and incarnation) and MemberTableVia (a
// full member's table, which names a member that stopped answering before
// the tool joined), Placement and Ownership (where a key lives, how
// the ring divides the key space), System.StateOf by kind name (generic
// values), and Schemas / WriteSchema (the wire schema of every declared
// kind and message, which `castyctl schema check` compares across
// releases).
//
// Members that share a machine should share its cores: each Go process
// defaults to a P per core, and every idle P spins and wakes threads on
// the cores the other members are using, for every message. Three
// members on two cores ran a replicated hot-key write at half the rate
// and twice the CPU with GOMAXPROCS 2 each than with GOMAXPROCS 1 each
// (BENCHMARKS.md, "Members in processes of their own"). In a container
// with a CPU limit, Go sets GOMAXPROCS from the limit itself.
//
// # Telemetry and logs
//
// WithMeterProvider and WithTracerProvider turn on OpenTelemetry; without
// them (or with OpenTelemetry's no-op providers) a system records nothing
// and a call pays one nil check. Metrics cover calls (a duration histogram
// by kind, method and outcome, whose count is the number of calls; never
// by key), mailbox depth, activations, replication, transport and
// membership. Traces: a client span per call and stream open on the
// caller, a server span around the handler on the member that runs it,
// joined by the W3C trace context each request carries, errors recorded
// on both. Log lines use the keys node, peer, kind, key, method and err;
// none is written per call at the default level, and a network warning
// that repeats (same message, same peer) is written at most once per
// 10 s with the count of those held back. TELEMETRY.md lists every
// instrument, attribute, span and log key.
//
// # Modules
//
// go get github.com/casty-go/casty/casty brings the runtime: actor, gossip,
// replica, mux, ring, hlc, wire, pager and internal, each its own module at
// the version this one requires. The columnar pager
// (github.com/casty-go/casty/arrowpager) is an optional module of its own.
// ring, mux, hlc, wire and pager can also be used without casty;
// RELEASING.md at the repository root says how each is versioned, and
// ARCHITECTURE.md how they fit together.
package casty
