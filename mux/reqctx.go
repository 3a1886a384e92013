package mux

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// reqCtx is a request handler's context: cancelled when the requester
// gives up, the connection closes or the handler returns. It lives in the
// request's job (inbound), with no allocation of its own; its Done channel
// is made only if someone asks for it, and it implements AfterFunc so
// contexts derived from it need no watcher goroutine.
type reqCtx struct {
	mu    sync.Mutex
	done  chan struct{}
	err   error
	after []*afterFunc

	// Set while the handler runs on its session's reader (inline.go):
	// the session, and the reader's state word for this request.
	inline *Session
	word   uint64

	answered atomic.Bool // Answered: nothing is sent back
}

// requestKey finds, through a handler's derived contexts, its request.
type requestKey struct{}

// Answered marks the request whose handler runs with ctx, or with a
// context derived from it, as answered another way: once the handler
// returns, nothing is sent back, whatever it returned. It is for a
// requester that gets its answer elsewhere and then forgets its request
// (AsyncRequest.Forget); one that still waits times out. It reports false,
// and does nothing, when ctx belongs to no request handler.
func Answered(ctx context.Context) bool {
	c, ok := ctx.Value(requestKey{}).(*reqCtx)
	if ok {
		c.answered.Store(true)
	}
	return ok
}

// inlineKey finds, through a handler's derived contexts, the reqCtx of a
// request running on a reader.
type inlineKey struct{}

type afterFunc struct {
	f       func()
	stopped bool
}

var _ context.Context = (*reqCtx)(nil)

// Deadline reports none: the requester's deadline travels in the payload
// if the application wants it.
func (c *reqCtx) Deadline() (time.Time, bool) { return time.Time{}, false }

// Value carries no application values; inlineKey finds the context of a
// request that runs on its connection's reader, requestKey any request's.
func (c *reqCtx) Value(key any) any {
	switch key.(type) {
	case inlineKey:
		if c.inline != nil {
			return c
		}
	case requestKey:
		return c
	}
	return nil
}

// Done returns a channel closed once the context is cancelled.
func (c *reqCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		if c.err != nil {
			close(c.done)
		}
	}
	return c.done
}

// Err returns context.Canceled once cancelled, nil before.
func (c *reqCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// AfterFunc arranges for f to run in its own goroutine once c is
// cancelled (at once if it already is); stop prevents that if it has not
// happened yet. context.WithCancel and friends use it to propagate
// cancellation.
func (c *reqCtx) AfterFunc(f func()) (stop func() bool) {
	a := &afterFunc{f: f}
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		go f()
		return func() bool { return false }
	}
	c.after = append(c.after, a)
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.err != nil || a.stopped {
			return false
		}
		a.stopped = true
		return true
	}
}

func (c *reqCtx) cancel() {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = context.Canceled
	if c.done != nil {
		close(c.done)
	}
	var run []func()
	for _, a := range c.after {
		if !a.stopped {
			run = append(run, a.f)
		}
	}
	c.after = nil
	c.mu.Unlock()
	for _, f := range run {
		go f()
	}
}
