package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/collections"
	"github.com/casty-go/casty/ring"
)

// Bucket is the hand-written replicated actor the map is compared with:
// the same work — one entry per Put, paged per entry — without the
// collection's facade (no encoding of keys and values, no catalog).
type Bucket struct{ Entries casty.TrackedMap[string, int] }

// PutReq is a Bucket's Put argument.
type PutReq struct {
	Key   string
	Value int
}

var _ = casty.Message[PutReq](casty.Name("bench.PutReq"))

// Put stores an entry.
func (b *Bucket) Put(_ context.Context, q PutReq) (bool, error) {
	_, had := b.Entries.Get(q.Key)
	b.Entries.Set(q.Key, q.Value)
	return had, nil
}

// Get reads an entry.
func (b *Bucket) Get(_ context.Context, k string) (int, error) {
	v, _ := b.Entries.Get(k)
	return v, nil
}

// Buckets are declared with the map's default triple.
var Buckets = casty.Actor[Bucket](casty.Name("bench.Bucket"), casty.Replicas(3), casty.Write(casty.Majority))

// collectionsBench measures the collections on three members over
// loopback TCP against hand-written replicated actors doing the same work.
func collectionsBench() {
	ctx := context.Background()
	nodes := startMembers(3)
	defer func() {
		for _, n := range nodes {
			n.Close(ctx)
		}
	}()
	waitReplicated(nodes)

	const callers, keys = 64, 1000
	ks := make([]string, keys)
	for i := range ks {
		ks[i] = "k" + strconv.Itoa(i)
	}
	maps := make([]*collections.Map[string, int], len(nodes))
	for i, n := range nodes {
		m, err := collections.NewMap[string, int](n, "bench-map")
		if err != nil {
			panic(err)
		}
		maps[i] = m
	}
	bucketOf := func(k string) string { return "b" + strconv.Itoa(int(ring.HashString(k)%32)) }

	// 1. Puts and Gets, 64 callers spread over the members.
	plainPut, plainPutRuns := bestOf(func(b *testing.B) {
		runCallers(b, callers, keys, 157, func(w, i int) error {
			_, err := casty.Call(ctx, Buckets.Ref(nodes[w%3], bucketOf(ks[i])), (*Bucket).Put, PutReq{ks[i], i})
			return err
		})
	}, replicationRuns)
	mapPut, mapPutRuns := bestOf(func(b *testing.B) {
		runCallers(b, callers, keys, 157, func(w, i int) error { return maps[w%3].Put(ctx, ks[i], i) })
	}, replicationRuns)
	add("collections.Map Put, 64 callers over 1,000 keys, 3 members (R=3 W=Majority, 32 shards)",
		fmt.Sprintf("%.1f k ops/s, %s (%s)", 1e6/perOp(mapPut), cpus(mapPut), mapPutRuns),
		fmt.Sprintf("a hand-written replicated actor (TrackedMap, 32 keys) doing the same: %.1f k/s, %s (%s)", 1e6/perOp(plainPut), cpus(plainPut), plainPutRuns),
		fmt.Sprintf("%.2f×", perOp(plainPut)/perOp(mapPut)),
		"goal: close to the hand-written actor")
	plainGet, plainGetRuns := bestOf(func(b *testing.B) {
		runCallers(b, callers, keys, 157, func(w, i int) error {
			_, err := casty.Call(ctx, Buckets.Ref(nodes[w%3], bucketOf(ks[i])), (*Bucket).Get, ks[i])
			return err
		})
	}, replicationRuns)
	mapGet, mapGetRuns := bestOf(func(b *testing.B) {
		runCallers(b, callers, keys, 157, func(w, i int) error { _, _, err := maps[w%3].Get(ctx, ks[i]); return err })
	}, replicationRuns)
	add("collections.Map Get, the same shape (Read(One))",
		fmt.Sprintf("%.1f k ops/s, %s (%s)", 1e6/perOp(mapGet), cpus(mapGet), mapGetRuns),
		fmt.Sprintf("the hand-written actor's Get: %.1f k/s, %s (%s)", 1e6/perOp(plainGet), cpus(plainGet), plainGetRuns),
		fmt.Sprintf("%.2f×", perOp(plainGet)/perOp(mapGet)),
		"goal: close to the hand-written actor")

	// 2. A counter's adds, striped over 32, against one replicated key.
	counters := make([]*collections.Counter, len(nodes))
	for i, n := range nodes {
		c, err := collections.NewCounter(n, "bench-counter")
		if err != nil {
			panic(err)
		}
		counters[i] = c
	}
	single, singleRuns := bestOf(func(b *testing.B) {
		runCallers(b, callers, 1, 1, func(w, _ int) error {
			_, err := casty.Call(ctx, ReadOnes.Ref(nodes[w%3], "one-counter"), (*Register).Add, 1)
			return err
		})
	}, replicationRuns)
	striped, stripedRuns := bestOf(func(b *testing.B) {
		runCallers(b, callers, 1, 1, func(w, _ int) error { return counters[w%3].Add(ctx, 1) })
	}, replicationRuns)
	add("collections.Counter Add, 64 callers, 32 stripes, 3 members (R=3 W=Majority)",
		fmt.Sprintf("%.1f k adds/s, %s (%s)", 1e6/perOp(striped), cpus(striped), stripedRuns),
		fmt.Sprintf("one replicated key (R=3 W=Majority) taking every add: %.1f k/s, %s (%s)", 1e6/perOp(single), cpus(single), singleRuns),
		fmt.Sprintf("%.2f×", perOp(single)/perOp(striped)),
		"goal: striping beats one hot key")

	// 3. Size of a map of 1,000,000 entries: every shard counts at once.
	big, err := collections.NewMap[int, int](nodes[0], "bench-big")
	if err != nil {
		panic(err)
	}
	const entries = 1_000_000
	t0 := time.Now()
	var wg sync.WaitGroup
	for w := range callers {
		wg.Go(func() {
			m, _ := collections.NewMap[int, int](nodes[w%3], "bench-big")
			for i := w; i < entries; i += callers {
				if err := m.Put(ctx, i, i); err != nil {
					panic(err)
				}
			}
		})
	}
	wg.Wait()
	load := time.Since(t0)
	size := best(func(b *testing.B) {
		for b.Loop() {
			n, err := big.Size(ctx)
			if err != nil || n != entries {
				b.Fatalf("Size = %d, %v", n, err)
			}
		}
	}, replicationRuns)
	one := best(func(b *testing.B) {
		for b.Loop() {
			if _, _, err := big.Get(ctx, 7); err != nil {
				b.Fatal(err)
			}
		}
	}, replicationRuns)
	add("collections.Map Size over 1,000,000 entries (32 shards, 3 members)",
		fmt.Sprintf("%.2f ms", perOp(size)/1e6),
		fmt.Sprintf("one Get from the same member: %.0f µs", perOp(one)/1e3),
		fmt.Sprintf("%.1f× a Get", perOp(size)/perOp(one)),
		fmt.Sprintf("loading the entries took %.1f s (64 callers, %.1f k puts/s)", load.Seconds(), entries/load.Seconds()/1e3))

}

// locksBench measures a lock's hand-off between members: a waiter parked
// on the server against one polling.
func locksBench() {
	ctx := context.Background()
	nodes := startMembers(3)
	defer func() {
		for _, n := range nodes {
			n.Close(ctx)
		}
	}()
	waitReplicated(nodes)
	server, poll := lockHandoffs(nodes, 200, false), lockHandoffs(nodes, 100, true)
	add("collections.Lock hand-off between waiters on two members (3 members, the lock's owner a third), 200 trials",
		fmt.Sprintf("p50 %.0f µs, p99 %.0f µs", us(pct(server, 50)), us(pct(server, 99))),
		fmt.Sprintf("the waiter polling TryLock every 10 ms: p50 %.1f ms, p99 %.1f ms", us(pct(poll, 50))/1e3, us(pct(poll, 99))/1e3),
		fmt.Sprintf("%.0f× faster at p50", float64(pct(poll, 50))/float64(pct(server, 50))),
		"goal ≥ 10× faster p50; from the holder's Release call to the waiter holding the lock")

}

// lockHandoffs measures how long a lock takes to pass from a holder on
// one member to a waiter on another, parked in Lock or polling TryLock.
func lockHandoffs(nodes []*casty.System, trials int, polling bool) []time.Duration {
	ctx := context.Background()
	name := "bench-lock"
	if polling {
		name = "bench-lock-polled"
	}
	// The holder and the waiter on two members that do not own the lock.
	probe, err := collections.NewLock(nodes[0], name)
	if err != nil {
		panic(err)
	}
	if l, err := probe.Lock(ctx); err != nil || l.Release(ctx) != nil {
		panic(fmt.Sprint("lock: ", err))
	}
	var others []*casty.System
	for _, n := range nodes {
		if m, _ := n.OwnerOf(kindNameOfLock(), "lock/"+name); m.Addr != n.Addr() {
			others = append(others, n)
		}
	}
	if len(others) < 2 {
		others = nodes[1:]
	}
	holder, _ := collections.NewLock(others[0], name)
	waiter, _ := collections.NewLock(others[1], name)
	out := make([]time.Duration, 0, trials)
	for range trials {
		lease, err := holder.Lock(ctx)
		if err != nil {
			panic(err)
		}
		got := make(chan time.Time, 1)
		go func() {
			var l *collections.Lease
			var err error
			if polling {
				for {
					var ok bool
					if l, ok, err = waiter.TryLock(ctx); err != nil || ok {
						break
					}
					time.Sleep(10 * time.Millisecond)
				}
			} else {
				l, err = waiter.Lock(ctx)
			}
			if err != nil {
				panic(err)
			}
			got <- time.Now()
			if err := l.Release(ctx); err != nil {
				panic(err)
			}
		}()
		// The waiter parks, or starts polling; a random extra hold keeps
		// the release out of phase with the polls.
		time.Sleep(20*time.Millisecond + rand.N(10*time.Millisecond))
		t0 := time.Now()
		if err := lease.Release(ctx); err != nil {
			panic(err)
		}
		out = append(out, (<-got).Sub(t0))
		time.Sleep(2 * time.Millisecond) // its release lands before the next trial
	}
	slices.Sort(out)
	return out
}

// kindNameOfLock is the wire name of the default triple's shard kind.
func kindNameOfLock() string { return "casty.collections.Shard[r3,wmajority,rone]" }

func pct(sorted []time.Duration, p int) time.Duration {
	return sorted[min(len(sorted)-1, len(sorted)*p/100)]
}
