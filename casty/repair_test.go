package casty_test

import (
	"context"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
)

// TestAntiEntropyRestoresAMissedCopy: a replica that lost its copy of an
// actor (it missed its commits) gets it back from the other replicas
// within a few Config.RepairInterval, with no call to the actor.
func TestAntiEntropyRestoresAMissedCopy(t *testing.T) {
	cfg := replicationConfig()
	cfg.RepairInterval = 200 * time.Millisecond
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
