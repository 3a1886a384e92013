package replica

import (
	"slices"
	"testing"

	"github.com/casty-go/casty/pager"
)

func runPrune(c cluster, p *Prune) {
	out := p.Start()
	for len(out) > 0 {
		o := out[0]
		out = out[1:]
		if r, ok := c[o.To]; ok {
			out = append(out, p.Step(o.To, r.Handle(o.Msg, 200))...)
		}
	}
}

func put(t *testing.T, r *Replica, k string, b Ballot, st pager.Stamp, pages ...pager.Page) {
	t.Helper()
	if got := r.Handle(&Msg{Op: OpCommit, Kind: "k", Key: k, Ballot: b, Delta: &pager.Delta{Stamp: st, Full: true, Pages: pages}}, 0); got.Status != StatusOK {
		t.Fatalf("commit %s: %v %s", k, got.Status, got.Reason)
	}
}

var onePage = pager.Page{Key: "V", Data: []byte{1}}

// A member that left a range drops what the range's set holds as new or
// newer, and keeps what it holds newer than any of them.
func TestPruneDropsMovedCopiesTheSetHolds(t *testing.T) {
	members := ids(4)
	c := cluster{}
	for _, id := range members {
		c[id] = NewReplica(nil)
	}
	old, set := c[members[3]], members[:3]
	for _, id := range set {
		put(t, c[id], "same", ballot(5, 1), stamp(6, 1), onePage)
		put(t, c[id], "newer-there", ballot(9, 1), stamp(10, 1), onePage)
	}
	put(t, c[set[0]], "mine-newer", ballot(5, 1), stamp(6, 1), onePage)
	put(t, c[set[1]], "mine-newer", ballot(5, 1), stamp(6, 1), onePage)
	put(t, c[set[2]], "one-lacks", ballot(5, 1), stamp(6, 1), onePage)
	put(t, c[set[1]], "one-lacks", ballot(5, 1), stamp(6, 1), onePage)
	put(t, old, "same", ballot(5, 1), stamp(6, 1), onePage)
	put(t, old, "newer-there", ballot(4, 1), stamp(5, 1), onePage)
	put(t, old, "mine-newer", ballot(7, 1), stamp(8, 1), onePage)
	put(t, old, "one-lacks", ballot(5, 1), stamp(6, 1), onePage)

	p := NewPrune("k", []Range{{}}, 0, 0, set, old.Candidates("k", []Range{{}}, true, 0), old)
	runPrune(c, p)
	if !p.Done() {
		t.Fatal("not done")
	}
	if got := p.Pruned(); !slices.Equal(got, []string{"newer-there", "same"}) {
		t.Fatalf("pruned %v", got)
	}
	for _, k := range []string{"mine-newer", "one-lacks"} {
		if _, ok := old.Get("k", k); !ok {
			t.Fatalf("%s was dropped", k)
		}
	}
}

// An old empty copy (a deleted actor) goes once no member of the set holds
// anything older; a straggler's older copy keeps it, as does a member that
// cannot answer, and a promise above the copy's ballot.
func TestPruneExpiresTombstonesOnlyWhenSafe(t *testing.T) {
	members := ids(3)
	fresh := func() cluster {
		c := cluster{}
		for _, id := range members {
			c[id] = NewReplica(nil)
		}
		return c
	}
	self, peers := members[0], members[1:]
	prune := func(c cluster) []string {
		p := NewPrune("k", []Range{{}}, 0, 0, peers, c[self].Candidates("k", []Range{{}}, false, 100), c[self])
		runPrune(c, p)
		return p.Pruned()
	}

	c := fresh()
	put(t, c[self], "gone", ballot(5, 1), stamp(6, 1))
	put(t, c[peers[0]], "gone", ballot(5, 1), stamp(6, 1))
	put(t, c[self], "young", ballot(5, 1), stamp(200, 1)) // too recent
	put(t, c[self], "alive", ballot(5, 1), stamp(6, 1), onePage)
	if got := prune(c); !slices.Equal(got, []string{"gone"}) {
		t.Fatalf("pruned %v, want [gone]", got)
	}

	c = fresh()
	put(t, c[self], "gone", ballot(5, 1), stamp(6, 1))
	put(t, c[peers[1]], "gone", ballot(3, 1), stamp(4, 1), onePage) // a straggler
	if got := prune(c); len(got) != 0 {
		t.Fatalf("pruned %v with a straggler holding an older copy", got)
	}

	c = fresh()
	put(t, c[self], "gone", ballot(5, 1), stamp(6, 1))
	c[peers[1]].Joined() // cannot answer: not synced
	if got := prune(c); len(got) != 0 {
		t.Fatalf("pruned %v with a member that could not answer", got)
	}

	c = fresh()
	put(t, c[self], "gone", ballot(5, 1), stamp(6, 1))
	c[self].Handle(&Msg{Op: OpPrepare, Kind: "k", Key: "gone", Ballot: ballot(9, 2)}, 0)
	if got := prune(c); len(got) != 0 {
		t.Fatalf("pruned %v under a newer owner's promise", got)
	}
}

func TestDropRanges(t *testing.T) {
	r := NewReplica(func(_, k string) uint64 { return uint64(k[0]) })
	for _, k := range []string{"a", "m", "z"} {
		put(t, r, k, ballot(1, 1), stamp(2, 1), onePage)
	}
	put(t, r, "n", ballot(1, 1), stamp(50, 1), onePage)
	r.DropRanges("k", 10, Range{Start: 'b', End: 'y'})
	if _, ok := r.Get("k", "m"); ok || r.Keys() != 3 {
		t.Fatalf("%d keys left, m held: %v", r.Keys(), ok)
	}
	// A copy stamped after the cut-off is kept: no expired tombstone can
	// have superseded it, and it may be the only live copy of a write.
	if st, ok := r.Get("k", "n"); !ok || st.Stamp != stamp(50, 1) {
		t.Fatalf("the young copy was dropped: %v %v", st, ok)
	}
}
