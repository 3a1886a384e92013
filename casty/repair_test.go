package casty_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
)

// TestAntiEntropyRestoresAMissedCopy: a replica that lost its copy of an
// actor (it missed its commits) gets it back from the other replicas
// within a few Config.Replication.RepairInterval, with no call to the actor.
func TestAntiEntropyRestoresAMissedCopy(t *testing.T) {
	cfg := replicationConfig()
	cfg.Replication.RepairInterval = 200 * time.Millisecond
	nodes := startReplicated(t, 3, casty.WithConfig(cfg))
	ctx := context.Background()
	const key = "repair-me"
	for range 5 {
		if _, err := casty.Call(ctx, Ledgers.Ref(nodes[0], key), (*Ledger).Add, 1); err != nil {
			t.Fatal(err)
		}
	}
	want := map[*casty.System]string{}
	waitFor(t, 10*time.Second, "three copies of the last commit", func() bool {
		first, _ := casty.ReplicaState(nodes[0], Ledgers.Name(), key)
		for _, n := range nodes {
			st, ok := casty.ReplicaState(n, Ledgers.Name(), key)
			if !ok || st != first {
				return false
			}
			want[n] = st
		}
		return true
	})
	victim := nodes[2]
	before := victim.Replication().Repaired
	casty.DropCopy(victim, Ledgers.Name(), key)
	if _, ok := casty.ReplicaState(victim, Ledgers.Name(), key); ok {
		t.Fatal("the copy is still there")
	}
	waitFor(t, 10*time.Second, "anti-entropy to restore the copy", func() bool {
		st, ok := casty.ReplicaState(victim, Ledgers.Name(), key)
		return ok && st == want[victim] && victim.Replication().Repaired > before
	})
}

// TestDeletedStateTombstonesExpire: a deleted actor's empty copies are
// dropped from every replica after Config.Replication.StateTombstoneTTL, once all
// replicas hold them; live actors' copies stay; the deleted actor starts
// from zero on its next call.
func TestDeletedStateTombstonesExpire(t *testing.T) {
	parallel(t)
	cfg := replicationConfig()
	cfg.Replication.RepairInterval = 100 * time.Millisecond
	cfg.Replication.StateTombstoneTTL = 300 * time.Millisecond
	nodes := startReplicated(t, 3, casty.WithConfig(cfg))
	ctx := context.Background()
	for _, k := range []string{"gone", "kept"} {
		if _, err := casty.Call(ctx, Forgettables.Ref(nodes[0], k), (*Forgettable).Add, 7); err != nil {
			t.Fatal(err)
		}
	}
	if ok, err := casty.Call0(ctx, Forgettables.Ref(nodes[1], "gone"), (*Forgettable).Forget); err != nil || !ok {
		t.Fatalf("DeleteState: %v, %v", ok, err)
	}
	waitFor(t, 15*time.Second, "the tombstone to be dropped everywhere", func() bool {
		for _, n := range nodes {
			if _, held := casty.ReplicaState(n, Forgettables.Name(), "gone"); held {
				return false
			}
		}
		return true
	})
	pruned := int64(0)
	for _, n := range nodes {
		if _, held := casty.ReplicaState(n, Forgettables.Name(), "kept"); !held {
			t.Fatalf("%s dropped a live actor's copy", n.Addr())
		}
		pruned += n.Replication().Pruned
	}
	if pruned < 3 {
		t.Fatalf("%d copies counted as pruned, want at least 3", pruned)
	}
	if n, err := casty.Call(ctx, Forgettables.Ref(nodes[2], "gone"), (*Forgettable).Add, 1); err != nil || n != 1 {
		t.Fatalf("the deleted actor after its tombstones expired: %d, %v; want 1", n, err)
	}
	if n, err := casty.Call(ctx, Forgettables.Ref(nodes[2], "kept"), (*Forgettable).Add, 1); err != nil || n != 8 {
		t.Fatalf("the kept actor: %d, %v; want 8", n, err)
	}
}

// TestJoinMovesCopiesAndOldReplicasDropThem: when a fourth member joins a
// three-member cluster of Replicas(3) actors, it takes its share of the
// copies and the members that left those ranges drop theirs, so each actor
// ends on exactly three members, with its state intact.
func TestJoinMovesCopiesAndOldReplicasDropThem(t *testing.T) {
	parallel(t)
	cfg := replicationConfig()
	cfg.Replication.RepairInterval = 100 * time.Millisecond
	nodes := startReplicated(t, 3, casty.WithConfig(cfg))
	ctx := context.Background()
	const keys = 40
	for i := range keys {
		if _, err := casty.Call(ctx, Ledgers.Ref(nodes[i%3], "moved-"+strconv.Itoa(i)), (*Ledger).Add, i); err != nil {
			t.Fatal(err)
		}
	}
	nodes = append(nodes, startNode(t, []string{nodes[0].Addr()}, casty.WithConfig(cfg)))
	waitConverged(t, nodes, 4)
	waitFor(t, 30*time.Second, "every member synced on four", func() bool {
		for _, s := range nodes {
			if !casty.Settled(s, 4) {
				return false
			}
		}
		return true
	})
	waitFor(t, 30*time.Second, "each actor on exactly three members", func() bool {
		for i := range keys {
			held := 0
			for _, n := range nodes {
				if _, ok := casty.ReplicaState(n, Ledgers.Name(), "moved-"+strconv.Itoa(i)); ok {
					held++
				}
			}
			if held != 3 {
				return false
			}
		}
		return true
	})
	if st := nodes[3].Replication(); st.Keys == 0 {
		t.Fatal("the joiner holds nothing")
	}
	pruned := int64(0)
	for _, n := range nodes {
		pruned += n.Replication().Pruned
	}
	if pruned == 0 {
		t.Fatal("no member counted a pruned copy")
	}
	for i := range keys {
		n := callUntil(t, 10*time.Second, "reading a moved actor", func(ctx context.Context) (int, error) {
			return casty.Call0(ctx, Ledgers.Ref(nodes[3], "moved-"+strconv.Itoa(i)), (*Ledger).Get)
		})
		if n != i {
			t.Fatalf("moved-%d: %d, want %d", i, n, i)
		}
	}
}
