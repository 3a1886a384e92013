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
	// Acknowledged by a majority, the commit may still be on its way to
	// the third member: the tests start from every copy holding it.
	waitFor(t, 5*time.Second, "the slow replica holding the first commit", func() bool { return sameCopy(owner, slow, key) })
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

// A replica that missed one commit of a large actor is brought back with
// the pages it lacks, not the whole state: its need-full lists what its
// copy holds, and the owner sends the difference (replica/SPEC.md, "Owner
// rounds"). Here one commit of the 65 KB, three-field actor is lost on its
// way to a replica; until that replica holds the owner's commit again, the
// members ship a few hundred bytes per commit, where the full page set
// alone is 65 KB (shipped once before the catch-up).
func TestAReplicaThatMissedACommitGetsOnlyWhatItLacks(t *testing.T) {
	nodes := startReplicated(t, 3, casty.WithConfig(pagedConfig()))
	ctx := context.Background()
	owner, _ := ownerAndOther(t, nodes, ThreeFieldz.Name(), "lag")
	var slow *casty.System
	for _, n := range nodes {
		if n != owner {
			slow = n
		}
	}
	ref := ThreeFieldz.Ref(owner, "lag")
	if _, err := casty.Call0(ctx, ref, (*ThreeFields).Fill); err != nil {
		t.Fatalf("fill: %v", err)
	}
	if !replicasAgree(t, nodes, ThreeFieldz.Name(), "lag") {
		t.Fatal("the replicas never held the filled state")
	}
	b0, c0 := commitBytes(nodes)
	restore := casty.LoseNextCommit(slow, ThreeFieldz.Name())
	defer restore()
	calls := 0
	agree := func() bool {
		a, _ := casty.ReplicaState(owner, ThreeFieldz.Name(), "lag")
		b, ok := casty.ReplicaState(slow, ThreeFieldz.Name(), "lag")
		return ok && a == b
	}
	waitFor(t, 10*time.Second, "the replica that missed a commit holding the owner's latest", func() bool {
		calls++
		if _, err := casty.Call0(ctx, ref, (*ThreeFields).Bump); err != nil {
			t.Fatal(err)
		}
		return calls > 1 && agree()
	})
	waitFor(t, 10*time.Second, "the owner to count its commits", func() bool {
		_, c := commitBytes(nodes)
		return c-c0 >= int64(calls)
	})
	b1, _ := commitBytes(nodes)
	t.Logf("caught up after %d commits, %d B of commits shipped", calls, b1-b0)
	if shipped := b1 - b0; shipped > 32<<10 {
		t.Fatalf("%d B of commits shipped while a replica caught up, want the pages it lacked, not the 65 KB state", shipped)
	}
}
