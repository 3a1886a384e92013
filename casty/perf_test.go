package casty_test

import (
	"context"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
)

// A call costs its envelope and, when the mailbox was idle, its goroutine
// start: at most two allocations (the goal in BENCHMARKS.md), one in the common case.
func TestCallAllocations(t *testing.T) {
	ctx := context.Background()
	sys := newSys(t)
	ref := Counters.Ref(sys, "allocs")
	casty.Call(ctx, ref, (*Counter).Add, 1)
	allocs := testing.AllocsPerRun(2000, func() {
		if _, err := casty.Call(ctx, ref, (*Counter).Add, 1); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > maxCallAllocs {
		t.Fatalf("%.2f allocations per call, want ≤ %d", allocs, maxCallAllocs)
	}
}

// An idle activation of a one-int actor costs at most 1 KiB beyond its state.
func TestIdleActivationMemory(t *testing.T) {
	const n = 50_000
	ctx := context.Background()
	sys := newSys(t, casty.WithConfig(casty.Config{Actors: casty.ActorConfig{IdleTimeout: time.Hour}}))
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "m" + strconv.Itoa(i)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for _, k := range keys {
		if _, err := casty.Call(ctx, Counters.Ref(sys, k), (*Counter).Add, 1); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if sys.Active() != n {
		t.Fatalf("%d active, want %d", sys.Active(), n)
	}
	per := (float64(after.HeapAlloc) - float64(before.HeapAlloc) - 8*n) / n
	t.Logf("%.0f bytes per idle activation beyond its state", per)
	if per > 1024 {
		t.Fatalf("%.0f bytes per idle activation, want ≤ 1024", per)
	}
	runtime.KeepAlive(keys)
}
