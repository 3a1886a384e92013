package actor

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Invoker runs one message against an activation's state (*T, as any).
// Typed call helpers implement it on a struct that embeds Envelope, so a
// call costs one allocation: the envelope carries its own arguments,
// results and handler context.
type Invoker interface {
	Invoke(ctx context.Context, state any) error
}

// envelope states
const (
	envPending uint32 = iota
	envRunning
	envDone
	envAbandoned
)

// control envelopes (Envelope.ctl)
type ctlKind uint8

const (
	ctlNone  ctlKind = iota
	ctlDrain         // system shutdown: deactivate after what is queued before it
	ctlTick          // a schedule's tick or an emit: one-way, never moved
	ctlPeek          // StateOf: read the state between messages
)

// Envelope is one message in a mailbox. Embed it in the struct that
// implements Invoker and call Init before Ask or AskHere.
type Envelope struct {
	hctx   handlerCtx
	method *Method
	inv    Invoker
	state  atomic.Uint32
	w      *waiter // nil for one-way messages
	err    error
	ctl    ctlKind
	sched  *Schedule // the schedule a tick belongs to
	stream bool      // a stream: no default CallTimeout, only ctx bounds it
	here   bool      // sent by AskHere: its caller would have run it itself
}

// Streaming marks the envelope as a stream: a stream lives as long as its
// consumer wants it, so Config.CallTimeout does not apply; only ctx does.
func (e *Envelope) Streaming() { e.stream = true }

// Init binds the envelope to its invocation and handler.
func (e *Envelope) Init(inv Invoker, m *Method) {
	e.inv = inv
	e.method = m
}

// abandon marks the envelope as no longer awaited. It returns false when the
// reply is already on its way (the caller must then take it).
func (e *Envelope) abandon() bool {
	return e.state.CompareAndSwap(envPending, envAbandoned) ||
		e.state.CompareAndSwap(envRunning, envAbandoned)
}

// finish publishes err as the envelope's outcome and wakes its caller,
// unless the caller has given up.
func (e *Envelope) finish(err error) {
	// Only the first finisher (a reply, or a shutdown failing it) writes.
	if e.state.CompareAndSwap(envRunning, envDone) || e.state.CompareAndSwap(envPending, envDone) {
		e.err = err
		if e.w != nil {
			e.w.ch <- struct{}{}
		}
	}
}

// waiter is a pooled reply signal with its own reusable timer.
type waiter struct {
	ch      chan struct{}
	t       *time.Timer
	shard   uint32 // its watch shard (timeouts.go)
	expired bool   // the sweeper timed the call out (set before it sends on ch)
}

var waiters = sync.Pool{New: func() any {
	return &waiter{ch: make(chan struct{}, 1), shard: waiterShards.Add(1) % numWatchShards}
}}

func (w *waiter) arm(d time.Duration) <-chan time.Time {
	if w.t == nil {
		w.t = time.NewTimer(d)
	} else {
		w.t.Reset(d)
	}
	return w.t.C
}

// handlerCtx is the context a handler runs with: its parent is the caller's
// context (so deadlines and cancellation flow through), and it knows the
// activation, which is how Self and reentrancy detection work.
type handlerCtx struct {
	context.Context
	act      *Activation
	answered bool // the handler being committed returned an answer (Answer)
}

type selfKey struct{}

func (c *handlerCtx) Value(key any) any {
	if key == (selfKey{}) {
		return c
	}
	return c.Context.Value(key)
}

func handlerOf(ctx context.Context) *handlerCtx {
	if h, ok := ctx.(*handlerCtx); ok {
		return h
	}
	h, _ := ctx.Value(selfKey{}).(*handlerCtx)
	return h
}

// FromContext returns the activation whose handler ctx belongs to, or nil
// when ctx is not a handler's context.
func FromContext(ctx context.Context) *Activation {
	if ctx == nil {
		return nil
	}
	if h := handlerOf(ctx); h != nil {
		return h.act
	}
	return nil
}

// checkReentrancy fails when the activation (k, key) is already waiting
// somewhere up ctx's call chain. Services are concurrent and never deadlock
// on themselves, so they are skipped.
func checkReentrancy(ctx context.Context, k *Kind, key string) error {
	if k.Service {
		return nil
	}
	c := ctx
	depth := 0
	for h := handlerOf(c); h != nil; h = handlerOf(h.Context) {
		if h.act != nil && !h.act.kind.Service {
			if h.act.kind == k && h.act.key == key {
				return &ReentrancyError{Kind: k.Name, Key: key}
			}
			depth++
		}
		c = h.Context
	}
	remote, _ := c.Value(chainKey{}).([]string)
	if remoteChainHas(remote, k.Name, key) {
		return &ReentrancyError{Kind: k.Name, Key: key}
	}
	if depth+len(remote) >= MaxCallChain {
		return chainTooLong(k, key, depth+len(remote))
	}
	return nil
}

// ReentrancyError names the activation a call would have deadlocked on.
// It matches ErrReentrancy.
type ReentrancyError struct{ Kind, Key string }

func (e *ReentrancyError) Error() string {
	return "casty: reentrant call: " + e.Kind + "/" + e.Key + " is already waiting in this call chain"
}

// Unwrap returns ErrReentrancy.
func (e *ReentrancyError) Unwrap() error { return ErrReentrancy }
