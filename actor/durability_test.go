package actor

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/casty-go/casty/internal/wait"
	"github.com/casty-go/casty/wire"
)

// durable is a counter whose hooks report to its recorder.
type durable struct {
	N   int
	rec *recorder
}

func (d *durable) Add(ctx context.Context, n int) (int, error) { d.N += n; return d.N, nil }

func (d *durable) Activate(ctx context.Context) error {
	if d.rec.failActivate.Load() {
		return errors.New("activate refused")
	}
	return nil
}

func (d *durable) Deactivate(ctx context.Context) error { d.rec.deactivates.Add(1); return nil }

// recorder counts the hooks and collects the Deactivated reasons.
type recorder struct {
	failActivate atomic.Bool
	deactivates  atomic.Int32
	mu           sync.Mutex
	reasons      []Reason
}

func (r *recorder) intercept(ev Event) {
	if d, ok := ev.(Deactivated); ok {
		r.mu.Lock()
		r.reasons = append(r.reasons, d.Reason)
		r.mu.Unlock()
	}
}

func (r *recorder) lastReason() Reason {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.reasons) == 0 {
		return ReasonNone
	}
	return r.reasons[len(r.reasons)-1]
}

// fakeDurability keeps each key's committed N in memory.
type fakeDurability struct {
	mu        sync.Mutex
	committed map[string]int
	sessions  []*fakeSession
	restores  int
	gate      chan struct{} // when set, Restore waits for it
	// restoreErr and commitErr, when set, decide the outcome.
	restoreErr func() error
	commitErr  func(n int) error
	nilSession bool
	starters   []*Method // Starter(ctx) of each Restore
}

type fakeSession struct {
	d        *fakeDurability
	a        *Activation
	commits  []bool // the failed flag of each commit
	settled  []bool // Settled(ctx) at each commit
	released int
}

func (d *fakeDurability) Restore(ctx context.Context, a *Activation) (Session, error) {
	if d.gate != nil {
		<-d.gate
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.restores++
	d.starters = append(d.starters, Starter(ctx))
	if d.restoreErr != nil {
		if err := d.restoreErr(); err != nil {
			return nil, err
		}
	}
	a.State().(*durable).N = d.committed[a.Key()]
	if d.nilSession {
		return nil, nil
	}
	s := &fakeSession{d: d, a: a}
	d.sessions = append(d.sessions, s)
	return s, nil
}

func (s *fakeSession) Commit(ctx context.Context, failed bool) error {
	if FromContext(ctx) != s.a {
		panic("Commit without its handler's ctx")
	}
	s.d.mu.Lock()
	defer s.d.mu.Unlock()
	n := s.a.State().(*durable).N
	s.commits = append(s.commits, failed)
	s.settled = append(s.settled, Settled(ctx))
	if s.d.commitErr != nil {
		if err := s.d.commitErr(n); err != nil {
			return err
		}
	}
	s.d.committed[s.a.Key()] = n
	return nil
}

func (s *fakeSession) Release() {
	s.d.mu.Lock()
	s.released++
	s.d.mu.Unlock()
}

func (d *fakeDurability) restoreCount() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.restores
}

func (d *fakeDurability) committedN(key string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.committed[key]
}

// releasedOnce reports a session released other than once.
func (d *fakeDurability) releasedOnce(t *testing.T) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, s := range d.sessions {
		if s.released != 1 {
			t.Errorf("session %d (%s) released %d times, want once", i, s.a, s.released)
		}
	}
}

// run is a message running fn against the state.
type run struct {
	Envelope
	fn func(ctx context.Context, d *durable) error
}

func (r *run) Invoke(ctx context.Context, state any) error { return r.fn(ctx, state.(*durable)) }

type durableHost struct {
	t   *testing.T
	k   *Kind
	h   *Host
	d   *fakeDurability
	rec *recorder
	add *Method
}

// newDurableHost starts a host with d as its Durability and sup as its
// supervisor (nil: Keep).
func newDurableHost(t *testing.T, d *fakeDurability, sup Supervisor, opts KindOptions) *durableHost {
	t.Helper()
	if opts.Name == "" {
		opts.Name = "test.durable"
	}
	k, err := NewKind(reflect.TypeFor[durable](), opts, wire.NewRegistry(), func() any { return new(durable) })
	if err != nil {
		t.Fatal(err)
	}
	if d.committed == nil {
		d.committed = map[string]int{}
	}
	rec := &recorder{}
	h, err := NewHost(Config{Durability: d, Supervisor: sup, Interceptor: rec.intercept},
		map[*Kind][]func(any){k: {func(s any) { s.(*durable).rec = rec }}})
	if err != nil {
		t.Fatal(err)
	}
	dh := &durableHost{t: t, k: k, h: h, d: d, rec: rec, add: k.MethodByName("Add")}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := h.Close(ctx); err != nil {
			t.Error(err)
		}
		d.releasedOnce(t)
	})
	return dh
}

// call runs fn on key, on the mailbox's goroutine or (here) the caller's.
func (dh *durableHost) call(here bool, key string, fn func(context.Context, *durable) error) error {
	e := &run{fn: fn}
	e.Init(e, dh.add)
	if here {
		return dh.h.AskHere(context.Background(), dh.k, key, &e.Envelope)
	}
	return dh.h.Ask(context.Background(), dh.k, key, &e.Envelope)
}

func add(n int) func(context.Context, *durable) error {
	return func(_ context.Context, d *durable) error { d.N += n; return nil }
}

// read returns the live N of key (a call, so it activates).
func (dh *durableHost) read(key string) int {
	var n int
	if err := dh.call(false, key, func(_ context.Context, d *durable) error { n = d.N; return nil }); err != nil {
		dh.t.Fatal(err)
	}
	return n
}

// A Restore error fails the message that started the activation and every
// message queued behind it with that very error — not as a handler's
// failure — and the next message starts afresh, restoring again.
func TestRestoreErrorFailsTheQueueUnchanged(t *testing.T) {
	for _, here := range []bool{false, true} {
		sentinel := errors.New("replicas unreachable")
		fails := true
		d := &fakeDurability{gate: make(chan struct{}), restoreErr: func() error {
			if fails {
				return sentinel
			}
			return nil
		}}
		dh := newDurableHost(t, d, nil, KindOptions{})
		errs := make(chan error, 3)
		go func() { errs <- dh.call(here, "r", add(1)) }()
		waitFor(t, 5*time.Second, "the first activation", func() bool { return dh.h.Len() == 1 })
		for range 2 {
			go func() { errs <- dh.call(false, "r", add(1)) }()
		}
		waitQueued(t, dh.h, dh.k, "r", 2)
		close(d.gate)
		for range 3 {
			err := <-errs
			var fe *FailedError
			if !errors.Is(err, sentinel) || errors.As(err, &fe) {
				t.Fatalf("here %v: %v, want the Restore error unchanged", here, err)
			}
		}
		d.mu.Lock()
		fails = false
		d.mu.Unlock()
		if n := dh.read("r"); n != 0 || d.restoreCount() != 2 {
			t.Fatalf("here %v: after the failed restore: N=%d, %d restores; want 0 and 2", here, n, d.restoreCount())
		}
	}
}

// ErrDeclined from Restore fails only the message that started the
// activation, without a warning; the calls queued behind it run on a
// fresh activation. Restore sees the starting message's method.
func TestDeclinedRestoreFailsOnlyTheStartingMessage(t *testing.T) {
	for _, here := range []bool{false, true} {
		declined := fmt.Errorf("ended for good: %w", ErrDeclined)
		first := true
		d := &fakeDurability{gate: make(chan struct{}), restoreErr: func() error {
			if first {
				first = false
				return declined
			}
			return nil
		}}
		dh := newDurableHost(t, d, nil, KindOptions{})
		starting := make(chan error, 1)
		go func() { starting <- dh.call(here, "r", add(1)) }()
		waitFor(t, 5*time.Second, "the first activation", func() bool { return dh.h.Len() == 1 })
		queued := make(chan error, 2)
		for range 2 {
			go func() { queued <- dh.call(false, "r", add(1)) }()
		}
		waitQueued(t, dh.h, dh.k, "r", 2)
		close(d.gate)
		if err := <-starting; !errors.Is(err, ErrDeclined) || err.Error() != declined.Error() {
			t.Fatalf("here %v: the starting call: %v, want the declining error", here, err)
		}
		for range 2 {
			if err := <-queued; err != nil {
				t.Fatalf("here %v: a queued call: %v, want it run on a fresh activation", here, err)
			}
		}
		if n := dh.read("r"); n != 2 || d.restoreCount() != 2 {
			t.Fatalf("here %v: N=%d after %d restores; want 2 and 2", here, n, d.restoreCount())
		}
		d.mu.Lock()
		for i, m := range d.starters {
			if m != dh.add {
				t.Fatalf("here %v: Restore %d saw Starter %v, want the call's method", here, i, m)
			}
		}
		d.mu.Unlock()
	}
	if Starter(context.Background()) != nil {
		t.Fatal("Starter of a plain context is not nil")
	}
}

// An Activate hook's failure keeps its form: a *FailedError for Activate.
// The session Restore returned is released.
func TestActivateHookFailureAfterRestore(t *testing.T) {
	d := &fakeDurability{}
	dh := newDurableHost(t, d, nil, KindOptions{})
	dh.rec.failActivate.Store(true)
	var fe *FailedError
	if err := dh.call(false, "a", add(1)); !errors.As(err, &fe) || fe.Method != "Activate" {
		t.Fatalf("got %v, want the Activate hook's *FailedError", err)
	}
	d.mu.Lock()
	released := d.sessions[0].released
	d.mu.Unlock()
	if released != 1 {
		t.Fatalf("the failed activation's session released %d times", released)
	}
}

// A Commit error reaches the caller unchanged; the handler's emits and the
// activation's schedules die with the activation, which ends without its
// Deactivate hook (ReasonLost); the messages queued behind it run on a
// fresh activation that restores the last committed state.
func TestCommitErrorDiscardsTheActivationNotItsQueue(t *testing.T) {
	for _, here := range []bool{false, true} {
		sentinel := errors.New("quorum lost")
		d := &fakeDurability{commitErr: func(n int) error {
			if n >= 100 {
				return sentinel
			}
			return nil
		}}
		dh := newDurableHost(t, d, nil, KindOptions{})
		if err := dh.call(false, "c", add(5)); err != nil {
			t.Fatal(err)
		}
		var emitted atomic.Int32
		var emit, tick *Schedule
		started, release := make(chan struct{}), make(chan struct{})
		errs := make(chan error, 1)
		go func() {
			errs <- dh.call(here, "c", func(ctx context.Context, s *durable) error {
				close(started)
				<-release
				emit = Emit(ctx, "emitted", func(context.Context, any) error { emitted.Add(1); return nil })
				tick = ScheduleFor(ctx, 1, "tick", time.Hour, time.Hour, func(context.Context, any) error { return nil })
				s.N += 100 // its commit fails
				return nil
			})
		}()
		<-started
		queued := make(chan error, 1)
		var queuedSaw int
		go func() {
			queued <- dh.call(false, "c", func(_ context.Context, s *durable) error { queuedSaw = s.N; s.N++; return nil })
		}()
		waitQueued(t, dh.h, dh.k, "c", 1)
		close(release)
		if err := <-errs; err != sentinel {
			t.Fatalf("here %v: the committing call got %v, want the Commit error unchanged", here, err)
		}
		if err := <-queued; err != nil || queuedSaw != 5 {
			t.Fatalf("here %v: the queued call: %v, saw N=%d; want it run on a fresh activation restored to 5", here, err, queuedSaw)
		}
		if n := dh.read("c"); n != 6 || d.committedN("c") != 6 || d.restoreCount() != 2 {
			t.Fatalf("here %v: N=%d, committed %d, %d restores; want 6, 6, 2", here, n, d.committedN("c"), d.restoreCount())
		}
		if dh.rec.deactivates.Load() != 0 || dh.rec.lastReason() != ReasonLost {
			t.Fatalf("here %v: %d Deactivate hooks, last reason %v; want none, lost", here, dh.rec.deactivates.Load(), dh.rec.lastReason())
		}
		// An emit would have run before the queued call.
		if emitted.Load() != 0 || emit.Active() || tick.Active() {
			t.Fatalf("here %v: the lost activation's emit ran %d times (active %v), its schedule active %v", here, emitted.Load(), emit.Active(), tick.Active())
		}
	}
}

// Commit runs after every handler that succeeded or failed with Keep —
// calls and ticks alike — and never for Reset or Stop, whose next
// activation restores the last committed state.
func TestCommitFollowsTheSupervisor(t *testing.T) {
	dir := Keep
	sup := func(_, _ string, _ error, _ Failure) Directive { return dir }
	d := &fakeDurability{}
	dh := newDurableHost(t, d, sup, KindOptions{})
	fail := func(n int) func(context.Context, *durable) error {
		return func(_ context.Context, s *durable) error { s.N += n; return errors.New("boom") }
	}
	dh.call(false, "s", add(1))
	dh.call(false, "s", fail(10)) // Keep: committed, flagged failed
	if got := d.committedN("s"); got != 11 {
		t.Fatalf("after a failure kept: committed %d, want 11", got)
	}
	d.mu.Lock()
	commits := append([]bool(nil), d.sessions[0].commits...)
	d.mu.Unlock()
	if len(commits) != 2 || commits[0] || !commits[1] {
		t.Fatalf("commits (failed flags) %v, want [false true]", commits)
	}
	for _, dir = range []Directive{Reset, Stop} {
		dh.call(false, "s", fail(100))
		if n := dh.read("s"); n != 11 || d.committedN("s") != 11 {
			t.Fatalf("%v: the next activation saw N=%d (committed %d), want 11", dir, n, d.committedN("s"))
		}
	}
	if r := d.restoreCount(); r != 3 {
		t.Fatalf("%d restores, want 3 (one per activation)", r)
	}
	// A tick commits too.
	done := make(chan struct{})
	dh.call(false, "s", func(ctx context.Context, _ *durable) error {
		ScheduleFor(ctx, 2, "tick", time.Millisecond, 0, func(_ context.Context, st any) error {
			st.(*durable).N = 50
			close(done)
			return nil
		})
		return nil
	})
	<-done
	waitFor(t, 5*time.Second, "the tick's commit", func() bool { return d.committedN("s") == 50 })
}

// Release runs exactly once for every session, whatever ends its
// activation: idle, Deactivate, Evict, Reset, Stop, a lost commit, Close.
// (The session of a failed activation: TestActivateHookFailureAfterRestore.)
func TestReleaseOncePerActivation(t *testing.T) {
	sup := func(_, _ string, err error, _ Failure) Directive {
		if err.Error() == "reset" {
			return Reset
		}
		return Stop
	}
	d := &fakeDurability{commitErr: func(n int) error {
		if n == -1 {
			return errors.New("lost")
		}
		return nil
	}}
	dh := newDurableHost(t, d, sup, KindOptions{IdleTimeout: 5 * time.Millisecond})
	dh.call(false, "idle", add(1))
	waitFor(t, 5*time.Second, "the idle deactivation", func() bool { return dh.rec.lastReason() == ReasonIdle })
	dh.call(false, "deact", func(ctx context.Context, _ *durable) error { FromContext(ctx).Deactivate(); return nil })
	dh.call(false, "reset", func(context.Context, *durable) error { return errors.New("reset") })
	dh.call(false, "stop", func(context.Context, *durable) error { return errors.New("stop") })
	dh.call(false, "lost", func(_ context.Context, s *durable) error { s.N = -1; return nil })
	dh.call(false, "moved", add(1))
	dh.h.Evict(func(_ *Kind, key string) bool { return key == "moved" }, ReasonMoved)
	dh.call(true, "drain", add(1))
	waitFor(t, 5*time.Second, "the deactivations", func() bool {
		dh.rec.mu.Lock()
		defer dh.rec.mu.Unlock()
		// Six ended; "drain" may idle out too before Close drains it.
		return len(dh.rec.reasons) >= 6
	})
	// Close (in Cleanup) drains "drain" and checks every session.
}

// With a nil Session nothing is committed; services never restore; Peek
// never commits.
func TestNoCommitWithoutASession(t *testing.T) {
	d := &fakeDurability{nilSession: true}
	dh := newDurableHost(t, d, nil, KindOptions{})
	dh.call(false, "n", add(1))
	dh.call(true, "n", add(1))
	if d.committedN("n") != 0 || d.restoreCount() != 1 {
		t.Fatalf("nil session: committed %d after %d restores", d.committedN("n"), d.restoreCount())
	}

	d2 := &fakeDurability{}
	dh2 := newDurableHost(t, d2, nil, KindOptions{})
	dh2.call(false, "p", add(3))
	ok, err := dh2.h.Peek(context.Background(), dh2.k, "p", func(st any) error { st.(*durable).N = 7; return nil })
	if !ok || err != nil {
		t.Fatal(ok, err)
	}
	d2.mu.Lock()
	commits := len(d2.sessions[0].commits)
	d2.mu.Unlock()
	if commits != 1 {
		t.Fatalf("%d commits after a call and a peek, want 1", commits)
	}

	d3 := &fakeDurability{}
	dh3 := newDurableHost(t, d3, nil, KindOptions{Name: "test.durable.svc", Service: true, Concurrency: 2})
	dh3.call(false, "svc", add(1))
	if d3.restoreCount() != 0 {
		t.Fatalf("a service restored %d times", d3.restoreCount())
	}
}

// Settled tells a commit whether its handler ended plainly — no answer
// error, no emits — which is when casty may answer the caller from the
// commit alone.
func TestSettledSaysWhetherTheHandlerEndedPlainly(t *testing.T) {
	d := &fakeDurability{}
	dh := newDurableHost(t, d, nil, KindOptions{})
	handlers := []struct {
		name string
		fn   func(context.Context, *durable) error
		want bool
	}{
		{"plain", func(_ context.Context, s *durable) error { s.N++; return nil }, true},
		{"answer", func(_ context.Context, s *durable) error { s.N++; return Answer(errors.New("no")) }, false},
		{"emits", func(ctx context.Context, s *durable) error {
			s.N++
			Emit(ctx, "next", func(context.Context, any) error { return nil })
			return nil
		}, false},
	}
	for _, h := range handlers {
		_ = dh.call(true, "k", h.fn)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var got []bool
	for _, s := range d.sessions {
		got = append(got, s.settled...)
	}
	want := []bool{true, false, false}
	if len(got) > len(want) {
		got = got[:len(want)] // the emitted message may have run and committed since
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Settled at each commit: %v, want %v", got, want)
	}
	if Settled(context.Background()) {
		t.Fatal("Settled outside a commit")
	}
}

// A durable activation lingers on its goroutine for a caller's next
// message only when its last message came by Ask: after one that came by
// AskHere (a connection's reader, in casty) it gives the goroutine up at
// once, so the reader runs the next message itself, where a commit's wait
// can read its own replies (mux.WaitReading).
func TestADurableMailboxDoesNotLingerAfterAskHere(t *testing.T) {
	var lingers atomic.Int32
	defer func(y func()) { lingerYield = y }(lingerYield)
	lingerYield = func() { lingers.Add(1); runtime.Gosched() }
	dh := newDurableHost(t, &fakeDurability{}, nil, KindOptions{})
	idle := func(key string) bool {
		sh := dh.h.shardFor(key)
		sh.mu.RLock()
		a := sh.m[actID{dh.k, key}]
		sh.mu.RUnlock()
		a.mu.Lock()
		defer a.mu.Unlock()
		return !a.running
	}
	// A mailbox lingers only while the process's waiting callers and
	// draining mailboxes fit in the Ps (Host.spin), which goroutines other
	// tests left behind may briefly fill: ask until one lingered.
	for deadline := time.Now().Add(5 * time.Second); lingers.Load() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the mailbox never lingered after a message that came by Ask (the test cannot see lingering)")
		}
		if err := dh.call(false, "k", add(1)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 5*time.Second, "the mailbox goroutine to stop", func() bool { return idle("k") })
	}
	lingers.Store(0)
	gate := make(chan struct{})
	busy := make(chan error, 1)
	go func() {
		busy <- dh.call(false, "k", func(context.Context, *durable) error { <-gate; return nil })
	}()
	waitFor(t, 5*time.Second, "the blocking handler", func() bool { return !idle("k") })
	here := make(chan error, 1)
	go func() { here <- dh.call(true, "k", add(1)) }() // queued behind it: the mailbox runs it
	waitQueued(t, dh.h, dh.k, "k", 1)
	close(gate)
	if err := <-busy; err != nil {
		t.Fatal(err)
	}
	if err := <-here; err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the mailbox goroutine to stop", func() bool { return idle("k") })
	if n := lingers.Load(); n != 0 {
		t.Fatalf("the mailbox lingered %d times after a message that came by AskHere", n)
	}
}

// Depose ends an idle activation at once, and a busy one after the
// message it runs, without its Deactivate hook (ReasonDeposed); what is
// queued behind it, and the next call, run on a fresh activation that
// restores again (for the idle one, the state a newer owner committed
// meanwhile).
func TestDeposeRestoresTheNextCall(t *testing.T) {
	d := &fakeDurability{}
	dh := newDurableHost(t, d, nil, KindOptions{})
	if err := dh.call(false, "idle", add(5)); err != nil {
		t.Fatal(err)
	}
	d.mu.Lock()
	a := d.sessions[0].a
	d.committed["idle"] = 42 // another owner's write
	d.mu.Unlock()
	if !a.Depose() {
		t.Fatal("Depose of an idle activation reported false")
	}
	if !wait.Until(5*time.Second, func() bool { return dh.rec.lastReason() == ReasonDeposed }) {
		t.Fatalf("the deposed activation did not end: last reason %v", dh.rec.lastReason())
	}
	if a.Depose() {
		t.Fatal("Depose of an ended activation reported true")
	}
	if n := dh.read("idle"); n != 42 || d.restoreCount() != 2 {
		t.Fatalf("after the deposition N=%d with %d restores; want 42, 2", n, d.restoreCount())
	}

	started, release := make(chan struct{}), make(chan struct{})
	errs := make(chan error, 1)
	go func() {
		errs <- dh.call(false, "busy", func(ctx context.Context, s *durable) error {
			close(started)
			<-release
			s.N = 1
			return nil
		})
	}()
	<-started
	queued := make(chan error, 1)
	var queuedSaw int
	go func() {
		queued <- dh.call(false, "busy", func(_ context.Context, s *durable) error { queuedSaw = s.N; return nil })
	}()
	waitQueued(t, dh.h, dh.k, "busy", 1)
	d.mu.Lock()
	b := d.sessions[len(d.sessions)-1].a
	d.mu.Unlock()
	restores := d.restoreCount()
	if !b.Depose() {
		t.Fatal("Depose of a busy activation reported false")
	}
	close(release)
	if err := <-errs; err != nil {
		t.Fatalf("the running call: %v", err)
	}
	if err := <-queued; err != nil || queuedSaw != 1 || d.restoreCount() != restores+1 || dh.rec.lastReason() != ReasonDeposed {
		t.Fatalf("the queued call: %v, saw N=%d after %d restores, last reason %v; want it run on a fresh activation restored to 1 (%d restores), deposed",
			err, queuedSaw, d.restoreCount(), dh.rec.lastReason(), restores+1)
	}
	if dh.rec.deactivates.Load() != 0 {
		t.Fatalf("%d Deactivate hooks ran on deposed activations", dh.rec.deactivates.Load())
	}
}
