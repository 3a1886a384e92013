// Command bench measures Casty's published figures next to their floors,
// in one run, and prints a markdown table (BENCHMARKS.md is built from it).
//
//	go run ./bench            # everything
//	go run ./bench -only local
//	go run ./bench -only replication
//	go run ./bench -only processes  # calls and replicated writes, each member a process
//	go run ./bench -only collections
//	go run ./bench -only locks
//
// Every figure is printed with the floor it is compared with, measured in
// the same run, because shared machines are noisy.
package main

import (
	"context"
	"flag"
	"fmt"
	"github.com/casty-go/casty/internal/procstat"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/casty/castytest/benchkit"
)

// The kinds and the floor are castytest/benchkit's, shared with the
// casty package's testing.B benchmarks.
type (
	Counter   = benchkit.Counter
	IntSource = benchkit.IntSource
)

var (
	Counters   = benchkit.Counters
	IntSources = benchkit.IntSources
)

type row struct {
	what, figure, floor, ratio, note string
}

var rows []row

func add(what, figure, floor, ratio, note string) {
	rows = append(rows, row{what, figure, floor, ratio, note})
	fmt.Fprintf(os.Stderr, "  %s: %s (floor %s, ratio %s) %s\n", what, figure, floor, ratio, note)
}

func main() {
	only := flag.String("only", "", "run only the groups whose name contains this (local, cluster, replication, processes, collections, locks)")
	activations := flag.Int("activations", 1_000_000, "idle activations for the memory figure")
	seed := flag.String("member", "", "run as a member joined to this seed (started by the processes group)")
	flag.Parse()
	if *seed != "" {
		member(*seed)
		return
	}
	fmt.Fprintf(os.Stderr, "casty bench: %s, %d CPUs, GOMAXPROCS %d\n", runtime.Version(), runtime.NumCPU(), runtime.GOMAXPROCS(0))
	if *only == "" || strings.Contains("local", *only) {
		local(*activations)
	}
	if *only == "" || strings.Contains("cluster", *only) {
		cluster()
	}
	if *only == "" || strings.Contains("replication", *only) {
		replication()
	}
	if *only == "" || strings.Contains("processes", *only) {
		processes()
	}
	if *only == "" || strings.Contains("collections", *only) {
		collectionsBench()
	}
	if *only == "" || strings.Contains("locks", *only) {
		locksBench()
	}
	fmt.Printf("| figure | result | floor (same run) | ratio | note |\n|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Printf("| %s | %s | %s | %s | %s |\n", r.what, r.figure, r.floor, r.ratio, r.note)
	}
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
	floor := best(benchkit.ChannelFloor, 5)
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
		fl := best(benchkit.ChannelFloor, 3)
		r := best(func(b *testing.B) { parallelCalls(b, 64, 10_000) }, 3)
		runtime.GOMAXPROCS(prev)
		add(fmt.Sprintf("64 callers over 10,000 keys, GOMAXPROCS %d", procs),
			fmt.Sprintf("%.2f M calls/s, %s", 1e3/perOp(r), cpus(r)),
			fmt.Sprintf("%.0f ns raw channel round trip (%.2f M/s)", perOp(fl), 1e3/perOp(fl)),
			fmt.Sprintf("%.2f× the floor's rate", perOp(fl)/perOp(r)), "")
	}

	streamRows()
	spyRows()

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
		// Activate every key before timing: the figure is calls, not
		// activations.
		if _, err := casty.Call(ctx, refs[i], (*Counter).Add, 0); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	runCallers(b, callers, len(refs), 157, func(_, i int) error {
		_, err := casty.Call(ctx, refs[i], (*Counter).Add, 1)
		return err
	})
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
	sys := casty.Local(casty.WithConfig(casty.Config{Actors: casty.ActorConfig{IdleTimeout: time.Hour}}))
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

// streamElems is how many ints one stream (one benchmark op) moves.
const streamElems = 1024

// streamOnce ranges one local server stream of streamElems small ints.
func streamOnce(ctx context.Context, ref casty.Ref[IntSource]) {
	sum := 0
	for v, err := range casty.Stream(ctx, ref, (*IntSource).Count, streamElems) {
		if err != nil {
			panic(err)
		}
		sum += v
	}
	if sum != streamElems*(streamElems-1)/2 {
		panic(fmt.Sprintf("stream sum %d", sum))
	}
}

// floorOnce moves the same ints from a fresh producer goroutine to the
// caller through a raw channel of the stream's own buffer size.
func floorOnce() {
	ch := make(chan int, casty.StreamBuffer)
	go func() {
		for i := range streamElems {
			ch <- i
		}
		close(ch)
	}()
	sum := 0
	for v := range ch {
		sum += v
	}
	if sum != streamElems*(streamElems-1)/2 {
		panic(fmt.Sprintf("floor sum %d", sum))
	}
}

// streamRows times blocks of streams and of floor transfers in turn (the
// order swapped every round) so a loaded machine hits both alike; the
// ratio is the median of the per-round ratios.
func streamRows() {
	const rounds, perBlock = 41, 50
	ctx := context.Background()
	sys := casty.Local()
	defer sys.Close(ctx)
	ref := IntSources.Ref(sys, "bench")
	block := func(f func()) float64 {
		start := time.Now()
		for range perBlock {
			f()
		}
		return float64(time.Since(start).Nanoseconds()) / (perBlock * streamElems)
	}
	stream := func() { streamOnce(ctx, ref) }
	block(stream) // warm up
	block(floorOnce)
	var st, fl, ratios []float64
	for r := range rounds {
		var s, f float64
		if r%2 == 0 {
			s, f = block(stream), block(floorOnce)
		} else {
			f, s = block(floorOnce), block(stream)
		}
		st, fl, ratios = append(st, s), append(fl, f), append(ratios, s/f)
	}
	s, f := median(st), median(fl)
	add(fmt.Sprintf("local server stream of small ints (%d per stream)", streamElems),
		fmt.Sprintf("%.2f M elems/s (%.0f ns/elem)", 1e3/s, s),
		fmt.Sprintf("%.2f M elems/s (%.0f ns/elem) raw chan, cap StreamBuffer=%d", 1e3/f, f, casty.StreamBuffer),
		fmt.Sprintf("%.2f× the floor's time per element", median(ratios)),
		fmt.Sprintf("median of %d alternating rounds of %d streams", rounds, perBlock))
}

// spyRows measures the spy's cost on the sequential Call benchmark.
// Systems are compared side by side, warmed, timed in short alternating
// blocks (the order rotating every round) so that the load of a shared
// machine hits them alike; each ratio is the median of per-round ratios.
func spyRows() {
	const rounds, calls = 41, 20_000
	never := casty.Local()
	armed, stopArmed := armedSystem(false)
	armedP, stopArmedP := armedSystem(true)
	costs, ratios := alternate([]*casty.System{never, armed, armedP}, rounds, calls)
	stopArmed()
	stopArmedP()
	add("armed spy, cost per event (sequential Call, 2 events/call, consumer draining)",
		fmt.Sprintf("+%.0f ns/event (%.0f ns/call, %.0f allocs/call); with payloads +%.0f ns/event",
			(costs[1].ns-costs[0].ns)/2, costs[1].ns, costs[1].allocs, (costs[2].ns-costs[0].ns)/2),
		fmt.Sprintf("%.0f ns/call, %.0f allocs/call, no spy", costs[0].ns, costs[0].allocs),
		fmt.Sprintf("%.2f× per call", ratios[1]),
		fmt.Sprintf("median of %d alternating rounds of %d calls; includes encoding the state before and after each handler (Completed.Changed)", rounds, calls))

	costs, ratios = alternate([]*casty.System{casty.Local(), disarmedSystem()}, rounds, calls)
	add("unarmed spy (armed, then ctx cancelled): sequential Call",
		fmt.Sprintf("%.0f ns/call, %.0f allocs/call", costs[1].ns, costs[1].allocs),
		fmt.Sprintf("%.0f ns/call, %.0f allocs/call, never armed", costs[0].ns, costs[0].allocs),
		fmt.Sprintf("%.3f×", ratios[1]),
		fmt.Sprintf("median of %d alternating rounds of %d calls; goal ≈ 1.00: nothing is built when nothing is armed", rounds, calls))
}

// armedSystem returns a system with a spy armed on the benchmark kind and
// a goroutine draining it; stop disarms it and waits for the goroutine.
func armedSystem(payloads bool) (sys *casty.System, stop func()) {
	sys = casty.Local()
	ctx, cancel := context.WithCancel(context.Background())
	events, err := sys.Spy(ctx, casty.SpyFilter{Kind: Counters.Name(), Payloads: payloads})
	if err != nil {
		panic(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range events {
		}
	}()
	return sys, func() { cancel(); <-done }
}

// disarmedSystem returns a system whose spy was armed, then cancelled and
// run to its end, so it is unarmed again.
func disarmedSystem() *casty.System {
	ctx := context.Background()
	sys := casty.Local()
	spyCtx, cancel := context.WithCancel(ctx)
	events, err := sys.Spy(spyCtx, casty.SpyFilter{Kind: Counters.Name()})
	if err != nil {
		panic(err)
	}
	if _, err := casty.Call(ctx, Counters.Ref(sys, "bench"), (*Counter).Add, 1); err != nil {
		panic(err)
	}
	cancel()
	for range events {
	}
	return sys
}

type blockCost struct{ ns, allocs float64 }

// alternate times blocks of n sequential calls on each system in turn (the
// starting system rotating every round) and returns each system's median
// cost per call and the median of its per-round ratio to systems[0]. It
// closes the systems.
func alternate(systems []*casty.System, rounds, n int) (costs []blockCost, ratios []float64) {
	ctx := context.Background()
	block := func(sys *casty.System) (float64, float64) {
		ref := Counters.Ref(sys, "bench")
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		start := time.Now()
		for range n {
			if _, err := casty.Call(ctx, ref, (*Counter).Add, 1); err != nil {
				panic(err)
			}
		}
		el := time.Since(start)
		runtime.ReadMemStats(&m1)
		return float64(el.Nanoseconds()) / float64(n), float64(m1.Mallocs-m0.Mallocs) / float64(n)
	}
	k := len(systems)
	for _, sys := range systems {
		block(sys) // warm up
	}
	ns := make([][]float64, k)
	allocs := make([][]float64, k)
	rs := make([][]float64, k)
	for r := range rounds {
		this := make([]float64, k)
		for i := range k {
			j := (r + i) % k
			t, a := block(systems[j])
			this[j] = t
			ns[j] = append(ns[j], t)
			allocs[j] = append(allocs[j], a)
		}
		for j := range k {
			rs[j] = append(rs[j], this[j]/this[0])
		}
	}
	for j, sys := range systems {
		costs = append(costs, blockCost{median(ns[j]), median(allocs[j])})
		ratios = append(ratios, median(rs[j]))
		sys.Close(ctx)
	}
	return costs, ratios
}

// median returns the middle of xs (the mean of the two middles when even).
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else {
		return (s[n/2-1] + s[n/2]) / 2
	}
}

// runCallers times callers goroutines that make b.N calls between them:
// caller w walks the keys 0..keys-1 from w*stride on, one call(w, key) per
// step, and stops at its first error. It reports the CPUs the process kept
// busy meanwhile (user + system time over wall time) as the "CPUs" metric.
func runCallers(b *testing.B, callers, keys, stride int, call func(w, key int) error) {
	b.ResetTimer()
	cpu0, t0 := procstat.Self(), time.Now()
	defer func() { b.ReportMetric(float64(procstat.Self()-cpu0)/float64(time.Since(t0)), "CPUs") }()
	per := b.N/callers + 1
	var wg sync.WaitGroup
	for w := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			i := w * stride
			for range per {
				i = (i + 1) % keys
				if err := call(w, i); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// cpus formats the CPUs metric of a runCallers result.
func cpus(r testing.BenchmarkResult) string { return fmt.Sprintf("%.2f CPUs busy", r.Extra["CPUs"]) }
