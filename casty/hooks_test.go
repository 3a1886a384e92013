package casty_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
)

// Resettable counts its Deactivate hooks and fails on demand; its
// supervisor always resets it.
type Resettable struct{ N int }

var resettableHooks atomic.Int32

func (r *Resettable) Deactivate(context.Context) error { resettableHooks.Add(1); return nil }
func (r *Resettable) Touch(context.Context) (int, error) {
	r.N++
	return r.N, nil
}
func (r *Resettable) Fail(context.Context) error { return errFlaky }

var Resettables = casty.Actor[Resettable](casty.Name("test.Resettable"),
	casty.Supervise(func(string, string, error, casty.Failure) casty.Directive { return casty.Reset }))

// Reset discards the activation without its Deactivate hook; the next call
// starts from a fresh state. A graceful end (Close) runs the hook.
func TestResetSkipsTheDeactivateHook(t *testing.T) {
	before := resettableHooks.Load() // the counter outlives a run (-count)
	sys := casty.Local()
	ctx := context.Background()
	ref := Resettables.Ref(sys, "r")
	casty.Call0(ctx, ref, (*Resettable).Touch)
	if n, _ := casty.Call0(ctx, ref, (*Resettable).Touch); n != 2 {
		t.Fatalf("second touch: %d", n)
	}
	var fe *casty.ActorFailedError
	if err := casty.Do0(ctx, ref, (*Resettable).Fail); !errors.As(err, &fe) || fe.Directive != casty.Reset {
		t.Fatalf("fail: %v", err)
	}
	if n, err := casty.Call0(ctx, ref, (*Resettable).Touch); err != nil || n != 1 {
		t.Fatalf("after Reset: %d %v, want a fresh state", n, err)
	}
	if n := resettableHooks.Load() - before; n != 0 {
		t.Fatalf("Reset ran the Deactivate hook %d times", n)
	}
	if err := sys.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if n := resettableHooks.Load() - before; n != 1 {
		t.Fatalf("Close ran the Deactivate hook %d times, want 1", n)
	}
}

type Mayfly struct{ N int }

func (m *Mayfly) Touch(context.Context) error { m.N++; return nil }

type Tortoise struct{ N int }

func (m *Tortoise) Touch(context.Context) error { m.N++; return nil }

var (
	Mayflies  = casty.Actor[Mayfly](casty.Name("test.Mayfly"))                                       // the system's idle timeout
	Tortoises = casty.Actor[Tortoise](casty.Name("test.Tortoise"), casty.IdleTimeout(casty.Forever)) // never idles out
)

// A kind without an idle timeout of its own takes the system's; one
// declared Forever never idles out, however short the system's is.
func TestIdleTimeoutOfTheSystemAndForever(t *testing.T) {
	const idle = 30 * time.Millisecond
	sys := newSys(t, casty.WithConfig(casty.Config{Actors: casty.ActorConfig{IdleTimeout: idle}}))
	ctx := context.Background()
	if err := casty.Do0(ctx, Mayflies.Ref(sys, "m"), (*Mayfly).Touch); err != nil {
		t.Fatal(err)
	}
	if err := casty.Do0(ctx, Tortoises.Ref(sys, "t"), (*Tortoise).Touch); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the mayfly to idle out", func() bool {
		_, ok, _ := Mayflies.StateOf(ctx, sys, "m")
		return !ok
	})
	time.Sleep(10 * idle) // absence check: the tortoise must not go
	if st, ok, err := Tortoises.StateOf(ctx, sys, "t"); !ok || err != nil || st.N != 1 {
		t.Fatalf("the Forever actor: %+v active=%v %v", st, ok, err)
	}
}
