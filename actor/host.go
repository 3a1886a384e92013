package actor

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/casty-go/casty/internal/sweep"
)

const numShards = 64

// spinRounds is how many times a caller, or a worker whose mailbox just
// emptied, yields before parking: enough to cover one handler round trip
// on another core, few enough to cost nothing measurable when idle.
// Host.spin decides whether they yield at all.
const spinRounds = 8

// Process-wide load, shared by every Host: the Ps are the process's, so
// the decision to spin is too (a clustered test or benchmark runs several
// hosts in one process).
var (
	draining atomic.Int32 // mailboxes being drained right now
	awaiting atomic.Int32 // callers waiting in await
)

type actID struct {
	kind *Kind
	key  string
}

type shard struct {
	mu sync.RWMutex
	m  map[actID]*Activation
}

// Host runs activations in one process: it finds or creates the activation
// for a (kind, key), queues messages on its mailbox, deactivates idle ones
// (after their idle timeout, or earlier to make room under
// Config.MaxActivations) and drains them all on Close. A Host is safe for
// concurrent use.
type Host struct {
	cfg       Config
	owner     atomic.Value // what runs the host (SetOwner)
	injectors map[*Kind][]func(state any)
	seed      maphash.Seed
	shards    [numShards]shard
	epoch     time.Time

	closing  atomic.Bool
	live     atomic.Int64 // activations not yet finalized, and slots reserved for new ones
	room     room         // Config.MaxActivations (capacity.go)
	evicting atomic.Int64 // activations deactivating to make room
	settling atomic.Int64 // activations settling: their handler returned, their commit runs (capacity.go)
	minIdle  atomic.Int64 // smallest idle timeout among kinds seen, ns
	drained  chan struct{}
	drainOne sync.Once
	closed   chan struct{}
	stopJan  chan struct{}
	janDone  chan struct{}

	nudge    chan struct{} // the smallest idle timeout went down
	hub      hub
	procs    atomic.Int32               // GOMAXPROCS, refreshed by the janitor
	watches  [numWatchShards]watchShard // calls waiting on CallTimeout (timeouts.go)
	timeouts sweep.Sweeper              // expires the watched calls (timeouts.go)
	panics   panicLog                   // rate-limits the log lines of handler panics (panics.go)
}

// NewHost starts a host. injectors run on every new activation of their
// SetOwner records what runs the host — casty's *System — so that code
// reaching the host from an activation (Activation.Host) finds it without
// a process-wide table. Set it once, before the host serves.
func (h *Host) SetOwner(v any) { h.owner.Store(ownerBox{v}) }

// Owner returns what SetOwner recorded, nil if nothing.
func (h *Host) Owner() any {
	b, _ := h.owner.Load().(ownerBox)
	return b.v
}

// ownerBox lets SetOwner store values of any type (atomic.Value needs one
// concrete type).
type ownerBox struct{ v any }

// kind, before its Activate hook. Close must be called to stop it.
func NewHost(cfg Config, injectors map[*Kind][]func(state any)) (*Host, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	h := &Host{
		cfg:       cfg.withDefaults(),
		injectors: injectors,
		seed:      maphash.MakeSeed(),
		epoch:     time.Now(),
		drained:   make(chan struct{}),
		closed:    make(chan struct{}),
		stopJan:   make(chan struct{}),
		janDone:   make(chan struct{}),
		nudge:     make(chan struct{}, 1),
	}
	h.hub.interceptor = h.cfg.Interceptor
	h.hub.logf = h.cfg.Logger.Error
	h.hub.rearm()
	h.minIdle.Store(int64(Forever))
	h.procs.Store(int32(runtime.GOMAXPROCS(0)))
	for i := range h.shards {
		h.shards[i].m = make(map[actID]*Activation)
	}
	go h.janitor()
	return h, nil
}

func (h *Host) now() int64 { return int64(time.Since(h.epoch)) }

func (h *Host) shardFor(key string) *shard {
	return &h.shards[maphash.String(h.seed, key)%numShards]
}

// Ask queues e on the activation (k, key) and waits for its outcome: nil,
// the handler's failure as a *FailedError, the handler's answer as an
// *AnswerError (Answer), or an infrastructure error. A
// ctx without a deadline is bounded by Config.CallTimeout.
func (h *Host) Ask(ctx context.Context, k *Kind, key string, e *Envelope) error {
	return h.ask(ctx, k, key, e, false)
}

// ask is Ask, or AskHere when here is set.
func (h *Host) ask(ctx context.Context, k *Kind, key string, e *Envelope, here bool) error {
	if err := ctx.Err(); err != nil {
		return h.ctxErr(err, k, key, e)
	}
	if err := checkReentrancy(ctx, k, key); err != nil {
		return err
	}
	w := waiters.Get().(*waiter)
	e.w = w
	e.hctx.Context = ctx
	e.here = here
	a, claimed, err := h.enqueueOr(k, key, e, here && !k.Service)
	if err != nil {
		waiters.Put(w)
		return err
	}
	if !claimed {
		return h.await(ctx, k, key, e, w)
	}
	a.runHere(e)
	<-w.ch
	waiters.Put(w)
	return e.err
}

// await waits for e's outcome, bounded by ctx (or Config.CallTimeout).
func (h *Host) await(ctx context.Context, k *Kind, key string, e *Envelope, w *waiter) error {
	if h.cfg.BeforeWait != nil {
		h.cfg.BeforeWait(ctx)
	}
	awaiting.Add(1)
	defer awaiting.Add(-1)
	// Most replies come within a scheduler round trip: yield a few times
	// before paying for a timer and a park.
	for range h.spin() {
		select {
		case <-w.ch:
			waiters.Put(w)
			return e.err
		default:
			runtime.Gosched()
		}
	}
	var timeout <-chan time.Time
	_, hasDeadline := ctx.Deadline()
	bounded := !hasDeadline && !e.stream
	coarse := bounded && h.cfg.CallTimeout >= sweep.Threshold
	switch {
	case coarse:
		h.watch(e, w, h.cfg.CallTimeout)
	case bounded:
		timeout = w.arm(h.cfg.CallTimeout)
	}
	var err error
	if done := ctx.Done(); done == nil && timeout == nil {
		<-w.ch // the common case: one receive
		err = e.err
	} else {
		select {
		case <-w.ch:
			err = e.err
		case <-done:
			err = h.ctxErr(ctx.Err(), k, key, e)
			if !e.abandon() {
				<-w.ch
				err = e.err
			}
		case <-timeout:
			err = &TimeoutError{Kind: k.Name, Key: key, Method: e.method.Name}
			if !e.abandon() {
				<-w.ch
				err = e.err
			}
		}
	}
	if coarse {
		h.unwatch(e, w)
	}
	if timeout != nil {
		w.t.Stop()
	}
	if w.expired {
		w.expired = false
		err = &TimeoutError{Kind: k.Name, Key: key, Method: e.method.Name}
	}
	waiters.Put(w)
	return err
}

// errNotActive answers a peek whose activation ended first.
var errNotActive = errors.New("casty: not active")

type peekEnv struct {
	Envelope
	fn func(state any) error
}

func (p *peekEnv) Invoke(_ context.Context, state any) error { return p.fn(state) }

var peekMethod = &Method{Name: "StateOf"}

// Peek runs fn on the live state of (k, key) between two messages, without
// queuing behind the mailbox: at once when no handler is running, else as
// soon as the running one returns. It reports false when the actor is not
// active on this host. fn must only read (copy) the state.
func (h *Host) Peek(ctx context.Context, k *Kind, key string, fn func(state any) error) (bool, error) {
	sh := h.shardFor(key)
	sh.mu.RLock()
	a := sh.m[actID{k, key}]
	if a == nil {
		sh.mu.RUnlock()
		return false, nil
	}
	a.mu.Lock()
	if !a.started || a.status != statusActive {
		a.mu.Unlock()
		sh.mu.RUnlock()
		return false, nil
	}
	if !a.running && a.inflight == 0 {
		// Hold the mailbox ourselves: no handler can start meanwhile.
		a.running = true
		a.mu.Unlock()
		sh.mu.RUnlock()
		err := h.guard(func() error { return fn(a.state) })
		a.mu.Lock()
		a.running = false
		start := (!a.empty() || a.stopReq != ReasonNone) && a.claim()
		a.mu.Unlock()
		if start {
			h.start(a)
		}
		return true, err
	}
	e := &peekEnv{fn: fn}
	e.Init(e, peekMethod)
	e.ctl = ctlPeek
	w := waiters.Get().(*waiter)
	e.w = w
	e.hctx.Context = ctx
	a.pushFront([]*Envelope{&e.Envelope})
	a.mu.Unlock()
	sh.mu.RUnlock()
	err := h.await(ctx, k, key, &e.Envelope, w)
	if errors.Is(err, errNotActive) {
		return false, nil
	}
	if err != nil && (errors.Is(err, ErrTimeout) || errors.Is(err, context.Canceled)) {
		return false, err
	}
	return true, err
}

// AskHere is Ask for a caller whose own goroutine may carry the handler —
// a request that arrived from another node has a goroutine of its own,
// and the remote caller enforces its deadline itself. When the activation
// is idle the message runs right here, saving the hand-off to a mailbox
// goroutine and back; otherwise it queues and waits like Ask. A durable
// activation (one with a Durability session) whose mailbox goroutine ran
// a message sent by AskHere gives that goroutine up as soon as the
// mailbox empties, rather than lingering for a next message, so the next
// AskHere finds it idle and runs here.
func (h *Host) AskHere(ctx context.Context, k *Kind, key string, e *Envelope) error {
	return h.ask(ctx, k, key, e, true)
}

func (h *Host) ctxErr(err error, k *Kind, key string, e *Envelope) error {
	if err == context.DeadlineExceeded {
		return &TimeoutError{Kind: k.Name, Key: key, Method: e.method.Name}
	}
	return err
}

// enqueueOr queues e on (k, key)'s mailbox — or, when claim is set and the
// mailbox is idle, claims it for the caller without queuing (here true: the
// caller must run e with runHere).
func (h *Host) enqueueOr(k *Kind, key string, e *Envelope, claim bool) (a *Activation, here bool, err error) {
	if h.closing.Load() {
		return nil, false, fmt.Errorf("%w: system is closed", ErrActorUnavailable)
	}
	sh := h.shardFor(key)
	id := actID{k, key}
	sh.mu.RLock()
	a = sh.m[id]
	if a == nil {
		sh.mu.RUnlock()
		if a, err = h.create(sh, id, e); err != nil {
			return nil, false, err
		}
		defer sh.mu.Unlock()
	} else {
		defer sh.mu.RUnlock() // a is not closed: finalize needs sh.mu exclusively
	}
	a.mu.Lock()
	if claim && !a.running && a.empty() && a.stopReq == ReasonNone {
		a.running = true
		a.mu.Unlock()
		return a, true, nil
	}
	start := a.push(e)
	a.mu.Unlock()
	if start {
		h.start(a)
	}
	return a, false, nil
}

// create returns id's activation, creating it for e if there is none, with
// sh.mu held exclusively; on an error sh.mu is not held. A new activation
// takes a slot of Config.MaxActivations: when none is free it makes room
// (capacity.go) and looks again.
func (h *Host) create(sh *shard, id actID, e *Envelope) (*Activation, error) {
	for {
		sh.mu.Lock()
		if h.closing.Load() {
			sh.mu.Unlock()
			return nil, fmt.Errorf("%w: system is closed", ErrActorUnavailable)
		}
		if a := sh.m[id]; a != nil {
			return a, nil
		}
		if admit := h.cfg.Admit; admit != nil {
			if err := admit(e.hctx.Context, id.kind, id.key); err != nil {
				sh.mu.Unlock()
				return nil, err
			}
		}
		if !h.reserve() {
			sh.mu.Unlock()
			if err := h.makeRoom(e.hctx.Context, id.kind, id.key, e); err != nil {
				return nil, err
			}
			continue
		}
		a := h.newActivation(id.kind, id.key)
		sh.m[id] = a
		return a, nil
	}
}

// spin returns how many rounds a waiter may yield before parking.
//
// A yield pays off only when the answer is about to come from a goroutine
// already running on another P. With one P a yield just lets the other
// runnable goroutines go first, which is cheaper than a park and a
// wake-up: waiters spin while at most one mailbox is draining. With
// several Ps a yield goes through the global run queue every P contends
// on, and the yielding goroutine may resume on another core: waiters spin
// only while the waiting callers (local, and those waiting on other nodes:
// Config.ExternalWaits) and the draining mailboxes fit in the Ps — a lone
// caller and its actor, the case spinning is for.
func (h *Host) spin() int {
	waiting := awaiting.Load()
	if ext := h.cfg.ExternalWaits; ext != nil {
		waiting += ext()
	}
	if shouldSpin(draining.Load(), waiting, h.procs.Load()) {
		return spinRounds
	}
	return 0
}

// shouldSpin is spin's rule, given the draining mailboxes, the waiting
// callers and the Ps.
func shouldSpin(draining, awaiting, procs int32) bool {
	return procs == 1 && draining <= 1 || draining+awaiting <= procs
}

// start runs a's mailbox (a is marked running) on a goroutine of its own;
// it exits when the mailbox is empty, so idle activations hold no
// goroutine.
//
// Design note — fresh goroutines here, a pool in mux (mux/workers.go):
// what decides is whether the work fits a new goroutine's initial stack.
// The drain path is kept small enough to fit (process keeps the observed
// and failure paths out of its frame), so a fresh goroutine costs a start
// and nothing more, while handing work to a parked pooled goroutine costs
// a wake-up, often on another core. mux's request handlers decode and run
// reflection-heavy code that grows the stack: a fresh goroutine would
// regrow it on every request, so mux keeps grown goroutines in a pool. A
// change that makes the drain path outgrow the initial stack breaks this
// rule's premise (BENCHMARKS.md has the figures).
func (h *Host) start(a *Activation) { go a.run() }

// newActivation creates an activation; the caller holds its shard's lock
// and a slot (reserve, or the slot of the activation it replaces).
func (h *Host) newActivation(k *Kind, key string) *Activation {
	idle := h.idleOf(k)
	for {
		cur := h.minIdle.Load()
		if int64(idle) >= cur {
			break
		}
		if h.minIdle.CompareAndSwap(cur, int64(idle)) {
			select {
			case h.nudge <- struct{}{}:
			default:
			}
			break
		}
	}
	return &Activation{host: h, kind: k, key: key, state: k.New(), lastUsed: h.now()}
}

func (h *Host) idleOf(k *Kind) time.Duration {
	if d, ok := h.cfg.IdleTimeouts[k]; ok {
		return d
	}
	if k.IdleTimeout != 0 {
		return k.IdleTimeout
	}
	return h.cfg.IdleTimeout
}

// finalize removes a from its shard. What is still queued moves to a fresh
// activation (returned, already marked running: the caller runs it) when
// failWith is nil and the host is open; otherwise it fails with failWith
// (or ErrActorUnavailable).
func (h *Host) finalize(a *Activation, failWith error) *Activation {
	sh := h.shardFor(a.key)
	id := actID{a.kind, a.key}
	var next *Activation
	var orphans []*Envelope
	sh.mu.Lock()
	a.mu.Lock()
	a.status = statusClosed
	a.endLocked()
	var q []*Envelope
	for _, e := range a.queue[a.head:] {
		switch {
		case e.ctl == ctlPeek:
			e.finish(errNotActive)
		case e.ctl == ctlNone: // calls move on; ticks and emits die here
			q = append(q, e)
		}
	}
	a.queue, a.head = nil, 0
	if sh.m[id] == a {
		delete(sh.m, id)
	}
	if len(q) > 0 {
		if failWith == nil && !h.closing.Load() {
			next = h.newActivation(a.kind, a.key) // takes a's slot
			next.queue = q
			next.running = true
			sh.m[id] = next
		} else {
			orphans = q
		}
	}
	roomFor := a.roomFor
	a.mu.Unlock()
	sh.mu.Unlock()
	if orphans != nil {
		if failWith == nil {
			failWith = fmt.Errorf("%w: %s was shut down with the call queued", ErrActorUnavailable, a)
		}
		failAll(orphans, failWith)
	}
	if next == nil && h.live.Add(-1) == 0 && h.closing.Load() {
		h.drainOne.Do(func() { close(h.drained) })
	}
	if roomFor {
		h.evicting.Add(-1)
	}
	if next == nil || roomFor {
		h.freed()
	}
	return next
}

// guard runs f, turning a panic into a *PanicError.
func (h *Host) guard(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = newPanicError(r)
		}
	}()
	return f()
}

// supervise asks the kind's (or the host's) supervisor; a panic means Keep.
func (h *Host) supervise(a *Activation, err error, f Failure) (d Directive) {
	sup := a.kind.Supervisor
	if sup == nil {
		sup = h.cfg.Supervisor
	}
	defer func() {
		if r := recover(); r != nil {
			h.cfg.Logger.Error("casty: supervisor panicked; keeping the activation", "kind", a.kind.Name, "key", a.key, "panic", r)
			d = Keep
		}
	}()
	d = sup(a.kind.Name, a.key, err, f)
	if d < Keep || d > Stop {
		d = Keep
	}
	return d
}

// janitor deactivates idle activations. It sweeps every tenth of the
// smallest idle timeout in use, between 1 ms and 10 s.
func (h *Host) janitor() {
	defer close(h.janDone)
	t := time.NewTimer(h.sweepInterval())
	defer t.Stop()
	for {
		select {
		case <-h.stopJan:
			return
		case <-h.nudge:
			t.Reset(h.sweepInterval())
		case <-t.C:
			h.procs.Store(int32(runtime.GOMAXPROCS(0)))
			h.sweep()
			t.Reset(h.sweepInterval())
		}
	}
}

func (h *Host) sweepInterval() time.Duration {
	d := time.Duration(h.minIdle.Load()) / 10
	return min(max(d, time.Millisecond), 10*time.Second)
}

func (h *Host) sweep() {
	now := h.now()
	var starts []*Activation
	for i := range h.shards {
		sh := &h.shards[i]
		sh.mu.RLock()
		for _, a := range sh.m {
			a.mu.Lock()
			if a.status == statusActive && !a.running && a.empty() && a.inflight == 0 &&
				a.stopReq == ReasonNone && now-a.lastUsed >= int64(h.idleOf(a.kind)) {
				a.stopReq = ReasonIdle
				a.running = true
				starts = append(starts, a)
			}
			a.mu.Unlock()
		}
		sh.mu.RUnlock()
	}
	for _, a := range starts {
		h.start(a)
	}
}

// Len returns the number of live activations.
func (h *Host) Len() int { return int(h.live.Load()) }

// Close stops accepting messages, lets every activation finish what is
// queued and run its Deactivate hook, and returns when all are gone or
// Config.DrainTimeout (or ctx) expires; then it logs what is still running
// and fails what is still queued with ErrActorUnavailable. Every later call
// fails with ErrActorUnavailable. Close is idempotent; concurrent callers
// wait for the first.
func (h *Host) Close(ctx context.Context) error {
	if !h.closing.CompareAndSwap(false, true) {
		select {
		case <-h.closed:
		case <-ctx.Done():
		}
		return nil
	}
	defer close(h.closed)
	h.freed() // callers waiting for a slot fail at once with ErrActorUnavailable
	var starts, services []*Activation
	for i := range h.shards {
		sh := &h.shards[i]
		sh.mu.Lock()
		for _, a := range sh.m {
			if a.kind.Service {
				services = append(services, a)
			}
			a.mu.Lock()
			if a.status == statusActive {
				if a.push(&Envelope{ctl: ctlDrain}) {
					starts = append(starts, a)
				}
			}
			a.mu.Unlock()
		}
		sh.mu.Unlock()
	}
	for _, a := range starts {
		h.start(a)
	}
	for _, a := range services {
		a.cancelServing(fmt.Errorf("%w: system closed while the service call ran", ErrActorUnavailable))
	}
	if h.live.Load() == 0 {
		h.drainOne.Do(func() { close(h.drained) })
	}
	timer := time.NewTimer(h.cfg.DrainTimeout)
	defer timer.Stop()
	var err error
	select {
	case <-h.drained: // first: a host already drained has nothing to abandon, whatever ctx says
	default:
		select {
		case <-h.drained:
		case <-timer.C:
			err = h.abandonDrain(fmt.Sprintf("after %v", h.cfg.DrainTimeout))
		case <-ctx.Done():
			err = h.abandonDrain(ctx.Err().Error())
		}
	}
	close(h.stopJan)
	<-h.janDone
	return err
}

// abandonDrain logs what is still running and fails what is still queued.
func (h *Host) abandonDrain(why string) error {
	var stuck []string
	var orphans []*Envelope
	for i := range h.shards {
		sh := &h.shards[i]
		sh.mu.RLock()
		for _, a := range sh.m {
			a.mu.Lock()
			if a.current != nil && !a.kind.Service {
				stuck = append(stuck, a.String()+"."+a.current.Name)
			}
			if a.x != nil {
				for e := range a.x.serving { // service calls in flight
					stuck = append(stuck, a.String()+"."+e.method.Name)
				}
			}
			orphans = append(orphans, a.queue[a.head:]...)
			a.queue, a.head = a.queue[:0], 0
			a.mu.Unlock()
		}
		sh.mu.RUnlock()
	}
	failAll(orphans, fmt.Errorf("%w: system closed before the call ran", ErrActorUnavailable))
	if len(stuck) == 0 {
		// No handler running: activations whose Deactivate hooks had
		// not run yet when the ctx ended, or that a crash left behind.
		h.cfg.Logger.Warn("casty: drain cut short; activations not deactivated",
			"why", why, "activations", h.live.Load())
		return fmt.Errorf("casty: drain incomplete (%s): %d activations not deactivated", why, h.live.Load())
	}
	h.cfg.Logger.Error("casty: drain timed out; handlers still running are abandoned",
		"why", why, "running", strings.Join(stuck, ", "))
	return fmt.Errorf("casty: drain incomplete (%s): still running: %s", why, strings.Join(stuck, ", "))
}
