package replica

import (
	"bytes"
	"slices"
	"testing"

	"github.com/casty-go/casty/pager"
)

// lagging is a three-member set (W=2) whose state has five pages of 200
// bytes, A to E, committed everywhere at wall 11, and helpers to run later
// commits.
type lagging struct {
	t          *testing.T
	c          cluster
	s          *Session
	fast, slow NodeID
}

func newLagging(t *testing.T) *lagging {
	c, members, s := openCluster(t, 3, 2)
	l := &lagging{t: t, c: c, s: s, fast: members[1], slow: members[2]}
	var pages []pager.Page
	for _, k := range []string{"A", "B", "C", "D", "E"} {
		pages = append(pages, pager.Page{Key: k, Data: bytes.Repeat([]byte(k), 200)})
	}
	for id, m := range l.commit(pager.Delta{Stamp: stamp(11, 1), Pages: pages}) {
		s.Step(id, c[id].Handle(m, 0))
	}
	l.decided(11)
	return l
}

// commit starts a commit of d and returns its message to each member.
func (l *lagging) commit(d pager.Delta) map[NodeID]*Msg {
	l.t.Helper()
	sent := map[NodeID]*Msg{}
	for _, o := range l.s.Commit(d) {
		if sent[o.To] != nil {
			l.t.Fatalf("commit %v: two messages to %v", d.Stamp, o.To)
		}
		sent[o.To] = o.Msg
	}
	if len(sent) != 2 {
		l.t.Fatalf("commit %v: %d members sent to, want 2", d.Stamp, len(sent))
	}
	return sent
}

// edit commits page key changed to v at wall, built on basis.
func (l *lagging) edit(wall, basis int64, key string, v byte) map[NodeID]*Msg {
	return l.commit(pager.Delta{Basis: stamp(basis, 1), Stamp: stamp(wall, 1), Pages: []pager.Page{{Key: key, Data: bytes.Repeat([]byte{v}, 200)}}})
}

func (l *lagging) decided(wall int64) {
	l.t.Helper()
	if res := l.s.Results(); len(res) != 1 || res[0].Err != nil || res[0].State.Stamp != stamp(wall, 1) {
		l.t.Fatalf("commit %d: %+v", wall, res)
	}
}

// lateRefusal runs commit 12 (page A) past the slow member, then commit 13
// (page B), decided by the fast member's ack; the slow member's need-full
// of 13, which it returns, comes after the round ended.
func (l *lagging) lateRefusal() *Msg {
	l.t.Helper()
	sent := l.edit(12, 11, "A", 1)
	l.s.Step(l.fast, l.c[l.fast].Handle(sent[l.fast], 0))
	l.decided(12)
	sent = l.edit(13, 12, "B", 2)
	l.s.Step(l.fast, l.c[l.fast].Handle(sent[l.fast], 0))
	l.decided(13)
	late := l.c[l.slow].Handle(sent[l.slow], 0)
	if late.Status != StatusNeedFull {
		l.t.Fatalf("the slow member answered %v, want need-full", late.Status)
	}
	return late
}

// deliver hands commit messages to their members and feeds their acks.
func (l *lagging) deliver(sent map[NodeID]*Msg) {
	l.t.Helper()
	for _, id := range []NodeID{l.slow, l.fast} {
		r := l.c[id].Handle(sent[id], 0)
		if r.Status != StatusOK {
			l.t.Fatalf("commit %v at %v: %v", sent[id].Delta.Stamp, id, r.Status)
		}
		l.s.Step(id, r)
	}
}

func (l *lagging) sameCopies() {
	l.t.Helper()
	owner := l.c[l.s.set.Self].Pages("k", "x")
	for _, id := range []NodeID{l.slow, l.fast} {
		if got := l.c[id].Pages("k", "x"); !slices.EqualFunc(got, owner, func(a, b pager.Page) bool {
			return a.Key == b.Key && a.Stamp == b.Stamp && string(a.Data) == string(b.Data)
		}) {
			l.t.Fatalf("%v holds %+v, the owner %+v", id, got, owner)
		}
	}
}

func pageKeys(d *pager.Delta) []string {
	var ks []string
	for _, p := range d.Pages {
		ks = append(ks, p.Key)
	}
	slices.Sort(ks)
	return ks
}

// A member whose need-full arrives after its round ended (the owner and
// another member made the quorum) is sent, with the next commit, the
// pages its copy lacks — listed in its refusal — instead of a delta it
// would refuse again or the whole page set; once it answers a newer commit
// ok, deltas again. Without the rule it stays behind for every later
// commit.
func TestALateNeedFullGetsACatchUpNext(t *testing.T) {
	l := newLagging(t)
	late := l.lateRefusal()
	if late.Have == nil || late.Have.Stamp != stamp(11, 1) || len(late.Have.Pages) != 5 {
		t.Fatalf("the refusal lists %+v, want the copy at 11 with its five pages", late.Have)
	}
	if out := l.s.Step(l.slow, late); len(out) != 0 {
		t.Fatalf("a late answer started %d requests", len(out))
	}

	// Commit 14 (page C): the slow member gets what it lacks — A of 12,
	// B of 13, C of 14 — on its own stamp, the fast one the delta.
	sent := l.edit(14, 13, "C", 3)
	d := sent[l.slow].Delta
	if d.Full || d.Basis != stamp(11, 1) || d.Stamp != stamp(14, 1) || !slices.Equal(pageKeys(d), []string{"A", "B", "C"}) {
		t.Fatalf("commit 14 to the member that refused late: full=%v basis %v stamp %v pages %v, want a catch-up from 11 to 14 of A, B and C",
			d.Full, d.Basis, d.Stamp, pageKeys(d))
	}
	if f := sent[l.fast].Delta; f.Full || len(f.Pages) != 1 {
		t.Fatal("commit 14 to the up-to-date member is not its delta")
	}
	l.deliver(sent)
	l.decided(14)
	l.sameCopies()

	// Its ok to 14 replaced the memory, and the need-full of 13 arriving
	// again (a duplicate) is older news: commit 15 is a delta for both.
	l.s.Step(l.slow, late)
	for id, m := range l.edit(15, 14, "D", 4) {
		if m.Delta.Full || m.Delta.Basis != stamp(14, 1) {
			t.Fatalf("commit 15 to %v: full=%v basis %v, want the delta", id, m.Delta.Full, m.Delta.Basis)
		}
	}
}

// A refusal without a listing (a copy too large to list in one commit
// part, or a member of an older version) gets the full page set next.
func TestALateNeedFullWithoutAListingGetsTheFullPageSet(t *testing.T) {
	l := newLagging(t)
	late := l.lateRefusal()
	late.Have = nil
	l.s.Step(l.slow, late)
	sent := l.edit(14, 13, "C", 3)
	if d := sent[l.slow].Delta; !d.Full || d.Stamp != stamp(14, 1) || len(d.Pages) != 5 {
		t.Fatalf("commit 14 to the member that refused late: full=%v stamp %v, %d pages, want the full page set at 14", d.Full, d.Stamp, len(d.Pages))
	}
	l.deliver(sent)
	l.decided(14)
	l.sameCopies()
}

// A need-full within the round gets a catch-up too; if the copy moved since
// it listed itself and refuses the catch-up, the full page set follows; a
// need-full after that is corrupt.
func TestANeedFullInTheRoundGetsACatchUpThenTheFullPageSet(t *testing.T) {
	l := newLagging(t)
	sent := l.edit(12, 11, "A", 1) // never reaches the slow member
	l.s.Step(l.fast, l.c[l.fast].Handle(sent[l.fast], 0))
	l.decided(12)
	sent = l.edit(13, 12, "B", 2)
	refusal := l.c[l.slow].Handle(sent[l.slow], 0)
	up := l.s.Step(l.slow, refusal)
	if len(up) != 1 || up[0].To != l.slow || up[0].Msg.Delta.Full || !slices.Equal(pageKeys(up[0].Msg.Delta), []string{"A", "B"}) {
		t.Fatalf("the answer to an in-round need-full: %+v, want one catch-up of A and B", up)
	}

	// The copy moves before the catch-up arrives (a full set from
	// elsewhere, at 12): the catch-up's basis is not its stamp any more.
	full12 := l.c[l.fast].Full("k", "x", pager.Stamp{}, 0)
	if r := l.c[l.slow].Handle(&Msg{Op: OpCommit, Kind: "k", Key: "x", Ballot: sent[l.slow].Ballot, Delta: &full12[0]}, 0); r.Status != StatusOK {
		t.Fatalf("full set of 12 at the slow member: %v", r.Status)
	}
	again := l.c[l.slow].Handle(up[0].Msg, 0)
	if again.Status != StatusNeedFull {
		t.Fatalf("the stale catch-up: %v, want need-full", again.Status)
	}
	full := l.s.Step(l.slow, again)
	if len(full) != 1 || !full[0].Msg.Delta.Full || full[0].Msg.Delta.Stamp != stamp(13, 1) {
		t.Fatalf("the answer to a refused catch-up: %+v, want the full page set at 13", full)
	}
	if r := l.c[l.slow].Handle(full[0].Msg, 0); r.Status != StatusOK {
		t.Fatalf("full set at the slow member: %v", r.Status)
	} else {
		l.s.Step(l.slow, r)
	}
	l.decided(13)
	l.c[l.fast].Handle(sent[l.fast], 0)
	l.sameCopies()
}

// A need-full lists the refusing copy only when the listing fits one
// commit part (batch) and costs less than half the copy's bytes: a larger
// one would cost about what the full page set it saves does.
func TestANeedFullListsTheCopyOnlyWhenItIsWorthIt(t *testing.T) {
	refusal := func(data, batch int) *Msg {
		t.Helper()
		r := NewReplica(nil)
		var pages []pager.Page
		for i := range 100 {
			pages = append(pages, pager.Page{Key: string(rune('a'+i%26)) + string(rune('a'+i/26)), Data: make([]byte, data)})
		}
		if got := r.Handle(commitMsg(ballot(5, 1), pager.Delta{Stamp: stamp(6, 1), Pages: pages}), 0); got.Status != StatusOK {
			t.Fatalf("first commit: %v", got.Status)
		}
		got := r.Handle(commitMsg(ballot(5, 1), pager.Delta{Basis: stamp(7, 1), Stamp: stamp(8, 1), Pages: pages[:1]}), batch)
		if got.Status != StatusNeedFull {
			t.Fatalf("a commit on a missed basis: %v, want need-full", got.Status)
		}
		if got.Have != nil && (got.Have.Stamp != stamp(6, 1) || len(got.Have.Pages) != 100) {
			t.Fatalf("listing at %v with %d pages, want the copy at 6 with 100", got.Have.Stamp, len(got.Have.Pages))
		}
		return got
	}
	for _, c := range []struct {
		data, batch int
		listed      bool
	}{
		{200, 0, true},                           // 20 KB of pages, a listing of about 5 KB
		{200, 101 * (2 + listingOverhead), true}, // a part just large enough
		{200, 1000, false},                       // a part too small
		{10, 0, false},                           // 1.2 KB of pages: the listing costs as much
	} {
		if listed := refusal(c.data, c.batch).Have != nil; listed != c.listed {
			t.Errorf("pages of %d bytes, batch %d: listed %v, want %v", c.data, c.batch, listed, c.listed)
		}
	}
}
