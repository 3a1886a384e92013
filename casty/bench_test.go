package casty_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/casty/castytest/benchkit"
)

// Counter and Counters are the benchmarks' counter (castytest/benchkit,
// shared with go run ./bench), named here for this package's tests.
type Counter = benchkit.Counter

// Counters is benchkit's kind of Counter.
var Counters = benchkit.Counters

// BenchmarkChannelFloor is the floor: a raw two-goroutine request/reply over
// unbuffered channels, the cheapest possible cross-goroutine round trip.
func BenchmarkChannelFloor(b *testing.B) { benchkit.ChannelFloor(b) }

// BenchmarkCallSequential: one caller, one local actor, Call after Call.
func BenchmarkCallSequential(b *testing.B) {
	ctx := context.Background()
	sys := casty.Local()
	defer sys.Close(ctx)
	ref := Counters.Ref(sys, "bench")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := casty.Call(ctx, ref, (*Counter).Add, 1); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCallParallel: 64 callers over 10,000 keys.
func BenchmarkCallParallel(b *testing.B) {
	for _, procs := range []int{1, 2} {
		b.Run(fmt.Sprintf("GOMAXPROCS=%d", procs), func(b *testing.B) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			ctx := context.Background()
			sys := casty.Local()
			defer sys.Close(ctx)
			refs := make([]casty.Ref[Counter], 10000)
			for i := range refs {
				refs[i] = Counters.Ref(sys, fmt.Sprint("k", i))
				casty.Call(ctx, refs[i], (*Counter).Add, 0) // activate before timing
			}
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ReportAllocs()
			b.ResetTimer()
			per := b.N/64 + 1
			for w := range 64 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					i := w * 157
					for range per {
						i = (i + 1) % len(refs)
						if _, err := casty.Call(ctx, refs[i], (*Counter).Add, 1); err != nil {
							b.Error(err)
							return
						}
						next.Add(1)
					}
				}()
			}
			wg.Wait()
		})
	}
}
