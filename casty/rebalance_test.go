package casty_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
)

// TestRebalanceOnJoinAndLeave: keys of a Replicas(3), Write(Majority)
// kind written on four members keep their state when a fifth joins (it
// syncs its share before it votes) and when a member then closes (it hands
// its ranges off). It logs the time to R copies after the join and the
// time of the graceful Close; CASTY_FIGURES=1 runs it with 10,000 keys (the
// figure in BENCHMARKS.md: go test -run TestRebalanceOnJoinAndLeave
// -count 1 -v ./casty/ with CASTY_FIGURES=1, without -race), 500 otherwise.
func TestRebalanceOnJoinAndLeave(t *testing.T) {
	parallel(t)
	keys := 500
	if os.Getenv("CASTY_FIGURES") != "" {
		keys = 10000
	}
	nodes := startReplicated(t, 4)
	ctx := context.Background()
	// Write every key once, 32 callers at a time.
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < keys; i = int(next.Add(1)) - 1 {
				k := fmt.Sprintf("r%d", i)
				if _, err := casty.Call(ctx, Ledgers.Ref(nodes[i%4], k), (*Ledger).Add, i); err != nil {
					errs <- fmt.Errorf("writing %s: %w", k, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	start := time.Now()
	joiner := startNode(t, []string{nodes[0].Addr()}, casty.WithConfig(replicationConfig()))
	all := append(nodes, joiner)
	waitFor(t, 120*time.Second, "every member synced after the join", func() bool {
		for _, s := range all {
			if !casty.Settled(s, 5) {
				return false
			}
		}
		return true
	})
	joined := time.Since(start)
	held := joiner.Replication().Keys

	leaver := nodes[1]
	leaverKeys := leaver.Replication().Keys
	servedBefore := leaver.Replication().ServedSyncBytes
	start = time.Now()
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := leaver.Close(cctx); err != nil {
		t.Fatalf("close: %v", err)
	}
	left := time.Since(start)
	handedOff := leaver.Replication().ServedSyncBytes - servedBefore
	t.Logf("%d keys, Replicas(3): join synced in %v (the joiner took %d keys, pulling %d bytes); graceful Close of a member holding %d keys took %v, its handoff sent %d bytes",
		keys, joined.Round(time.Millisecond), held, joiner.Replication().SyncBytes, leaverKeys, left.Round(time.Millisecond), handedOff)
	if handedOff == 0 {
		t.Error("the leaver's handoff sent no bytes (ServedSyncBytes did not move)")
	}
	if held == 0 {
		t.Fatal("the joiner took no keys")
	}

	// Every key still reads what was written, through the joiner.
	for i := range keys {
		k := fmt.Sprintf("r%d", i)
		got := callUntil(t, 10*time.Second, "reading "+k, func(ctx context.Context) (int, error) {
			return casty.Call0(ctx, Ledgers.Ref(joiner, k), (*Ledger).Get)
		})
		if got != i {
			t.Fatalf("%s = %d after the join and the leave, want %d", k, got, i)
		}
	}
}
