package casty_test

import (
	"context"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
)

// lagCluster starts three replicated members and writes once to a key of
// Tabs the first owns; it returns the owner, the third member (the one the
// tests slow down), the key and a Ref to it through its owner.
func lagCluster(t *testing.T) (owner, slow *casty.System, key string, ref casty.Ref[Tab]) {
	t.Helper()
	nodes := startReplicated(t, 3)
	owner, slow = nodes[0], nodes[2]
	key = earlyKey(t, owner, owner)
	ref = Tabs.Ref(owner, key)
	if _, err := casty.Call(context.Background(), ref, (*Tab).Add, 1); err != nil {
		t.Fatal(err)
	}
	return owner, slow, key, ref
}

// sameCopy reports whether b's replica holds the commit a's holds of key.
func sameCopy(a, b *casty.System, key string) bool {
	want, _ := casty.ReplicaState(a, Tabs.Name(), key)
	got, ok := casty.ReplicaState(b, Tabs.Name(), key)
	return ok && got == want
}

// A replica whose refusal of a commit reaches the owner only after the
// round ended (the owner and the other replica made the quorum without
// it) gets the full page set with the next commit. Here the slow replica
// lost its copy and answers every request 50 ms late, and it holds the
// owner's latest commit again within a few calls. Before, it refused
// every later delta, each refusal late, and stayed behind until an
// anti-entropy pass (RepairInterval, 30 s) came by.
func TestAReplicaThatRefusedLateIsCaughtUp(t *testing.T) {
	owner, slow, key, ref := lagCluster(t)
	ctx := context.Background()
	casty.DropCopy(slow, Tabs.Name(), key)
	restore := casty.SlowReplicationReplies(slow, 50*time.Millisecond)
	defer restore()

	// The slow replica applies what it is sent at once, so it is caught
	// up once a call made after its late refusal arrived carried the full
	// page set; each check makes one more call.
	calls := 0
	waitFor(t, 5*time.Second, "the slow replica holding the owner's latest commit", func() bool {
		calls++
		if _, err := casty.Call(ctx, ref, (*Tab).Add, 1); err != nil {
			t.Fatal(err)
		}
		return sameCopy(owner, slow, key)
	})
	t.Logf("caught up after %d calls", calls)
}

// A replica that receives a key's next commit before the one it was built
// on (requests of one connection run concurrently, so on a hot key the
// later can overtake the earlier) waits for the earlier one and applies
// both, instead of refusing the later as need-full, which costs its owner
// a full page set. Here the slow replica holds one commit until the next
// has arrived and 50 ms more.
func TestACommitThatOvertookItsBasisWaitsForIt(t *testing.T) {
	owner, slow, key, ref := lagCluster(t)
	ctx := context.Background()
	restore := casty.HoldCommitUntilTheNext(slow, Tabs.Name(), 50*time.Millisecond, 10*time.Second)
	defer restore()
	before := slow.Replication().MissedBasis
	for range 2 { // the owner and the third replica make each quorum
		if _, err := casty.Call(ctx, ref, (*Tab).Add, 1); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 5*time.Second, "the slow replica holding the owner's latest commit", func() bool {
		return sameCopy(owner, slow, key)
	})
	if got := slow.Replication().MissedBasis - before; got != 0 {
		t.Fatalf("the slow replica refused %d commit(s) for lack of their basis, want 0", got)
	}
}
