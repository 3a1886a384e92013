package replica

import (
	"fmt"
	"testing"

	"github.com/casty-go/casty/pager"
)

// runRepair delivers every request of p to the replicas of c, with a small
// batch so that listings and fetches are cut and continued.
func runRepair(c cluster, p *Repair) {
	out := p.Start()
	for len(out) > 0 {
		o := out[0]
		out = out[1:]
		if r, ok := c[o.To]; ok {
			out = append(out, p.Step(o.To, r.Handle(o.Msg, 300))...)
		}
	}
}

// A replica that missed commits adopts them from its peers' listings,
// fetching only what it lacks or holds older; what it holds newer stays.
func TestRepairCatchesUpWhatAReplicaMissed(t *testing.T) {
	members := ids(3)
	c := cluster{}
	for _, id := range members {
		c[id] = NewReplica(nil) // every actor at ring point 0
	}
	page := func(v byte) []pager.Page { return []pager.Page{{Key: "V", Data: []byte{v}}} }
	commit := func(to NodeID, k string, b Ballot, d pager.Delta) {
		if got := c[to].Handle(&Msg{Op: OpCommit, Kind: "k", Key: k, Ballot: b, Delta: &d}, 0); got.Status != StatusOK {
			t.Fatalf("commit %s on %v: %v", k, to, got.Status)
		}
	}
	a, b, lag := members[0], members[1], members[2]
	for i := range 20 {
		k := fmt.Sprintf("key-%02d", i)
		for _, to := range []NodeID{a, b} {
			commit(to, k, ballot(10, 1), pager.Delta{Stamp: stamp(11, 1), Pages: page(byte(i))})
		}
		if i%4 == 0 { // the laggard has an older copy of some
			commit(lag, k, ballot(5, 1), pager.Delta{Stamp: stamp(6, 1), Pages: page(99)})
		}
	}
	// One it holds newer than its peers: it keeps it.
	commit(lag, "key-05", ballot(30, 3), pager.Delta{Stamp: stamp(31, 3), Pages: page(55)})

	p := NewRepair("k", []Range{{}}, 0, 0, []NodeID{a, b}, c[lag])
	runRepair(c, p)
	if !p.Done() {
		t.Fatal("the pass did not finish")
	}
	if p.Adopted() != 19 {
		t.Fatalf("adopted %d copies, want 19", p.Adopted())
	}
	for i := range 20 {
		k := fmt.Sprintf("key-%02d", i)
		st, ok := c[lag].Get("k", k)
		want, _ := c[a].Get("k", k)
		if i == 5 {
			want = State{Accepted: ballot(30, 3), Stamp: stamp(31, 3)}
		}
		if !ok || st.Accepted != want.Accepted || st.Stamp != want.Stamp {
			t.Fatalf("%s: %+v, want %+v", k, st, want)
		}
	}
	// A second pass finds nothing to do.
	again := NewRepair("k", []Range{{}}, 0, 0, []NodeID{a, b}, c[lag])
	runRepair(c, again)
	if !again.Done() || again.Adopted() != 0 {
		t.Fatalf("second pass adopted %d", again.Adopted())
	}
}

// A peer that has not synced the range itself, or is on a newer placement,
// teaches nothing and does not hold the pass up.
func TestRepairSkipsPeersThatCannotAnswer(t *testing.T) {
	members := ids(3)
	c := cluster{}
	for _, id := range members {
		c[id] = NewReplica(nil)
	}
	c[members[0]].Joined() // strict and never synced: answers unsynced
	c[members[1]].Observe(9)
	p := NewRepair("k", []Range{{}}, 1, 0, members[:2], c[members[2]])
	runRepair(c, p)
	if !p.Done() || p.Adopted() != 0 {
		t.Fatalf("done %v adopted %d", p.Done(), p.Adopted())
	}
}
