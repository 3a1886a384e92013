package casty_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"

	"github.com/casty-go/casty/casty"
)

// casty.calls counts every call by outcome; casty.call.duration times one
// call in WithDurationSampling's n (every call with n = 1).
func TestTelemetryCallsCountEveryCallDurationsAreSampled(t *testing.T) {
	const calls = 1000
	ctx := context.Background()
	kind := attribute.String("casty.actor.kind", Flakies.Name())
	ok := []attribute.KeyValue{kind, attribute.String("casty.actor.method", "Add"), attribute.String("casty.call.outcome", "ok")}
	failed := []attribute.KeyValue{kind, attribute.String("casty.actor.method", "Fail"), attribute.String("casty.call.outcome", "failed")}
	for _, c := range []struct {
		name     string
		opts     []casty.Option
		min, max int64 // timed calls of Add
	}{
		// 1 in 32 of 1000: 31 expected; none at all has a chance of 2e-14.
		{"default", nil, 1, calls - 1},
		{"every", []casty.Option{casty.WithDurationSampling(1)}, calls, calls},
	} {
		t.Run(c.name, func(t *testing.T) {
			opt, collect := meters(t)
			sys := newSys(t, append(c.opts, opt)...)
			ref := Flakies.Ref(sys, "n")
			for range calls {
				if _, err := casty.Call(ctx, ref, (*Flaky).Add, 1); err != nil {
					t.Fatal(err)
				}
			}
			if err := casty.Do0(ctx, ref, (*Flaky).Fail); err == nil {
				t.Fatal("Fail succeeded")
			}
			rm := collect()
			if n, found := sum(rm, "casty.calls", ok...); n != calls {
				t.Errorf("casty.calls ok = %d (reported: %v), want %d", n, found, calls)
			}
			if n, _ := sum(rm, "casty.calls", failed...); n != 1 {
				t.Errorf("casty.calls failed = %d, want 1", n)
			}
			if n, _ := sum(rm, "casty.calls", kind); n != calls+1 {
				t.Errorf("casty.calls of the kind = %d, want %d", n, calls+1)
			}
			if n, _ := sum(rm, "casty.call.duration", ok...); n < c.min || n > c.max {
				t.Errorf("casty.call.duration count = %d, want %d..%d", n, c.min, c.max)
			}
		})
	}
}

// Metrics on, a local call allocates no more than with them off: the
// instruments' attribute sets are built once per handler and outcome.
func TestTelemetryCallAllocatesNothingMore(t *testing.T) {
	ctx := context.Background()
	allocs := func(opts ...casty.Option) float64 {
		ref := Counters.Ref(newSys(t, opts...), "allocs")
		casty.Call(ctx, ref, (*Counter).Add, 1)
		return testing.AllocsPerRun(2000, func() {
			if _, err := casty.Call(ctx, ref, (*Counter).Add, 1); err != nil {
				t.Fatal(err)
			}
		})
	}
	off := allocs()
	opt, _ := meters(t)
	if on := allocs(opt, casty.WithDurationSampling(1)); on > off {
		t.Fatalf("a call with metrics allocates %.2f times, %.2f without", on, off)
	}
}

// OtherCounters is a second kind of Counter's Go type.
var OtherCounters = casty.Actor[Counter](casty.Name("casty_test.OtherCounter"))

// Two kinds of one Go type count their calls apart: the handler is the
// same function, the kind is not.
func TestTelemetryCallsOfOneTypeCountByKind(t *testing.T) {
	ctx := context.Background()
	opt, collect := meters(t)
	sys := newSys(t, opt)
	for i := range 3 {
		if _, err := casty.Call(ctx, Counters.Ref(sys, "a"), (*Counter).Add, 1); err != nil {
			t.Fatal(err)
		}
		if i < 2 {
			if _, err := casty.Call(ctx, OtherCounters.Ref(sys, "a"), (*Counter).Add, 1); err != nil {
				t.Fatal(err)
			}
		}
	}
	rm := collect()
	for k, want := range map[string]int64{Counters.Name(): 3, OtherCounters.Name(): 2} {
		attrs := []attribute.KeyValue{attribute.String("casty.actor.kind", k), attribute.String("casty.actor.method", "Add"), attribute.String("casty.call.outcome", "ok")}
		if n, found := sum(rm, "casty.calls", attrs...); n != want {
			t.Errorf("casty.calls of %s = %d (reported: %v), want %d", k, n, found, want)
		}
	}
}
