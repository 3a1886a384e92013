package casty

import (
	"slices"
	"testing"
	"time"

	agreed "github.com/casty-go/casty/casty/internal/placement"
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

// A leaver whose process has ended may have been the last holder of
// writes a sync still pulls: its handoff is cut short when the members
// taking over cannot finish in time (HandoffTimeout, or the Close ctx).
// So once departed it is no longer asked, but its copies still count
// toward the read quorum of its ranges' previous sets, and the sync waits
// for it — reported in Waiting — until an operator gives them up
// (AcceptLoss). Counting it out let a newcomer whose only previous holder
// had left mid-sync mark the range synced with no answer and serve its
// keys empty (the mixed fault schedules' seed 500281: a register read 0
// after acknowledged writes).
func TestADepartedLeaversCopiesCountUntilGivenUp(t *testing.T) {
	a, b, l := ring.NodeID{1}, ring.NodeID{2}, ring.NodeID{3}
	p := agreed.Genesis(a).Next([]agreed.Change{{Op: agreed.Join, ID: b}, {Op: agreed.Join, ID: l}})
	left := p.Next([]agreed.Change{{Op: agreed.Leave, ID: l}})
	lost := left.Next([]agreed.Change{{Op: agreed.Lose, ID: l}})
	if !lost.WasLost(l) {
		t.Fatal("an operator cannot give up a leaver's copies (Lose is refused for a member that left)")
	}
	now := time.Now()
	v := &view{addrs: map[ring.NodeID]string{a: "a", b: "b"}, left: map[ring.NodeID]string{l: "l"}}
	peers := func(pl *agreed.Placement, departedSince time.Duration) *syncPeers {
		departed := map[ring.NodeID]time.Time{}
		if departedSince > 0 {
			departed[l] = now.Add(-departedSince)
		}
		return &syncPeers{cur: newLayout(pl, agreed.Log{}), v: v, departed: departed, now: now, departAfter: 6 * time.Second, w: 2}
	}
	set := []ring.NodeID{l, a}

	// Handing off (a session, or not long without one): asked and counted.
	for _, since := range []time.Duration{0, time.Second} {
		ps := peers(left, since)
		if m := ps.about(l); m.gone || m.departed || m.waits {
			t.Fatalf("a leaver %v without a session: %+v, want one handing off", since, m)
		}
		if ask, need := answerable(nil, set, 2, ps.about); len(ask) != 2 || need != 2 {
			t.Fatalf("a leaver handing off: ask %d, need %d; want both asked, 2 needed", len(ask), need)
		}
	}
	// Departed: not asked, still counted, waited for.
	ps := peers(left, time.Minute)
	if m := ps.about(l); m.gone || !m.departed || !m.waits {
		t.Fatalf("a departed leaver: %+v, want departed and waited for, not gone", m)
	}
	ask, need := answerable(nil, set, 2, ps.about)
	if len(ask) != 1 || ask[0] != replica.NodeID(a) || need != 2 {
		t.Fatalf("a departed leaver: ask %v, need %d; want only the member that stayed asked and 2 needed (the range waits)", ask, need)
	}
	if answerableNow([]replica.Group{{Members: ask, Need: need}}, func(replica.NodeID) bool { return true }) {
		t.Fatal("a set that lost its leaver mid-sync is answerable by the member that stayed alone")
	}
	// A Write(One) kind promised each write one copy: a departed leaver is
	// not waited for.
	ps = peers(left, time.Minute)
	ps.w = 1
	if m := ps.about(l); !m.forgiven || m.waits {
		t.Fatalf("a departed leaver of a Write(One) kind: %+v, want forgiven and not waited for", m)
	}
	if ask, need := answerable(nil, set, 2, ps.about); len(ask) != 1 || need != 1 {
		t.Fatalf("a departed leaver of a Write(One) kind: ask %d, need %d; want the member that stayed, 1 needed", len(ask), need)
	}
	// Given up: no longer counted.
	ps = peers(lost, time.Minute)
	if m := ps.about(l); !m.gone || m.waits {
		t.Fatalf("a leaver given up: %+v, want gone and not waited for", m)
	}
	if ask, need := answerable(nil, set, 2, ps.about); len(ask) != 1 || need != 1 {
		t.Fatalf("a leaver given up: ask %d, need %d; want the member that stayed, 1 needed", len(ask), need)
	}
}
