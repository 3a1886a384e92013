package casty_test

import (
	"context"
	"testing"

	"github.com/casty-go/casty/casty"
)

// BenchmarkCallSpyArmed is BenchmarkCallSequential with a spy armed on the
// actor's kind and a consumer draining it: each call emits two events
// (Received, Completed). Compare with BenchmarkCallSequential; half the
// difference is the cost per event.
func BenchmarkCallSpyArmed(b *testing.B) {
	for _, payloads := range []bool{false, true} {
		name := "payloads=false"
		if payloads {
			name = "payloads=true"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			sys := casty.Local()
			defer sys.Close(ctx)
			ref := Counters.Ref(sys, "bench")
			spyCtx, cancel := context.WithCancel(ctx)
			events, err := sys.Spy(spyCtx, casty.SpyFilter{Kind: Counters.Name(), Key: "bench", Payloads: payloads})
			if err != nil {
				b.Fatal(err)
			}
			seen := make(chan int)
			go func() {
				n := 0
				for ev := range events {
					if l, ok := ev.(casty.Lag); ok {
						n += l.Dropped
						continue
					}
					n++
				}
				seen <- n
			}()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := casty.Call(ctx, ref, (*Counter).Add, 1); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			cancel()
			n := <-seen
			// One Activated (unless the warm-up run activated it before the
			// spy) and two events per call, every one delivered or accounted
			// for as dropped; the consumer may stop before the last ones.
			if n > 2*b.N+1 {
				b.Fatalf("spy saw %d events for %d calls", n, b.N)
			}
		})
	}
}

// BenchmarkCallSpyUnarmed is BenchmarkCallSequential on a system where a
// spy was armed and then cancelled (its sequence ran to its end): an
// unarmed spy must cost nothing, so this matches BenchmarkCallSequential.
func BenchmarkCallSpyUnarmed(b *testing.B) {
	ctx := context.Background()
	sys := casty.Local()
	defer sys.Close(ctx)
	ref := Counters.Ref(sys, "bench")
	spyCtx, cancel := context.WithCancel(ctx)
	events, err := sys.Spy(spyCtx, casty.SpyFilter{Kind: Counters.Name()})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := casty.Call(ctx, ref, (*Counter).Add, 1); err != nil {
		b.Fatal(err)
	}
	cancel()
	for range events { // ends with spyCtx, which disarms the spy
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := casty.Call(ctx, ref, (*Counter).Add, 1); err != nil {
			b.Fatal(err)
		}
	}
}
