package casty_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/internal/wait"
)

// waitFor is wait.For: every module's tests poll at the same intervals.
var waitFor = wait.For

// parallel lets t run beside the package's other parallel tests (go
// test runs them after the sequential ones, -parallel at a time): a test
// that waits on the cluster's real-time timers leaves the CPU idle. It
// does nothing under CASTY_FIGURES, whose figures need the machine to
// themselves. A test stays sequential when it reads a package-level
// counter its kinds write (holding, tallyEncodes, …), measures the
// process (goroutines, memory), bounds a duration or counts members
// right after a step (more load stretches both), needs a port nobody
// takes meanwhile (closedPort), or checks what a timeout guards — a join,
// a keepalive over TLS, a stream's first frame, the claim check — that
// a machine loaded by parallel tests ran past in a loaded -count=3 run.
func parallel(t *testing.T) {
	t.Helper()
	if os.Getenv("CASTY_FIGURES") == "" {
		t.Parallel()
	}
}

func newSys(t *testing.T, opts ...casty.Option) *casty.System {
	t.Helper()
	sys := casty.Local(opts...)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := sys.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return sys
}

type Greeter struct {
	Greetings int
	cache     map[string]string // transient
}

func (g *Greeter) Greet(ctx context.Context, who string) (string, error) {
	g.Greetings++
	return fmt.Sprintf("hello, %s! (greeting #%d)", who, g.Greetings), nil
}

func (g *Greeter) Count(ctx context.Context) (int, error) { return g.Greetings, nil }

func (g *Greeter) Remember(ctx context.Context, kv [2]string) error {
	if g.cache == nil {
		g.cache = map[string]string{}
	}
	g.cache[kv[0]] = kv[1]
	return nil
}

func (g *Greeter) Recall(ctx context.Context, k string) (string, error) { return g.cache[k], nil }

func (g *Greeter) Bye(ctx context.Context) error {
	casty.Self(ctx).Deactivate()
	return nil
}

func (g *Greeter) whisper(ctx context.Context, who string) (string, error) { return who, nil }

var Greeters = casty.Actor[Greeter](casty.Name("test.Greeter"))

func TestSameKeySameActivation(t *testing.T) {
	ctx := context.Background()
	sys := newSys(t)
	for i, who := range []string{"world", "again"} {
		msg, err := casty.Call(ctx, Greeters.Ref(sys, "front-door"), (*Greeter).Greet, who)
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("hello, %s! (greeting #%d)", who, i+1); msg != want {
			t.Fatalf("got %q, want %q", msg, want)
		}
	}
	n, err := casty.Call0(ctx, Greeters.Ref(sys, "back-door"), (*Greeter).Count)
	if err != nil || n != 0 {
		t.Fatalf("other key: %d, %v", n, err)
	}
	if sys.Active() != 2 {
		t.Fatalf("%d activations, want 2", sys.Active())
	}
	if Greeters.Name() != "test.Greeter" || Greeters.Ref(sys, "x").String() != "test.Greeter/x" {
		t.Fatalf("names: %q %q", Greeters.Name(), Greeters.Ref(sys, "x"))
	}
}

func TestNotAHandlerIsAnError(t *testing.T) {
	ctx := context.Background()
	sys := newSys(t)
	ref := Greeters.Ref(sys, "k")
	closure := func(g *Greeter, ctx context.Context, who string) (string, error) { return "", nil }
	for name, fn := range map[string]func(*Greeter, context.Context, string) (string, error){
		"closure": closure, "unexported": (*Greeter).whisper, "nil": nil,
	} {
		_, err := casty.Call(ctx, ref, fn, "x")
		if !errors.Is(err, casty.ErrNotAHandler) || !errors.Is(err, casty.ErrUnknownActorType) {
			t.Errorf("%s: %v", name, err)
		}
	}
	var zero casty.Ref[Greeter]
	if _, err := casty.Call(ctx, zero, (*Greeter).Greet, "x"); !errors.Is(err, casty.ErrZeroRef) {
		t.Error("zero Ref accepted")
	}
	//lint:ignore SA1012 a nil ctx must not panic
	if _, err := casty.Call(nil, ref, (*Greeter).Greet, "x"); err != nil { //nolint:staticcheck
		t.Errorf("nil ctx: %v", err)
	}
}

func TestTransientFieldsStartZeroOnEveryActivation(t *testing.T) {
	ctx := context.Background()
	sys := newSys(t)
	ref := Greeters.Ref(sys, "t")
	if err := casty.Do(ctx, ref, (*Greeter).Remember, [2]string{"a", "1"}); err != nil {
		t.Fatal(err)
	}
	if v, _ := casty.Call(ctx, ref, (*Greeter).Recall, "a"); v != "1" {
		t.Fatalf("recall in same activation: %q", v)
	}
	if err := casty.Do0(ctx, ref, (*Greeter).Bye); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "deactivation", func() bool { return sys.Active() == 0 })
	if v, _ := casty.Call(ctx, ref, (*Greeter).Recall, "a"); v != "" {
		t.Fatalf("transient field survived deactivation: %q", v)
	}
	// Local state does not survive deactivation either: no replication.
	if n, _ := casty.Call0(ctx, ref, (*Greeter).Count); n != 0 {
		t.Fatalf("state after reactivation: %d", n)
	}
}

// Serial counts how many of its handlers run at once.
type Serial struct{ Calls int }

var serialInFlight, serialMax atomic.Int32

func (s *Serial) Work(ctx context.Context, seq int) (int, error) {
	n := serialInFlight.Add(1)
	for {
		m := serialMax.Load()
		if n <= m || serialMax.CompareAndSwap(m, n) {
			break
		}
	}
	time.Sleep(50 * time.Microsecond) // widen the window a race would need
	s.Calls++
	serialInFlight.Add(-1)
	return s.Calls, nil
}

var Serials = casty.Actor[Serial]()

func TestOneHandlerAtATimeFIFO(t *testing.T) {
	ctx := context.Background()
	sys := newSys(t)
	ref := Serials.Ref(sys, "one")
	var wg sync.WaitGroup
	results := make([][]int, 20)
	for g := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				n, err := casty.Call(ctx, ref, (*Serial).Work, i)
				if err != nil {
					t.Error(err)
					return
				}
				results[g] = append(results[g], n)
			}
		}()
	}
	wg.Wait()
	if m := serialMax.Load(); m != 1 {
		t.Fatalf("%d handlers ran at once", m)
	}
	seen := map[int]bool{}
	for _, rs := range results {
		for i := 1; i < len(rs); i++ {
			if rs[i] <= rs[i-1] { // a caller's calls are served in its order
				t.Fatalf("out of order: %v", rs)
			}
		}
		for _, r := range rs {
			if seen[r] {
				t.Fatalf("two calls saw count %d", r)
			}
			seen[r] = true
		}
	}
	if len(seen) != 500 {
		t.Fatalf("%d distinct results, want 500", len(seen))
	}
}

// Gate blocks until released, to show activations run in parallel.
type Gate struct{}

func (g *Gate) Meet(ctx context.Context, b *barrier) error { return b.arrive(ctx) }

type barrier struct {
	mu      sync.Mutex
	n, want int
	ch      chan struct{}
}

func (b *barrier) arrive(ctx context.Context) error {
	b.mu.Lock()
	b.n++
	if b.n == b.want {
		close(b.ch)
	}
	b.mu.Unlock()
	select {
	case <-b.ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// A *barrier argument is in-process only; declare the kind so that its
// pointer-to-struct argument is allowed (the struct is registered).
var _ = casty.Message[barrier]()
var Gates = casty.Actor[Gate]()

func TestActivationsRunInParallel(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	sys := newSys(t)
	b := &barrier{want: 8, ch: make(chan struct{})}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := casty.Do(ctx, Gates.Ref(sys, fmt.Sprint(i)), (*Gate).Meet, b); err != nil {
				t.Errorf("gate %d: %v", i, err)
			}
		}()
	}
	wg.Wait() // completes only if all 8 handlers were running at once
}
