package casty_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
)

// TestFailoverAfterOwnerCrash measures how long a key of a Replicas(3),
// Write(Majority) kind is unavailable when its owner's process dies and
// its host lives (casty.Crash: no goodbye, connections reset at once, as
// the kernel does for a killed process), under the default Config: the
// time from the crash to the first successful write through another
// member, which must carry on from the last acknowledged state. It runs 3
// trials by default and 50 with CASTY_FIGURES=1 (the figure in
// BENCHMARKS.md: go test -timeout 30m -run TestFailoverAfterOwnerCrash
// -count 1 -v ./casty/ with CASTY_FIGURES=1, without -race).
func TestFailoverAfterOwnerCrash(t *testing.T) {
	parallel(t)
	trials := 3
	if os.Getenv("CASTY_FIGURES") != "" {
		trials = 50
	}
	cfg := casty.Config{Replication: casty.ReplicationConfig{RemoveDeadAfter: time.Hour}}
	var took []time.Duration
	for trial := range trials {
		took = append(took, failoverTrial(t, cfg, fmt.Sprintf("f%d", trial)))
	}
	slices.Sort(took)
	pct := func(p float64) time.Duration { return took[min(len(took)-1, int(p*float64(len(took))))] }
	t.Logf("failover after the owner's crash, %d trials: p50 %v, p99 %v, max %v (suspicion timeout %v)",
		len(took), pct(0.50).Round(time.Millisecond), pct(0.99).Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond), casty.DefaultConfig().Membership.SuspicionTimeout)
	// The process died and its host lives: the reset connection is the
	// signal, so no trial may wait for the suspicion timeout to run out.
	if limit := casty.DefaultConfig().Membership.SuspicionTimeout; pct(0.50) >= limit {
		t.Fatalf("median failover %v: not faster than the suspicion timeout %v", pct(0.50), limit)
	}
}

// failoverTrial starts three members, writes to key through a member that
// does not own it, crashes the owner and returns the time until a write
// through the same member succeeds again.
func failoverTrial(t *testing.T, cfg casty.Config, key string) time.Duration {
	t.Helper()
	nodes := startCluster(t, 3, casty.WithConfig(cfg))
	waitFor(t, 30*time.Second, "every member synced", func() bool {
		for _, s := range nodes {
			if !casty.Settled(s, 3) {
				return false
			}
		}
		return true
	})
	owner, via := ownerAndOther(t, nodes, Ledgers.Name(), key)
	ctx := context.Background()
	for i := 1; i <= 3; i++ {
		if n, err := casty.Call(ctx, Ledgers.Ref(via, key), (*Ledger).Add, 1); err != nil || n != i {
			t.Fatalf("add #%d: %d, %v", i, n, err)
		}
	}
	casty.Crash(owner)
	start := time.Now()
	for failed := 0; ; failed++ {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		n, err := casty.Call(cctx, Ledgers.Ref(via, key), (*Ledger).Add, 1)
		cancel()
		if err == nil {
			// A failed attempt may have been applied (a timeout is
			// indeterminate), never an acknowledged one lost.
			if n < 4 || n > 4+failed {
				t.Fatalf("after the failover %s = %d, want 4 (3 acknowledged adds + 1) plus at most %d failed attempts", key, n, failed)
			}
			took := time.Since(start)
			discard(nodes)
			return took
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("%s still unavailable 30 s after its owner crashed: %v", key, err)
		}
		time.Sleep(5 * time.Millisecond) // between attempts; the clock runs from the crash
	}
}
