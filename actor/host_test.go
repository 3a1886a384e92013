package actor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/casty-go/casty/internal/wait"
	"github.com/casty-go/casty/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type acc struct{ N int }

func (a *acc) Block(ctx context.Context, ch chan struct{}) error { <-ch; return nil }

func TestNewKindRejectsChanArgument(t *testing.T) {
	_, err := NewKind(reflect.TypeFor[acc](), KindOptions{Name: "test.acc"}, wire.NewRegistry(), func() any { return new(acc) })
	if err == nil || err.Error() != "casty: actor test.acc: test.acc.Block argument: chan struct {} is not serializable" {
		t.Fatalf("got %v", err)
	}
}

type counter struct{ N int }

func (c *counter) Add(ctx context.Context, d int) (int, error) { c.N += d; return c.N, nil }
func (c *counter) Peek(ctx context.Context) (int, error)       { return c.N, nil }
func (c *counter) Reset(ctx context.Context) error             { c.N = 0; return nil }
func (c *counter) Helper(x int) int                            { return x } // not a handler shape
func (c *counter) Activate(ctx context.Context) error          { return nil }

func TestNewKindDerivesHandlers(t *testing.T) {
	k, err := NewKind(reflect.TypeFor[counter](), KindOptions{Name: ""}, wire.NewRegistry(), func() any { return new(counter) })
	if err != nil {
		t.Fatal(err)
	}
	if k.Name != "github.com/casty-go/casty/actor.counter" {
		t.Errorf("name %q", k.Name)
	}
	var names []string
	for _, m := range k.methods() {
		names = append(names, m.Name)
	}
	if !reflect.DeepEqual(names, []string{"Add", "Peek", "Reset"}) {
		t.Errorf("handlers %v", names)
	}
	if !k.HasActivate || k.HasDeactivate {
		t.Errorf("hooks: activate %v deactivate %v", k.HasActivate, k.HasDeactivate)
	}
	// Method expressions and reflect's method funcs share code pointers.
	if m := k.MethodFor(reflect.ValueOf((*counter).Add).Pointer()); m == nil || m.Name != "Add" {
		t.Errorf("MethodFor((*counter).Add) = %v", m)
	}
	if m := k.MethodFor(reflect.ValueOf((*counter).Helper).Pointer()); m != nil {
		t.Errorf("Helper resolved to %v", m.Name)
	}
	if m := k.MethodFor(reflect.ValueOf((*acc).Block).Pointer()); m != nil {
		t.Errorf("another type's method resolved to %v", m.Name)
	}
	if m := k.MethodByName("Activate"); m != nil {
		t.Error("the Activate hook is callable")
	}
}

func TestNewKindValidatesOptions(t *testing.T) {
	for _, c := range []struct {
		what string
		o    KindOptions
	}{
		{"negative idle timeout", KindOptions{IdleTimeout: -time.Second}},
		{"a service without concurrency", KindOptions{Service: true}},
	} {
		c.o.Name = "v"
		if _, err := NewKind(reflect.TypeFor[counter](), c.o, wire.NewRegistry(), nil); err == nil {
			t.Errorf("%s accepted", c.what)
		}
	}
}

func TestHostCallAndClose(t *testing.T) {
	k, err := NewKind(reflect.TypeFor[counter](), KindOptions{Name: "test.counter"}, wire.NewRegistry(), func() any { return new(counter) })
	if err != nil {
		t.Fatal(err)
	}
	h, err := NewHost(Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	add := k.MethodByName("Add")
	for i := 1; i <= 3; i++ {
		e := &cAdd{d: 1}
		e.Init(e, add)
		if err := h.Ask(context.Background(), k, "x", &e.Envelope); err != nil {
			t.Fatal(err)
		}
		if e.r != i {
			t.Fatalf("call %d returned %d", i, e.r)
		}
	}
	if h.Len() != 1 {
		t.Fatalf("%d activations, want 1", h.Len())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if h.Len() != 0 {
		t.Fatalf("%d activations after Close", h.Len())
	}
	e := &cAdd{d: 1}
	e.Init(e, add)
	if err := h.Ask(context.Background(), k, "x", &e.Envelope); !errors.Is(err, ErrActorUnavailable) {
		t.Fatalf("after Close: %v", err)
	}
}

type cAdd struct {
	Envelope
	d, r int
}

func (e *cAdd) Invoke(ctx context.Context, state any) (err error) {
	e.r, err = state.(*counter).Add(ctx, e.d)
	return err
}

func TestTimeoutErrorMatches(t *testing.T) {
	err := error(&TimeoutError{Kind: "k", Key: "x", Method: "M"})
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatal("TimeoutError does not match ErrTimeout and DeadlineExceeded")
	}
	var ne interface{ Timeout() bool }
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatal("not a net.Error-style timeout")
	}
}

// Config.Admit runs only when a message would create the activation:
// refused, nothing is created and the message fails with the check's
// error; once the activation exists, the check is not asked. It sees the
// caller's ctx.
func TestAdmitGuardsOnlyActivation(t *testing.T) {
	k, err := NewKind(reflect.TypeFor[counter](), KindOptions{Name: "test.admit"}, wire.NewRegistry(), func() any { return new(counter) })
	if err != nil {
		t.Fatal(err)
	}
	type verdict struct{}
	asked := 0
	h, err := NewHost(Config{Admit: func(ctx context.Context, kk *Kind, key string) error {
		asked++
		if kk != k || key != "x" {
			t.Errorf("admit asked for %s/%s", kk.Name, key)
		}
		err, _ := ctx.Value(verdict{}).(error)
		return err
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	add := k.MethodByName("Add")
	refuse := errors.New("not mine")
	call := func(here bool, check error) (int, error) {
		e := &cAdd{d: 1}
		e.Init(e, add)
		ask := h.Ask
		if here {
			ask = h.AskHere
		}
		err := ask(context.WithValue(context.Background(), verdict{}, check), k, "x", &e.Envelope)
		return e.r, err
	}
	for _, here := range []bool{false, true} {
		if _, err := call(here, refuse); err != refuse {
			t.Fatalf("refused activation (here %v): %v", here, err)
		}
	}
	if h.Len() != 0 || asked != 2 {
		t.Fatalf("after refusals: %d activations, check asked %d times", h.Len(), asked)
	}
	if n, err := call(true, nil); err != nil || n != 1 {
		t.Fatalf("admitted: %d %v", n, err)
	}
	if n, err := call(false, refuse); err != nil || n != 2 || asked != 3 {
		t.Fatalf("active key: %d %v, check asked %d times (want 3: not again)", n, err, asked)
	}
}

// Waiters spin only while the process's waiting callers and draining
// mailboxes fit in its Ps; with one P, while at most one mailbox drains.
func TestSpinOnlyWhileTheWaitersFitThePs(t *testing.T) {
	for _, c := range []struct {
		procs, draining, awaiting int32
		spin                      bool
	}{
		{2, 1, 1, true},   // a lone caller and its actor
		{2, 0, 1, true},   // the mailbox is not started yet
		{2, 2, 1, false},  // one more than the Ps
		{2, 3, 20, false}, // 64 callers
		{4, 2, 2, true},
		{1, 1, 20, true}, // one P: a yield is cheaper than a park
		{1, 2, 1, false},
	} {
		if got := shouldSpin(c.draining, c.awaiting, c.procs); got != c.spin {
			t.Errorf("procs %d, draining %d, awaiting %d: spin %v, want %v", c.procs, c.draining, c.awaiting, got, c.spin)
		}
	}
}

// Callers waiting on another node (Config.ExternalWaits) count as
// waiters: with more of them than Ps, local waiters stop spinning.
func TestExternalWaitsCountTowardSpinning(t *testing.T) {
	var external atomic.Int32
	h, err := NewHost(Config{ExternalWaits: external.Load}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	waitFor(t, 5*time.Second, "an idle process, where waiters spin", func() bool { return h.spin() > 0 })
	procs := h.procs.Load()
	external.Store(procs + 1)
	busy := h.spin()
	external.Store(0)
	if busy != 0 || h.spin() == 0 {
		t.Fatalf("spin rounds with %d remote waits: %d, after them: %d; want 0, then some", procs+1, busy, h.spin())
	}
}

// cWait runs Add(1) once started is signalled and release is closed.
type cWait struct {
	Envelope
	started chan<- struct{}
	release <-chan struct{}
}

func (e *cWait) Invoke(ctx context.Context, state any) error {
	if e.started != nil {
		e.started <- struct{}{}
	}
	<-e.release
	_, err := state.(*counter).Add(ctx, 1)
	return err
}

// counterHost returns a host and a counter kind named name.
func counterHost(t *testing.T, name string) (*Kind, *Host) {
	t.Helper()
	k, err := NewKind(reflect.TypeFor[counter](), KindOptions{Name: name}, wire.NewRegistry(), func() any { return new(counter) })
	if err != nil {
		t.Fatal(err)
	}
	h, err := NewHost(Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return k, h
}

// waitQueued waits until the mailbox of (k, key) holds n messages.
func waitQueued(t *testing.T, h *Host, k *Kind, key string, n int) {
	t.Helper()
	sh := h.shardFor(key)
	sh.mu.RLock()
	a := sh.m[actID{k, key}]
	sh.mu.RUnlock()
	waitFor(t, 5*time.Second, fmt.Sprintf("%d messages in the mailbox of %s", n, key), func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return len(a.queue)-a.head == n
	})
}

// Peek (StateOf) reads between two messages: it waits for the running
// handler, never for the messages queued behind it.
func TestPeekWaitsForTheRunningHandlerOnly(t *testing.T) {
	k, h := counterHost(t, "test.peek")
	ctx := context.Background()
	add := k.MethodByName("Add")
	first, queued := make(chan struct{}), make(chan struct{})
	started := make(chan struct{}, 1)
	running := &cWait{started: started, release: first}
	running.Init(running, add)
	asked := make(chan error, 1)
	go func() { asked <- h.Ask(ctx, k, "p", &running.Envelope) }()
	<-started
	for range 3 { // queued behind the running handler, each blocked until released
		e := &cWait{release: queued}
		e.Init(e, add)
		if err := h.tell(ctx, k, "p", &e.Envelope); err != nil {
			t.Fatal(err)
		}
	}
	peeked := make(chan int, 1)
	go func() {
		h.Peek(ctx, k, "p", func(state any) error { peeked <- state.(*counter).N; return nil })
	}()
	// Release the running handler only once the peek is in the mailbox
	// (ahead of the three): otherwise the first queued message could start
	// before it, and a peek does wait for a running handler.
	waitQueued(t, h, k, "p", 4)
	close(first)
	select {
	case n := <-peeked:
		if n != 1 {
			t.Fatalf("peek saw N=%d, want 1 (the running handler's write, none of the queued)", n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("peek waited for the queued messages")
	}
	if err := <-asked; err != nil {
		t.Fatal(err)
	}
	close(queued)
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := h.Close(cctx); err != nil {
		t.Fatal(err)
	}
}

// cArm arms a one-shot tick of run after d, hands back its schedule and
// then stays busy until release is closed: the tick fires meanwhile and
// has to wait in the mailbox.
type cArm struct {
	Envelope
	d       time.Duration
	run     func(context.Context, any) error
	got     chan<- *Schedule
	release <-chan struct{}
}

func (e *cArm) Invoke(ctx context.Context, _ any) error {
	e.got <- ScheduleFor(ctx, 1, "tick", e.d, 0, e.run)
	<-e.release
	return nil
}

// A tick that fired while a handler ran waits in the mailbox; cancelling
// its schedule then drops it: it never runs.
func TestCancelDropsATickAlreadyQueued(t *testing.T) {
	k, h := counterHost(t, "test.tick")
	ctx := context.Background()
	add := k.MethodByName("Add")
	var ran atomic.Int32
	got := make(chan *Schedule, 1)
	release := make(chan struct{})
	arm := &cArm{d: time.Millisecond, run: func(context.Context, any) error { ran.Add(1); return nil }, got: got, release: release}
	arm.Init(arm, add)
	asked := make(chan error, 1)
	go func() { asked <- h.Ask(ctx, k, "t", &arm.Envelope) }()
	s := <-got
	waitQueued(t, h, k, "t", 1) // the tick fired and waits behind the busy handler
	s.Cancel()
	close(release)
	if err := <-asked; err != nil {
		t.Fatal(err)
	}
	e := &cAdd{d: 0} // a call after the tick's place in the mailbox
	e.Init(e, add)
	if err := h.Ask(ctx, k, "t", &e.Envelope); err != nil {
		t.Fatal(err)
	}
	if n := ran.Load(); n != 0 {
		t.Fatalf("the cancelled tick ran %d times", n)
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := h.Close(cctx); err != nil {
		t.Fatal(err)
	}
}

type blocker struct{}

func (b *blocker) Block(ctx context.Context, ch chan struct{}) error { <-ch; return nil }

type cBlock struct {
	Envelope
	ch chan struct{}
}

func (e *cBlock) Invoke(ctx context.Context, state any) error {
	return state.(*blocker).Block(ctx, e.ch)
}

// waitFor is wait.For: every module's tests poll at the same intervals.
var waitFor = wait.For

// A CallTimeout of a second or more is enforced by the host's sweeper
// rather than a timer per call: the call still ends with *TimeoutError on
// time (up to sweep.Every late), a cancellable ctx still cancels, and the
// late reply of the timed-out handler goes nowhere.
func TestCoarseCallTimeout(t *testing.T) {
	k := &Kind{KindOptions: KindOptions{Name: "test.blocker"}, New: func() any { return new(blocker) }}
	block := &Method{Name: "Block"}
	h, err := NewHost(Config{CallTimeout: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	release := make(chan struct{})
	call := func(ctx context.Context, key string, ch chan struct{}) error {
		e := &cBlock{ch: ch}
		e.Init(e, block)
		return h.Ask(ctx, k, key, &e.Envelope)
	}
	start := time.Now()
	err = call(context.Background(), "stuck", release)
	took := time.Since(start)
	var te *TimeoutError
	if !errors.As(err, &te) || te.Key != "stuck" || te.Method != "Block" {
		t.Fatalf("got %v, want a *TimeoutError for stuck.Block", err)
	}
	if took < time.Second || took > time.Second+500*time.Millisecond {
		t.Fatalf("timed out after %v, want 1 s (+ up to a sweep)", took)
	}

	ctx, cancel := context.WithCancel(context.Background())
	other := make(chan struct{})
	defer close(other) // before Close, which waits for the handler
	cancelled := make(chan error, 1)
	go func() { cancelled <- call(ctx, "other", other) }()
	// Cancel once the call waits (the sweeper watches it), not before.
	waitFor(t, 5*time.Second, "the call to wait", func() bool {
		for i := range h.watches {
			sh := &h.watches[i]
			sh.mu.Lock()
			n := len(sh.m)
			sh.mu.Unlock()
			if n > 0 {
				return true
			}
		}
		return false
	})
	cancel()
	if err := <-cancelled; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}

	close(release) // the stuck handler returns; its answer has no caller
	open := make(chan struct{})
	close(open)
	if err := call(context.Background(), "stuck", open); err != nil {
		t.Fatalf("after the timeout: %v", err)
	}
	waitFor(t, 5*time.Second, "the sweeper to stop", func() bool { return !h.timeouts.Running() })
}

// BeforeWait runs when a call is about to wait for its activation, and
// not when AskHere runs the handler at once on the caller's goroutine.
func TestBeforeWaitRunsOnlyWhenACallWaits(t *testing.T) {
	k := &Kind{KindOptions: KindOptions{Name: "test.blocker"}, New: func() any { return new(blocker) }}
	block := &Method{Name: "Block"}
	var waits atomic.Int32
	type marker struct{}
	h, err := NewHost(Config{BeforeWait: func(ctx context.Context) {
		if ctx.Value(marker{}) != nil {
			waits.Add(1)
		}
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	ctx := context.WithValue(context.Background(), marker{}, true)
	open := make(chan struct{})
	close(open)
	call := func(here bool, key string, ch chan struct{}) error {
		e := &cBlock{ch: ch}
		e.Init(e, block)
		if here {
			return h.AskHere(ctx, k, key, &e.Envelope)
		}
		return h.Ask(ctx, k, key, &e.Envelope)
	}
	if err := call(true, "idle", open); err != nil || waits.Load() != 0 {
		t.Fatalf("AskHere on an idle actor: err %v, %d waits; want none", err, waits.Load())
	}
	if err := call(false, "idle", open); err != nil || waits.Load() != 1 {
		t.Fatalf("Ask: err %v, %d waits; want 1", err, waits.Load())
	}
	release := make(chan struct{})
	busy := make(chan error, 1)
	go func() { busy <- call(false, "busy", release) }()
	waitFor(t, 5*time.Second, "the busy actor's handler", func() bool { return waits.Load() == 2 })
	queued := make(chan error, 1)
	go func() { queued <- call(true, "busy", open) }() // behind the running handler
	waitFor(t, 5*time.Second, "the queued call to wait", func() bool { return waits.Load() == 3 })
	close(release)
	if err := <-busy; err != nil {
		t.Fatal(err)
	}
	if err := <-queued; err != nil {
		t.Fatal(err)
	}
}

// tell queues e without waiting for it: a one-way message, its outcome
// for the supervisor only.
func (h *Host) tell(ctx context.Context, k *Kind, key string, e *Envelope) error {
	e.hctx.Context = ctx
	_, _, err := h.enqueueOr(k, key, e, false)
	return err
}

// countLines counts the lines written at Warn or above.
type countLines struct{ n *atomic.Int64 }

func (h countLines) Enabled(context.Context, slog.Level) bool { return true }
func (h countLines) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		h.n.Add(1)
	}
	return nil
}
func (h countLines) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h countLines) WithGroup(string) slog.Handler      { return h }

// A host with nothing to drain closes cleanly and silently even under a
// ctx that has already ended (what a system whose join failed does): the
// drain is complete, not abandoned. Several hosts: the abandoned drain
// depended on which of two ready cases a select picked.
func TestCloseOfADrainedHostUnderAnEndedCtx(t *testing.T) {
	var warned atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for range 32 {
		h, err := NewHost(Config{Logger: slog.New(countLines{&warned})}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Close(ctx); err != nil {
			t.Fatalf("Close of an empty host: %v", err)
		}
	}
	if n := warned.Load(); n > 0 {
		t.Fatalf("closing empty hosts logged %d lines at Warn or above", n)
	}
}

// A host returns what runs it (SetOwner), nil before it is set.
func TestHostOwner(t *testing.T) {
	h, err := NewHost(Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	if v := h.Owner(); v != nil {
		t.Fatalf("Owner before SetOwner: %v", v)
	}
	type system struct{ name string }
	s := &system{"a"}
	h.SetOwner(s)
	if v, _ := h.Owner().(*system); v != s {
		t.Fatalf("Owner: %v, want %v", h.Owner(), s)
	}
}
