package actor

import (
	"context"
	"errors"
	"time"
)

// Schedule is a timer bound to an activation: its ticks are messages on the
// activation's own mailbox. It dies with the activation, never keeps it
// alive and never reactivates it.
type Schedule struct {
	a      *Activation
	id     uintptr
	method *Method
	every  time.Duration // 0: one-shot
	run    func(ctx context.Context, state any) error
	timer  *time.Timer
	done   bool // cancelled, fired (one-shot) or its activation ended; guarded by a.mu
	err    error
}

// tickEnv is a tick or an emitted message: one-way, dropped when the
// activation ends first.
type tickEnv struct {
	Envelope
	run func(ctx context.Context, state any) error
}

func (t *tickEnv) Invoke(ctx context.Context, state any) error { return t.run(ctx, state) }

// errNotInHandler is what scheduling from outside a handler reports.
var errNotInHandler = errors.New("casty: schedules and emits need a handler's ctx")

// Canceled returns a schedule that never fires and reports err.
func Canceled(err error) *Schedule { return &Schedule{done: true, err: err} }

// ScheduleFor arms a tick of run on the activation ctx belongs to: first
// after `after`, then — when every > 0 — again `every` after each tick
// finished (fixed delay). A schedule with the same id (the function's code
// pointer) replaces the earlier one.
func ScheduleFor(ctx context.Context, id uintptr, name string, after, every time.Duration, run func(context.Context, any) error) *Schedule {
	a := FromContext(ctx)
	if a == nil {
		return Canceled(errNotInHandler)
	}
	if a.kind.Service {
		return Canceled(errors.New("casty: services are stateless and cannot schedule"))
	}
	s := &Schedule{a: a, id: id, method: &Method{Name: name}, every: every, run: run}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.status != statusActive {
		s.done = true
		return s
	}
	x := a.extras()
	if old := x.schedules[id]; old != nil {
		old.stopLocked()
	}
	if x.schedules == nil {
		x.schedules = map[uintptr]*Schedule{}
	}
	x.schedules[id] = s
	s.timer = time.AfterFunc(after, s.fire)
	return s
}

// Emit queues run as the very next message of the activation ctx belongs
// to, after the current handler; emits of one handler keep their order. It
// is dropped if the activation ends first, or if the returned schedule is
// cancelled before it runs.
func Emit(ctx context.Context, name string, run func(context.Context, any) error) *Schedule {
	a := FromContext(ctx)
	if a == nil {
		return Canceled(errNotInHandler)
	}
	if a.kind.Service {
		return Canceled(errors.New("casty: services are stateless and cannot emit"))
	}
	m := &Method{Name: name}
	e := &tickEnv{run: run}
	e.Init(e, m)
	e.ctl = ctlTick
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.status != statusActive {
		return &Schedule{done: true} // the activation is ending: dropped
	}
	// A one-shot schedule of id 0 (never in the schedules map): Cancel
	// before it runs drops it, afterTick retires it once it ran.
	sch := &Schedule{a: a, method: m, run: run}
	e.sched = sch
	e.hctx.Context = a.lifeCtx()
	x := a.extras()
	x.emits = append(x.emits, &e.Envelope)
	return sch
}

// flushEmits puts what the handler emitted at the head of the mailbox.
func (a *Activation) flushEmits() {
	if a.x == nil {
		return
	}
	a.mu.Lock()
	if len(a.x.emits) > 0 {
		a.pushFront(a.x.emits)
		a.x.emits = nil
	}
	a.mu.Unlock()
}

// fire queues one tick.
func (s *Schedule) fire() {
	a := s.a
	a.mu.Lock()
	if s.done || a.status != statusActive {
		a.mu.Unlock()
		return
	}
	e := &tickEnv{run: s.run}
	e.Init(e, s.method)
	e.ctl = ctlTick
	e.sched = s
	e.hctx.Context = a.lifeCtx()
	start := a.push(&e.Envelope)
	a.mu.Unlock()
	if start {
		a.host.start(a)
	}
}

// afterTick re-arms a periodic schedule once its tick has finished
// (fixed delay), or retires a one-shot.
func (a *Activation) afterTick(e *Envelope) {
	s := e.sched
	if s == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if s.done {
		return
	}
	if s.every > 0 {
		s.timer.Reset(s.every)
		return
	}
	s.done = true
	if a.x != nil && a.x.schedules[s.id] == s {
		delete(a.x.schedules, s.id)
	}
}

func (s *Schedule) stopLocked() {
	s.done = true
	if s.timer != nil {
		s.timer.Stop()
	}
}

// Cancel stops the schedule; a tick already queued does not run. Cancel is
// idempotent and safe from any goroutine.
func (s *Schedule) Cancel() {
	if s == nil || s.a == nil {
		return
	}
	a := s.a
	a.mu.Lock()
	defer a.mu.Unlock()
	s.stopLocked()
	if a.x != nil && a.x.schedules[s.id] == s {
		delete(a.x.schedules, s.id)
	}
}

// Err reports why the schedule could not be armed (nil when it was).
func (s *Schedule) Err() error { return s.err }

// Active reports whether the schedule will still fire.
func (s *Schedule) Active() bool {
	if s == nil || s.a == nil {
		return false
	}
	s.a.mu.Lock()
	defer s.a.mu.Unlock()
	return !s.done
}
