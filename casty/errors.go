package casty

import (
	"errors"
	"fmt"

	"github.com/casty-go/casty/actor"
	"github.com/casty-go/casty/mux"
	"github.com/casty-go/casty/replica"
	"github.com/casty-go/casty/wire"
)

// Infrastructure errors, for errors.Is. Definite errors mean the call did
// not take effect; indeterminate ones mean it may have (see each).
var (
	// ErrTimeout: the call's deadline (ctx's, or Config.Actors.CallTimeout) passed.
	// Indeterminate. Also matches context.DeadlineExceeded; satisfies net.Error.
	ErrTimeout = actor.ErrTimeout
	// ErrActorUnavailable: the system is closed, or the activation was shut
	// down with the call queued, or no member could serve the call.
	// Definite when refused at the door; indeterminate when the call was
	// sent and its connection failed before the answer — then it also
	// matches ErrConnectionLost.
	ErrActorUnavailable = actor.ErrActorUnavailable
	// ErrConnectionLost: the connection to the member serving the call (or
	// stream) died while it was under way, the call already sent.
	// Indeterminate: the handler may have run and, for a replicated
	// actor, its write committed; retry only what is safe to repeat. Every
	// such error also matches ErrActorUnavailable. It is
	// mux.ErrConnectionLost.
	ErrConnectionLost = mux.ErrConnectionLost
	// ErrQuorumUnavailable: a replicated write did not reach its write
	// quorum. Indeterminate: a replica may hold it.
	ErrQuorumUnavailable = errors.New("casty: quorum unavailable")
	// ErrNoReadQuorum: a replicated actor could not be activated — its
	// owner reached no read quorum of the key's replicas, or no replica
	// is alive — and no other replica took the call. Definite: the
	// handler did not run. It also matches ErrQuorumUnavailable.
	ErrNoReadQuorum = fmt.Errorf("%w: the activation reached no read quorum; the call did not run", ErrQuorumUnavailable)
	// ErrReplicaFull: activating a replicated actor needs replicas that
	// are at their Config.Replication.MaxBytes and hold nothing of it.
	// Definite: nothing was written.
	ErrReplicaFull = replica.ErrFull
	// ErrRangeMoving: the key's range is moving between nodes. Definite.
	ErrRangeMoving = actor.ErrRangeMoving
	// ErrUnknownActorType: the kind or method is not known where the call
	// went (or the function passed is not a handler: ErrNotAHandler).
	// Definite.
	ErrUnknownActorType = actor.ErrUnknownActorType
	// ErrNotAHandler: the function passed to Call, Call0, Do, Do0, Stream,
	// Upload or Duplex is not a handler of the Ref's kind — a nil func, a
	// function literal, a plain function, an unexported method, a method
	// of another type, a lifecycle hook, or a handler of another shape
	// than the helper calls. The message says which and what to pass. It
	// also matches ErrUnknownActorType. Definite: nothing was sent.
	ErrNotAHandler = actor.ErrNotAHandler
	// ErrZeroRef: the call went through a zero Ref, one not made by
	// Kind.Ref or ServiceKind.Ref. Definite: nothing was sent.
	ErrZeroRef = errors.New("casty: zero Ref")
	// ErrInvalidKey: the key does not name an actor: the empty string
	// (an actor's key is any non-empty string; a service's Ref has none).
	// Definite: nothing was sent.
	ErrInvalidKey = errors.New("casty: invalid key")
	// ErrReentrancy: the call would wait on an activation already waiting
	// in this call chain (A→A, A→B→A). Definite.
	ErrReentrancy = actor.ErrReentrancy
	// ErrCallChainTooLong: the call would make its call chain longer than
	// MaxCallChain activations, or a node received a call naming more.
	// Definite.
	ErrCallChainTooLong = actor.ErrCallChainTooLong
	// ErrOverloaded: the call needed a new activation on a member already
	// holding Config.Actors.MaxActivations, each running a handler (none idle,
	// none only ending a commit); or the member was
	// already handling as many requests from this connection as its
	// transport takes at once (mux.Config.MaxRequests). Definite: nothing
	// ran; retry later.
	ErrOverloaded = actor.ErrOverloaded
	// ErrForbidden: the node serving the operation refused it to this
	// node's credential — reading an actor's state (StateOf) or spying
	// from a lite client that proved neither the cluster secret nor the
	// operator credential (WithOperatorSecret, or a certificate with
	// casty://role/operator). Definite: nothing was read.
	ErrForbidden = errors.New("casty: forbidden: the operator role is required")
	// ErrTooManySpies: the node already serves Config.Actors.MaxSpies spy
	// subscriptions (its own Spy calls and other nodes' cluster spies).
	// Definite: no subscription was made.
	ErrTooManySpies = errors.New("casty: too many spy subscriptions")

	// ErrMessageTooLarge: a call's argument or result encodes to more
	// than Config.Transport.MaxMessage bytes, or a stream element to more than
	// that. An argument is refused by the calling member before anything
	// is sent (definite: nothing ran); a result, by the serving member
	// after the handler ran (its effects stand), as an *ActorFailedError
	// that wraps ErrMessageTooLarge; a stream element ends its stream.
	// Local calls encode nothing and are never refused for their size. It
	// is mux.ErrMessageTooLarge.
	ErrMessageTooLarge = mux.ErrMessageTooLarge

	// ErrNotRegistered: a struct type that crosses the wire — used by a
	// declared actor's state, a handler's argument or result, or a
	// registered message — was never registered with Message. Start and
	// Connect fail with it, and Local panics with it, naming each such
	// type, where it is used and the line that registers it. Kinds and
	// messages may be declared in any order and any file; only what is
	// still missing when a system starts counts. It is
	// wire.ErrNotRegistered.
	ErrNotRegistered = wire.ErrNotRegistered

	// ErrNotRemoved is AcceptLoss's refusal of a member the placement did
	// not take out (remove as dead, or see leave): a placed member or an
	// unknown id.
	ErrNotRemoved = errors.New("casty: the member was not taken out of the placement")

	// ErrInvalidConfig is wrapped by every error of Config.Validate and of
	// each group's Validate (and so by Local, Start and Connect given such
	// a Config); the message names the field by its path.
	ErrInvalidConfig = errors.New("casty: invalid config")
	// ErrInvalidSeed: a seed given to Start or Connect is not a host:port
	// address a node can dial; the error names it. Definite: nothing
	// started.
	ErrInvalidSeed = errors.New("casty: invalid seed address")
)

// MaxCallChain is the most activations a call chain may hold waiting:
// a call made from the innermost of MaxCallChain nested handlers fails
// with ErrCallChainTooLong, and a node refuses a call from another node
// naming more, before allocating anything for them. 64: the chain exists
// to detect reentrancy, and no design short of unbounded recursion nests
// that deep. It is part of the wire contract (SPEC.md).
const MaxCallChain = actor.MaxCallChain

// ActorFailedError is a handler's failure as its caller sees it: kind, key,
// method, message and the supervisor's directive; Unwrap returns the
// handler's error (locally always; across nodes when its type is registered).
type ActorFailedError = actor.FailedError

// Answer marks err, returned by a handler, as an answer to its caller
// rather than a failure — "item not in cart", "insufficient funds": the
// errors a handler returns on purpose. An answered error
//
//   - bypasses the supervisor: it is not asked, the activation's failure
//     count is not raised (an answer resets it, as a success does), and a
//     Reset or Stop supervisor does not touch the activation;
//   - keeps the state the handler left, as a nil error does: it stays in
//     memory and, for a durable or replicated kind, is committed (when the
//     commit fails, the caller gets the commit's error instead, as after
//     nil). A handler that must not change its state when it answers
//     returns before changing it;
//   - reaches the caller as err itself (with the zero result), not as an
//     *ActorFailedError, so errors.Is and errors.As see it as the handler
//     returned it. From another node, err arrives as itself when its type
//     is registered with Message on both nodes (see "Errors across nodes"
//     in docs/guide.md); as its text otherwise, still
//     matching this package's sentinels. Telemetry counts the call with
//     the outcome "answered" (TELEMETRY.md).
//
// Answer(nil) is nil. The mark is found with errors.As, so an error that
// wraps Answer's result is an answer too (the caller gets the wrapping
// error). Errors not marked stay failures, decided by the supervisor.
func Answer(err error) error { return actor.Answer(err) }

// Errors registers sentinel errors — values a handler returns or wraps,
// that callers test with errors.Is, such as
//
//	var ErrOutOfStock = errors.New("inventory: out of stock")
//
//	var _ = casty.Errors(ErrOutOfStock, ErrUnknownSku)
//
// so that they keep their identity across nodes: a caller on another node
// gets an error that errors.Is matches against the same variable, as a
// local caller does, whether the handler returned the sentinel itself or
// wrapped it (fmt.Errorf("%s: %w", sku, ErrOutOfStock)); the error's text
// is the handler's, unchanged. Register them at package level on every
// node, in any file; a sentinel not registered on the calling node
// arrives as text only.
//
// A sentinel's wire name is its text, so two registered sentinels may not
// share one: prefix each with its package, as Go's convention has it.
// Registering the same value again is a no-op. Errors panics (a
// programming error, at package initialisation) on a nil error, on an
// error whose type is not comparable (errors.Is could not match it
// either), or on a text already registered for another value. It returns
// the wire names, in order.
//
// Sentinels are values; error types whose fields the caller reads with
// errors.As are registered as messages instead (Message; see "Errors
// across nodes" in docs/guide.md).
func Errors(errs ...error) []string {
	names := make([]string, len(errs))
	for i, err := range errs {
		name, perr := sentinelRegistry.add(err)
		if perr != nil {
			panic(perr.Error())
		}
		names[i] = name
	}
	return names
}

// PanicError is the error a panicking handler fails with. The member
// running the handler also logs the panic, with its stack, through the
// System's logger — at most once per actor.PanicLogEvery per kind and
// method, the next line counting those held back.
type PanicError = actor.PanicError

// Directive is a supervisor's decision.
type Directive = actor.Directive

// The directives.
const (
	// Keep leaves the activation and its state as they are (the default).
	Keep = actor.Keep
	// Reset discards the activation without its Deactivate hook; the next
	// call starts from the last replicated state (zero state locally).
	Reset = actor.Reset
	// Stop deactivates gracefully; the next call reactivates.
	Stop = actor.Stop
)

// Failure tells a supervisor about the failure: Failures counts the
// activation's consecutive failures, this one included.
type Failure = actor.Failure

// Supervisor decides what happens to an activation whose handler failed.
type Supervisor = func(kind, key string, err error, f Failure) Directive

// TimeoutError is ErrTimeout naming the call: it matches ErrTimeout and
// context.DeadlineExceeded, and satisfies net.Error.
type TimeoutError = actor.TimeoutError

// ReentrancyError names the activation a reentrant call would have
// deadlocked on; it matches ErrReentrancy.
type ReentrancyError = actor.ReentrancyError
