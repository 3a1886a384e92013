package casty

import (
	"slices"
	"testing"

	"github.com/casty-go/casty/replica"
	"github.com/casty-go/casty/ring"
)

// A member that re-enters a range before its sync there finished (it was
// pushed out by a newcomer, which then left) must hear the sets of both
// placements: the new run takes the unfinished run's base, the unfinished
// run takes the new one's, and the old run's round in flight is abandoned
// so that it cannot mark the range synced on its old sets alone
// (replica/SPEC.md, "Membership changes"; replica/sim seed 1022 of
// TestLinearizableLeavingOutNewcomersUnderOtherChanges).
func TestReenteringARangeHearsTheUnfinishedSyncsSets(t *testing.T) {
	mk := func(ids ...byte) *ring.Ring {
		var ns []ring.NodeID
		for _, b := range ids {
			ns = append(ns, ring.NodeID{b})
		}
		r, err := ring.New(ns)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	older, newer, other := mk(1, 2, 3), mk(2, 3, 5), mk(7, 8, 9)
	r := newReplicator()
	defer r.close()
	inFlight := replica.NewSync("k", []replica.Range{{Start: 0, End: 100}}, 2, 0, []replica.NodeID{{1}, {2}}, 2, r.rep, 0)
	inFlight.Start()
	unfinished := &syncRun{kind: "k", rngs: []replica.Range{{Start: 0, End: 100}}, base: older, live: []*replica.Sync{inFlight}}
	elsewhere := &syncRun{kind: "k", rngs: []replica.Range{{Start: 200, End: 300}}, base: other}
	otherKind := &syncRun{kind: "j", rngs: []replica.Range{{Start: 0, End: 100}}, base: other}
	r.runs = []*syncRun{unfinished, elsewhere, otherKind}

	back := &syncRun{kind: "k", rngs: []replica.Range{{Start: 50, End: 60}}, base: newer}
	r.reenter(back)
	if !slices.Equal(back.prior, []*ring.Ring{older}) {
		t.Fatalf("the re-entered range's run hears %d more bases, want the unfinished run's", len(back.prior))
	}
	if !slices.Equal(unfinished.prior, []*ring.Ring{newer}) {
		t.Fatalf("the unfinished run hears %d more bases, want the new run's", len(unfinished.prior))
	}
	if len(elsewhere.prior) != 0 || len(otherKind.prior) != 0 {
		t.Fatal("a run of other ranges or another kind was tied in")
	}
	if out := inFlight.Retry(); len(out) != 0 || inFlight.Done() {
		t.Fatalf("the unfinished run's round in flight goes on (%d requests, done %v)", len(out), inFlight.Done())
	}
}
