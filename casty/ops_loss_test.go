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

// The operator's placement requests (PlacementStatus, AcceptLossVia)
// need the operator role: a lite client with the client credential is
// refused with ErrForbidden; an operator reads every member's report and
// is refused, with ErrNotRemoved, the loss of a member still placed.
func TestPlacementRequestsNeedTheOperatorRole(t *testing.T) {
	parallel(t)
	nodes := startCluster(t, 2, secured()...)
	waitFor(t, 10*time.Second, "both members placed", func() bool {
		return casty.Settled(nodes[0], 2) && casty.Settled(nodes[1], 2)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client, err := connectLite(t, nodes[0].Addr(), casty.WithClientSecret(testClientSecret))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the client sees both members", func() bool { return len(client.Members()) == 2 })
	if _, err := client.AcceptLossVia(ctx, nodes[1].ID()); !errors.Is(err, casty.ErrForbidden) {
		t.Fatalf("client AcceptLossVia: %v, want ErrForbidden", err)
	}
	if _, err := client.PlacementStatus(ctx); !errors.Is(err, casty.ErrForbidden) {
		t.Fatalf("client PlacementStatus: %v, want ErrForbidden", err)
	}

	op, err := connectLite(t, nodes[0].Addr(), casty.WithOperatorSecret(testOperatorSecret))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the operator sees both members", func() bool { return len(op.Members()) == 2 })
	rows, err := op.PlacementStatus(ctx)
	if err != nil || len(rows) != 2 {
		t.Fatalf("operator PlacementStatus: %+v, %v", rows, err)
	}
	for _, r := range rows {
		if r.Err != "" || r.Version == 0 || r.Placed != 2 || len(r.Waiting) != 0 {
			t.Errorf("report %+v: want placement version > 0 of 2 members, nothing waiting", r)
		}
	}
	via, err := op.AcceptLossVia(ctx, nodes[1].ID())
	if !errors.Is(err, casty.ErrNotRemoved) || via.ID == "" {
		t.Fatalf("operator AcceptLossVia of a placed member: %v (via %+v), want ErrNotRemoved from a member", err, via)
	}
	if _, err := op.AcceptLossVia(ctx, "not-an-id"); err == nil || errors.Is(err, casty.ErrNotRemoved) {
		t.Fatalf("AcceptLossVia of a malformed id: %v", err)
	}
}

// Two of a Replicas(3) key's three holders crash and are removed as dead:
// the one copy left may lack writes only they acknowledged, so the
// range's sync waits for them and no owner serves the key; every report
// names them (PlacementStatus). An operator on a lite member gives their
// copies up through a full member (AcceptLossVia): the key is served
// again and nothing waits.
func TestAcceptLossViaALiteMemberUnblocksWaitingSyncs(t *testing.T) {
	parallel(t)
	cfg := castytest.TestConfig()
	cfg.Replication.RemoveDeadAfter = 2 * time.Second
	c := castytest.NewCluster(t, 5, castytest.MemberOptions(casty.WithConfig(cfg)))
	lite := c.Lite()
	ctx := context.Background()
	key := "lost-0"
	p, ok := c.Member(0).Placement(Ledgers.Name(), key, 3)
	if !ok || len(p.Replicas) != 3 {
		t.Fatalf("placement %+v", p)
	}
	if _, err := casty.Call(ctx, Ledgers.Ref(lite, key), (*Ledger).Add, 1); err != nil {
		t.Fatal(err)
	}
	var crashed []string
	for i := range c.N() {
		if len(crashed) < 2 && slices.ContainsFunc(p.Replicas, func(m casty.Member) bool { return m.Addr == c.Addr(i) }) {
			crashed = append(crashed, c.Member(i).ID())
			c.Crash(i)
		}
	}
	slices.Sort(crashed)
	waiting := func() bool {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		rows, err := lite.PlacementStatus(rctx)
		if err != nil {
			return false
		}
		for _, r := range rows {
			for _, w := range r.Waiting {
				if w.Kind == Ledgers.Name() && slices.Equal(slices.Sorted(slices.Values(w.Members)), crashed) {
					return true
				}
			}
		}
		return false
	}
	waitFor(t, cfg.Replication.RemoveDeadAfter+20*time.Second, fmt.Sprintf("a member's sync of %s waiting for %v", Ledgers.Name(), crashed), waiting)
	cctx, cancel := context.WithTimeout(ctx, time.Second)
	_, err := casty.Call(cctx, Ledgers.Ref(lite, key), (*Ledger).Add, 1)
	cancel()
	if err == nil {
		t.Fatal("the key is served while its range waits for two of its three holders")
	}
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	via, err := lite.AcceptLossVia(actx, crashed...)
	if err != nil {
		t.Fatalf("AcceptLossVia(%v): %v", crashed, err)
	}
	t.Logf("accepted the loss of %v through %s", crashed, via.Addr)
	waitFor(t, 20*time.Second, "the key served again", func() bool {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err := casty.Call(cctx, Ledgers.Ref(lite, key), (*Ledger).Add, 1)
		return err == nil
	})
	waitFor(t, 20*time.Second, "no member waiting, the loss recorded", func() bool {
		rows, err := lite.PlacementStatus(ctx)
		if err != nil {
			return false
		}
		for _, r := range rows {
			if r.Err != "" || len(r.Waiting) != 0 || r.LostMembers != 2 {
				return false
			}
		}
		return len(rows) == 3
	})
}
