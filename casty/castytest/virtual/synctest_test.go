package virtual_test

import (
	"context"
	"fmt"
	"github.com/casty-go/casty/internal/procstat"
	"hash/fnv"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/casty/castytest"
)

// A cluster runs on the bubble's virtual clock: three members serve a
// replicated kind, one crashes, and well past RemoveDeadAfter (30 s of
// virtual time, a few ms of CPU) the two left serve every key again.
func TestClusterOnVirtualTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		c := castytest.NewCluster(t, 3, castytest.Seed(1))
		keys := []string{"a", "b", "c", "d", "e", "f"}
		add := func(via *casty.System, key string) (int, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return casty.Call(ctx, Tallies.Ref(via, key), (*Tally).Add, 1)
		}
		for _, k := range keys {
			if _, err := add(c.Member(0), k); err != nil {
				t.Fatalf("add %s: %v", k, err)
			}
		}
		c.Crash(2)
		// Both survivors drop the crashed member: waited for on the
		// bubble's clock, with a virtual deadline well past
		// RemoveDeadAfter (30 s).
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
			m0, m1 := c.Member(0), c.Member(1)
			if len(m0.Members()) == 2 && len(m1.Members()) == 2 && m0.Replication().Placed == 2 && m1.Replication().Placed == 2 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("a virtual minute after the crash the survivors see %d and %d members and place %d and %d; want 2",
					len(m0.Members()), len(m1.Members()), m0.Replication().Placed, m1.Replication().Placed)
			}
		}
		for _, k := range keys {
			n, err := add(c.Member(1), k)
			if err != nil {
				t.Fatalf("add %s after the crash: %v", k, err)
			}
			if n != 2 {
				t.Fatalf("add %s after the crash: %d, want 2", k, n)
			}
		}
		t.Logf("virtual time elapsed: %v", time.Since(start))
	})
}

// Blob holds a string; Put answers its length.
type Blob struct{ S string }

func (b *Blob) Put(ctx context.Context, s string) (int, error) { b.S = s; return len(s), nil }

var Blobs = casty.Actor[Blob](casty.Name("castytest.test.Blob"), casty.Replicas(3), casty.Write(casty.Majority))

// putBlobs stores payloads big enough to be compressed (zstd) on their
// way to the owner and to its replicas.
func putBlobs(t *testing.T, c *castytest.Cluster) {
	big := strings.Repeat("casty compresses this ", 1000)
	for i, k := range []string{"x", "y", "z", "w"} {
		if _, err := casty.Call(context.Background(), Blobs.Ref(c.Member(i%c.N()), k), (*Blob).Put, big); err != nil {
			t.Fatal(err)
		}
	}
}

// A bubbled cluster and then an unbubbled one compress payloads in one
// process: neither may meet a zstd coder, a pooled channel or a pooled
// timer of the other (the process aborted when mux shared one zstd
// encoder process-wide).
func TestClusterCompressesOnVirtualTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { putBlobs(t, castytest.NewCluster(t, 3)) })
}

func TestClusterCompressesAfterABubble(t *testing.T) { putBlobs(t, castytest.NewCluster(t, 3)) }

// virtualRun is what a bubbled register workload recorded: its history,
// the virtual time it took and the CPU time it cost.
type virtualRun struct {
	h            *castytest.History[castytest.RegisterOp[int], castytest.RegisterResult[int]]
	virtual, cpu time.Duration
	healAt       time.Duration // when the partition healed, from the history's start
	views        []int         // how many members each member saw at the end
}

// fingerprint hashes the history as recorded, times included: two runs
// with the same fingerprint made the same calls at the same virtual times
// and saw the same outcomes.
func (r virtualRun) fingerprint() uint64 {
	f := fnv.New64a()
	for _, op := range r.h.Ops() {
		fmt.Fprintf(f, "%d %v %v %d %d %t\n", op.Client, op.Input, op.Output, op.Call, op.Return, op.Indeterminate)
	}
	return f.Sum64()
}

// answered counts, per client, the operations called after at that came
// back with a definite outcome.
func (r virtualRun) answered(at time.Duration) []int {
	var n []int
	for _, op := range r.h.Ops() {
		for len(n) <= op.Client {
			n = append(n, 0)
		}
		if op.Call >= at && !op.Indeterminate {
			n[op.Client]++
		}
	}
	return n
}

// partitionRun runs five members on the bubble's clock: one client per
// via (the lite member and members 0, 1, 2 and 4) reads, writes and swaps
// three majority registers, one operation every 200 ms with a 1 s
// deadline each, for 10 s; then members 0 and 1 are cut from 2, 3, 4 and
// the lite member for hold, then healed, and the clients go on for
// settle.
func partitionRun(t *testing.T, seed int64, hold, settle time.Duration) virtualRun {
	var run virtualRun
	cpu0 := procstat.Self()
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		c := castytest.NewCluster(t, 5, castytest.Seed(seed))
		keys := []string{"p0", "p1", "p2"}
		vias := []*casty.System{c.Lite(), c.Member(0), c.Member(1), c.Member(2), c.Member(4)}
		h := castytest.NewHistory[castytest.RegisterOp[int], castytest.RegisterResult[int]]()
		hStart := time.Now()
		stop := make(chan struct{})
		var (
			healed atomic.Bool
			errMu  sync.Mutex
			errs   = map[string]int{}
		)
		var wg sync.WaitGroup
		for client, via := range vias {
			wg.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					case <-time.After(200 * time.Millisecond):
					}
					if err := registerOp(h, MajorityRegs, keys, via, client, i); err != nil && healed.Load() {
						errMu.Lock()
						msg := err.Error()
						errs[msg[:min(len(msg), 90)]]++
						errMu.Unlock()
					}
				}
			})
		}
		time.Sleep(10 * time.Second)
		// The lite member (node 5) goes with the majority: left in no
		// group it would keep its links to both sides, and the members
		// would reach each other through it (indirect probes).
		c.Partition([]int{0, 1}, []int{2, 3, 4, 5})
		time.Sleep(hold)
		views := func() (v []int) {
			for _, m := range c.Members() {
				v = append(v, len(m.Members()))
			}
			return v
		}
		t.Logf("members each member sees, %v into the partition: %v", hold, views())
		c.HealAll()
		run.healAt = time.Since(hStart)
		healed.Store(true)
		time.Sleep(settle)
		close(stop)
		wg.Wait()
		t.Logf("errors after the heal: %v", errs)
		run.views = views()
		t.Logf("members each member sees, %v after the heal: %v", settle, run.views)
		run.h, run.virtual = h, time.Since(start)
	})
	run.cpu = procstat.Self() - cpu0
	return run
}

// registerOp records client's i-th operation on one of keys through via:
// a read, a write or a swap, with a 1 s deadline.
func registerOp(h *castytest.History[castytest.RegisterOp[int], castytest.RegisterResult[int]], kind *casty.Kind[Reg], keys []string, via *casty.System, client, i int) (err error) {
	key := keys[(client+i)%len(keys)]
	ref := kind.Ref(via, key)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	switch (client + i) % 3 {
	case 0:
		_, err = h.Record(client, castytest.ReadOp[int](key), func() (castytest.RegisterResult[int], error) {
			v, err := casty.Call0(ctx, ref, (*Reg).Get)
			return castytest.Read(v), err
		})
	case 1:
		v := client*100000 + i
		_, err = h.Record(client, castytest.WriteOp(key, v), func() (castytest.RegisterResult[int], error) {
			return castytest.Written[int](), casty.Do(ctx, ref, (*Reg).Set, v)
		})
	default:
		old, v := client*100000+i-1, client*100000+i
		_, err = h.Record(client, castytest.CASOp(key, old, v), func() (castytest.RegisterResult[int], error) {
			ok, err := casty.Call(ctx, ref, (*Reg).Swap, Swap{Old: old, New: v})
			return castytest.Swapped[int](ok), err
		})
	}
	return err
}

// Five members split two against three for three times RemoveDeadAfter
// (90 s of virtual time), then healed: each side declares the other dead
// and removes it, and the register history across it all, checked once
// the bubble is gone, must be linearizable.
func TestClusterLongPartitionOnVirtualTime(t *testing.T) {
	seed := int64(1)
	if s := os.Getenv("CASTY_SYNCTEST_SEED"); s != "" {
		seed, _ = strconv.ParseInt(s, 10, 64)
	}
	removeDeadAfter := 30 * time.Second // casty's default, which TestConfig keeps
	settle := 30 * time.Second
	if s := os.Getenv("CASTY_SYNCTEST_SETTLE"); s != "" {
		settle, _ = time.ParseDuration(s)
	}
	hold := 3 * removeDeadAfter
	if s := os.Getenv("CASTY_SYNCTEST_HOLD"); s != "" {
		hold, _ = time.ParseDuration(s)
	}
	run := partitionRun(t, seed, hold, settle)
	t.Logf("definite outcomes after the heal, per client (lite, members 0, 1, 2, 4): %v", run.answered(run.healAt))
	for i, n := range run.views {
		if n != 5 {
			t.Errorf("member %d sees %d members %v after the partition healed, want 5", i, n, settle)
		}
	}
	if settle >= 20*time.Second {
		last := run.answered(run.healAt + settle - 10*time.Second)
		for client, n := range last {
			if n == 0 {
				t.Errorf("client %d had no definite outcome in the last 10 s of the %v after the heal (per client: %v)", client, settle, last)
			}
		}
	}
	res := castytest.Check(t, castytest.RegisterModel(0), run.h)
	t.Logf("seed %d: %d operations, %d indeterminate: %s (fingerprint %016x); %v virtual in %v CPU (%.0f virtual s per CPU s)",
		seed, res.Ops, res.Indeterminate, res.Verdict, run.fingerprint(), run.virtual, run.cpu.Round(time.Millisecond), run.virtual.Seconds()/run.cpu.Seconds())
}
