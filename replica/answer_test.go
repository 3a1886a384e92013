package replica

import (
	"bytes"
	"testing"

	"github.com/casty-go/casty/pager"
)

// openCluster activates key x with members[0] as owner, W of len(members).
func openCluster(t *testing.T, n, w int) (cluster, []NodeID, *Session) {
	t.Helper()
	members := ids(n)
	c := cluster{}
	for _, id := range members {
		c[id] = NewReplica(nil)
	}
	s := NewSession("k", "x", Set{Self: members[0], Members: members, W: w}, c[members[0]], ballot(10, 1))
	c.run(s, s.Open())
	if res := s.Results(); len(res) != 1 || res[0].Err != nil {
		t.Fatalf("activation: %+v", res)
	}
	return c, members, s
}

func oneValue(basis pager.Stamp, wall int64, v byte) pager.Delta {
	return pager.Delta{Basis: basis, Stamp: stamp(wall, 1), Pages: []pager.Page{{Key: "V", Data: []byte{v}}}}
}

// The answer rides only on the commit to the caller's member, and only
// when that member's vote completes the write quorum with the owner's.
func TestCommitCarriesTheAnswerOnlyWhereItsVoteDecides(t *testing.T) {
	answer := []byte("the call's answer")
	c, members, s := openCluster(t, 3, 2)
	out := s.CommitAnswering(oneValue(pager.Stamp{}, 11, 1), members[1], answer)
	if len(out) != 2 {
		t.Fatalf("%d commit messages, want 2", len(out))
	}
	for _, o := range out {
		want := o.To == members[1]
		if got := bytes.Equal(o.Msg.Answer, answer); got != want {
			t.Fatalf("commit to %v carries the answer: %v, want %v", o.To, got, want)
		}
		reply := c[o.To].Handle(o.Msg, 0)
		if got := Decides(o.Msg, reply); got != want {
			t.Fatalf("Decides for %v: %v, want %v (reply %v voter=%v)", o.To, got, want, reply.Status, reply.Voter)
		}
		s.Step(o.To, reply)
	}
	if res := s.Results(); len(res) != 1 || res[0].Err != nil {
		t.Fatalf("the commit's own round: %+v", res)
	}

	// W = 3: the caller's vote alone does not decide; nothing is attached.
	_, members, s = openCluster(t, 3, 3)
	for _, o := range s.CommitAnswering(oneValue(pager.Stamp{}, 11, 1), members[1], answer) {
		if len(o.Msg.Answer) > 0 {
			t.Fatalf("W=3: the commit to %v carries the answer", o.To)
		}
	}
	// The caller is the owner, or not a replica: nothing is attached.
	for _, to := range []NodeID{members[0], {99}} {
		_, _, s = openCluster(t, 3, 2)
		for _, o := range s.CommitAnswering(oneValue(pager.Stamp{}, 11, 1), to, answer) {
			if len(o.Msg.Answer) > 0 {
				t.Fatalf("caller %v: the commit to %v carries the answer", to, o.To)
			}
		}
	}
	// A commit in several parts: nothing is attached.
	_, members, s = openCluster(t, 3, 2)
	s.set.Batch = 1
	big := pager.Delta{Stamp: stamp(11, 1), Pages: []pager.Page{{Key: "A", Data: []byte{1}}, {Key: "B", Data: []byte{2}}}}
	for _, o := range s.CommitAnswering(big, members[1], answer) {
		if len(o.Msg.Answer) > 0 {
			t.Fatal("a commit in parts carries the answer")
		}
	}
}

// A replica that refuses the commit, or accepts it without a vote, does
// not decide it: its runtime must wait for the owner's answer.
func TestOnlyAVotingAcceptanceDecides(t *testing.T) {
	answer := []byte("a")
	// Fenced: the caller's replica promised a newer owner.
	c, members, s := openCluster(t, 3, 2)
	c[members[1]].Handle(&Msg{Op: OpPrepare, Kind: "k", Key: "x", Ballot: ballot(20, 2)}, 0)
	for _, o := range s.CommitAnswering(oneValue(pager.Stamp{}, 11, 1), members[1], answer) {
		if o.To != members[1] {
			continue
		}
		if reply := c[o.To].Handle(o.Msg, 0); reply.Status != StatusStale || Decides(o.Msg, reply) {
			t.Fatalf("a fenced replica's answer %v decides the commit", reply.Status)
		}
	}
	// Not a voter: a member that entered the range on a newer placement
	// than it has synced.
	point := func(_, key string) uint64 { return 5 }
	c, members, s = openCluster(t, 3, 2)
	newcomer := NewReplica(point)
	newcomer.Joined()
	newcomer.Unsync("k", Range{Start: 1, End: 9})
	c[members[1]] = newcomer
	for _, o := range s.CommitAnswering(oneValue(pager.Stamp{}, 11, 1), members[1], answer) {
		if o.To != members[1] {
			continue
		}
		if len(o.Msg.Answer) == 0 {
			t.Fatal("the owner attached no answer")
		}
		reply := c[o.To].Handle(o.Msg, 0)
		if reply.Status != StatusOK || reply.Voter || Decides(o.Msg, reply) {
			t.Fatalf("an unsynced member's acceptance (%v voter=%v) decides the commit", reply.Status, reply.Voter)
		}
	}
	// A reply to another commit never decides this one.
	req := &Msg{Op: OpCommit, Ballot: ballot(10, 1), Answer: answer, Delta: &pager.Delta{Stamp: stamp(11, 1)}}
	for _, reply := range []*Msg{
		{Op: OpAck, Status: StatusOK, Voter: true, Ballot: ballot(10, 1), Stamp: stamp(12, 1)},
		{Op: OpAck, Status: StatusOK, Voter: true, Ballot: ballot(9, 1), Stamp: stamp(11, 1)},
		{Op: OpAck, Status: StatusPending, Voter: true, Ballot: ballot(10, 1), Stamp: stamp(11, 1)},
	} {
		if Decides(req, reply) {
			t.Fatalf("reply %+v decides a commit it does not answer", reply)
		}
	}
	if !Decides(req, &Msg{Op: OpAck, Status: StatusOK, Voter: true, Ballot: ballot(10, 1), Stamp: stamp(11, 1)}) {
		t.Fatal("the matching voting acceptance does not decide")
	}
}

// A read's answer rides only on the confirm to the caller's member, with
// the owner's state, and only where that member's reply is the one the
// read quorum still needs (q at most the owner's own confirmation plus
// one); that reply then decides the round for the caller's member.
func TestConfirmCarriesTheAnswerOnlyWhereItsReplyDecides(t *testing.T) {
	answer := []byte("the read's answer")
	c, members, s := openCluster(t, 3, 2) // q = 2
	c.run(s, s.Commit(oneValue(pager.Stamp{}, 11, 1)))
	if res := s.Results(); len(res) != 1 || res[0].Err != nil {
		t.Fatalf("commit: %+v", res)
	}
	owner := s.State()
	out := s.ConfirmAnswering(members[2], answer)
	if len(out) != 2 {
		t.Fatalf("%d confirm messages, want 2", len(out))
	}
	for _, o := range out {
		want := o.To == members[2]
		if got := bytes.Equal(o.Msg.Answer, answer); got != want {
			t.Fatalf("confirm to %v carries the answer: %v, want %v", o.To, got, want)
		}
		if want && (o.Msg.Accepted != owner.Accepted || o.Msg.Stamp != owner.Stamp) {
			t.Fatalf("the answering confirm names state %v/%v, the owner's is %v/%v", o.Msg.Accepted, o.Msg.Stamp, owner.Accepted, owner.Stamp)
		}
		reply := c[o.To].Handle(o.Msg, 0)
		if got := Decides(o.Msg, reply); got != want {
			t.Fatalf("Decides for %v: %v, want %v (reply %v)", o.To, got, want, reply.Status)
		}
		s.Step(o.To, reply)
	}
	if res := s.Results(); len(res) != 1 || res[0].Err != nil || res[0].Round != RoundConfirm {
		t.Fatalf("the confirm's own round: %+v", res)
	}

	// q = 3 (W = 1): the caller's reply alone does not decide; q = 1
	// (W = 3): the owner's own copy decided before anything was sent.
	for _, w := range []int{1, 3} {
		_, members, s := openCluster(t, 3, w)
		for _, o := range s.ConfirmAnswering(members[1], answer) {
			if len(o.Msg.Answer) > 0 {
				t.Fatalf("W=%d: the confirm to %v carries the answer", w, o.To)
			}
		}
	}
	// The caller is the owner, or not a replica: nothing is attached.
	for _, to := range []NodeID{members[0], {99}} {
		_, _, s := openCluster(t, 3, 2)
		for _, o := range s.ConfirmAnswering(to, answer) {
			if len(o.Msg.Answer) > 0 {
				t.Fatalf("caller %v: the confirm to %v carries the answer", to, o.To)
			}
		}
	}
}

// A confirm is decided at the caller's member only by an ok for its
// ballot from a copy that holds nothing newer than the owner's state.
func TestOnlyAnUpToDateConfirmationDecides(t *testing.T) {
	answer := []byte("a")
	// Fenced: the caller's replica promised a newer owner.
	c, members, s := openCluster(t, 3, 2)
	c[members[1]].Handle(&Msg{Op: OpPrepare, Kind: "k", Key: "x", Ballot: ballot(20, 2)}, 0)
	for _, o := range s.ConfirmAnswering(members[1], answer) {
		if o.To != members[1] {
			continue
		}
		if len(o.Msg.Answer) == 0 {
			t.Fatal("the owner attached no answer")
		}
		if reply := c[o.To].Handle(o.Msg, 0); reply.Status != StatusStale || Decides(o.Msg, reply) {
			t.Fatalf("a fenced replica's answer %v decides the read", reply.Status)
		}
	}
	// The caller's copy holds a newer state than the owner's (a commit
	// of an owner since deposed that this owner never saw).
	req := &Msg{Op: OpConfirm, Ballot: ballot(10, 1), Answer: answer, Accepted: ballot(10, 1), Stamp: stamp(11, 1)}
	for _, reply := range []*Msg{
		{Op: OpConfirmed, Status: StatusOK, Ballot: ballot(10, 1), Accepted: ballot(10, 1), Stamp: stamp(12, 1)},
		{Op: OpConfirmed, Status: StatusOK, Ballot: ballot(10, 1), Accepted: ballot(15, 2), Stamp: stamp(9, 2)},
		{Op: OpConfirmed, Status: StatusOK, Ballot: ballot(9, 1), Accepted: ballot(10, 1), Stamp: stamp(11, 1)},
		{Op: OpAck, Status: StatusOK, Voter: true, Ballot: ballot(10, 1), Stamp: stamp(11, 1)},
	} {
		if Decides(req, reply) {
			t.Fatalf("reply %+v decides a read it must not", reply)
		}
	}
	for _, reply := range []*Msg{
		{Op: OpConfirmed, Status: StatusOK, Ballot: ballot(10, 1), Accepted: ballot(10, 1), Stamp: stamp(11, 1)},
		{Op: OpConfirmed, Status: StatusOK, Ballot: ballot(10, 1), Accepted: ballot(10, 1), Stamp: stamp(10, 1)},
	} {
		if !Decides(req, reply) {
			t.Fatalf("an up-to-date confirmation %+v does not decide", reply)
		}
	}
}
