package casty_test

import (
	"context"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/casty/castytest"
)

// castytest's Skew reaches the replication clock: a member an hour ahead
// stamps its commits an hour ahead, and after it crashes the member that
// takes its keys over stamps later still (the HLC observed the stamps).
func TestCastytestSkewStampsCommits(t *testing.T) {
	cfg := castytest.TestConfig()
	cfg.Replication.MaxClockDrift = 2 * time.Hour // the skew is within the bound
	c := castytest.NewCluster(t, 3, castytest.MemberOptions(casty.WithConfig(cfg)))
	const key = "skewed"
	m, _ := c.Member(0).OwnerOf(Ledgers.Name(), key)
	owner := 0
	for i := range c.N() {
		if c.Addr(i) == m.Addr {
			owner = i
		}
	}
	c.Skew(owner, time.Hour)
	ctx := context.Background()
	if _, err := casty.Call(ctx, Ledgers.Ref(c.Member(owner), key), (*Ledger).Add, 1); err != nil {
		t.Fatal(err)
	}
	wall, ok := casty.ReplicaWall(c.Member(owner), Ledgers.Name(), key)
	if ahead := time.Duration(wall-time.Now().UnixMilli()) * time.Millisecond; !ok || ahead < 59*time.Minute {
		t.Fatalf("the skewed owner's commit is stamped %v ahead of the wall clock (%v), want about an hour", ahead, ok)
	}
	c.Crash(owner)
	via := c.Member((owner + 1) % c.N())
	waitFor(t, 20*time.Second, "an add after the skewed owner's crash", func() bool {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err := casty.Call(cctx, Ledgers.Ref(via, key), (*Ledger).Add, 1)
		return err == nil
	})
	nm, _ := via.OwnerOf(Ledgers.Name(), key)
	for i := range c.N() {
		if c.Addr(i) != nm.Addr {
			continue
		}
		if later, ok := casty.ReplicaWall(c.Member(i), Ledgers.Name(), key); !ok || later < wall {
			t.Fatalf("the new owner stamped its commit at %d, before the skewed one at %d (%v)", later, wall, ok)
		}
	}
}

// castytest.SkewedClock skews a member started over real TCP (how a
// castychaos member process runs): commits it stamps lead or lag the wall
// clock by the skew, and the TCP network stays the default.
func TestCastytestSkewedClockOverTCP(t *testing.T) {
	nodes := startReplicated(t, 3, castytest.SkewedClock(-time.Hour))
	const key = "skewed-tcp"
	callUntil(t, 10*time.Second, "an add", func(ctx context.Context) (int, error) {
		return casty.Call(ctx, Ledgers.Ref(nodes[0], key), (*Ledger).Add, 1)
	})
	held := 0
	for _, n := range nodes {
		// A replica the commit has not reached yet (the write quorum is
		// two of three) may hold only the record its activation's
		// prepare made, stamped zero.
		wall, ok := casty.ReplicaWall(n, Ledgers.Name(), key)
		if !ok || wall == 0 {
			continue
		}
		held++
		if behind := time.Duration(time.Now().UnixMilli()-wall) * time.Millisecond; behind < 59*time.Minute || behind > 61*time.Minute {
			t.Errorf("%s holds the commit stamped %v behind the wall clock, want about an hour", n.Addr(), behind)
		}
	}
	if held < 2 {
		t.Fatalf("%d members hold the commit, want a majority of 3", held)
	}
}

// A member whose clock runs further ahead than Config.Replication.MaxClockDrift cannot
// replicate: the others refuse its requests, so its commits fail and it
// does not drag their clocks (and every age measured by them) forward.
// Before the bound was enforced its commit succeeded, stamped an hour
// ahead, and the members that held it ran their clocks an hour fast.
func TestAClockBeyondMaxClockDriftIsRefused(t *testing.T) {
	c := castytest.NewCluster(t, 3)
	const key = "drifting"
	m, _ := c.Member(0).OwnerOf(Ledgers.Name(), key)
	owner := -1
	for i := range c.N() {
		if c.Addr(i) == m.Addr {
			owner = i
		}
	}
	ctx := context.Background()
	if _, err := casty.Call(ctx, Ledgers.Ref(c.Member(owner), key), (*Ledger).Add, 1); err != nil {
		t.Fatal(err)
	}
	c.Skew(owner, time.Hour)
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	// Ledgers' writes need every replica's acknowledgement... or a
	// majority: either way the others refuse, so the commit fails.
	if _, err := casty.Call(cctx, Ledgers.Ref(c.Member(owner), key), (*Ledger).Add, 1); err == nil {
		t.Fatal("a commit stamped an hour ahead was acknowledged")
	}
	for i := range c.N() {
		if i == owner {
			continue
		}
		if wall, ok := casty.ReplicaWall(c.Member(i), Ledgers.Name(), key); ok && time.Duration(wall-time.Now().UnixMilli())*time.Millisecond > time.Minute {
			t.Fatalf("member %d holds a copy stamped %v ahead", i, time.Duration(wall-time.Now().UnixMilli())*time.Millisecond)
		}
	}
}
