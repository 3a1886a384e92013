package casty_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/casty/castytest"
)

// A 2|3 partition of five members, bridged by a lite member that keeps
// its links to both sides (as a client outside the partitioned network
// does): the cut members hear their suspicion through it and refute, and
// it relays their refutations to the majority. Liveness is proven by
// members, not heard (gossip/SPEC.md): the majority declares both cut
// members DEAD within SuspicionTimeout + 2 s (asserted with slack), and
// from then on (RemoveDeadAfter at the latest) it serves a Replicas(3)
// key owned by a cut member, whose two other replicas it holds, through
// each of its members — and through the lite member too: it still reaches
// the cut owner, which cannot activate the key without a read quorum and
// refuses it as nothing ran, so the lite member takes the call to the
// key's next replica (route.go), where the majority serves it.
func TestABridgingLiteMemberDoesNotKeepACutSideAlive(t *testing.T) {
	parallel(t)
	cfg := castytest.TestConfig()
	cfg.Replication.RemoveDeadAfter = 5 * time.Second
	c := castytest.NewCluster(t, 5, castytest.MemberOptions(casty.WithConfig(cfg)))
	lite := c.Lite()
	ctx := context.Background()
	cut := []string{c.Addr(0), c.Addr(1)}
	key := ""
	// A key a cut member owns, with its two other replicas on the
	// majority side: with two replicas cut, the majority could not serve
	// it without them (it waits for their copies: replica/SPEC.md,
	// "Placement by agreement").
	for i := 0; key == ""; i++ {
		k := fmt.Sprintf("bridged-%d", i)
		p, ok := c.Member(2).Placement(Ledgers.Name(), k, 0)
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
	if n, err := casty.Call(ctx, Ledgers.Ref(c.Member(2), key), (*Ledger).Add, 1); err != nil || n != 1 {
		t.Fatalf("add before the partition: %d, %v", n, err)
	}
	majority := []int{2, 3, 4}
	events := make([]<-chan string, len(majority))
	for i, m := range majority {
		ch, stop := casty.MemberEvents(c.Member(m))
		t.Cleanup(stop)
		events[i] = ch
	}
	c.Partition([]int{0, 1}, majority) // the lite member keeps its links to both sides
	dead := make([]map[string]bool, len(majority))
	for i := range dead {
		dead[i] = map[string]bool{}
	}
	within := cfg.Membership.SuspicionTimeout + 2*time.Second + 3*time.Second // slack for a loaded machine
	waitFor(t, within, "every majority member to declare both cut members dead", func() bool {
		all := true
		for i, ch := range events {
			for more := true; more; {
				select {
				case ev := <-ch:
					for _, a := range cut {
						if ev == "dead "+a {
							dead[i][a] = true
						}
					}
				default:
					more = false
				}
			}
			all = all && len(dead[i]) == len(cut)
		}
		return all
	})
	// RemoveDeadAfter on, the majority has taken the cut member's keys
	// over; generous deadline: the clock runs from each member's DEAD
	waitFor(t, cfg.Replication.RemoveDeadAfter+20*time.Second, "the cut member's key served through a majority member", func() bool {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err := casty.Call(cctx, Ledgers.Ref(c.Member(3), key), (*Ledger).Add, 1)
		return err == nil
	})
	for _, via := range []*casty.System{c.Member(2), c.Member(3), c.Member(4), lite} {
		cctx, cancel := context.WithTimeout(ctx, 3*cfg.Replication.Timeout)
		_, err := casty.Call(cctx, Ledgers.Ref(via, key), (*Ledger).Add, 1)
		cancel()
		if err != nil {
			t.Fatalf("an add through %s after the failover: %v", via.Addr(), err)
		}
	}
}

// A member whose only path to the others is the lite member is
// unreachable: the others declare it dead within SuspicionTimeout + 2 s
// (asserted with slack), though it hears its suspicion through the lite
// member and refutes. Once its links heal it refutes again and rejoins:
// every member lists all five.
func TestAMemberReachableOnlyThroughALiteMemberIsDeadUntilItsLinksHeal(t *testing.T) {
	parallel(t)
	c := castytest.NewCluster(t, 5)
	c.Lite()
	others := []int{0, 1, 2, 3}
	events := make([]<-chan string, len(others))
	for i, m := range others {
		ch, stop := casty.MemberEvents(c.Member(m))
		t.Cleanup(stop)
		events[i] = ch
	}
	c.Partition([]int{4}, others)
	seen := make([]bool, len(others))
	within := castytest.TestConfig().Membership.SuspicionTimeout + 2*time.Second + 3*time.Second
	waitFor(t, within, "every other member to declare the cut-off member dead", func() bool {
		all := true
		for i, ch := range events {
			for more := true; more; {
				select {
				case ev := <-ch:
					seen[i] = seen[i] || ev == "dead "+c.Addr(4)
				default:
					more = false
				}
			}
			all = all && seen[i]
		}
		return all
	})
	c.HealAll()
	waitFor(t, 30*time.Second, "the cut-off member to rejoin: every member lists all five", func() bool {
		for _, m := range c.Members() {
			if len(m.Members()) != 5 {
				return false
			}
		}
		return true
	})
}

// A Replicas(3), Read(Majority) key two of whose three replicas crashed
// (not yet removed): its owner cannot activate it for want of a read
// quorum, and the call fails with ErrNoReadQuorum — definite, the handler
// did not run; it also matches ErrQuorumUnavailable — the same through
// the owner itself and through a lite member, whose call the owner
// refuses and which finds no other replica up.
func TestAnActivationWithoutAReadQuorumFailsAsNotRun(t *testing.T) {
	cfg := castytest.TestConfig()
	cfg.Replication.RemoveDeadAfter = time.Hour
	c := castytest.NewCluster(t, 3, castytest.MemberOptions(casty.WithConfig(cfg)))
	lite := c.Lite()
	c.Crash(1)
	c.Crash(2)
	waitFor(t, 20*time.Second, "member 0 and the lite member to see only member 0", func() bool {
		return len(c.Member(0).Members()) == 1 && len(lite.Members()) == 1
	})
	for i, via := range []*casty.System{c.Member(0), lite} {
		ctx, cancel := context.WithTimeout(context.Background(), 3*cfg.Replication.Timeout)
		_, err := casty.Call(ctx, Ledgers.Ref(via, fmt.Sprint("no-quorum-", i)), (*Ledger).Add, 1)
		cancel()
		if !errors.Is(err, casty.ErrNoReadQuorum) || !errors.Is(err, casty.ErrQuorumUnavailable) {
			t.Errorf("a call through %s: %v, want ErrNoReadQuorum (and ErrQuorumUnavailable)", via.Addr(), err)
		}
	}
}
