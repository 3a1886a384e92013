// Command muxbench measures the mux transport next to its floors (raw
// TCP and raw yamux over loopback, in the same process and run) and
// prints a markdown table with the ratios the issue sets as goals.
//
//	go run ./cmd/muxbench            # from the mux module directory
//	go run ./cmd/muxbench -count 5 -hol 256
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/casty-go/casty/mux/internal/muxbench"
)

func main() {
	testing.Init()
	count := flag.Int("count", 3, "runs per benchmark; the median is reported")
	holMiB := flag.Int("hol", 256, "MiB moved by the bulk stream in the head-of-line test")
	flag.Parse()

	// Run every benchmark once per round, rounds interleaved, so that a
	// floor and its figure see the same machine load; report medians.
	type bench struct {
		f      func(*testing.B)
		metric string // "" = ns/op
		xs     []float64
	}
	benches := []*bench{
		{f: muxbench.RawTCPPingPong},
		{f: muxbench.RawYamuxPingPong},
		{f: muxbench.MuxRequest},
		{f: muxbench.RawYamuxPipelined, metric: "msg/s"},
		{f: func(b *testing.B) { muxbench.MuxConcurrent(b, 64) }, metric: "msg/s"},
		{f: muxbench.RawTCPBulk, metric: "MiB/s"},
		{f: muxbench.MuxStreamBulk, metric: "MiB/s"},
	}
	for range *count {
		for _, bn := range benches {
			r := testing.Benchmark(bn.f)
			switch bn.metric {
			case "":
				bn.xs = append(bn.xs, float64(r.NsPerOp()))
			case "MiB/s":
				bn.xs = append(bn.xs, float64(r.Bytes)*float64(r.N)/r.T.Seconds()/(1<<20))
			default:
				bn.xs = append(bn.xs, r.Extra[bn.metric])
			}
		}
	}
	med := func(i int) float64 {
		xs := slices.Clone(benches[i].xs)
		slices.Sort(xs)
		return xs[len(xs)/2]
	}
	us := func(ns float64) string { return fmt.Sprintf("%.1f µs", ns/1e3) }
	tcp, ymx, req, pipe, conc, rawBulk, strBulk := med(0), med(1), med(2), med(3), med(4), med(5), med(6)

	floorHOL, hol := holRuns(*count, int64(*holMiB)<<20)

	fmt.Printf("GOMAXPROCS=%d, %s, median of %d runs\n\n", runtime.GOMAXPROCS(0), time.Now().UTC().Format(time.RFC3339), *count)
	fmt.Println("| measurement | figure | floor | ratio | goal |")
	fmt.Println("|---|---|---|---|---|")
	fmt.Printf("| sequential request/response, 64 B | %s | raw yamux ping-pong %s (raw TCP %s) | %.2fx | ≤ 1.2x |\n",
		us(req), us(ymx), us(tcp), req/ymx)
	fmt.Printf("| 64 concurrent requesters, one connection | %.0f msg/s | raw yamux unbatched pipelined %.0f msg/s | %.2fx | ≥ 2x |\n",
		conc, pipe, conc/pipe)
	fmt.Printf("| head-of-line: small request p99 during a %d MiB bulk stream | %.2f ms (p50 %.2f ms, max %.2f ms, %d requests) | same requests, no bulk: p99 %.2f ms | %.1fx | < 5 ms |\n",
		*holMiB, ms(hol.P99), ms(hol.P50), ms(hol.Max), hol.Requests, ms(floorHOL.P99), float64(hol.P99)/float64(floorHOL.P99))
	fmt.Printf("| bulk stream throughput | %.0f MiB/s | raw TCP %.0f MiB/s | %.2fx | (reported) |\n",
		strBulk, rawBulk, strBulk/rawBulk)
	fmt.Printf("| (bulk transfer during head-of-line run) | %d MiB in %v = %.0f MiB/s | | | |\n",
		*holMiB, hol.Bulk.Round(time.Millisecond), float64(*holMiB)/hol.Bulk.Seconds())
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// holRuns runs the head-of-line experiment count times (with and
// without bulk) and returns the runs with the median p99.
func holRuns(count int, total int64) (floor, hol muxbench.HOLResult) {
	s, closeAll, err := muxbench.NewMuxPair()
	if err != nil {
		fail(err)
	}
	defer closeAll()
	var floors, hols []muxbench.HOLResult
	for range count {
		f, err := muxbench.HeadOfLine(s, 0, 2000)
		if err != nil {
			fail(err)
		}
		h, err := muxbench.HeadOfLine(s, total, 0)
		if err != nil {
			fail(err)
		}
		floors, hols = append(floors, f), append(hols, h)
	}
	byP99 := func(a, b muxbench.HOLResult) int { return int(a.P99 - b.P99) }
	slices.SortFunc(floors, byP99)
	slices.SortFunc(hols, byP99)
	return floors[len(floors)/2], hols[len(hols)/2]
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "muxbench:", err)
	os.Exit(1)
}
