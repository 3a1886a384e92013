package casty

import (
	"context"
	"fmt"
	"iter"
	"sync"

	"github.com/casty-go/casty/actor"
	"github.com/casty-go/casty/wire"
)

// Event is a lifecycle event; switch on its concrete type. Every event
// carries, in Info and as promoted fields, its kind, key and node, a
// per-activation sequence number from 1 with no gaps, and the time.
type Event = actor.Event

// The lifecycle events.
type (
	// Activated: an activation started (its Activate hook succeeded).
	Activated = actor.Activated
	// Received: a handler started; Arg is its argument with payloads.
	Received = actor.Received
	// Completed: a handler succeeded; Duration, Changed (the state's
	// encoding differs from before), Result with payloads.
	Completed = actor.Completed
	// Failed: a handler failed; Err and the supervisor's Directive.
	Failed = actor.Failed
	// Deactivated: an activation ended, with its Reason.
	Deactivated = actor.Deactivated
	// Lag: a spy fell behind and dropped the Dropped oldest events here.
	Lag = actor.Lag
	// Gap: a cluster-scope spy lost a member.
	Gap = actor.Gap
)

// Reason says why an activation ended.
type Reason = actor.Reason

// The deactivation reasons.
const (
	ReasonIdle       = actor.ReasonIdle
	ReasonDeactivate = actor.ReasonDeactivate
	ReasonStop       = actor.ReasonStop
	ReasonReset      = actor.ReasonReset
	ReasonDrain      = actor.ReasonDrain
	ReasonMoved      = actor.ReasonMoved
	// ReasonLost: the activation's state could not be made durable (a
	// replicated write failed); it ended without its Deactivate hook.
	ReasonLost = actor.ReasonLost
	// ReasonDeposed: another member took over the replicated actor's key
	// under a newer ballot (views disagreed for a moment); the activation
	// ended without its Deactivate hook and the next call restores from
	// the replicas (replica/SPEC.md, "Read(One) and a deposed owner").
	ReasonDeposed = actor.ReasonDeposed
)

// Scope says which nodes a spy watches.
type Scope uint8

const (
	// ScopeLocal watches this node only (the default).
	ScopeLocal Scope = iota
	// ScopeCluster watches every member; in local mode, the same as
	// ScopeLocal.
	ScopeCluster
)

// SpyFilter selects events: Kind and Key are path.Match globs evaluated at
// the emitting node (empty matches all); Payloads includes arguments and
// results.
type SpyFilter struct {
	Kind, Key string
	Scope     Scope
	Payloads  bool
}

// WithInterceptor installs f to receive every lifecycle event inline, on
// the handler's goroutine, in order. f must return fast and never block; a
// panic in it is logged and never fails the handler. Its events carry no
// payloads (a spy with Payloads asks for them). Nothing is built for events
// when neither an interceptor nor a matching spy is armed: a spy costs
// only the activations it matches.
func WithInterceptor(f func(Event)) Option {
	return func(o *systemOptions) { o.interceptor = f }
}

// Spy subscribes to the events matching f until ctx ends, as a sequence
// that ends with ctx. It is lossy by design: a consumer that falls behind
// never slows an actor; the oldest pending events are dropped and a
// Lag{Dropped: n} takes their place, so every drop is accounted for.
//
// With Scope: ScopeCluster on a cluster node, the spy also dials every
// other member: each filters its own events and sends only the matching
// ones (Node says which member); a member lost meanwhile is reported
// in-band as a Gap. Across nodes, payloads arrive decoded as generic values
// (maps, slices, numbers, strings).
func (s *System) Spy(ctx context.Context, f SpyFilter) (iter.Seq[Event], error) {
	if ctx == nil {
		ctx = context.Background()
	}
	af := actor.SpyFilter{Kind: f.Kind, Key: f.Key, Payloads: f.Payloads}
	if f.Scope == ScopeCluster && s.cl != nil {
		return s.cl.spyCluster(ctx, af)
	}
	q, err := actor.NewSpyQueue(af)
	if err != nil {
		return nil, err
	}
	release, err := s.acquireSpy()
	if err != nil {
		return nil, err
	}
	if err := s.host.Attach(q); err != nil {
		release()
		return nil, err
	}
	return q.Seq(ctx, func() { s.host.Detach(q); release() }), nil
}

// acquireSpy takes one of the Config.Actors.MaxSpies subscription slots; release
// (idempotent) gives it back.
func (s *System) acquireSpy() (release func(), err error) {
	if s.spies.Add(1) > int64(s.cfg.Actors.MaxSpies) {
		s.spies.Add(-1)
		return nil, fmt.Errorf("%w: %d already (Config.Actors.MaxSpies)", ErrTooManySpies, s.cfg.Actors.MaxSpies)
	}
	var once sync.Once
	return func() { once.Do(func() { s.spies.Add(-1) }) }, nil
}

// StateOf returns a copy of the live state of the actor key, ok false when
// it is not active. It does not queue behind the mailbox: it reads between
// two messages — at once when the actor is idle, else as soon as the
// running handler returns (bounded by ctx). The copy is deep (encoded and
// decoded), so the caller may keep and change it.
func (k *Kind[T]) StateOf(ctx context.Context, sys *System, key string) (T, bool, error) {
	var out T
	if sys == nil {
		return out, false, errZeroRef
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if cl := sys.cl; cl != nil {
		if resp, local, err := cl.dispatch(ctx, k.k, key, placement{}, callReq{Op: opStateOf}, nil); !local {
			if err != nil || !resp.Ok {
				return out, false, err
			}
			return out, true, wire.Unmarshal(resp.Result, &out)
		}
	}
	ok, err := sys.host.Peek(ctx, k.k, key, func(state any) error {
		b, err := wire.Marshal(state)
		if err != nil {
			return err
		}
		return wire.Unmarshal(b, &out)
	})
	return out, ok, err
}
