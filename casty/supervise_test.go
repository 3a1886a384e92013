package casty_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/casty-go/casty/casty"
)

var errFlaky = errors.New("flaky")

// Flaky fails on demand.
type Flaky struct{ Total int }

func (f *Flaky) Add(ctx context.Context, n int) (int, error) { f.Total += n; return f.Total, nil }
func (f *Flaky) Fail(ctx context.Context) error              { f.Total += 100; return errFlaky }
func (f *Flaky) Panic(ctx context.Context) error             { panic("kaboom") }

var Flakies = casty.Actor[Flaky]()

func TestSupervisionKeepResetStop(t *testing.T) {
	ctx := context.Background()
	var failures []int
	threeStrikes := func(kind, key string, err error, f casty.Failure) casty.Directive {
		failures = append(failures, f.Failures)
		if f.Failures < 3 {
			return casty.Keep
		}
		return casty.Reset
	}
	sys := newSys(t, casty.WithSupervisor(threeStrikes))
	ref := Flakies.Ref(sys, "f")
	if _, err := casty.Call(ctx, ref, (*Flaky).Add, 1); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 2; i++ {
		err := casty.Do0(ctx, ref, (*Flaky).Fail)
		var fe *casty.ActorFailedError
		if !errors.As(err, &fe) || fe.Directive != casty.Keep || fe.Method != "Fail" || fe.Key != "f" ||
			fe.Kind != Flakies.Name() || !errors.Is(err, errFlaky) || fe.Message != "flaky" {
			t.Fatalf("failure %d: %#v", i, err)
		}
	}
	// Keep: the state the handler left stays.
	if n, _ := casty.Call(ctx, ref, (*Flaky).Add, 0); n != 201 {
		t.Fatalf("after Keep: %d", n)
	}
	// The success reset the count: three more strikes are needed.
	for i := 1; i <= 3; i++ {
		err := casty.Do0(ctx, ref, (*Flaky).Fail)
		var fe *casty.ActorFailedError
		errors.As(err, &fe)
		want := casty.Keep
		if i == 3 {
			want = casty.Reset
		}
		if fe == nil || fe.Directive != want {
			t.Fatalf("strike %d: %v", i, err)
		}
	}
	if want := []int{1, 2, 1, 2, 3}; !equalInts(failures, want) {
		t.Fatalf("failure counts %v, want %v", failures, want)
	}
	// Reset: the next call starts from zero state.
	if n, _ := casty.Call(ctx, ref, (*Flaky).Add, 0); n != 0 {
		t.Fatalf("after Reset: %d", n)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Stopper counts hook runs.
type Stopper struct{ N int }

var stopperDeactivations atomic.Int32

func (s *Stopper) Deactivate(ctx context.Context) error { stopperDeactivations.Add(1); return nil }
func (s *Stopper) Inc(ctx context.Context) (int, error) { s.N++; return s.N, nil }
func (s *Stopper) Fail(ctx context.Context) error       { return errors.New("stop me") }

var Stoppers = casty.Actor[Stopper](casty.Supervise(func(kind, key string, err error, f casty.Failure) casty.Directive {
	return casty.Stop
}))

func TestKindSupervisorStopOverridesSystem(t *testing.T) {
	ctx := context.Background()
	sys := newSys(t, casty.WithSupervisor(func(string, string, error, casty.Failure) casty.Directive { return casty.Keep }))
	ref := Stoppers.Ref(sys, "s")
	casty.Call0(ctx, ref, (*Stopper).Inc)
	before := stopperDeactivations.Load()
	err := casty.Do0(ctx, ref, (*Stopper).Fail)
	var fe *casty.ActorFailedError
	if !errors.As(err, &fe) || fe.Directive != casty.Stop {
		t.Fatalf("got %v", err)
	}
	waitFor(t, 5e9, "Deactivate hook after Stop", func() bool { return stopperDeactivations.Load() == before+1 })
	if n, _ := casty.Call0(ctx, ref, (*Stopper).Inc); n != 1 {
		t.Fatalf("after Stop the next call should reactivate fresh, got %d", n)
	}
}

func TestPanickingHandlerAndSupervisor(t *testing.T) {
	ctx := context.Background()
	sys := newSys(t, casty.WithSupervisor(func(string, string, error, casty.Failure) casty.Directive {
		panic("supervisor bug")
	}))
	ref := Flakies.Ref(sys, "p")
	casty.Call(ctx, ref, (*Flaky).Add, 5)
	err := casty.Do0(ctx, ref, (*Flaky).Panic)
	var fe *casty.ActorFailedError
	var pe *casty.PanicError
	if !errors.As(err, &fe) || fe.Directive != casty.Keep || !errors.As(err, &pe) || pe.Value != "kaboom" ||
		!strings.Contains(string(pe.Stack), "Panic") {
		t.Fatalf("got %#v", err)
	}
	if n, _ := casty.Call(ctx, ref, (*Flaky).Add, 0); n != 5 {
		t.Fatalf("state after a panic with Keep: %d", n)
	}
}
