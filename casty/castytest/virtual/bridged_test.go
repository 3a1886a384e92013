package virtual_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/casty/castytest"
	"github.com/casty-go/casty/internal/wait"
)

// A 2|3 partition bridged by a lite member, with casty's default
// configuration (KeepAliveTimeout 3 s, SuspicionTimeout 5 s,
// RemoveDeadAfter 30 s), on virtual time: a
// Replicas(3), Write(Majority), Read(Majority) key owned by a cut member,
// whose two other replicas are on the majority side, is served again
// through a majority member and through the bridging lite member — which
// still reaches the cut owner, whose activation finds no read quorum and
// refuses, so the lite member takes the call to the next replica —
// within SuspicionTimeout + 2 s plus what a call's own retries take (two
// Replication.Timeouts), on the virtual clock. With CASTY_FIGURES=1 it
// logs, per seed, when each side served the key first
// (BENCHMARKS.md, "Failure detection").
//
// Two kinds of cut: one that rejects (connections reset, dials refused:
// the members suspect each other at once) and one that goes silent (every
// byte across it held: keepalives and probes time out).
func TestABridgedPartitionsKeysAreServedByTheMajority(t *testing.T) {
	for _, silent := range []bool{false, true} {
		for seed := int64(1); seed <= 5; seed++ {
			name := fmt.Sprint("rejecting-seed-", seed)
			if silent {
				name = fmt.Sprint("silent-seed-", seed)
			}
			t.Run(name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) { bridgedTrial(t, seed, silent) })
			})
		}
	}
}

func bridgedTrial(t *testing.T, seed int64, silent bool) {
	cfg := casty.DefaultConfig()
	c := castytest.NewCluster(t, 5, castytest.Seed(seed), castytest.MemberOptions(casty.WithConfig(cfg)))
	lite := c.Lite() // before any goroutine of the test's: Lite waits under the cluster's lock
	ctx := context.Background()
	cut := []string{c.Addr(0), c.Addr(1)}
	key := ""
	for i := 0; key == ""; i++ {
		k := fmt.Sprintf("bridged-%d", i)
		p, ok := c.Member(2).Placement(MajorityRegs.Name(), k, 0)
		if !ok || !slices.Contains(cut, p.Owner.Addr) {
			continue
		}
		inCut := 0
		for _, r := range p.Replicas {
			if slices.Contains(cut, r.Addr) {
				inCut++
			}
		}
		if inCut == 1 {
			key = k
		}
	}
	if err := casty.Do(ctx, MajorityRegs.Ref(c.Member(2), key), (*Reg).Set, 1); err != nil {
		t.Fatalf("a write before the partition: %v", err)
	}
	// The lite member keeps its links to both sides.
	if silent {
		for _, i := range []int{0, 1} {
			for _, j := range []int{2, 3, 4} {
				c.CutOneWay(i, j)
				c.CutOneWay(j, i)
			}
		}
	} else {
		c.Partition([]int{0, 1}, []int{2, 3, 4})
	}
	start := time.Now()
	bound := cfg.Membership.SuspicionTimeout + 2*time.Second + 2*cfg.Replication.Timeout
	served := func(via *casty.System) time.Duration {
		t.Helper()
		for v := 2; ; v++ {
			cctx, cancel := context.WithTimeout(ctx, time.Second)
			err := casty.Do(cctx, MajorityRegs.Ref(via, key), (*Reg).Set, v)
			cancel()
			if err == nil {
				return time.Since(start)
			}
			if time.Since(start) > 2*bound {
				t.Fatalf("the cut owner's key not served through %s within %v: %v", via.Addr(), 2*bound, err)
			}
			time.Sleep(100 * time.Millisecond) // the virtual clock's pace between tries
		}
	}
	byMember := served(c.Member(3))
	byLite := served(lite)
	if os.Getenv("CASTY_FIGURES") != "" {
		t.Logf("silent %v, seed %d: served through a majority member after %v, through the bridging lite member after %v (virtual)", silent, seed, byMember, byLite)
	}
	if byMember > bound || byLite > bound {
		t.Fatalf("the cut owner's key served after %v through a majority member, %v through the lite member: want both within %v", byMember, byLite, bound)
	}
	// The cut members' suspicions of the majority reach it through the
	// lite member (a suspicion is adopted from anyone, and refuted by its
	// subject at once): a read may meet one in flight, so it tries again.
	wait.For(t, bound, "a majority read of the last write after the failover", func() bool {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		v, err := casty.Call0(cctx, MajorityRegs.Ref(c.Member(4), key), (*Reg).Get)
		return err == nil && v >= 2
	})
}
