package casty_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
)

// Sleeper blocks in handlers for as long as it is told, or until released.
type Sleeper struct{ Done int }

func (s *Sleeper) Sleep(ctx context.Context, d time.Duration) error {
	time.Sleep(d)
	s.Done++
	return nil
}

func (s *Sleeper) Hold(ctx context.Context, release *gateCh) error {
	<-release.ch
	s.Done++
	return nil
}

func (s *Sleeper) Count(ctx context.Context) (int, error) { return s.Done, nil }

type gateCh struct{ ch chan struct{} }

var _ = casty.Message[gateCh]()

var Sleepers = casty.Actor[Sleeper](casty.IdleTimeout(30 * time.Millisecond))

func TestCallHonoursDeadlineAndCancel(t *testing.T) {
	sys := newSys(t)
	ref := Sleepers.Ref(sys, "slow")
	rel := &gateCh{ch: make(chan struct{})}
	defer close(rel.ch)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := casty.Do(ctx, ref, (*Sleeper).Hold, rel)
	if !errors.Is(err, casty.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("deadline: %v", err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("returned after %v", el)
	}

	ctx2, cancel2 := context.WithCancel(context.Background())
	go func() { time.Sleep(10 * time.Millisecond); cancel2() }()
	if err := casty.Do(ctx2, ref, (*Sleeper).Hold, rel); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancel: %v", err)
	}
	// A ctx already done fails before queuing anything.
	if err := casty.Do(ctx2, ref, (*Sleeper).Hold, rel); !errors.Is(err, context.Canceled) {
		t.Fatalf("pre-cancelled: %v", err)
	}
}

func TestConfigCallTimeoutBoundsCallsWithoutDeadline(t *testing.T) {
	sys := newSys(t, casty.WithConfig(casty.Config{Actors: casty.ActorConfig{CallTimeout: 30 * time.Millisecond}}))
	rel := &gateCh{ch: make(chan struct{})}
	defer close(rel.ch)
	err := casty.Do(context.Background(), Sleepers.Ref(sys, "x"), (*Sleeper).Hold, rel)
	var te *casty.TimeoutError
	if !errors.As(err, &te) || te.Method != "Hold" || !errors.Is(err, casty.ErrTimeout) {
		t.Fatalf("got %v", err)
	}
}

func TestAbandonedCallNeverRuns(t *testing.T) {
	sys := newSys(t)
	ref := Sleepers.Ref(sys, "queue")
	rel := &gateCh{ch: make(chan struct{})}
	holdDone := make(chan error, 1)
	go func() { holdDone <- casty.Do(context.Background(), ref, (*Sleeper).Hold, rel) }()
	waitFor(t, 5*time.Second, "activation", func() bool { return sys.Active() == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := casty.Do(ctx, ref, (*Sleeper).Sleep, time.Duration(0)); !errors.Is(err, casty.ErrTimeout) {
		t.Fatalf("queued call: %v", err)
	}
	close(rel.ch)
	if err := <-holdDone; err != nil {
		t.Fatal(err)
	}
	if n, _ := casty.Call0(context.Background(), ref, (*Sleeper).Count); n != 1 {
		t.Fatalf("Done = %d: the abandoned Sleep ran", n)
	}
}

// Life records its hooks.
type Life struct {
	Visits int
	cache  string
}

var lifeEvents = make(chan string, 100)

func (l *Life) Activate(ctx context.Context) error {
	l.cache = "warm:" + casty.Self(ctx).Key()
	lifeEvents <- "activate " + casty.Self(ctx).Key()
	return nil
}

func (l *Life) Deactivate(ctx context.Context) error {
	lifeEvents <- "deactivate " + casty.Self(ctx).Key()
	return nil
}

func (l *Life) Visit(ctx context.Context) (string, error) {
	l.Visits++
	return l.cache, nil
}

func (l *Life) Slow(ctx context.Context, d time.Duration) error {
	if casty.Self(ctx).Key() == "drain" {
		lifeEvents <- "slow started"
	}
	time.Sleep(d)
	return nil
}

var Lives = casty.Actor[Life](casty.IdleTimeout(40 * time.Millisecond))

func expectEvent(t *testing.T, want string) {
	t.Helper()
	select {
	case got := <-lifeEvents:
		if got != want {
			t.Fatalf("event %q, want %q", got, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("no event, want %q", want)
	}
}

func drainEvents() {
	for {
		select {
		case <-lifeEvents:
		default:
			return
		}
	}
}

func TestLifecycleHooksAndIdleTimeout(t *testing.T) {
	drainEvents()
	ctx := context.Background()
	sys := newSys(t)
	v, err := casty.Call0(ctx, Lives.Ref(sys, "s1"), (*Life).Visit)
	if err != nil || v != "warm:s1" {
		t.Fatalf("visit: %q %v", v, err)
	}
	expectEvent(t, "activate s1")
	expectEvent(t, "deactivate s1") // idle after 40 ms
	if sys.Active() != 0 {
		waitFor(t, time.Second, "finalize", func() bool { return sys.Active() == 0 })
	}
	if _, err := casty.Call0(ctx, Lives.Ref(sys, "s1"), (*Life).Visit); err != nil {
		t.Fatal(err)
	}
	expectEvent(t, "activate s1")
	expectEvent(t, "deactivate s1")
}

func TestBusyActivationNeverIdlesOut(t *testing.T) {
	drainEvents()
	ctx := context.Background()
	sys := newSys(t)
	ref := Lives.Ref(sys, "busy")
	// One handler runs 5 idle timeouts long; calls keep queueing behind it.
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := casty.Do(ctx, ref, (*Life).Slow, 200*time.Millisecond/3); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	expectEvent(t, "activate busy")
	expectEvent(t, "deactivate busy") // only once the work is done
	select {
	case ev := <-lifeEvents:
		t.Fatalf("unexpected %q: the busy activation was recycled", ev)
	default:
	}
}

func TestCloseDrainsAndRunsHooks(t *testing.T) {
	drainEvents()
	sys := casty.Local()
	ctx := context.Background()
	ref := Lives.Ref(sys, "drain")
	if _, err := casty.Call0(ctx, ref, (*Life).Visit); err != nil {
		t.Fatal(err)
	}
	expectEvent(t, "activate drain")
	inflight := make(chan error, 1)
	go func() { inflight <- casty.Do(ctx, ref, (*Life).Slow, 30*time.Millisecond) }()
	expectEvent(t, "slow started")
	if err := sys.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-inflight; err != nil {
		t.Fatalf("in-flight call during Close: %v", err)
	}
	expectEvent(t, "deactivate drain")
	if _, err := casty.Call0(ctx, ref, (*Life).Visit); !errors.Is(err, casty.ErrActorUnavailable) {
		t.Fatalf("after Close: %v", err)
	}
	if err := sys.Close(ctx); err != nil { // idempotent
		t.Fatal(err)
	}
}

func TestCloseBoundedByDrainTimeoutLogsStuckHandler(t *testing.T) {
	var logs bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &mu}, nil))
	sys := casty.Local(casty.WithLogger(logger), casty.WithConfig(casty.Config{Actors: casty.ActorConfig{DrainTimeout: 50 * time.Millisecond}}))
	rel := &gateCh{ch: make(chan struct{})}
	ref := Sleepers.Ref(sys, "stuck")
	callErr := make(chan error, 1)
	go func() { callErr <- casty.Do(context.Background(), ref, (*Sleeper).Hold, rel) }()
	waitFor(t, 5*time.Second, "activation", func() bool { return sys.Active() == 1 })
	start := time.Now()
	err := sys.Close(context.Background())
	if err == nil || !strings.Contains(err.Error(), "Sleeper/stuck.Hold") {
		t.Fatalf("Close: %v", err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("Close took %v", el)
	}
	mu.Lock()
	line := logs.String()
	mu.Unlock()
	if !strings.Contains(line, "drain timed out") || !strings.Contains(line, "Sleeper/stuck.Hold") {
		t.Fatalf("log: %s", line)
	}
	close(rel.ch) // let the stuck handler finish so no goroutine leaks
	if err := <-callErr; err != nil {
		t.Fatalf("stuck call: %v", err)
	}
	waitFor(t, 5*time.Second, "stuck worker to exit", func() bool { return sys.Active() <= 1 })
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestLocalOpensNoSocket(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("counts sockets through /proc/self/fd, which only Linux has")
	}
	before := countSockets(t)
	sys := casty.Local()
	ctx := context.Background()
	for i := range 100 {
		if _, err := casty.Call(ctx, Greeters.Ref(sys, string(rune('a'+i%26))), (*Greeter).Greet, "x"); err != nil {
			t.Fatal(err)
		}
	}
	during := countSockets(t)
	if err := sys.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if during != before {
		t.Fatalf("sockets: %d before, %d with a local system running", before, during)
	}
}

func countSockets(t *testing.T) int {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.HasPrefix(target, "socket:") {
			n++
		}
	}
	return n
}

// Session gets its database handle injected.
type Session struct {
	Visits int
	db     *fakeDB
	seen   string
}

type fakeDB struct{ name string }

func (s *Session) Activate(ctx context.Context) error {
	if s.db == nil {
		return errors.New("no db injected before Activate")
	}
	s.seen = s.db.name
	return nil
}

func (s *Session) DB(ctx context.Context) (string, error) { return s.seen, nil }

var Sessions = casty.Actor[Session]()

func TestInjectRunsBeforeActivate(t *testing.T) {
	db := &fakeDB{name: "primary"}
	sys := newSys(t, casty.Inject(Sessions, func(s *Session) { s.db = db }))
	got, err := casty.Call0(context.Background(), Sessions.Ref(sys, "u1"), (*Session).DB)
	if err != nil || got != "primary" {
		t.Fatalf("got %q, %v", got, err)
	}
	// Without injection, Activate fails and the call says so.
	sys2 := newSys(t)
	_, err = casty.Call0(context.Background(), Sessions.Ref(sys2, "u1"), (*Session).DB)
	var fe *casty.ActorFailedError
	if !errors.As(err, &fe) || fe.Method != "Activate" {
		t.Fatalf("no injection: %v", err)
	}
	// An injector that panics fails the activation, not the process.
	sys3 := newSys(t, casty.Inject(Sessions, func(*Session) { panic("no database today") }))
	_, err = casty.Call0(context.Background(), Sessions.Ref(sys3, "u1"), (*Session).DB)
	if !errors.As(err, &fe) || fe.Method != "Activate" || !strings.Contains(err.Error(), "no database today") {
		t.Fatalf("panicking injector: %v", err)
	}
}
