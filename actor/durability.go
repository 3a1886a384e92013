package actor

import (
	"context"
	"errors"
)

// Durability is implemented by the layer above the engine to keep
// activations' state beyond their life (casty's replication). Set it in
// Config.Durability; the engine knows nothing of where the state goes.
//
// The host calls it on these rules:
//
//   - Restore runs once per activation, before its first message. A
//     Restore error fails that message and every message queued behind it
//     with the error unchanged, and discards the activation; the next
//     message starts a fresh one, which runs Restore again. ErrDeclined
//     fails the first message alone.
//   - The Session's Commit runs after every handler that succeeded, or
//     failed with the supervisor's Keep: calls, ticks, emits, and a
//     streaming handler once at its end. A Commit error reaches the caller
//     unchanged, the handler's emits are dropped, and the activation is
//     discarded without its Deactivate hook (ReasonLost); the messages
//     queued behind it are not failed: they run on a fresh activation,
//     which runs Restore again. The discarded activation's schedules die.
//   - A handler whose failure the supervisor answers with Reset or Stop
//     is not committed: the next activation restores the last committed
//     state.
//   - Release runs exactly once for every activation that got a non-nil
//     Session, whatever ends it, before its successor on the host starts.
//   - An activation its Durability deposes (Activation.Depose: its copies
//     have a newer owner) ends after the message it is running, if any,
//     as after a failed Commit but with ReasonDeposed: no Deactivate hook,
//     and the messages queued behind it run on a fresh activation.
//   - Services never restore nor commit; neither do Peek, the Activate and
//     Deactivate hooks, nor what they change.
type Durability interface {
	// Restore runs when an activation starts, on the goroutine that runs
	// its first message (possibly the caller's: see Session.Commit),
	// before the injectors and the Activate hook. It fills a.State(), a
	// fresh zero *T, from the durable copies, and returns the activation's
	// session: nil when there is nothing to commit for this activation,
	// which then costs nothing per handler. ctx is bounded by
	// Config.CallTimeout. On error the session is ignored (released when
	// non-nil).
	Restore(ctx context.Context, a *Activation) (Session, error)
}

// Session is one activation's link to its durable copies, returned by
// Durability.Restore. The host calls it from one goroutine at a time: the
// activation's.
type Session interface {
	// Commit runs after every handler of the activation that succeeded,
	// or failed with directive Keep (failed then says so: its partial
	// changes are committed), on the activation's goroutine, before the
	// caller gets its answer and before the handler's emits are queued.
	// ctx is the handler's: its deadline is the caller's (for ticks and
	// emits, the activation's life).
	//
	// Commit may run on the caller's goroutine (Host.AskHere), and that
	// goroutine may be a connection's reader: an implementation that may
	// block (waiting for replicas) must first hand the reader on — casty
	// calls mux.HandOff(ctx), or reads the replicas' replies itself
	// (mux.WaitReading) when they come on that very connection — just as
	// a mux.RequestHandler must before it waits.
	Commit(ctx context.Context, failed bool) error
	// Release is called once when the activation ends, whatever the
	// reason, after its last Commit.
	Release()
}

// Settled reports, for the ctx a Session's Commit receives, whether the
// handler being committed ended plainly: it succeeded without an answer
// (an error its caller gets as the call's outcome) and queued no emits.
// Only then is the caller's answer fully decided by the commit alone, which
// casty relies on to answer a caller before the owner hears the commit's
// outcome (replica/SPEC.md, "Early answers"). It reports false for any
// other ctx.
func Settled(ctx context.Context) bool {
	h, ok := ctx.(*handlerCtx)
	if !ok || h.answered || h.act == nil {
		return false
	}
	a := h.act
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.x == nil || len(a.x.emits) == 0
}

// ErrDeclined, returned (or wrapped) by a Durability's Restore, declines
// to start the activation for the message that started it (Starter): that
// message fails with the error, quietly, and calls queued behind it start
// a fresh activation, whose Restore runs again. casty declines its own
// unprompted reactivation of a durable actor whose state says it ended.
var ErrDeclined = errors.New("casty: activation declined")

// starterKey is the context key under which restore passes the starting
// message's method to Restore.
type starterKey struct{}

// Starter returns, for the ctx a Durability's Restore receives, the
// method of the message that starts the activation: nil for a tick, an
// emit, or any other ctx.
func Starter(ctx context.Context) *Method {
	m, _ := ctx.Value(starterKey{}).(*Method)
	return m
}

// restore runs the host's Durability for an activation that e starts. It
// returns the Restore error, or nil with a.sess set.
func (a *Activation) restore(e *Envelope) error {
	d := a.host.cfg.Durability
	if d == nil || a.kind.Service {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), a.host.cfg.CallTimeout)
	defer cancel()
	if e.method != nil {
		ctx = context.WithValue(ctx, starterKey{}, e.method)
	}
	var sess Session
	err := a.host.guard(func() (err error) {
		sess, err = d.Restore(ctx, a)
		return err
	})
	if err != nil {
		if sess != nil {
			a.host.guard(func() error { sess.Release(); return nil })
		}
		return &restoreError{err}
	}
	a.sess = sess
	return nil
}

// restoreError marks an activation failure that came from Restore: its
// error reaches the callers unchanged, not as a handler's *FailedError.
type restoreError struct{ err error }

func (e *restoreError) Error() string { return e.err.Error() }
func (e *restoreError) Unwrap() error { return e.err }

// Stopper is implemented by a Session that must record its activation's
// end when its supervisor says Stop: nothing of the failed handler is
// committed, but a session may still mark the actor ended on top of its
// last commit (casty's durable actors stay down). Stopped runs on the
// activation's goroutine with the failed handler's ctx, before the
// activation stops; its error is only logged by the caller's supervisor
// path, never returned to the caller.
type Stopper interface {
	Stopped(ctx context.Context) error
}

// stopped tells a Stopper session that the supervisor stopped e's
// activation.
func (a *Activation) stopped(e *Envelope) {
	if st, ok := a.sess.(Stopper); ok {
		_ = a.host.guard(func() error { return st.Stopped(&e.hctx) })
	}
}

// commit commits the handler e just ran. On a Commit error it finishes e
// with that error, drops the handler's emits and marks the activation
// lost; it reports false then, and the caller must not finish e.
func (a *Activation) commit(e *Envelope, failed bool) bool {
	a.settle()
	err := a.host.guard(func() error { return a.sess.Commit(&e.hctx, failed) })
	if err == nil {
		return true
	}
	a.mu.Lock()
	if a.x != nil {
		for _, em := range a.x.emits {
			em.sched.done = true
		}
		a.x.emits = nil
	}
	a.mu.Unlock()
	a.requestStop(ReasonLost)
	a.host.cfg.Logger.Warn("casty: commit failed; the activation is discarded", "kind", a.kind.Name, "key", a.key, "method", e.method.Name, "err", err)
	e.finish(err)
	return false
}

// Depose ends the activation after the message it is running, if any, as
// a failed Commit does but with ReasonDeposed: without its Deactivate
// hook, the messages queued behind it moving to a fresh activation, whose
// Restore runs again. It is for a Durability that learns between two
// Commits that the activation's copies have a newer owner (casty: a copy
// of the key promised another node's higher ballot), so that an idle
// activation does not go on answering from state that owner has since
// written over. It does nothing to an activation already ending, and
// reports whether it asked this one to end. Safe from any goroutine; it
// never waits.
func (a *Activation) Depose() bool {
	a.mu.Lock()
	if a.status != statusActive || a.stopReq != ReasonNone {
		a.mu.Unlock()
		return false
	}
	a.stopReq = ReasonDeposed
	start := a.claim()
	a.mu.Unlock()
	if start {
		a.host.start(a)
	}
	return true
}

// release ends the activation's session, once.
func (a *Activation) release() {
	if s := a.sess; s != nil {
		a.sess = nil
		a.host.guard(func() error { s.Release(); return nil })
	}
}
