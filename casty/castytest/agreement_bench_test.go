package castytest_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/casty/castytest"
)

// BenchmarkPlacementAgreement measures what agreeing on the placement
// costs (replica/SPEC.md, "Placement by agreement"), on the in-process
// network and the real clock, at 5 and 50 members. Each iteration:
//   - join: a member restarts as a new process at its address; from its
//     Start to every member placing it (gossip's join, the agreed step
//     replacing the old identity, the push);
//   - leave: a member closes gracefully; from Close to every other member
//     placing it no more;
//   - remove: a member crashes; from RemoveDeadAfter after the crash to
//     every member placing it no more (detection, suspicion and the
//     majority's support included).
//
// The floor is the cross-node call p50 in the same cluster: one round
// trip, of which an agreed step needs two (prepare, accept) plus the push.
//
//	go test -run '^$' -bench BenchmarkPlacementAgreement -benchtime 5x ./casty/castytest
func BenchmarkPlacementAgreement(b *testing.B) {
	for _, n := range []int{5, 50} {
		b.Run(fmt.Sprintf("members=%d", n), func(b *testing.B) {
			cfg := castytest.TestConfig()
			cfg.Replication.RemoveDeadAfter = 2 * time.Second
			if n > 5 {
				// Fifty members in one process keep 2,450 connections
				// alive: with TestConfig's one-second failure detector a
				// loaded machine starves their keepalives, members are
				// suspected and declared dead in waves, and the cluster
				// never settles. They run the default detector (keepalive
				// every second, 3 s timeout, 5 s suspicion) and remove
				// after 5 s; the removal figure counts from then. They
				// also take longer than StartTimeout to start.
				cfg.Transport.KeepAliveInterval, cfg.Transport.KeepAliveTimeout = time.Second, 3*time.Second
				cfg.Membership.SuspicionTimeout = 5 * time.Second
				cfg.Replication.RemoveDeadAfter = 5 * time.Second
			}
			c := castytest.NewCluster(b, n, castytest.MemberOptions(casty.WithConfig(cfg)), castytest.StartWithin(3*time.Minute))
			ctx := context.Background()
			// The floor: calls from member 0 to a key another member owns.
			key := ""
			for i := 0; key == ""; i++ {
				if m, ok := c.Member(0).OwnerOf(Tallies.Name(), fmt.Sprint("floor", i)); ok && m.Addr != c.Addr(0) {
					key = fmt.Sprint("floor", i)
				}
			}
			floor := make([]time.Duration, 0, 200)
			for range 200 {
				start := time.Now()
				if _, err := casty.Call(ctx, Tallies.Ref(c.Member(0), key), (*Tally).Add, 1); err != nil {
					b.Fatal(err)
				}
				floor = append(floor, time.Since(start))
			}
			placedEverywhere := func(id string, want bool, skip int) bool {
				for i, m := range c.Members() {
					if i == skip {
						continue
					}
					p, ok := m.Placement(MajorityRegs.Name(), "x", n)
					if !ok {
						return false
					}
					has := slices.ContainsFunc(p.Replicas, func(r casty.Member) bool { return r.ID == id })
					if has != want {
						return false
					}
				}
				return true
			}
			// await polls cond until it holds: the time it took is the
			// figure, so the poll is fine-grained; a change that never
			// lands fails the benchmark after a minute.
			await := func(what string, cond func() bool) {
				deadline := time.Now().Add(time.Minute)
				for !cond() {
					if time.Now().After(deadline) {
						b.Fatalf("%s: not within a minute", what)
					}
					time.Sleep(time.Millisecond)
				}
			}
			var joins, leaves, removes []time.Duration
			for it := 0; it < b.N; it++ {
				victim := 1 + it%(n-1)
				// join: the victim restarts as a new identity.
				start := time.Now()
				sys := c.Restart(victim)
				await("the restarted member placed", func() bool { return placedEverywhere(sys.ID(), true, -1) })
				joins = append(joins, time.Since(start))
				// leave: it closes gracefully.
				id := sys.ID()
				start = time.Now()
				done := make(chan struct{})
				go func() { _ = sys.Close(ctx); close(done) }()
				await("the leaver out", func() bool { return placedEverywhere(id, false, victim) })
				leaves = append(leaves, time.Since(start))
				<-done
				// remove: a new one starts, then crashes.
				sys = c.Restart(victim)
				await("the restarted member placed", func() bool { return placedEverywhere(sys.ID(), true, -1) })
				id = sys.ID()
				c.Crash(victim)
				start = time.Now()
				await("the crashed member removed", func() bool { return placedEverywhere(id, false, victim) })
				removes = append(removes, time.Since(start)-cfg.Replication.RemoveDeadAfter)
				c.Restart(victim)
			}
			report := func(what string, ds []time.Duration) {
				slices.Sort(ds)
				b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1e3, what+"-p50-ms")
				b.ReportMetric(float64(ds[(len(ds)*99)/100].Microseconds())/1e3, what+"-p99-ms")
			}
			report("floor-call", floor)
			report("join", joins)
			report("leave", leaves)
			report("remove-after-delay", removes)
		})
	}
}
