package sim

import (
	"testing"
	"time"

	"github.com/casty-go/casty/gossip"
)

// A partition of n members, k of them cut off, bridged by a lite client
// linked to both sides: the majority holds every cut member DEAD as soon
// as it does when the client is on its side (within DetectDelay +
// SuspicionTimeout + 2 s for N = 5; larger clusters suspect the cut
// members outside their active views one at a time, Failure detection
// input 2, bridged or not), revives none while the partition lasts, and
// every node holds every node ALIVE again within 2 min of the heal.
func TestBridgedPartitionIsDeclaredDead(t *testing.T) {
	runs := 5
	if full() {
		runs = 50
	}
	limit := time.Second + gossip.DefaultConfig().SuspicionTimeout + 2*time.Second
	for _, tc := range []struct{ n, k int }{{5, 2}, {20, 8}} {
		var worst, worstBase, worstRejoin time.Duration
		for seed := uint64(1); seed <= uint64(runs); seed++ {
			base, err := BridgedPartition(Config{Seed: seed}, tc.n, tc.k, false, 0)
			if err != nil {
				t.Fatal(err)
			}
			r, err := BridgedPartition(Config{Seed: seed}, tc.n, tc.k, true, 30*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if tc.n == 5 && r.Dead > limit {
				t.Errorf("seed %d, N=%d cut %d: the majority held the cut members DEAD after %v, want <= %v", seed, tc.n, tc.k, r.Dead, limit)
			}
			if r.Dead > base.Dead+2*time.Second {
				t.Errorf("seed %d, N=%d cut %d: the majority held the cut members DEAD after %v bridged, %v not bridged", seed, tc.n, tc.k, r.Dead, base.Dead)
			}
			if r.Revived != 0 {
				t.Errorf("seed %d, N=%d cut %d: %d cut members revived at the majority while the partition lasted", seed, tc.n, tc.k, r.Revived)
			}
			worst, worstBase, worstRejoin = max(worst, r.Dead), max(worstBase, base.Dead), max(worstRejoin, r.Rejoin)
		}
		t.Logf("N=%d cut %d, %d seeds: DEAD at the majority max %v bridged, %v not bridged; rejoin after the heal max %v",
			tc.n, tc.k, runs, worst, worstBase, worstRejoin)
	}
}

// A forger sends a member the crashed victim's record ALIVE at the next
// incarnation every 250 ms: every survivor still holds the victim DEAD
// within DetectDelay + SuspicionTimeout + 2 s, as without the forger, and
// no live member is declared dead.
func TestForgedAliveDoesNotKeepACrashedMemberAlive(t *testing.T) {
	runs := 5
	if full() {
		runs = 50
	}
	limit := time.Second + gossip.DefaultConfig().SuspicionTimeout + 2*time.Second
	for _, tc := range []struct {
		name          string
		forge, client bool
	}{{"no forger", false, false}, {"client credential", true, true}, {"open stranger", true, false}} {
		var worst time.Duration
		for seed := uint64(1); seed <= uint64(runs); seed++ {
			r, err := ForgedAlive(Config{Seed: seed}, 20, tc.forge, tc.client)
			if err != nil {
				t.Fatal(err)
			}
			if r.Latency > limit {
				t.Errorf("%s, seed %d: crashed member DEAD everywhere after %v, want <= %v", tc.name, seed, r.Latency, limit)
			}
			if r.FalseDeaths != 0 {
				t.Errorf("%s, seed %d: %d live members declared DEAD", tc.name, seed, r.FalseDeaths)
			}
			worst = max(worst, r.Latency)
		}
		t.Logf("%s, N=20, %d seeds: crash detected everywhere, max %v", tc.name, runs, worst)
	}
}
