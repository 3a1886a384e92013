package replica

import (
	"reflect"
	"testing"

	"github.com/casty-go/casty/pager"
)

// openSpares activates key x on three members (W = 2) whose owner may skip
// its spare for up to spares commits in a row, and commits page S at stamp
// 10 to all three: every copy holds the key.
func openSpares(t *testing.T, spares int) (cluster, []NodeID, *Session) {
	t.Helper()
	c, members, s := openCluster(t, 3, 2)
	s.set.Spares = spares
	c.run(s, s.Commit(pager.Delta{Stamp: stamp(10, 1), Pages: []pager.Page{{Key: "S", Data: []byte{1}}}}))
	if res := s.Results(); len(res) != 1 || res[0].Err != nil {
		t.Fatalf("the first commit: %+v", res)
	}
	return c, members, s
}

// commitTo commits one page written with v (and drops the page of drop,
// when not empty) answering members[1], and returns the messages by member.
func commitTo(s *Session, members []NodeID, wall int64, key string, v byte, drop string) map[NodeID][]*Msg {
	d := pager.Delta{Basis: s.State().Stamp, Stamp: stamp(wall, 1), Pages: []pager.Page{{Key: key, Data: []byte{v}}}}
	if drop != "" {
		d.Dropped = []string{drop}
	}
	by := map[NodeID][]*Msg{}
	for _, o := range s.CommitAnswering(d, members[1], []byte("answer")) {
		by[o.To] = append(by[o.To], o.Msg)
	}
	return by
}

// commitSkipping is commitTo writing v to page V, which must skip the
// spare members[2].
func commitSkipping(t *testing.T, s *Session, members []NodeID, wall int64, v byte) map[NodeID][]*Msg {
	t.Helper()
	by := commitTo(s, members, wall, "V", v, "")
	if len(by[members[2]]) != 0 {
		t.Fatal("the spare was not skipped")
	}
	return by
}

// deliver hands msgs to member id's replica and feeds the replies to s.
func deliver(c cluster, s *Session, id NodeID, msgs []*Msg) {
	for _, m := range msgs {
		c.run(s, s.Step(id, c[id].Handle(m, 0)))
	}
}

func sameCopy(t *testing.T, c cluster, a, b NodeID) {
	t.Helper()
	ra, rb := c[a].Listing("k", "x"), c[b].Listing("k", "x")
	if !reflect.DeepEqual(ra, rb) || !reflect.DeepEqual(c[a].Pages("k", "x"), c[b].Pages("k", "x")) {
		t.Fatalf("copies differ: %v holds %+v, %v holds %+v", a, ra, b, rb)
	}
}

// A commit whose answer rides to the caller's member skips the spare for
// Spares commits in a row; the next one sends it everything it missed as
// one delta, after which its copy is the owner's.
func TestASpareIsSkippedThenSentWhatItMissedAsOneDelta(t *testing.T) {
	c, members, s := openSpares(t, 3)
	keys := []string{"A", "B", "A"}
	for i, k := range keys {
		by := commitTo(s, members, int64(11+i), k, byte(i), "")
		if len(by[members[2]]) != 0 || len(by[members[1]]) != 1 {
			t.Fatalf("commit %d: %d message(s) to the spare, %d to the caller's member", i, len(by[members[2]]), len(by[members[1]]))
		}
		deliver(c, s, members[1], by[members[1]])
		if res := s.Results(); len(res) != 1 || res[0].Err != nil {
			t.Fatalf("commit %d: %+v", i, res)
		}
	}
	if s.Owed() != 1 {
		t.Fatalf("Owed = %d after skipping the spare, want 1", s.Owed())
	}
	// The fourth commit drops B: the spare gets A (last value), C and B's drop.
	by := commitTo(s, members, 14, "C", 9, "B")
	if len(by[members[2]]) != 1 {
		t.Fatalf("the fourth commit sends the spare %d message(s), want 1", len(by[members[2]]))
	}
	d := by[members[2]][0].Delta
	if d.Basis != stamp(10, 1) || d.Stamp != stamp(14, 1) || len(d.Pages) != 2 || len(d.Dropped) != 1 {
		t.Fatalf("the spare's delta: basis %v stamp %v, %d pages, drops %v", d.Basis, d.Stamp, len(d.Pages), d.Dropped)
	}
	deliver(c, s, members[2], by[members[2]])
	if res := s.Results(); len(res) != 1 || res[0].Err != nil {
		t.Fatalf("the fourth commit, acknowledged by the spare: %+v", res)
	}
	sameCopy(t, c, members[0], members[2])
	if s.Owed() != 0 {
		t.Fatalf("Owed = %d after the spare was sent its due", s.Owed())
	}
}

// Flush between rounds sends the spare what it is owed.
func TestFlushSendsTheSpareWhatItMissed(t *testing.T) {
	c, members, s := openSpares(t, 16)
	for i := range 2 {
		by := commitTo(s, members, int64(11+i), "V", byte(i), "")
		deliver(c, s, members[1], by[members[1]])
		s.Results()
	}
	out := s.Flush()
	if len(out) != 1 || out[0].To != members[2] {
		t.Fatalf("Flush: %+v, want one message to the spare", out)
	}
	c.run(s, out)
	sameCopy(t, c, members[0], members[2])
	if s.Owed() != 0 || len(s.Flush()) != 0 {
		t.Fatal("a second Flush sends again")
	}
}

// When the caller's member does not vote for the commit, the round sends
// the spare what it is owed at once, and its acknowledgement decides.
func TestASpareIsSentAtOnceWhenTheCallersMemberDoesNotVote(t *testing.T) {
	c, members, s := openSpares(t, 16)
	by := commitSkipping(t, s, members, 11, 1)
	reply := c[members[1]].Handle(by[members[1]][0], 0)
	reply.Voter = false // it has not synced the range
	out := s.Step(members[1], reply)
	if len(out) != 1 || out[0].To != members[2] {
		t.Fatalf("after an abstention the round sends %+v, want the spare's commit", out)
	}
	c.run(s, out)
	if res := s.Results(); len(res) != 1 || res[0].Err != nil {
		t.Fatalf("the round, decided by the spare: %+v", res)
	}
	sameCopy(t, c, members[0], members[2])

	// The runtime's Flush during a round whose answer is slow: the
	// spare's acknowledgement counts for the round.
	by = commitTo(s, members, 12, "V", 2, "")
	c.run(s, s.Flush())
	if res := s.Results(); len(res) != 1 || res[0].Err != nil {
		t.Fatalf("the round, flushed to the spare: %+v", res)
	}
}

// Without an early answer, and with Spares zero, every member gets every
// commit; a session that is over flushes nothing.
func TestSparesAreSkippedOnlyWhenAnAnswerRidesAndAllowed(t *testing.T) {
	for _, spares := range []int{0, 4} {
		_, members, s := openSpares(t, spares)
		d := pager.Delta{Basis: s.State().Stamp, Stamp: stamp(11, 1), Pages: []pager.Page{{Key: "V", Data: []byte{1}}}}
		out := s.CommitAnswering(d, members[1], []byte("a"))
		if spares == 0 && len(out) != 2 {
			t.Fatalf("Spares 0: %d messages, want 2", len(out))
		}
		s.Expire()
		if len(s.Flush()) != 0 {
			t.Fatal("a session whose commit failed flushed its skipped commits")
		}
	}
	_, _, s := openSpares(t, 4)
	d := pager.Delta{Basis: s.State().Stamp, Stamp: stamp(11, 1), Pages: []pager.Page{{Key: "V", Data: []byte{1}}}}
	if out := s.Commit(d); len(out) != 2 {
		t.Fatalf("a commit without an answer: %d messages, want 2", len(out))
	}
}

// A spare is skipped only once the owner knows its copy holds the key: a
// member that has none is sent every commit until it acknowledges one,
// and a new activation skips a spare whose promise showed a copy.
func TestASpareWithNoCopyIsNotSkipped(t *testing.T) {
	c, members, s := openCluster(t, 3, 2)
	s.set.Spares = 4
	by := commitTo(s, members, 11, "V", 1, "")
	if len(by[members[2]]) != 1 {
		t.Fatalf("the first commit sends the spare %d message(s), want 1: it holds no copy", len(by[members[2]]))
	}
	deliver(c, s, members[1], by[members[1]])
	by2 := commitTo(s, members, 12, "V", 2, "")
	if len(by2[members[2]]) != 1 {
		t.Fatal("the spare was skipped before it acknowledged a commit")
	}
	deliver(c, s, members[2], by[members[2]])
	deliver(c, s, members[1], by2[members[1]])
	deliver(c, s, members[2], by2[members[2]])
	s.Results()
	if by := commitTo(s, members, 13, "V", 3, ""); len(by[members[2]]) != 0 {
		t.Fatal("the spare holds the key and was not skipped")
	}

	// The next activation heard the spare's promise: it skips it at once.
	s2 := NewSession("k", "x", Set{Self: members[0], Members: members, W: 2, Spares: 4}, c[members[0]], ballot(20, 1))
	c.run(s2, s2.Open())
	if res := s2.Results(); len(res) != 1 || res[0].Err != nil {
		t.Fatalf("the second activation: %+v", res)
	}
	if by := commitTo(s2, members, 30, "V", 4, ""); len(by[members[2]]) != 0 {
		t.Fatal("a new activation did not skip a spare that promised a copy")
	}
}

// A full page set (a deletion) is never skipped, and settles what the
// spare was owed: a delta of the keys the skipped commits wrote could not
// drop the pages the full set removes.
func TestAFullCommitIsSentToTheSpare(t *testing.T) {
	c, members, s := openSpares(t, 8)
	by := commitSkipping(t, s, members, 11, 1)
	deliver(c, s, members[1], by[members[1]])
	s.Results()
	d := pager.Delta{Basis: s.State().Stamp, Stamp: stamp(12, 1), Full: true}
	by = map[NodeID][]*Msg{}
	for _, o := range s.CommitAnswering(d, members[1], []byte("answer")) {
		by[o.To] = append(by[o.To], o.Msg)
	}
	if len(by[members[2]]) != 1 || !by[members[2]][0].Delta.Full {
		t.Fatalf("the full commit sends the spare %+v, want the full page set", by[members[2]])
	}
	if s.Owed() != 0 {
		t.Fatalf("Owed = %d after the full commit", s.Owed())
	}
	deliver(c, s, members[1], by[members[1]])
	deliver(c, s, members[2], by[members[2]])
	sameCopy(t, c, members[0], members[2])
	if pages := c[members[2]].Pages("k", "x"); len(pages) != 0 {
		t.Fatalf("the spare holds %v after the deletion", pages)
	}
}

// A quiet session skips no spare, and its commit settles what the spare
// was owed; skipping resumes when the runtime says it is hot again.
func TestAQuietCommitIsSentToTheSpare(t *testing.T) {
	c, members, s := openSpares(t, 8)
	by := commitSkipping(t, s, members, 11, 1)
	deliver(c, s, members[1], by[members[1]])
	s.Results()
	s.Quiet(true)
	by = commitTo(s, members, 12, "W", 2, "")
	if len(by[members[2]]) != 1 {
		t.Fatalf("a quiet commit sends the spare %d message(s), want 1", len(by[members[2]]))
	}
	if d := by[members[2]][0].Delta; d.Basis != stamp(10, 1) || d.Stamp != stamp(12, 1) || len(d.Pages) != 2 {
		t.Fatalf("the spare's delta: basis %v stamp %v, %d pages; want what it missed and this commit", d.Basis, d.Stamp, len(d.Pages))
	}
	if s.Owed() != 0 {
		t.Fatalf("Owed = %d after a quiet commit", s.Owed())
	}
	deliver(c, s, members[1], by[members[1]])
	deliver(c, s, members[2], by[members[2]])
	s.Results()
	sameCopy(t, c, members[0], members[2])
	s.Quiet(false)
	commitSkipping(t, s, members, 13, 3)
}

// A deposed owner's flush sends its spare nothing. Once another owner has
// committed through the deposed owner's own copy, that copy's changes
// since the spare's basis are no longer the skipped commits alone: a
// delta of the skipped commits' pages, stamped with that copy's stamp,
// would leave the spare at the other copies' stamp without the newer
// owner's pages (the simulator's seed 760 of spare copies with
// anti-entropy, where the spare was paused while ownership moved).
func TestADeposedOwnersFlushSendsTheSpareNothing(t *testing.T) {
	c, members, s := openSpares(t, 16)
	by := commitSkipping(t, s, members, 11, 1)
	deliver(c, s, members[1], by[members[1]])
	s.Results()
	// members[1] takes the key over while the spare is unreachable, and
	// commits page N through the old owner's copy.
	reachable := cluster{members[0]: c[members[0]], members[1]: c[members[1]]}
	s2 := NewSession("k", "x", Set{Self: members[1], Members: members, W: 2}, c[members[1]], ballot(20, 2))
	reachable.run(s2, s2.Open())
	if res := s2.Results(); len(res) != 1 || res[0].Err != nil {
		t.Fatalf("the newer owner's activation: %+v", res)
	}
	reachable.run(s2, s2.Commit(pager.Delta{Basis: s2.State().Stamp, Stamp: stamp(21, 2), Pages: []pager.Page{{Key: "N", Data: []byte{7}}}}))
	if res := s2.Results(); len(res) != 1 || res[0].Err != nil {
		t.Fatalf("the newer owner's commit: %+v", res)
	}
	// The old owner, not knowing it was deposed, flushes what it owes.
	out := s.Flush()
	for _, o := range out {
		if o.To == members[2] {
			c[members[2]].Handle(o.Msg, 0)
		}
	}
	spare, _ := c[members[2]].Get("k", "x")
	owner, _ := c[members[0]].Get("k", "x")
	if spare.Stamp == owner.Stamp && !reflect.DeepEqual(c[members[2]].Pages("k", "x"), c[members[0]].Pages("k", "x")) {
		t.Fatalf("the spare holds stamp %v with pages %+v, the other copies %+v", spare.Stamp, c[members[2]].Pages("k", "x"), c[members[0]].Pages("k", "x"))
	}
	if len(out) != 0 {
		t.Fatalf("a deposed owner's flush sent %d message(s)", len(out))
	}
}

// Settle, for an owner that leaves, sends the skipped spare its due and,
// when the spare refuses it for lack of its basis (its copy is gone), the
// catch-up or the full page set on the next call: the spare ends with the
// owner's copy. Flush leaves a refusing spare to the next commit.
func TestSettleCatchesUpASpareThatRefusesItsDue(t *testing.T) {
	c, members, s := openSpares(t, 16)
	for i := range 2 {
		by := commitSkipping(t, s, members, int64(11+i), byte(i))
		deliver(c, s, members[1], by[members[1]])
		s.Results()
	}
	c[members[2]].Drop("k", "x")
	msgs := func(out []Out) []*Msg {
		t.Helper()
		var ms []*Msg
		for _, o := range out {
			if o.To != members[2] {
				t.Fatalf("Settle sends %v a message, want the spare only", o.To)
			}
			ms = append(ms, o.Msg)
		}
		return ms
	}
	due := msgs(s.Settle())
	if len(due) != 1 || due[0].Delta.Basis != stamp(10, 1) {
		t.Fatalf("the first Settle: %d message(s), want the spare's due on basis %v", len(due), stamp(10, 1))
	}
	deliver(c, s, members[2], due)
	up := msgs(s.Settle())
	if len(up) == 0 {
		t.Fatal("the second Settle sends the refusing spare nothing")
	}
	deliver(c, s, members[2], up)
	sameCopy(t, c, members[0], members[2])
	if out := s.Settle(); len(out) != 0 {
		t.Fatalf("a third Settle sends %d message(s), want none", len(out))
	}
}
