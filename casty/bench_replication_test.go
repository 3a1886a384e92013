package casty_test

import (
	"context"
	"runtime"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/casty/castytest/benchkit"
)

// Register is benchkit's replication actor, and the Bench kinds its
// kinds (castytest/benchkit, shared with go run ./bench).
type Register = benchkit.Register

// The replication benchmarks' kinds: the same actor kept once, and kept on
// three members with a majority write and either read quorum.
var (
	BenchSingles    = benchkit.Singles
	BenchMajorities = benchkit.Majorities
	BenchReadOnes   = benchkit.ReadOnes
)

// replicatedBenchCluster starts three members over loopback TCP and waits
// until each acts on a placement of all three and has finished syncing.
func replicatedBenchCluster(b *testing.B) []*casty.System {
	nodes := benchCluster(b, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := benchkit.WaitSettled(ctx, nodes); err != nil {
		b.Fatal(err)
	}
	return nodes
}

// loopLatency runs op in b.Loop and reports the p50 and p99 latency.
func loopLatency(b *testing.B, op func() error) {
	b.Helper()
	if err := op(); err != nil { // activate before timing
		b.Fatal(err)
	}
	lats := make([]time.Duration, 0, 1<<16)
	b.ReportAllocs()
	for b.Loop() {
		t0 := time.Now()
		if err := op(); err != nil {
			b.Fatal(err)
		}
		lats = append(lats, time.Since(t0))
	}
	slices.Sort(lats)
	b.ReportMetric(float64(lats[len(lats)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(lats[len(lats)*99/100].Nanoseconds())/1e3, "p99-µs")
}

// BenchmarkReplicatedWriteHotKey: sequential writes to one key of a
// Replicas(3), Write(Majority) kind on three members, from a member that
// does not own it and from its owner, next to the unreplicated cross-node
// call (a Replicas(1) key another member owns) they are compared with.
func BenchmarkReplicatedWriteHotKey(b *testing.B) {
	nodes := replicatedBenchCluster(b)
	ctx := context.Background()
	a, o := nodes[0], nodes[1]
	hot := benchkit.KeyOwnedBy(a, BenchMajorities.Name(), o.Addr(), "hot")
	single := BenchSingles.Ref(a, benchkit.KeyOwnedBy(a, BenchSingles.Name(), o.Addr(), "s"))
	b.Run("unreplicated-cross-node", func(b *testing.B) {
		loopLatency(b, func() error { _, err := casty.Call(ctx, single, (*Register).Add, 1); return err })
	})
	b.Run("R3-W-majority", func(b *testing.B) {
		ref := BenchMajorities.Ref(a, hot)
		loopLatency(b, func() error { _, err := casty.Call(ctx, ref, (*Register).Add, 1); return err })
	})
	b.Run("R3-W-majority-on-owner", func(b *testing.B) {
		ref := BenchMajorities.Ref(o, hot)
		loopLatency(b, func() error { _, err := casty.Call(ctx, ref, (*Register).Add, 1); return err })
	})
}

// BenchmarkReplicatedWriteParallel: 64 writers over 1,000 keys, spread
// over three members, on a Replicas(3), Write(Majority) kind and on the
// same actor kept once.
func BenchmarkReplicatedWriteParallel(b *testing.B) {
	nodes := replicatedBenchCluster(b)
	for _, k := range []struct {
		name string
		kind *casty.Kind[Register]
	}{{"R1", BenchSingles}, {"R3-W-majority", BenchMajorities}} {
		b.Run(k.name, func(b *testing.B) { parallelWriters(b, nodes, k.kind, 64, 1000) })
	}
}

// parallelWriters runs callers goroutines (caller w on member w%3) that
// call Add on keys of kind, every key activated before timing.
func parallelWriters(b *testing.B, nodes []*casty.System, kind *casty.Kind[Register], callers, keys int) {
	ctx := context.Background()
	ks := make([]string, keys)
	for i := range ks {
		ks[i] = "w" + strconv.Itoa(i)
		if _, err := casty.Call(ctx, kind.Ref(nodes[i%len(nodes)], ks[i]), (*Register).Add, 0); err != nil {
			b.Fatal(err)
		}
	}
	procs := runtime.GOMAXPROCS(0)
	b.SetParallelism((callers + procs - 1) / procs)
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		w := int(next.Add(1) - 1)
		from := nodes[w%len(nodes)]
		i := w * 157
		for pb.Next() {
			i = (i + 1) % keys
			if _, err := casty.Call(ctx, kind.Ref(from, ks[i]), (*Register).Add, 1); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkReplicatedRead: sequential calls of a handler that changes
// nothing, from a member that does not own the key, on a Replicas(3) kind
// with Read(Majority) and with Read(One), and on Replicas(1) (the floor).
func BenchmarkReplicatedRead(b *testing.B) {
	nodes := replicatedBenchCluster(b)
	ctx := context.Background()
	a, o := nodes[0], nodes[1]
	for _, k := range []struct {
		name string
		kind *casty.Kind[Register]
	}{{"R1", BenchSingles}, {"R3-read-one", BenchReadOnes}, {"R3-read-majority", BenchMajorities}} {
		ref := k.kind.Ref(a, benchkit.KeyOwnedBy(a, k.kind.Name(), o.Addr(), "r"))
		b.Run(k.name, func(b *testing.B) {
			loopLatency(b, func() error { _, err := casty.Call0(ctx, ref, (*Register).Get); return err })
		})
	}
}
