package actor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/casty-go/casty/wire"
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
	ReasonLost              // its Session's Commit failed (no hook)
	ReasonDeposed           // its Session learnt of a newer owner of its key (Depose; no hook)
)

func (r Reason) String() string {
	if int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return fmt.Sprintf("Reason(%d)", int(r))
}

var reasonNames = [...]string{"none", "idle", "deactivate", "stop", "reset", "drain", "moved", "lost", "deposed"}

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
	running  bool         // a goroutine is draining the mailbox (or a peek holds it)
	started  bool         // Activate has run
	touched  bool         // a call (not a tick) ran since lastUsed was set
	handBack bool         // drain only: its last message came from AskHere to a durable activation, so it does not linger
	evicted  bool         // its key moved away: queued calls fail with ErrRangeMoving
	roomFor  bool         // deactivating to make room under Config.MaxActivations
	settling bool         // its handler returned and it has not yet gone idle or taken its next message (capacity.go)
	status   uint8        // statusActive, statusClosing, statusClosed
	stopReq  Reason       // deactivate after the current message
	inflight int32        // service calls running (packed beside failures: an activation stays in its size class)
	failures atomic.Int32 // consecutive failures
	current  *Method      // the handler running now, for drain diagnostics
	lastUsed int64        // host clock, ns: end of the last call
	seq      atomic.Uint64
	obs      atomic.Pointer[observers] // who receives this activation's events
	x        *extras                   // rarely used parts, allocated on first use
	sess     Session                   // from Config.Durability's Restore; nil: nothing to commit
}

// extras holds what most activations never need, so an idle activation
// stays small.
type extras struct {
	schedules map[uintptr]*Schedule
	life      context.Context // cancelled when the activation ends
	cancel    context.CancelFunc
	emits     []*Envelope                      // emitted by the running handler
	serving   map[*Envelope]context.CancelFunc // service calls in flight
}

func (a *Activation) extras() *extras {
	if a.x == nil {
		a.x = &extras{}
	}
	return a.x
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

// lifeCtx returns the context ticks run under: cancelled when the
// activation ends. The caller holds a.mu.
func (a *Activation) lifeCtx() context.Context {
	x := a.extras()
	if x.life == nil {
		x.life, x.cancel = context.WithCancel(context.Background())
	}
	return x.life
}

// push appends e; the caller holds a.mu. It reports whether a worker must be
// started.
func (a *Activation) push(e *Envelope) bool {
	a.queue = append(a.queue, e)
	return a.claim()
}

// pushFront puts es ahead of everything queued, in order.
func (a *Activation) pushFront(es []*Envelope) bool {
	q := make([]*Envelope, 0, len(es)+len(a.queue)-a.head)
	q = append(q, es...)
	q = append(q, a.queue[a.head:]...)
	a.queue, a.head = q, 0
	return a.claim()
}

// claim marks the mailbox as being drained unless it already is; it reports
// whether the caller must start the worker.
func (a *Activation) claim() bool {
	if a.running || (a.kind.Service && int(a.inflight) >= a.kind.Concurrency) {
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
	draining.Add(1)
	defer draining.Add(-1)
	a.drain()
}

// lingerYield is runtime.Gosched; tests count a mailbox's lingering
// through it.
var lingerYield = runtime.Gosched

func (a *Activation) drain() {
	linger, lingerMax := 0, a.host.spin()
	for {
		a.mu.Lock()
		if a.stopReq != ReasonNone && a.inflight == 0 && a.status == statusActive {
			reason := a.stopReq
			a.status = statusClosing
			woke := a.unsettle()
			a.mu.Unlock()
			if woke {
				a.host.freed()
			}
			a.deactivate(reason)
			return
		}
		if a.empty() && !a.kind.Service && a.stopReq == ReasonNone && linger < lingerMax && !a.handBack {
			// A caller that just got its reply often sends again at once:
			// yield a few times before giving the goroutine up.
			linger++
			a.mu.Unlock()
			lingerYield()
			continue
		}
		if a.empty() || (a.kind.Service && int(a.inflight) >= a.kind.Concurrency) || a.stopReq != ReasonNone {
			a.running = false
			a.current = nil
			if a.touched {
				a.lastUsed, a.touched = a.host.now(), false
			}
			woke := a.unsettle()
			a.mu.Unlock()
			if woke {
				a.host.freed()
			}
			return
		}
		linger = 0
		e := a.pop()
		// A durable activation whose callers would run their messages
		// themselves (AskHere: a connection's reader) gives its goroutine
		// up as soon as its mailbox empties instead of lingering: the
		// reader then runs the next message on its own goroutine, where a
		// commit's wait reads its replies itself (casty, mux.WaitReading).
		a.handBack = e.here && a.sess != nil
		woke := a.unsettle() // busy with the next message
		if e.sched != nil && e.sched.done {
			a.mu.Unlock()
			if woke {
				a.host.freed()
			}
			continue // its schedule was cancelled while it waited
		}
		a.current = e.method
		service := a.kind.Service && e.ctl == ctlNone
		if service {
			a.inflight++
		}
		a.mu.Unlock()
		if woke {
			a.host.freed()
		}

		switch e.ctl {
		case ctlDrain:
			a.requestStop(ReasonDrain)
			continue
		case ctlPeek:
			e.state.CompareAndSwap(envPending, envRunning)
			e.finish(a.host.guard(func() error { return e.inv.Invoke(nil, a.state) }))
			continue
		}
		if !a.started {
			if err := a.activate(e); err != nil {
				a.failActivation(e, err)
				return
			}
		}
		if service {
			go a.serve(e)
			continue
		}
		a.process(e)
	}
}

// runHere runs e on the caller's goroutine, which holds the mailbox (see
// Host.AskHere), then hands the mailbox on: to a worker when messages
// queued meanwhile or a deactivation is due, else back to idle.
func (a *Activation) runHere(e *Envelope) {
	draining.Add(1)
	defer draining.Add(-1)
	if !a.started {
		if err := a.activate(e); err != nil {
			a.failActivation(e, err)
			return
		}
	}
	a.mu.Lock()
	a.current = e.method
	a.mu.Unlock()
	a.process(e)
	a.mu.Lock()
	woke := a.unsettle()
	if !a.empty() || a.stopReq != ReasonNone {
		a.mu.Unlock()
		if woke {
			a.host.freed()
		}
		a.host.start(a) // still marked running: the worker takes over
		return
	}
	a.running = false
	a.current = nil
	if a.touched {
		a.lastUsed, a.touched = a.host.now(), false
	}
	a.mu.Unlock()
	if woke {
		a.host.freed()
	}
}

// serve runs one service call on its own goroutine, cancelled if the host
// closes.
func (a *Activation) serve(e *Envelope) {
	ctx, cancel := context.WithCancel(e.hctx.Context)
	a.mu.Lock()
	x := a.extras()
	if x.serving == nil {
		x.serving = map[*Envelope]context.CancelFunc{}
	}
	x.serving[e] = cancel
	a.mu.Unlock()
	if a.host.closing.Load() {
		// A call queued behind Concurrency that starts once Close began:
		// Close's sweep of the calls in flight may have run before it
		// registered, so it fails itself rather than run.
		e.finish(errClosedBeforeServed)
	} else {
		e.hctx.Context = ctx
		a.process(e)
	}
	cancel()
	a.mu.Lock()
	delete(x.serving, e)
	a.inflight--
	start := !a.running && (!a.empty() || (a.stopReq != ReasonNone && a.inflight == 0))
	if start {
		a.running = true
	}
	a.touched = true
	a.lastUsed = a.host.now()
	woke := a.unsettle()
	a.mu.Unlock()
	if woke {
		a.host.freed()
	}
	if start {
		a.run()
	}
}

// errClosedBeforeServed fails the service calls still queued when the host
// closes.
var errClosedBeforeServed = fmt.Errorf("%w: system closed before the service call ran", ErrActorUnavailable)

// cancelServing fails every in-flight service call with err and cancels
// its handler (host shutdown).
func (a *Activation) cancelServing(err error) {
	a.mu.Lock()
	var es []*Envelope
	var cancels []context.CancelFunc
	if a.x != nil {
		for e, c := range a.x.serving {
			es = append(es, e)
			cancels = append(cancels, c)
		}
	}
	a.mu.Unlock()
	for i, e := range es {
		e.finish(err)
		cancels[i]()
	}
}

func (a *Activation) activate(e *Envelope) error {
	// Under the lock: Peek reads started from other goroutines, and a
	// restore (the layer above's Durability) may take a network round.
	a.mu.Lock()
	a.started = true
	a.mu.Unlock()
	if err := a.restore(e); err != nil {
		return err
	}
	// Injectors are the embedder's code (casty.Inject): a panic in one fails
	// the activation like a failing Activate hook, never the process.
	err := a.host.guard(func() error {
		for _, inject := range a.host.injectors[a.kind] {
			inject(a.state)
		}
		return nil
	})
	if err == nil && a.kind.HasActivate {
		ctx := &handlerCtx{Context: context.Background(), act: a}
		err = a.host.guard(func() error { return a.state.(activator).Activate(ctx) })
	}
	if err == nil {
		if o := a.observers(); o.any {
			a.host.hub.publish(o, Activated{EventInfo: a.info()})
		}
		if f := a.host.cfg.Lifecycle; f != nil {
			f(a.kind, true, ReasonNone)
		}
	}
	return err
}

func (a *Activation) observers() *observers {
	return a.host.hub.observersOf(&a.obs, a.kind.Name, a.key)
}

func (a *Activation) info() EventInfo {
	return EventInfo{Kind: a.kind.Name, Key: a.key, Node: a.host.cfg.Node, Seq: a.seq.Add(1), Time: time.Now()}
}

// process runs one message and replies.
func (a *Activation) process(e *Envelope) {
	if !e.state.CompareAndSwap(envPending, envRunning) {
		return // the caller gave up before it started: never run stale work
	}
	if e.ctl == ctlNone && !a.kind.Service {
		a.touched = true // ticks and emits never keep an activation alive
	}
	e.hctx.act = a
	// The common path keeps a small frame: a mailbox goroutine starts on a
	// small stack, and the events built for observers (processObserved)
	// and for failures would make it grow on every call.
	if o := a.observers(); o.any {
		a.processObserved(e, o)
		return
	}
	err := a.host.guard(func() error { return e.inv.Invoke(&e.hctx, a.state) })
	if err != nil && !isAnswer(err) {
		a.failed(e, err, nil, 0)
		return
	}
	a.succeeded(e, err)
}

// succeeded completes e after its handler returned nil, or an answer
// (Answer): the state the handler left is committed and the failure
// count reset as for nil, and the caller gets the answer as its error.
func (a *Activation) succeeded(e *Envelope, answer error) {
	e.hctx.answered = answer != nil
	if a.sess != nil && !a.commit(e, false) {
		return
	}
	if a.failures.Load() != 0 {
		a.failures.Store(0)
	}
	a.flushEmits()
	e.finish(asAnswer(answer))
	a.afterTick(e)
}

// processObserved is process while someone observes the activation: it
// publishes Received, then Completed or Failed.
//
//go:noinline
func (a *Activation) processObserved(e *Envelope, o *observers) {
	hub := &a.host.hub
	ev := Received{EventInfo: a.info(), Method: e.method.Name}
	if p, ok := e.inv.(payloader); ok && o.payloads {
		ev.Arg = p.Arg()
	}
	hub.publish(o, ev)
	before := a.snapshot()
	start := time.Now() // the handler's own time, not inspection's
	err := a.host.guard(func() error { return e.inv.Invoke(&e.hctx, a.state) })
	took := time.Since(start)
	if err != nil && !isAnswer(err) {
		a.failed(e, err, o, took)
		return
	}
	done := Completed{EventInfo: a.info(), Method: e.method.Name, Duration: took}
	done.Changed = !bytes.Equal(before, a.snapshot())
	if p, ok := e.inv.(payloader); ok && o.payloads {
		done.Result = p.Result()
	}
	hub.publish(o, done)
	a.succeeded(e, err)
}

// failed completes e after its handler failed with err: supervision, the
// Failed event when observed (o non-nil), and the caller's *FailedError.
//
//go:noinline
func (a *Activation) failed(e *Envelope, err error, o *observers, took time.Duration) {
	a.host.logPanic(a, e.method.Name, err)
	dir := a.host.supervise(a, err, Failure{Failures: int(a.failures.Add(1)), Method: e.method.Name})
	if o != nil {
		a.host.hub.publish(o, Failed{EventInfo: a.info(), Method: e.method.Name, Duration: took, Err: err, Directive: dir})
	}
	switch dir {
	case Reset:
		a.requestStop(ReasonReset)
	case Stop:
		if a.sess != nil {
			a.stopped(e)
		}
		a.requestStop(ReasonStop)
	}
	if dir == Keep && a.sess != nil && !a.commit(e, true) {
		return
	}
	a.flushEmits()
	if a.kind.Service && a.host.closing.Load() {
		e.finish(fmt.Errorf("%w: system closed while the service call ran: %v", ErrActorUnavailable, err))
		return
	}
	e.finish(&FailedError{
		Kind: a.kind.Name, Key: a.key, Method: e.method.Name,
		Message: err.Error(), Directive: dir, Err: err,
	})
	a.afterTick(e)
}

// snapshot encodes the state for change detection (inspection only).
func (a *Activation) snapshot() []byte {
	if a.kind.Service {
		return nil
	}
	b, _ := wire.Marshal(a.state)
	return b
}

func (a *Activation) requestStop(r Reason) {
	a.mu.Lock()
	if a.stopReq == ReasonNone || r == ReasonReset || r == ReasonLost {
		a.stopReq = r
	}
	a.mu.Unlock()
}

// deactivate ends the activation: the Deactivate hook (except on Reset,
// Lost and Deposed), the session's Release, then finalize.
func (a *Activation) deactivate(reason Reason) {
	if reason != ReasonReset && reason != ReasonLost && reason != ReasonDeposed && a.started && a.kind.HasDeactivate {
		ctx, cancel := context.WithTimeout(context.Background(), a.host.cfg.DrainTimeout)
		hctx := &handlerCtx{Context: ctx, act: a}
		if err := a.host.guard(func() error { return a.state.(deactivator).Deactivate(hctx) }); err != nil {
			a.host.cfg.Logger.Warn("casty: Deactivate hook failed", "kind", a.kind.Name, "key", a.key, "reason", reason.String(), "err", err)
		}
		cancel()
	}
	if o := a.observers(); a.started && o.any {
		a.host.hub.publish(o, Deactivated{EventInfo: a.info(), Reason: reason})
	}
	if f := a.host.cfg.Lifecycle; f != nil && a.started {
		f(a.kind, false, reason)
	}
	a.release()
	var failWith error
	if a.evicted {
		failWith = fmt.Errorf("%w: %s moved to another node", ErrRangeMoving, a)
	}
	if next := a.host.finalize(a, failWith); next != nil {
		next.run()
	}
}

// failActivation fails e and everything queued: Restore, an injector or
// the Activate hook failed. A Restore error reaches the callers unchanged;
// the others as the Activate hook's *FailedError.
func (a *Activation) failActivation(e *Envelope, err error) {
	a.mu.Lock()
	a.status = statusClosing
	a.mu.Unlock()
	a.release()
	var fail error
	if re, ok := err.(*restoreError); ok && errors.Is(re.err, ErrDeclined) {
		// Only e was declined: what is queued behind it moves on, on a
		// worker (this may be a caller's goroutine: Host.AskHere).
		e.state.CompareAndSwap(envPending, envRunning)
		e.finish(re.err)
		if next := a.host.finalize(a, nil); next != nil {
			a.host.start(next)
		}
		return
	} else if ok {
		fail = re.err
		a.host.cfg.Logger.Warn("casty: restoring the state failed", "kind", a.kind.Name, "key", a.key, "err", fail)
	} else {
		a.host.cfg.Logger.Warn("casty: Activate hook failed", "kind", a.kind.Name, "key", a.key, "err", err)
		fail = &FailedError{Kind: a.kind.Name, Key: a.key, Method: "Activate", Message: err.Error(), Directive: Stop, Err: err}
	}
	e.state.CompareAndSwap(envPending, envRunning)
	e.finish(fail)
	a.host.finalize(a, fail)
}

// endLocked stops what is bound to the activation's life: schedules, the
// life context. The caller holds a.mu.
func (a *Activation) endLocked() {
	if a.x == nil {
		return
	}
	for _, s := range a.x.schedules {
		s.stopLocked()
	}
	a.x.schedules = nil
	if a.x.cancel != nil {
		a.x.cancel()
	}
}

// failAll fails every awaited envelope in q with err; one-way ones (ticks,
// emits) are dropped.
func failAll(q []*Envelope, err error) {
	for _, e := range q {
		if e != nil && e.w != nil {
			e.finish(err)
		}
	}
}

func (a *Activation) String() string { return a.kind.Name + "/" + a.key }
