package actor

import (
	"context"
	"fmt"
	"runtime"
	"sync"
)

// activation status
const (
	statusActive uint8 = iota
	statusClosing
	statusClosed
)

// Reason says why an activation ended.
type Reason uint8

// Deactivation reasons, as reported in events and logs.
const (
	ReasonNone       Reason = iota
	ReasonIdle              // no message for the idle timeout
	ReasonDeactivate        // Self(ctx).Deactivate()
	ReasonStop              // the supervisor said Stop
	ReasonReset             // the supervisor said Reset (no hook)
	ReasonDrain             // the system closed
	ReasonMoved             // the key's owner moved to another node
)

func (r Reason) String() string {
	return [...]string{"none", "idle", "deactivate", "stop", "reset", "drain", "moved"}[r]
}

// Activation is one live instance of an actor: its state, its mailbox and
// the goroutine that drains it (present only while there is work).
type Activation struct {
	host  *Host
	kind  *Kind
	key   string
	state any // *T

	mu       sync.Mutex
	queue    []*Envelope
	head     int
	running  bool    // a goroutine is draining the mailbox
	started  bool    // Activate has run
	status   uint8   // statusActive, statusClosing, statusClosed
	stopReq  Reason  // deactivate after the current message
	inflight int     // service calls running
	current  *Method // the handler running now, for drain diagnostics
	lastUsed int64   // host clock, ns
	failures int     // consecutive failures
}

// Key returns the actor's key.
func (a *Activation) Key() string { return a.key }

// Kind returns the actor's kind.
func (a *Activation) Kind() *Kind { return a.kind }

// Host returns the host the activation lives on.
func (a *Activation) Host() *Host { return a.host }

// State returns the activation's state (a *T). Only its own handlers may
// touch it.
func (a *Activation) State() any { return a.state }

// Deactivate asks for a graceful deactivation after the current message.
func (a *Activation) Deactivate() {
	a.mu.Lock()
	if a.stopReq == ReasonNone {
		a.stopReq = ReasonDeactivate
	}
	a.mu.Unlock()
}

// push appends e; the caller holds a.mu. It reports whether a worker must be
// started.
func (a *Activation) push(e *Envelope) bool {
	a.queue = append(a.queue, e)
	if a.running || (a.kind.Service && a.inflight >= a.kind.Concurrency) {
		return false
	}
	a.running = true
	return true
}

func (a *Activation) pop() *Envelope {
	e := a.queue[a.head]
	a.queue[a.head] = nil
	a.head++
	if a.head == len(a.queue) {
		a.queue, a.head = a.queue[:0], 0
	}
	return e
}

func (a *Activation) empty() bool { return a.head == len(a.queue) }

// run drains the mailbox, one message at a time, and exits when it is
// empty; it is started again by the next push. For services it dispatches
// up to Concurrency messages onto their own goroutines.
func (a *Activation) run() {
	a.host.busy.Add(1)
	a.drain()
	a.host.busy.Add(-1)
}

func (a *Activation) drain() {
	linger, lingerMax := 0, a.host.spin()
	for {
		a.mu.Lock()
		if a.stopReq != ReasonNone && a.inflight == 0 && a.status == statusActive {
			reason := a.stopReq
			a.status = statusClosing
			a.mu.Unlock()
			a.deactivate(reason)
			return
		}
		if a.empty() && !a.kind.Service && a.stopReq == ReasonNone && linger < lingerMax {
			// A caller that just got its reply often sends again at once:
			// yield a few times before giving the goroutine up.
			linger++
			a.mu.Unlock()
			runtime.Gosched()
			continue
		}
		if a.empty() || (a.kind.Service && a.inflight >= a.kind.Concurrency) || a.stopReq != ReasonNone {
			a.running = false
			a.current = nil
			a.lastUsed = a.host.now()
			a.mu.Unlock()
			return
		}
		linger = 0
		e := a.pop()
		a.current = e.method
		if a.kind.Service && e.ctl == ctlNone {
			a.inflight++
		}
		a.mu.Unlock()

		if e.ctl == ctlDrain {
			a.mu.Lock()
			a.stopReq = ReasonDrain
			a.mu.Unlock()
			continue
		}
		if !a.started {
			if err := a.activate(); err != nil {
				a.failActivation(e, err)
				return
			}
		}
		if a.kind.Service {
			go a.serve(e)
			continue
		}
		a.process(e)
	}
}

// serve runs one service call on its own goroutine.
func (a *Activation) serve(e *Envelope) {
	a.process(e)
	a.mu.Lock()
	a.inflight--
	start := !a.running && (!a.empty() || (a.stopReq != ReasonNone && a.inflight == 0))
	if start {
		a.running = true
	}
	a.lastUsed = a.host.now()
	a.mu.Unlock()
	if start {
		a.run()
	}
}

func (a *Activation) activate() error {
	a.started = true
	for _, inject := range a.host.injectors[a.kind] {
		inject(a.state)
	}
	if !a.kind.HasActivate {
		return nil
	}
	ctx := &handlerCtx{Context: context.Background(), act: a}
	return a.host.guard(func() error { return a.state.(Activator).Activate(ctx) })
}

// process runs one message and replies.
func (a *Activation) process(e *Envelope) {
	if !e.state.CompareAndSwap(envPending, envRunning) {
		return // the caller gave up before it started: never run stale work
	}
	e.hctx.act = a
	err := a.host.guard(func() error { return e.inv.Invoke(&e.hctx, a.state) })
	if err == nil {
		a.failures = 0
		e.finish(nil)
		return
	}
	a.failures++
	dir := a.host.supervise(a, err, Failure{Failures: a.failures, Method: e.method.Name})
	switch dir {
	case Reset:
		a.requestStop(ReasonReset)
	case Stop:
		a.requestStop(ReasonStop)
	}
	e.finish(&FailedError{
		Kind: a.kind.Name, Key: a.key, Method: e.method.Name,
		Message: err.Error(), Directive: dir, Err: err,
	})
}

func (a *Activation) requestStop(r Reason) {
	a.mu.Lock()
	if a.stopReq == ReasonNone || r == ReasonReset {
		a.stopReq = r
	}
	a.mu.Unlock()
}

// deactivate ends the activation: the Deactivate hook (except on Reset),
// then finalize.
func (a *Activation) deactivate(reason Reason) {
	if reason != ReasonReset && a.started && a.kind.HasDeactivate {
		ctx, cancel := context.WithTimeout(context.Background(), a.host.cfg.DrainTimeout)
		hctx := &handlerCtx{Context: ctx, act: a}
		if err := a.host.guard(func() error { return a.state.(Deactivator).Deactivate(hctx) }); err != nil {
			a.host.cfg.Logger.Warn("casty: Deactivate hook failed", "kind", a.kind.Name, "key", a.key, "reason", reason.String(), "err", err)
		}
		cancel()
	}
	if next := a.host.finalize(a, nil); next != nil {
		next.run()
	}
}

// failActivation fails e and everything queued: the Activate hook failed.
func (a *Activation) failActivation(e *Envelope, err error) {
	a.mu.Lock()
	a.status = statusClosing
	a.mu.Unlock()
	a.host.cfg.Logger.Warn("casty: Activate hook failed", "kind", a.kind.Name, "key", a.key, "err", err)
	fail := &FailedError{Kind: a.kind.Name, Key: a.key, Method: "Activate", Message: err.Error(), Directive: Stop, Err: err}
	e.state.CompareAndSwap(envPending, envRunning)
	e.finish(fail)
	a.host.finalize(a, fail)
}

// failAll fails every envelope in q with err.
func failAll(q []*Envelope, err error) {
	for _, e := range q {
		if e != nil && e.ctl == ctlNone {
			e.finish(err)
		}
	}
}

func (a *Activation) String() string { return fmt.Sprintf("%s/%s", a.kind.Name, a.key) }
