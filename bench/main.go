// Command bench measures Casty's published figures next to their floors,
// in one run, and prints a markdown table (BENCHMARKS.md is built from it).
//
//	go run ./bench            # everything
//	go run ./bench -only local
//
// Every figure is printed with the floor it is compared with, measured in
// the same run, because shared machines are noisy.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
)

// Counter is the benchmark actor: one int of state.
type Counter struct{ N int }

// Add adds d and returns the new total.
func (c *Counter) Add(ctx context.Context, d int) (int, error) { c.N += d; return c.N, nil }

// Counters is the benchmark kind.
var Counters = casty.Actor[Counter](casty.Name("bench.Counter"))

type row struct {
	what, figure, floor, ratio, note string
}

var rows []row

func add(what, figure, floor, ratio, note string) {
	rows = append(rows, row{what, figure, floor, ratio, note})
	fmt.Fprintf(os.Stderr, "  %s: %s (floor %s, ratio %s) %s\n", what, figure, floor, ratio, note)
}

func main() {
	only := flag.String("only", "", "run only the groups whose name contains this (local)")
	activations := flag.Int("activations", 1_000_000, "idle activations for the memory figure")
	flag.Parse()
	fmt.Fprintf(os.Stderr, "casty bench: %s, %d CPUs, GOMAXPROCS %d\n", runtime.Version(), runtime.NumCPU(), runtime.GOMAXPROCS(0))
	if *only == "" || strings.Contains("local", *only) {
		local(*activations)
	}
	fmt.Printf("| figure | result | floor (same run) | ratio | note |\n|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Printf("| %s | %s | %s | %s | %s |\n", r.what, r.figure, r.floor, r.ratio, r.note)
	}
}

// channelFloor is a raw two-goroutine request/reply over unbuffered channels.
func channelFloor(b *testing.B) {
	req, rep := make(chan int), make(chan int)
	go func() {
		n := 0
		for d := range req {
			n += d
			rep <- n
		}
	}()
	for b.Loop() {
		req <- 1
		<-rep
	}
	close(req)
}

func best(f func(*testing.B), runs int) testing.BenchmarkResult {
	var out testing.BenchmarkResult
	for i := range runs {
		r := testing.Benchmark(f)
		if i == 0 || r.NsPerOp() < out.NsPerOp() {
			out = r
		}
	}
	return out
}

func perOp(r testing.BenchmarkResult) float64 { return float64(r.T.Nanoseconds()) / float64(r.N) }

func local(activations int) {
	ctx := context.Background()
	floor := best(channelFloor, 5)
	seq := best(func(b *testing.B) {
		sys := casty.Local()
		defer sys.Close(ctx)
		ref := Counters.Ref(sys, "bench")
		b.ReportAllocs()
		for b.Loop() {
			if _, err := casty.Call(ctx, ref, (*Counter).Add, 1); err != nil {
				b.Fatal(err)
			}
		}
	}, 5)
	add("sequential local Call, one caller, one actor",
		fmt.Sprintf("%.0f ns/call = %.2f M calls/s, %d allocs/call", perOp(seq), 1e3/perOp(seq), seq.AllocsPerOp()),
		fmt.Sprintf("%.0f ns raw channel round trip", perOp(floor)),
		fmt.Sprintf("%.2f×", perOp(seq)/perOp(floor)), "goal ≤ 3× and > 1.2 M/s")

	for _, procs := range []int{1, 2} {
		prev := runtime.GOMAXPROCS(procs)
		fl := best(channelFloor, 3)
		r := best(func(b *testing.B) { parallelCalls(b, 64, 10_000) }, 3)
		runtime.GOMAXPROCS(prev)
		add(fmt.Sprintf("64 callers over 10,000 keys, GOMAXPROCS %d", procs),
			fmt.Sprintf("%.2f M calls/s", 1e3/perOp(r)),
			fmt.Sprintf("%.0f ns raw channel round trip (%.2f M/s)", perOp(fl), 1e3/perOp(fl)),
			fmt.Sprintf("%.2f× the floor's rate", perOp(fl)/perOp(r)), "")
	}

	per, state := idleMemory(activations)
	add(fmt.Sprintf("memory per idle activation (%s one-int actors)", strconv.Itoa(activations)),
		fmt.Sprintf("%.0f B beyond state", per), fmt.Sprintf("%d B of state (*Counter)", state), "-", "goal ≤ 1 KiB")
}

func parallelCalls(b *testing.B, callers, keys int) {
	ctx := context.Background()
	sys := casty.Local()
	defer sys.Close(ctx)
	refs := make([]casty.Ref[Counter], keys)
	for i := range refs {
		refs[i] = Counters.Ref(sys, "k"+strconv.Itoa(i))
	}
	b.ReportAllocs()
	b.ResetTimer()
	per := b.N/callers + 1
	var wg sync.WaitGroup
	for w := range callers {
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
			}
		}()
	}
	wg.Wait()
}

// idleMemory activates n one-int actors and returns the heap bytes each
// costs beyond its state and its key's bytes.
func idleMemory(n int) (perActivation float64, stateBytes int) {
	ctx := context.Background()
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "key-" + strconv.Itoa(i)
	}
	var keyBytes int
	for _, k := range keys {
		keyBytes += len(k)
	}
	sys := casty.Local(casty.WithConfig(casty.Config{IdleTimeout: time.Hour}))
	defer sys.Close(ctx)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for _, k := range keys {
		if _, err := casty.Call(ctx, Counters.Ref(sys, k), (*Counter).Add, 1); err != nil {
			panic(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if sys.Active() != n {
		panic(fmt.Sprintf("%d activations, want %d", sys.Active(), n))
	}
	stateBytes = 8 // new(Counter): one int
	total := float64(after.HeapAlloc) - float64(before.HeapAlloc)
	runtime.KeepAlive(keys)
	return (total - float64(n*stateBytes)) / float64(n), stateBytes
}
