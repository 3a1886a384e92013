package castytest

import (
	"context"
	"errors"
	"math"
	"sync"
	"time"

	"github.com/casty-go/casty/casty"
)

// Never is the return time of an operation whose outcome is unknown: it
// may take effect at any point after its call, or not at all, so it
// overlaps everything that follows it.
const Never = time.Duration(math.MaxInt64)

// Op is one operation of a history: who called it, with what, when (call
// and return, as offsets from the history's start) and what came back.
// An indeterminate op has Return == Never and no meaningful Output.
type Op[I, O any] struct {
	// Client is the caller, numbered from 0: operations of one client never
	// overlap (the visualisation draws one row per client).
	Client int
	// Input is what the operation asked for.
	Input I
	// Output is what came back; ignored when Indeterminate.
	Output O
	// Call and Return bound the operation in time, from the history's
	// start. Return is Never for an indeterminate op.
	Call, Return time.Duration
	// Indeterminate marks an operation whose effect is unknown: it timed
	// out, lost its quorum or its connection, or never returned.
	Indeterminate bool
}

// History records the operations of concurrent clients for a
// linearizability check. It is safe for concurrent use; the zero value is
// not usable, call NewHistory.
//
// An operation is recorded in two steps: Begin when the client is about to
// call, Return (or Fail, or Unknown) on its Pending when the call came
// back. Record does both around a function. An operation begun and never
// ended is indeterminate when the history is checked.
type History[I, O any] struct {
	start time.Time
	mu    sync.Mutex
	ops   []Op[I, O]
	gone  []bool // gone[i]: op i failed definitely and leaves the history
}

// NewHistory returns an empty history whose clock starts now.
func NewHistory[I, O any]() *History[I, O] {
	return &History[I, O]{start: time.Now()}
}

// Pending is an operation begun and not yet ended. End it exactly once.
type Pending[I, O any] struct {
	h *History[I, O]
	i int
}

// Begin records that client is calling with in, now.
func (h *History[I, O]) Begin(client int, in I) Pending[I, O] {
	now := time.Since(h.start)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, Op[I, O]{Client: client, Input: in, Call: now, Return: Never, Indeterminate: true})
	h.gone = append(h.gone, false)
	return Pending[I, O]{h: h, i: len(h.ops) - 1}
}

// Return ends the operation with the call's result: err nil records out
// returned now; an indeterminate err (see Indeterminate) records an
// unknown outcome; any other err records a definite failure, which took
// no effect and leaves the history.
func (p Pending[I, O]) Return(out O, err error) {
	switch {
	case err == nil:
		p.end(out, false, false)
	case Indeterminate(err):
		p.Unknown()
	default:
		p.Fail()
	}
}

// Fail ends the operation as a definite failure: it took no effect, so it
// leaves the history.
func (p Pending[I, O]) Fail() {
	var zero O
	p.end(zero, false, true)
}

// Unknown ends the operation with an unknown outcome: it may have taken
// effect at any time after its call, or never.
func (p Pending[I, O]) Unknown() {
	var zero O
	p.end(zero, true, false)
}

func (p Pending[I, O]) end(out O, unknown, gone bool) {
	now := time.Since(p.h.start)
	p.h.mu.Lock()
	defer p.h.mu.Unlock()
	op := &p.h.ops[p.i]
	op.Output, op.Indeterminate = out, unknown
	if !unknown {
		op.Return = now
	}
	p.h.gone[p.i] = gone
}

// Record begins an operation of client with in, runs call and ends the
// operation with its result (see Pending.Return), which it passes on.
func (h *History[I, O]) Record(client int, in I, call func() (O, error)) (O, error) {
	p := h.Begin(client, in)
	out, err := call()
	p.Return(out, err)
	return out, err
}

// Add appends a finished operation as given, for histories built by hand
// (tests of a model, or operations recorded elsewhere). An op with
// Indeterminate set gets Return = Never.
func (h *History[I, O]) Add(op Op[I, O]) {
	if op.Indeterminate {
		op.Return = Never
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, op)
	h.gone = append(h.gone, false)
}

// Ops returns a copy of the operations that count for the check: every
// operation begun, less those that failed definitely. An op still pending
// is indeterminate.
func (h *History[I, O]) Ops() []Op[I, O] {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]Op[I, O], 0, len(h.ops))
	for i, op := range h.ops {
		if !h.gone[i] {
			out = append(out, op)
		}
	}
	return out
}

// Indeterminate reports whether err leaves a call's effect unknown: it may
// have happened or not. That is the case for casty.ErrTimeout and
// casty.ErrQuorumUnavailable (indeterminate by their contract), for a
// cancelled ctx, and for casty.ErrActorUnavailable, which is definite only
// when the call was refused before it was sent but also reports a
// connection lost after sending. Errors casty documents as definite —
// ErrUnknownActorType, ErrReentrancy, ErrRangeMoving, ErrNoReadQuorum (an
// activation that found no read quorum: the handler did not run) and a
// handler's own failure (*casty.ActorFailedError) — are not
// indeterminate, and neither is any other error: classify your own with
// Pending.Fail or Pending.Unknown.
func Indeterminate(err error) bool {
	if err == nil {
		return false
	}
	var failed *casty.ActorFailedError
	if errors.As(err, &failed) || errors.Is(err, casty.ErrNoReadQuorum) {
		return false
	}
	return errors.Is(err, casty.ErrTimeout) ||
		errors.Is(err, casty.ErrQuorumUnavailable) ||
		errors.Is(err, casty.ErrActorUnavailable) ||
		errors.Is(err, context.Canceled) ||
		errors.Is(err, context.DeadlineExceeded)
}
