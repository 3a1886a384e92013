package mux

import (
	"context"
	"time"

	"github.com/casty-go/casty/internal/sweep"
)

// deliver hands a request's answer to whoever waits for it.
func (p pendingReq) deliver(r result) {
	if p.fn != nil {
		p.fn(r.payload, r.err)
		return
	}
	p.ch <- r
}

// AsyncRequest is a request sent by RequestAsync whose answer is still to
// come.
type AsyncRequest struct {
	s  *Session
	id uint64
	l  Lane
}

// RequestAsync sends payload on lane like RequestTimeout but does not wait
// for the answer (ctx bounds the sending only):
// done is called exactly once, with the answer or with the error Request
// would have returned — from the goroutine that read the answer (the
// connection's reader), from the node's sweeper (timeout), from the one
// closing the session (ErrConnectionLost), from Cancel, or from
// RequestAsync itself when nothing could be sent. done must therefore
// return quickly and never block: hand the answer to another goroutine.
//
// A timeout of zero means none; any other is enforced by the sweeper, up
// to sweep.Every late whatever its length (there is no timer to spare). A
// caller that does not want the answer any more calls Cancel, which
// frees the request and tells the peer. payload may be reused once
// RequestAsync returns. It saves the waiting goroutine Request needs, so
// a caller that fans one message out to several peers and acts on the
// first answers pays one wake-up per answer rather than two.
func (s *Session) RequestAsync(ctx context.Context, l Lane, payload []byte, timeout time.Duration, done func(payload []byte, err error)) AsyncRequest {
	fn := func(r result) { done(r.payload, r.err) }
	if err := ctx.Err(); err != nil {
		fn(result{err: err})
		return AsyncRequest{}
	}
	if err := checkLane(l); err != nil {
		fn(result{err: err})
		return AsyncRequest{}
	}
	if len(payload) > s.node.cfg.MaxMessage {
		fn(result{err: ErrMessageTooLarge})
		return AsyncRequest{}
	}
	s = s.current()
	id := s.nextID.Add(1)
	p := pendingReq{fn: done, lane: l}
	if timeout > 0 {
		p.deadline = s.node.nanotime() + int64(timeout)
	}
	s.mu.Lock()
	if s.closeErr != nil {
		err := s.closeErr
		s.mu.Unlock()
		fn(result{err: notSent(err)}) // definite: never queued
		return AsyncRequest{}
	}
	s.pending[id] = p
	s.mu.Unlock()
	if timeout > 0 {
		s.node.sweepPending()
		if timeout < sweep.Threshold {
			s.node.timeouts.Poke() // its loop may be asleep until a later deadline
		}
	}
	if err := s.lanes[l].send(ctx, frameRequest, id, payload); err != nil {
		if s.dropPending(id) {
			fn(result{err: err})
		}
		return AsyncRequest{}
	}
	return AsyncRequest{s: s, id: id, l: l}
}

// Cancel abandons the request: if its answer has not come yet, done is
// called with context.Canceled and the peer is told to cancel its
// handler. Cancel of a request already answered, or of the zero
// AsyncRequest, does nothing.
func (a AsyncRequest) Cancel() {
	if a.s == nil {
		return
	}
	a.s.mu.Lock()
	p, ok := a.s.pending[a.id]
	delete(a.s.pending, a.id)
	a.s.signalIdleLocked()
	a.s.mu.Unlock()
	if ok {
		p.deliver(result{err: context.Canceled})
		_ = a.s.lanes[a.l].send(nil, frameCancel, a.id, nil)
	}
}

// Forget frees the request without telling the peer and without calling
// done: for a requester that got its answer another way and knows that
// the peer's handler goes on to its end and sends none (Answered). An
// answer that arrives anyway is dropped. Forget of a request already
// answered, or of the zero AsyncRequest, does nothing.
func (a AsyncRequest) Forget() {
	if a.s == nil {
		return
	}
	a.s.mu.Lock()
	delete(a.s.pending, a.id)
	a.s.signalIdleLocked()
	a.s.mu.Unlock()
}
