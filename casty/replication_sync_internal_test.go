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
	older, newer, other := ringOf(t, 1, 2, 3), ringOf(t, 2, 3, 5), ringOf(t, 7, 8, 9)
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

// enteredSegments covers exactly the points where self became one of the
// replicas, each with the set it had there before, and builds no replica
// set per point it passes: it runs at every placement change, over every
// token of two rings.
func TestEnteredSegmentsCoverWhatSelfEnteredAndAllocateLittle(t *testing.T) {
	base, cur, self := ringOf(t, 1, 2, 3, 4), ringOf(t, 1, 2, 3, 4, 5), ring.NodeID{5}
	segs := enteredSegments(base, cur, self, 3)
	if len(segs) == 0 {
		t.Fatal("a joiner entered nothing")
	}
	// Every token of either ring is inside exactly the segments where the
	// joiner is a replica now, each naming the token's set before.
	for _, r := range []*ring.Ring{base, cur} {
		for i := range r.Len() {
			p, _ := r.Entry(i)
			var in []segment
			for _, s := range segs {
				if s.rng.Contains(p) && p != s.rng.Start {
					in = append(in, s)
				}
			}
			entered := slices.Contains(cur.Replicas(p, 3), self)
			if !entered {
				if len(in) != 0 {
					t.Fatalf("token %d: in %d segments, but self is not its replica", p, len(in))
				}
				continue
			}
			if len(in) != 1 || !slices.Equal(in[0].prev, base.Replicas(p, 3)) || in[0].n != 3 {
				t.Fatalf("token %d: segments %+v, want one naming %v", p, in, base.Replicas(p, 3))
			}
		}
	}
	// One allocation for the points, and one per segment kept (its set)
	// and the list's growth: not two per token.
	allocs := testing.AllocsPerRun(20, func() { enteredSegments(base, cur, self, 3) })
	if limit := float64(2*len(segs) + 8); allocs > limit {
		t.Fatalf("%.0f allocations for %d segments over %d tokens, want at most %.0f", allocs, len(segs), base.Len()+cur.Len(), limit)
	}
}

// ringOf is the ring of the members whose ids start with ids.
func ringOf(t *testing.T, ids ...byte) *ring.Ring {
	t.Helper()
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

// Runs that re-enter the same range in turn pass their bases on to each
// other: each run's bases are every distinct base of the runs before it,
// each once, never its own. Kept as they came, the lists doubled with each
// re-entry (a fault schedule's double failures left 1,180 bases of 12
// distinct ones, every sync round computing each range's set on each).
func TestReenteredRunsHearEachBaseOnce(t *testing.T) {
	bases := []*ring.Ring{ringOf(t, 1, 2, 3), ringOf(t, 2, 3, 4), ringOf(t, 3, 4, 5)}
	r := newReplicator()
	defer r.close()
	for i := range 12 {
		run := &syncRun{kind: "k", rngs: []replica.Range{{Start: 0, End: 100}}, base: bases[i%len(bases)]}
		r.reenter(run)
		r.runs = append(r.runs, run)
	}
	for i, run := range r.runs {
		for j, b := range run.prior {
			if b == run.base || slices.Index(run.prior, b) != j {
				t.Fatalf("run %d hears base %p twice (%d bases in all)", i, b, len(run.prior))
			}
		}
		if i > 0 && len(run.prior) != len(bases)-1 {
			t.Fatalf("run %d hears %d other bases, want %d", i, len(run.prior), len(bases)-1)
		}
	}
}
