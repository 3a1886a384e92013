package replica

import (
	"errors"
	"reflect"
	"testing"

	"github.com/casty-go/casty/pager"
)

func ballot(wall int64, node byte) Ballot { return Ballot{Wall: wall, Node: [16]byte{node}} }
func stamp(wall int64, node byte) pager.Stamp {
	return pager.Stamp{Wall: wall, Node: [16]byte{node}}
}

func commitMsg(b Ballot, d pager.Delta) *Msg {
	return &Msg{Op: OpCommit, Kind: "k", Key: "x", Ballot: b, Delta: &d}
}

func TestReplicaRefusesLowerBallots(t *testing.T) {
	r := NewReplica(nil)
	if got := r.Handle(&Msg{Op: OpPrepare, Kind: "k", Key: "x", Ballot: ballot(5, 1)}, 0); got.Status != StatusOK || got.Op != OpPromise {
		t.Fatalf("first prepare: %v %v", got.Op, got.Status)
	}
	for _, m := range []*Msg{
		{Op: OpPrepare, Kind: "k", Key: "x", Ballot: ballot(4, 9)},
		commitMsg(ballot(4, 9), pager.Delta{Stamp: stamp(10, 9), Pages: []pager.Page{{Key: "V", Data: []byte{1}}}}),
		{Op: OpConfirm, Kind: "k", Key: "x", Ballot: ballot(4, 9)},
	} {
		got := r.Handle(m, 0)
		if got.Status != StatusStale || got.Promised != ballot(5, 1) {
			t.Fatalf("%v with a lower ballot: %v, promised %v", m.Op, got.Status, got.Promised)
		}
	}
	if st, _ := r.Get("k", "x"); !st.Stamp.IsZero() {
		t.Fatalf("a refused commit changed the state: %v", st.Stamp)
	}
}

func TestReplicaCommitRaisesThePromiseAndRecordsTheBallot(t *testing.T) {
	r := NewReplica(nil)
	got := r.Handle(commitMsg(ballot(7, 2), pager.Delta{Stamp: stamp(8, 2), Pages: []pager.Page{{Key: "V", Data: []byte{1}}}}), 0)
	if got.Status != StatusOK || got.Stamp != stamp(8, 2) {
		t.Fatalf("commit over the empty state: %v, stamp %v", got.Status, got.Stamp)
	}
	st, _ := r.Get("k", "x")
	if st.Promised != ballot(7, 2) || st.Accepted != ballot(7, 2) || st.Stamp != stamp(8, 2) {
		t.Fatalf("state %+v", st)
	}
	// A delta over another basis: need full; a full set heals it.
	got = r.Handle(commitMsg(ballot(7, 2), pager.Delta{Basis: stamp(9, 2), Stamp: stamp(11, 2), Pages: []pager.Page{{Key: "V", Data: []byte{3}}}}), 0)
	if got.Status != StatusNeedFull || got.Stamp != stamp(11, 2) {
		t.Fatalf("delta over a missed commit: %v (ack names %v)", got.Status, got.Stamp)
	}
	got = r.Handle(commitMsg(ballot(7, 2), pager.Delta{Stamp: stamp(11, 2), Full: true, Pages: []pager.Page{{Key: "V", Data: []byte{3}}}}), 0)
	if got.Status != StatusOK {
		t.Fatalf("full set: %v", got.Status)
	}
	if p := r.Pages("k", "x"); len(p) != 1 || p[0].Data[0] != 3 {
		t.Fatalf("pages %+v", p)
	}
}

// SetRaised's function hears every rise of a copy's promise — a prepare or
// a commit of a higher ballot, an Adopt of a copy accepted above it — and
// nothing else: not a commit of the ballot already promised (an owner's
// every commit), nor a refused lower ballot, nor a confirm.
func TestReplicaReportsEachRiseOfAPromise(t *testing.T) {
	r := NewReplica(nil)
	var heard []Ballot
	r.SetRaised(func(kind, key string, b Ballot) {
		if kind != "k" || key != "x" {
			t.Errorf("raised for %s/%s", kind, key)
		}
		heard = append(heard, b)
	})
	page := func(w int64) pager.Delta {
		return pager.Delta{Stamp: stamp(w, 1), Full: true, Pages: []pager.Page{{Key: "V", Data: []byte{byte(w)}}}}
	}
	r.Handle(&Msg{Op: OpPrepare, Kind: "k", Key: "x", Ballot: ballot(5, 1)}, 0)
	r.Handle(commitMsg(ballot(5, 1), page(6)), 0)
	r.Handle(commitMsg(ballot(5, 1), page(7)), 0)
	r.Handle(&Msg{Op: OpPrepare, Kind: "k", Key: "x", Ballot: ballot(4, 2)}, 0) // refused
	r.Handle(&Msg{Op: OpConfirm, Kind: "k", Key: "x", Ballot: ballot(9, 2)}, 0)
	r.Handle(commitMsg(ballot(8, 2), page(8)), 0) // another owner's commit, no prepare here
	if _, err := r.Adopt("k", Record{Key: "x", Accepted: ballot(7, 3), Stamp: stamp(5, 3)}); err != nil {
		t.Fatal(err) // older than the copy: not adopted, nothing raised
	}
	if _, err := r.Adopt("k", Record{Key: "x", Accepted: ballot(12, 3), Stamp: stamp(12, 3), Pages: []pager.Page{{Key: "V", Data: []byte{1}}}}); err != nil {
		t.Fatal(err)
	}
	if want := []Ballot{ballot(5, 1), ballot(8, 2), ballot(12, 3)}; !reflect.DeepEqual(heard, want) {
		t.Fatalf("raised %v, want %v", heard, want)
	}
}

func TestReplicaFullHealsAnOrphan(t *testing.T) {
	r := NewReplica(nil)
	// An orphan: a failed commit of an old owner with a newer stamp.
	r.Handle(commitMsg(ballot(1, 1), pager.Delta{Stamp: stamp(50, 1), Pages: []pager.Page{{Key: "V", Data: []byte{9}}}}), 0)
	// The new owner adopted an older state (by ballot) and re-installs it.
	got := r.Handle(commitMsg(ballot(2, 2), pager.Delta{Stamp: stamp(20, 1), Full: true, Pages: []pager.Page{{Key: "V", Data: []byte{4}}}}), 0)
	if got.Status != StatusOK {
		t.Fatalf("re-install over an orphan: %v %s", got.Status, got.Reason)
	}
	st, _ := r.Get("k", "x")
	if st.Accepted != ballot(2, 2) || st.Stamp != stamp(20, 1) {
		t.Fatalf("state %+v", st)
	}
}

func TestReplicaRefusesAnOlderPlacement(t *testing.T) {
	r := NewReplica(nil)
	r.Observe(4)
	got := r.Handle(&Msg{Op: OpPrepare, Kind: "k", Key: "x", Ballot: ballot(5, 1), Version: 3}, 0)
	if got.Status != StatusBehind || got.Version != 4 {
		t.Fatalf("prepare of placement 3 at a replica on 4: %v (version %d)", got.Status, got.Version)
	}
	// A newer placement than the node adopted: promised, but no vote (the
	// node has not marked what it enters there), and the fence rises.
	if got := r.Handle(&Msg{Op: OpPrepare, Kind: "k", Key: "x", Ballot: ballot(5, 1), Version: 6}, 0); got.Status != StatusOK || got.Voter {
		t.Fatalf("newer placement: %v voter=%v", got.Status, got.Voter)
	}
	if got := r.Handle(&Msg{Op: OpPrepare, Kind: "k", Key: "x", Ballot: ballot(6, 1), Version: 5}, 0); got.Status != StatusBehind || got.Version != 6 {
		t.Fatalf("placement 5 after one of 6 was seen: %v (version %d)", got.Status, got.Version)
	}
}

func TestNewcomerVotesOnlyOnceSynced(t *testing.T) {
	point := func(_, key string) uint64 { return uint64(len(key)) }
	r := NewReplica(point)
	r.Joined()
	r.Observe(1)
	prep := &Msg{Op: OpPrepare, Kind: "k", Key: "xx", Ballot: ballot(5, 1), Version: 1}
	if got := r.Handle(prep, 0); got.Status != StatusOK || got.Voter {
		t.Fatalf("a newcomer's promise: %v voter=%v", got.Status, got.Voter)
	}
	rng := Range{Start: 1, End: 2} // holds point 2 ("xx")
	r.Unsync("k", rng)
	if got := r.Handle(&Msg{Op: OpSync, Kind: "k", Ranges: []Range{rng}, Version: 1}, 0); got.Status != StatusJoining {
		t.Fatalf("a newcomer's answer to a sync of a range it has not synced itself: %v", got.Status)
	}
	y := NewSync("k", []Range{rng}, 1, 0, []NodeID{{1}, {2}, {3}}, SyncNeed(3, 2), r, 0)
	out := y.Start()
	if len(out) != 3 {
		t.Fatalf("%d requests, want 3", len(out))
	}
	holder := NewReplica(point)
	holder.Observe(1)
	w := commitMsg(ballot(3, 3), pager.Delta{Stamp: stamp(4, 3), Pages: []pager.Page{{Key: "V", Data: []byte{7}}}})
	w.Key, w.Version = "xx", 1
	holder.Handle(w, 0)
	for i, o := range out[:2] {
		src := holder
		if i == 1 {
			src = NewReplica(point) // a member that missed the write
			src.Observe(1)
		}
		y.Step(o.To, src.Handle(o.Msg, 0))
	}
	if !y.Done() {
		t.Fatal("two of three answered: the sync is not done")
	}
	if got := r.Handle(&Msg{Op: OpPrepare, Kind: "k", Key: "xx", Ballot: ballot(6, 1), Version: 1}, 0); !got.Voter {
		t.Fatal("synced range: the newcomer does not vote")
	}
	if st, _ := r.Get("k", "xx"); st.Stamp != stamp(4, 3) || st.Accepted != ballot(3, 3) {
		t.Fatalf("the synced copy: %+v", st)
	}
}

// A settled member, one with no unsynced range of the kind, votes without
// hashing the key to its ring point: a hot key's every commit asks for
// its vote twice (the owner's own copy and the other replica's).
func TestASettledMemberVotesWithoutHashing(t *testing.T) {
	hashed := 0
	r := NewReplica(func(_, key string) uint64 { hashed++; return uint64(len(key)) })
	r.Observe(1)
	w := commitMsg(ballot(3, 3), pager.Delta{Stamp: stamp(4, 3), Pages: []pager.Page{{Key: "V", Data: []byte{7}}}})
	w.Key, w.Version = "xx", 1
	if got := r.Handle(w, 0); got.Status != StatusOK || !got.Voter {
		t.Fatalf("a settled member's ack: %v voter=%v", got.Status, got.Voter)
	}
	if got := r.Handle(&Msg{Op: OpPrepare, Kind: "k", Key: "xx", Ballot: ballot(5, 1), Version: 1}, 0); !got.Voter {
		t.Fatal("a settled member's promise is not a vote")
	}
	if hashed != 0 {
		t.Fatalf("the key was hashed %d times with no unsynced range", hashed)
	}
	r.Unsync("k", Range{Start: 5, End: 9}) // elsewhere: "xx" is at 2
	if got := r.Handle(&Msg{Op: OpPrepare, Kind: "k", Key: "xx", Ballot: ballot(6, 1), Version: 1}, 0); !got.Voter {
		t.Fatal("a range elsewhere is unsynced: the key's vote is lost")
	}
	r.Unsync("k", Range{Start: 1, End: 2})
	if got := r.Handle(&Msg{Op: OpPrepare, Kind: "k", Key: "xx", Ballot: ballot(7, 1), Version: 1}, 0); got.Voter {
		t.Fatal("the key's range is unsynced: it still votes")
	}
	if hashed != 2 {
		t.Fatalf("the key was hashed %d times for the two votes with unsynced ranges, want 2", hashed)
	}
}

// A sync's answer lists the copies held in the ranges asked, every one of
// them hashed to its ring point: once per copy, however many syncs ask —
// a member waiting for a removed member's copies asks every second.
func TestSyncAnswersHashEachKeyOnce(t *testing.T) {
	hashed := map[string]int{}
	r := NewReplica(func(_, key string) uint64 { hashed[key]++; return uint64(len(key)) })
	r.Observe(1)
	for i, k := range []string{"a", "bb", "ccc"} {
		w := commitMsg(ballot(3, 3), pager.Delta{Stamp: stamp(int64(4+i), 3), Pages: []pager.Page{{Key: "V", Data: []byte{byte(i)}}}})
		w.Key, w.Version = k, 1
		if got := r.Handle(w, 0); got.Status != StatusOK {
			t.Fatalf("commit of %s: %v", k, got.Status)
		}
	}
	for range 3 {
		got := r.Handle(&Msg{Op: OpSync, Kind: "k", Ranges: []Range{{Start: 1, End: 2}}, Version: 1}, 0)
		if len(got.Records) != 1 || got.Records[0].Key != "bb" {
			t.Fatalf("a sync of (1, 2]: %+v", got.Records)
		}
	}
	for _, k := range []string{"a", "bb", "ccc"} {
		if hashed[k] != 1 {
			t.Fatalf("%s hashed %d times for three syncs, want once", k, hashed[k])
		}
	}
	r.Drop("k", "bb")
	w := commitMsg(ballot(3, 3), pager.Delta{Stamp: stamp(9, 3), Pages: []pager.Page{{Key: "V", Data: []byte{9}}}})
	w.Key, w.Version = "bb", 1
	r.Handle(w, 0)
	if got := r.Handle(&Msg{Op: OpSync, Kind: "k", Ranges: []Range{{Start: 1, End: 2}}, Version: 1}, 0); len(got.Records) != 1 || got.Records[0].Stamp != stamp(9, 3) {
		t.Fatalf("a sync after bb came back: %+v", got.Records)
	}
}

// cluster wires sessions to replicas in memory, delivering every request.
type cluster map[NodeID]*Replica

func (c cluster) run(s *Session, out []Out) {
	for len(out) > 0 {
		o := out[0]
		out = out[1:]
		if r, ok := c[o.To]; ok {
			out = append(out, s.Step(o.To, r.Handle(o.Msg, 0))...)
		}
	}
}

func ids(n int) []NodeID {
	out := make([]NodeID, n)
	for i := range out {
		out[i] = NodeID{byte(i + 1)}
	}
	return out
}

// openedOnThree returns three members' replicas and a session of the
// first, W=2, that has run its activation round (its result not taken).
func openedOnThree() (cluster, []NodeID, *Session) {
	members := ids(3)
	c := cluster{}
	for _, id := range members {
		c[id] = NewReplica(nil)
	}
	a := NewSession("k", "x", Set{Self: members[0], Members: members, W: 2}, c[members[0]], ballot(10, 1))
	c.run(a, a.Open())
	return c, members, a
}

func TestSessionActivatesCommitsAndIsFencedByANewerOwner(t *testing.T) {
	c, members, a := openedOnThree()
	if res := a.Results(); len(res) != 1 || res[0].Err != nil || res[0].Round != RoundPrepare {
		t.Fatalf("activation: %+v", res)
	}
	c.run(a, a.Commit(pager.Delta{Stamp: stamp(11, 1), Pages: []pager.Page{{Key: "V", Data: []byte{1}}}}))
	if res := a.Results(); len(res) != 1 || res[0].Err != nil || res[0].State.Stamp != stamp(11, 1) {
		t.Fatalf("commit: %+v", res)
	}
	// A second owner (another view) activates with a higher ballot and
	// adopts the commit from a quorum that does not include the first owner.
	delete(c, members[0])
	b := NewSession("k", "x", Set{Self: members[1], Members: members, W: 2}, c[members[1]], ballot(20, 2))
	c.run(b, b.Open())
	res := b.Results()
	if len(res) != 1 || res[0].Err != nil || res[0].State.Stamp != stamp(11, 1) {
		t.Fatalf("second activation adopted %+v", res)
	}
	// The first owner's next commit is refused: fenced, and reported as
	// applied (its own copy took it before the others refused).
	c[members[0]] = a.local
	c.run(a, a.Commit(pager.Delta{Basis: stamp(11, 1), Stamp: stamp(12, 1), Pages: []pager.Page{{Key: "V", Data: []byte{2}}}}))
	res = a.Results()
	if len(res) != 1 || !errors.Is(res[0].Err, ErrFenced) || !res[0].Applied || !a.Over() {
		t.Fatalf("stale owner's commit: %+v", res)
	}
}

// A confirmation that answers an earlier confirm round of the same owner
// (same ballot: late, or duplicated) is not counted by a later one: it may
// predate the later read, and a newer owner's write acknowledged in
// between would be missed — a stale read.
func TestALateConfirmationCountsOnlyForItsOwnRound(t *testing.T) {
	c, members, a := openedOnThree()
	a.Results()
	c.run(a, a.Commit(pager.Delta{Stamp: stamp(11, 1), Pages: []pager.Page{{Key: "V", Data: []byte{1}}}}))
	a.Results()
	// A first read: the second member's confirmation is held back.
	var late *Msg
	for _, o := range a.Confirm() {
		if o.To == members[1] {
			late = c[o.To].Handle(o.Msg, 0)
			continue
		}
		c.run(a, a.Step(o.To, c[o.To].Handle(o.Msg, 0)))
	}
	if res := a.Results(); len(res) != 1 || res[0].Err != nil || res[0].Round != RoundConfirm {
		t.Fatalf("first read: %+v", res)
	}
	// A newer owner, with the other two members, activates and writes.
	others := cluster{members[1]: c[members[1]], members[2]: c[members[2]]}
	b := NewSession("k", "x", Set{Self: members[1], Members: members, W: 2}, c[members[1]], ballot(20, 2))
	others.run(b, b.Open())
	others.run(b, b.Commit(pager.Delta{Basis: stamp(11, 1), Stamp: stamp(21, 2), Pages: []pager.Page{{Key: "V", Data: []byte{2}}}}))
	if res := b.Results(); len(res) != 2 || res[1].Err != nil {
		t.Fatalf("the newer owner's write: %+v", res)
	}
	// The first owner's second read: its own copy confirms at once; the
	// late confirmation of the first read must not complete the quorum.
	outs := a.Confirm()
	a.Step(members[1], late)
	if res := a.Results(); len(res) != 0 {
		t.Fatalf("the second read was decided by the first read's late confirmation: %+v", res)
	}
	c.run(a, outs)
	if res := a.Results(); len(res) != 1 || res[0].Err == nil {
		t.Fatalf("the second read, with the newer owner's write acknowledged: %+v, want it refused", res)
	}
}

// AppendResults hands out what Results would, round after round, into
// the caller's buffer, keeping the session's own buffer for the next
// rounds (no allocation for a round's result) without ever handing that
// buffer out: what a caller got stays as it was through later rounds.
func TestAppendResultsReusesTheSessionsBuffer(t *testing.T) {
	c, _, a := openedOnThree()
	var buf [1]Result
	if res := a.AppendResults(buf[:0]); len(res) != 1 || res[0].Err != nil || res[0].Round != RoundPrepare {
		t.Fatalf("activation: %+v", res)
	}
	if res := a.AppendResults(nil); len(res) != 0 {
		t.Fatalf("taken twice: %+v", res)
	}
	var prev []Result // the last round's result, as handed out
	for i := range 3 {
		st := stamp(int64(11+i), 1)
		basis := pager.Stamp{}
		if i > 0 {
			basis = stamp(int64(10+i), 1)
		}
		c.run(a, a.Commit(pager.Delta{Basis: basis, Stamp: st, Pages: []pager.Page{{Key: "V", Data: []byte{byte(i)}}}}))
		if i > 0 && prev[0].State.Stamp != stamp(int64(10+i), 1) {
			t.Fatalf("commit %d overwrote the result of the one before: %+v", i, prev[0])
		}
		res := a.AppendResults(nil)
		if len(res) != 1 || res[0].Err != nil || res[0].Round != RoundCommit || res[0].State.Stamp != st {
			t.Fatalf("commit %d: %+v", i, res)
		}
		prev = res
	}
	if cap(a.results) == 0 {
		t.Fatal("the session dropped its buffer")
	}
}

func TestSessionNeedsAWriteQuorumItsSetCanMeet(t *testing.T) {
	self := NodeID{1}
	s := NewSession("k", "x", Set{Self: self, Members: []NodeID{self}, W: 2}, NewReplica(nil), ballot(1, 1))
	s.Open()
	res := s.Results()
	if len(res) != 1 || !errors.Is(res[0].Err, ErrQuorumUnavailable) {
		t.Fatalf("R=3 W=2 on a one-member cluster: %+v", res)
	}
	one := NewSession("k", "x", Set{Self: self, Members: []NodeID{self}, W: 1}, NewReplica(nil), ballot(1, 1))
	cluster{self: one.local}.run(one, one.Open())
	if res := one.Results(); len(res) != 1 || res[0].Err != nil {
		t.Fatalf("W=1 on a one-member cluster: %+v", res)
	}
}

func TestReadQuorumIntersectsEveryWriteQuorum(t *testing.T) {
	for n := 1; n <= 7; n++ {
		for w := 1; w <= n; w++ {
			q := ReadQuorum(n, w)
			if q+w <= n || q < 1 || q > n {
				t.Fatalf("n=%d w=%d: read quorum %d", n, w, q)
			}
			// A sync must meet every write quorum, and leave too few
			// members unheard to form one under the old placement.
			need := SyncNeed(n, w)
			if need < q || n-need >= w || need > n {
				t.Fatalf("n=%d w=%d: sync need %d", n, w, need)
			}
			// An owner's prepare and confirm meet every write quorum and
			// every sync quorum of the set: an owner left behind by a
			// placement change cannot activate or confirm without
			// hearing of it (with Write(All) the read quorum alone is one).
			if o := OwnerQuorumOf(n, n, w); o < q || o+need <= n || o > n {
				t.Fatalf("n=%d w=%d: owner quorum %d, sync need %d", n, w, o, need)
			}
		}
	}
}

// A replica at its limit refuses state for actors it holds nothing of, and
// keeps serving the ones it holds and the syncs it is asked to adopt.
func TestReplicaLimitRefusesNewActorsOnly(t *testing.T) {
	r := NewReplica(nil)
	page := func(n int) []pager.Page { return []pager.Page{{Key: "V", Data: make([]byte, n)}} }
	commit := func(k string, b Ballot, d pager.Delta) *Msg {
		return &Msg{Op: OpCommit, Kind: "k", Key: k, Ballot: b, Delta: &d}
	}
	if got := r.Handle(commit("x", ballot(1, 1), pager.Delta{Stamp: stamp(2, 1), Pages: page(1000)}), 0); got.Status != StatusOK {
		t.Fatalf("commit under no limit: %v", got.Status)
	}
	r.SetLimit(r.Usage()) // exactly full
	for _, m := range []*Msg{
		{Op: OpPrepare, Kind: "k", Key: "y", Ballot: ballot(3, 1)},
		commit("y", ballot(3, 1), pager.Delta{Stamp: stamp(4, 1), Pages: page(10)}),
	} {
		if got := r.Handle(m, 0); got.Status != StatusFull || got.Reason == "" {
			t.Fatalf("%v of a new actor at the limit: %v %q", m.Op, got.Status, got.Reason)
		}
	}
	if _, held := r.Get("k", "y"); held || r.Keys() != 1 {
		t.Fatalf("a refused actor left a record: %d keys", r.Keys())
	}
	// The actor it holds keeps committing, over the limit if need be.
	if got := r.Handle(commit("x", ballot(1, 1), pager.Delta{Basis: stamp(2, 1), Stamp: stamp(5, 1), Pages: page(5000)}), 0); got.Status != StatusOK {
		t.Fatalf("commit of a held actor at the limit: %v %s", got.Status, got.Reason)
	}
	// A sync is upkeep of acknowledged state: never refused.
	if ok, err := r.Adopt("k", Record{Key: "z", Accepted: ballot(6, 2), Stamp: stamp(7, 2), Pages: page(10)}); !ok || err != nil {
		t.Fatalf("adopt at the limit: %v %v", ok, err)
	}
	r.SetLimit(0)
	if got := r.Handle(&Msg{Op: OpPrepare, Kind: "k", Key: "y", Ballot: ballot(8, 1)}, 0); got.Status != StatusOK {
		t.Fatalf("prepare with the limit lifted: %v", got.Status)
	}
}

// threeHoldingX is three replicas, each holding a committed copy of k/x
// (so each has some replicated state to be at a limit with).
func threeHoldingX() (cluster, []NodeID) {
	members := ids(3)
	c := cluster{}
	for _, id := range members {
		c[id] = NewReplica(nil)
		c[id].Handle(commitMsg(ballot(1, 9), pager.Delta{Stamp: stamp(2, 9), Pages: []pager.Page{{Key: "V", Data: []byte{1}}}}), 0)
	}
	return c, members
}

// An activation whose replicas are full fails with ErrFull (wrapped in
// ErrQuorumUnavailable); with one full replica of three it succeeds.
func TestSessionReportsFullReplicas(t *testing.T) {
	c, members := threeHoldingX()
	c[members[1]].SetLimit(1)
	if _, res := activate(c, members, "new", ballot(10, 1)); len(res) != 1 || res[0].Err != nil {
		t.Fatalf("one full replica of three: %+v", res)
	}
	c[members[2]].SetLimit(1)
	if _, res := activate(c, members, "newer", ballot(11, 1)); !fullRefusal(res) {
		t.Fatalf("two full replicas of three: %+v", res)
	}
}

// activate opens a session on k/key under ballot b, members[0] its owner
// and W 2, and returns it with its results.
func activate(c cluster, members []NodeID, key string, b Ballot) (*Session, []Result) {
	s := NewSession("k", key, Set{Self: members[0], Members: members, W: 2}, c[members[0]], b)
	c.run(s, s.Open())
	return s, s.Results()
}

// fullRefusal reports whether res is one round's failure for full replicas.
func fullRefusal(res []Result) bool {
	return len(res) == 1 && errors.Is(res[0].Err, ErrFull) && errors.Is(res[0].Err, ErrQuorumUnavailable)
}

// An owner whose own copy is at its limit cannot commit a new actor (its
// copy applies every commit first), even when the other replicas promised:
// the activation fails with ErrFull, definite, rather than opening and
// failing its first commit as an indeterminate quorum loss.
func TestSessionOwnerAtItsLimitReportsFull(t *testing.T) {
	c, members := threeHoldingX()
	c[members[0]].SetLimit(1)
	if _, res := activate(c, members, "new", ballot(10, 1)); !fullRefusal(res) {
		t.Fatalf("the owner's own copy full, the other two not: %+v", res)
	}
	// An actor the owner's copy already holds keeps committing.
	b, res := activate(c, members, "x", ballot(11, 1))
	if len(res) != 1 || res[0].Err != nil {
		t.Fatalf("an actor already held: %+v", res)
	}
	c.run(b, b.Commit(pager.Delta{Basis: stamp(2, 9), Stamp: stamp(12, 1), Pages: []pager.Page{{Key: "V", Data: []byte{2}}}}))
	if res := b.Results(); len(res) != 1 || res[0].Err != nil {
		t.Fatalf("committing an actor already held: %+v", res)
	}
}

// A replica asked to sync under a placement newer than the one it adopted
// answers "lagging", which neither counts nor lets the requester skip it:
// it may be a member that stays in the range holding acknowledged writes
// (a leaver answering before it adopted its own removal was skipped as
// "unsynced", and a Write(One) range synced without its only copy).
func TestSyncUnderANewerPlacementIsAskedAgain(t *testing.T) {
	point := func(_, key string) uint64 { return uint64(len(key)) }
	holder := NewReplica(point)
	holder.Observe(1)
	w := commitMsg(ballot(3, 3), pager.Delta{Stamp: stamp(4, 3), Pages: []pager.Page{{Key: "V", Data: []byte{7}}}})
	w.Key, w.Version = "xx", 1
	holder.Handle(w, 0)

	rng := Range{Start: 1, End: 2}
	local := NewReplica(point)
	local.Observe(2)
	local.Unsync("k", rng)
	y := NewSync("k", []Range{rng}, 2, 0, []NodeID{{1}}, SyncNeed(1, 1), local, 0)
	out := y.Start()
	got := holder.Handle(out[0].Msg, 0)
	if got.Status != StatusLagging {
		t.Fatalf("a sync under a placement the replica has not adopted: %v, want lagging", got.Status)
	}
	y.Step(out[0].To, got)
	if y.Done() || len(y.Unsynced()) != 0 {
		t.Fatalf("a lagging answer counted (done %v) or marked the member unsynced (%v)", y.Done(), y.Unsynced())
	}
	holder.Observe(2)
	y.Step(out[0].To, holder.Handle(y.Retry()[0].Msg, 0))
	if !y.Done() {
		t.Fatal("the sync did not finish once the holder adopted the placement")
	}
	if _, ok := local.Get("k", "xx"); !ok {
		t.Fatal("the holder's copy was not adopted")
	}
}

// A duplicated or late full page set of an owner's earlier commit arrives
// after its later commit: the copy must not go back (a full set replaces
// whatever is held, so applying it would lose the later, acknowledged,
// write). replica/sim found it (TestLinearizableWithWholeSetWrites, seed
// 1019): an install duplicated past the next commit.
func TestLateFullSetOfAnEarlierCommitDoesNotTakeTheCopyBack(t *testing.T) {
	r := NewReplica(nil)
	b := ballot(7, 2)
	install := commitMsg(b, pager.Delta{Stamp: stamp(8, 1), Full: true, Pages: []pager.Page{{Key: "V", Data: []byte{1}}}})
	if got := r.Handle(install, 0); got.Status != StatusOK {
		t.Fatalf("install: %v", got.Status)
	}
	if got := r.Handle(commitMsg(b, pager.Delta{Basis: stamp(8, 1), Stamp: stamp(9, 2), Pages: []pager.Page{{Key: "V", Data: []byte{2}}}}), 0); got.Status != StatusOK {
		t.Fatalf("commit: %v", got.Status)
	}
	if got := r.Handle(install, 0); got.Status != StatusOK || got.Stamp != stamp(8, 1) {
		t.Fatalf("the late install: %v (ack names %v)", got.Status, got.Stamp)
	}
	st, _ := r.Get("k", "x")
	if p := r.Pages("k", "x"); st.Stamp != stamp(9, 2) || len(p) != 1 || p[0].Data[0] != 2 {
		t.Fatalf("the copy went back: stamp %v, pages %+v", st.Stamp, p)
	}
	// A newer owner's full set still replaces it (it may heal an orphan).
	if got := r.Handle(commitMsg(ballot(10, 3), pager.Delta{Stamp: stamp(8, 1), Full: true, Pages: []pager.Page{{Key: "V", Data: []byte{1}}}}), 0); got.Status != StatusOK {
		t.Fatalf("a newer owner's install: %v", got.Status)
	}
	if st, _ := r.Get("k", "x"); st.Stamp != stamp(8, 1) || st.Accepted != ballot(10, 3) {
		t.Fatalf("a newer owner's install did not replace the copy: %+v", st)
	}
}

// An owner whose own copy is not a voter's (it entered the range and has
// not synced it) holds an orphan of its own failed commit; its read quorum
// holds nothing. It must serve what the quorum holds, not the orphan: the
// next owner asks the same voters and would not see it, so a read of it
// followed by a read of nothing is not linearizable (replica/sim,
// TestLinearizableWithWholeSetWrites, seed 205).
func TestOwnerServesTheQuorumsStateNotItsUnvotedOrphan(t *testing.T) {
	point := func(_, key string) uint64 { return 2 }
	// Three members, two acknowledgements a write: the other two are the
	// prepare's quorum. (Seed 205 ran Replicas(2), Write(Majority), whose
	// owner's quorum was then its one other member; it is both now,
	// OwnerQuorumOf, so an unsynced owner there cannot activate at all.)
	members := ids(3)
	c := cluster{}
	for _, id := range members {
		c[id] = NewReplica(point)
		c[id].Observe(1)
	}
	self := c[members[0]]
	self.Joined()
	self.Unsync("k", Range{Start: 1, End: 3})
	// The orphan: a failed commit of this owner's earlier activation,
	// taken by its own copy only.
	w := commitMsg(ballot(5, 1), pager.Delta{Stamp: stamp(6, 1), Pages: []pager.Page{{Key: "V", Data: []byte{9}}}})
	w.Version = 1
	if got := self.Handle(w, 0); got.Status != StatusOK || got.Voter {
		t.Fatalf("the orphan commit: %v voter=%v", got.Status, got.Voter)
	}
	s := NewSession("k", "x", Set{Self: members[0], Members: members, W: 2, Version: 1}, self, ballot(7, 1))
	c.run(s, s.Open())
	res := s.Results()
	if len(res) != 1 || res[0].Err != nil || !res[0].State.Stamp.IsZero() {
		t.Fatalf("activation: %+v", res)
	}
	if p := self.Pages("k", "x"); len(p) != 0 {
		t.Fatalf("the owner serves its unvoted orphan: %+v", p)
	}
}

// The owner's own copy answers its prepare at once, then — before the
// other answers are in — promises a newer owner and takes its commit. The
// quorum holds nothing older than that commit's absence; installing the
// adopted state over the copy would lose the newer owner's write (seed
// 4277 of TestLinearizableUnderLossDuplicationAndReordering, when dropping
// an unvoted orphan did not look at the promise). The session is fenced
// instead, and the copy kept.
func TestOwnerNeverInstallsOverANewerOwnersCommit(t *testing.T) {
	members := ids(3)
	c := cluster{}
	for _, id := range members {
		c[id] = NewReplica(nil)
	}
	self := c[members[0]]
	a := NewSession("k", "x", Set{Self: members[0], Members: members, W: 2}, self, ballot(5, 1))
	var toThird *Msg
	for _, o := range a.Open() {
		if o.To == members[2] {
			toThird = o.Msg
		}
	}
	newer := commitMsg(ballot(6, 2), pager.Delta{Stamp: stamp(7, 2), Pages: []pager.Page{{Key: "V", Data: []byte{3}}}})
	for _, id := range members[:2] {
		if got := c[id].Handle(newer, 0); got.Status != StatusOK {
			t.Fatalf("the newer owner's commit on %v: %v", id, got.Status)
		}
	}
	a.Step(members[2], c[members[2]].Handle(toThird, 0))
	res := a.Results()
	if len(res) != 1 || !errors.Is(res[0].Err, ErrFenced) || !a.Over() {
		t.Fatalf("activation whose own copy took a newer owner's commit: %+v", res)
	}
	if st, _ := self.Get("k", "x"); st.Stamp != stamp(7, 2) || st.Accepted != ballot(6, 2) {
		t.Fatalf("the newer owner's write was overwritten: %+v", st)
	}
}

// Only a newcomer still taking its first ranges says so (StatusJoining),
// the one answer casty's sync may leave out; a member that entered a range
// because others left answers StatusUnsynced and is waited for, as it may
// hold the only copy of a write whose other holder went (replica/sim,
// TestLinearizableThroughLeavesSkippingUnsynced).
func TestOnlyANewcomerAnswersJoining(t *testing.T) {
	rng := Range{Start: 1, End: 3}
	sync := &Msg{Op: OpSync, Kind: "k", Ranges: []Range{rng}, Version: 1}
	old := NewReplica(nil)
	old.Observe(1)
	old.Unsync("k", rng)
	if got := old.Handle(sync, 0); got.Status != StatusUnsynced {
		t.Fatalf("a member that entered a range it had not synced: %v, want unsynced", got.Status)
	}
	nc := NewReplica(nil)
	nc.Joined()
	nc.Observe(1)
	nc.Unsync("k", rng)
	if got := nc.Handle(sync, 0); got.Status != StatusJoining {
		t.Fatalf("a newcomer: %v, want joining", got.Status)
	}
	nc.JoinSettled()
	if got := nc.Handle(sync, 0); got.Status != StatusUnsynced {
		t.Fatalf("a newcomer whose first syncs are done: %v, want unsynced", got.Status)
	}
	y := NewSync("k", []Range{rng}, 1, 0, []NodeID{{1}, {2}}, 2, NewReplica(nil), 0)
	y.Start()
	y.Step(NodeID{1}, old.Handle(sync, 0))
	nc2 := NewReplica(nil)
	nc2.Joined()
	nc2.Observe(1)
	nc2.Unsync("k", rng)
	y.Step(NodeID{2}, nc2.Handle(sync, 0))
	if u, j := y.Unsynced(), y.Joining(); len(u) != 2 || len(j) != 1 || j[0] != (NodeID{2}) {
		t.Fatalf("unsynced %v, joining %v: want both unsynced, only the newcomer joining", u, j)
	}
}

// A newcomer left out of a sync's count still hands over the copies it
// has pulled so far, and a sync that left it out (a Copies group) waits
// for them: they may be the only live ones of a write whose holders went
// while it pulled (replica/sim, TestLinearizableLeavingOutNewcomersUnderOtherChanges,
// seed 752 with NoNewcomerCopies).
func TestLeftOutNewcomerHandsOverItsCopies(t *testing.T) {
	point := func(_, key string) uint64 { return uint64(len(key)) }
	rng := Range{Start: 1, End: 2} // holds point 2 ("xx")
	nc := NewReplica(point)
	nc.Joined()
	nc.Observe(1)
	nc.Unsync("k", rng)
	w := commitMsg(ballot(3, 3), pager.Delta{Stamp: stamp(4, 3), Pages: []pager.Page{{Key: "V", Data: []byte{7}}}})
	w.Key, w.Version = "xx", 1
	if _, err := nc.Adopt("k", Record{Key: "xx", Accepted: w.Ballot, Stamp: w.Delta.Stamp, Pages: w.Delta.Pages}); err != nil {
		t.Fatal(err)
	}
	got := nc.Handle(&Msg{Op: OpSync, Kind: "k", Ranges: []Range{rng}, Version: 1}, 0)
	if got.Status != StatusJoining || len(got.Records) != 1 || got.Records[0].Key != "xx" {
		t.Fatalf("a newcomer's answer: %v with %d records, want joining with its copy", got.Status, len(got.Records))
	}

	empty := NewReplica(point) // the member the walk takes instead: it missed the write
	empty.Observe(1)
	local := NewReplica(point)
	local.Observe(1)
	local.Unsync("k", rng)
	y := NewJointSync("k", []Range{rng}, 1, 0, []Group{
		{Members: []NodeID{{1}}, Need: 1},
		{Members: []NodeID{{9}}, Need: 1, Copies: true},
	}, local, 0)
	outs := y.Start()
	if len(outs) != 2 {
		t.Fatalf("%d requests, want one to each group", len(outs))
	}
	for _, o := range outs {
		if o.To == (NodeID{1}) {
			y.Step(o.To, empty.Handle(o.Msg, 0))
		}
	}
	if y.Done() {
		t.Fatal("done before the left-out newcomer handed over its copies")
	}
	if r := y.Retry(); len(r) != 1 || r[0].To != (NodeID{9}) {
		t.Fatalf("retry asks %v, want only the newcomer", r)
	}
	y.Step(NodeID{9}, nc.Handle(outs[1].Msg, 0))
	if !y.Done() {
		t.Fatal("not done once the newcomer handed over its copies")
	}
	if st, ok := local.Get("k", "xx"); !ok || st.Stamp != w.Delta.Stamp {
		t.Fatalf("the newcomer's copy was not adopted: %+v %v", st, ok)
	}
	if len(y.Joining()) != 1 {
		t.Fatalf("joining %v: the newcomer's answer is still not a vote", y.Joining())
	}
}

// A newcomer's copies never stand for its vote: in a group that needs
// votes, a joining answer counts for nothing.
func TestNewcomersCopiesAreNotAVote(t *testing.T) {
	rng := Range{Start: 1, End: 3}
	nc := NewReplica(nil)
	nc.Joined()
	nc.Observe(1)
	nc.Unsync("k", rng)
	y := NewSync("k", []Range{rng}, 1, 0, []NodeID{{2}}, 1, NewReplica(nil), 0)
	outs := y.Start()
	y.Step(NodeID{2}, nc.Handle(outs[0].Msg, 0))
	if y.Done() {
		t.Fatal("a newcomer's joining answer counted as a vote")
	}
	if r := y.Retry(); len(r) != 1 {
		t.Fatalf("the newcomer is not asked again for its vote: %v", r)
	}
}

// An abandoned sync marks nothing synced, whatever answers arrive after.
func TestAbandonedSyncMarksNothing(t *testing.T) {
	rng := Range{Start: 1, End: 3}
	local := NewReplica(nil)
	local.Observe(1)
	local.Unsync("k", rng)
	holder := NewReplica(nil)
	holder.Observe(1)
	y := NewSync("k", []Range{rng}, 1, 0, []NodeID{{2}}, 1, local, 0)
	outs := y.Start()
	y.Abandon()
	y.Step(NodeID{2}, holder.Handle(outs[0].Msg, 0))
	if y.Done() || local.syncedRange("k", rng) {
		t.Fatalf("an abandoned sync finished (done %v) or marked its range", y.Done())
	}
	if len(y.Retry()) != 0 {
		t.Fatal("an abandoned sync asks again")
	}
}

// An owner whose own copy holds an orphan of a failed commit — newer by
// stamp than the state its quorum adopts under a higher ballot — fetches
// that state whole (a holder cannot build a catch-up from a newer copy),
// and its copy then holds exactly the holder's pages: a page only the
// orphan wrote does not survive into the adopted state, which would mix
// the two histories (found by the simulator's check that copies at one
// stamp hold the same pages, Config.Ballast).
func TestAnOrphanPageDoesNotSurviveTheFetch(t *testing.T) {
	members := ids(3)
	c := cluster{}
	for _, id := range members {
		c[id] = NewReplica(nil)
	}
	own, holders := c[members[0]], members[1:]
	// The orphan: an old owner's commit at 30 that reached only this copy,
	// with a page X the adopted state never had.
	orphan := pager.Delta{Stamp: stamp(30, 1), Pages: []pager.Page{{Key: "V", Data: []byte{1}}, {Key: "X", Data: []byte{9}}}}
	if r := own.Handle(commitMsg(ballot(5, 1), orphan), 0); r.Status != StatusOK {
		t.Fatalf("orphan: %v", r.Status)
	}
	// The state a newer owner committed at 20 on the other two.
	for _, id := range holders {
		if r := c[id].Handle(commitMsg(ballot(7, 2), pager.Delta{Stamp: stamp(20, 2), Pages: []pager.Page{{Key: "V", Data: []byte{2}}}}), 0); r.Status != StatusOK {
			t.Fatalf("commit at %v: %v", id, r.Status)
		}
	}
	s := NewSession("k", "x", Set{Self: members[0], Members: members, W: 2}, own, ballot(10, 1))
	c.run(s, s.Open())
	if res := s.Results(); len(res) != 1 || res[0].Err != nil || res[0].State.Stamp != stamp(20, 2) {
		t.Fatalf("activation: %+v, want the state at 20 adopted", res)
	}
	want := c[holders[0]].Pages("k", "x")
	if got := own.Pages("k", "x"); len(got) != len(want) || got[0].Key != "V" || got[0].Data[0] != 2 {
		t.Fatalf("the owner's copy holds %+v after the fetch, want the holder's %+v", got, want)
	}
}

// HandleInto answers what Handle answers, whatever the reused Msg held:
// a runtime recycles its replies, and a field left from an earlier reply
// would reach the next requester.
func TestHandleIntoOverwritesWhatTheReplyHeld(t *testing.T) {
	reqs := []*Msg{
		commitMsg(ballot(7, 2), pager.Delta{Stamp: stamp(8, 2), Pages: []pager.Page{{Key: "V", Data: []byte{1}}}}),
		commitMsg(ballot(7, 2), pager.Delta{Basis: stamp(9, 2), Stamp: stamp(11, 2), Pages: []pager.Page{{Key: "V", Data: []byte{3}}}}), // need-full
		commitMsg(ballot(6, 1), pager.Delta{Stamp: stamp(12, 1), Pages: []pager.Page{{Key: "V", Data: []byte{4}}}}),                     // stale
		{Op: OpConfirm, Kind: "k", Key: "x", Ballot: ballot(7, 2)},
		{Op: OpPrepare, Kind: "k", Key: "y", Ballot: ballot(3, 3)},
	}
	fresh, reused := NewReplica(nil), NewReplica(nil)
	out := &Msg{}
	for i, m := range reqs {
		want := fresh.Handle(m, 0)
		*out = Msg{Op: OpSynced, Status: StatusFull, Voter: true, More: true, Brief: true, Version: 9, Digest: 9,
			Kind: "old", Key: "old", Promised: ballot(99, 9), Accepted: ballot(99, 9), Stamp: stamp(99, 9), Part: 3,
			Have: &pager.Listing{}, Delta: &pager.Delta{}, Reason: "old", Ranges: []Range{{1, 2}},
			Records: []Record{{Key: "old"}}, Facts: []byte{1}, Answer: []byte{2}}
		reused.HandleInto(out, m, 0)
		if !reflect.DeepEqual(out, want) {
			t.Fatalf("request %d (%v): HandleInto gave %+v, Handle %+v", i, m.Op, out, want)
		}
	}
}

// Two members that each still pull a range answer a sync of it
// StatusUnsynced — in an ordinary sync their answers are not votes, and
// it waits — but a copy sync takes their copies: once every member asked
// has handed over what it holds, the range is synced with the newest copy
// of each key any of them held.
func TestACopySyncTakesUnsyncedMembersCopies(t *testing.T) {
	point := func(_, key string) uint64 { return uint64(len(key)) }
	rng := Range{Start: 1, End: 3} // points 2 and 3: "xx", "yyy"
	holder := func(key string, at int64) *Replica {
		r := NewReplica(point)
		r.Observe(1)
		r.Unsync("k", rng)
		if _, err := r.Adopt("k", Record{Key: key, Accepted: ballot(at, 1), Stamp: stamp(at, 1), Pages: []pager.Page{{Key: "V", Data: []byte{byte(at)}}}}); err != nil {
			t.Fatal(err)
		}
		return r
	}
	a, b := holder("xx", 5), holder("yyy", 6)
	if _, err := b.Adopt("k", Record{Key: "xx", Accepted: ballot(4, 1), Stamp: stamp(4, 1), Pages: []pager.Page{{Key: "V", Data: []byte{4}}}}); err != nil {
		t.Fatal(err) // an older copy of "xx" than a's
	}
	members := []NodeID{{1}, {2}}
	by := map[NodeID]*Replica{{1}: a, {2}: b}

	local := NewReplica(point)
	local.Observe(1)
	local.Unsync("k", rng)
	plain := NewSync("k", []Range{rng}, 1, 0, members, 2, local, 0)
	for _, o := range plain.Start() {
		plain.Step(o.To, by[o.To].Handle(o.Msg, 0))
	}
	if plain.Done() {
		t.Fatal("an ordinary sync counted unsynced members as votes")
	}

	y := NewCopySync("k", []Range{rng}, 1, 0, members, local, 0)
	outs := y.Start()
	if len(outs) != 2 || !outs[0].Msg.Copies {
		t.Fatalf("a copy sync's requests: %+v, want one to each member, asking for copies", outs)
	}
	y.Step(outs[0].To, by[outs[0].To].Handle(outs[0].Msg, 0))
	if y.Done() {
		t.Fatal("a copy sync finished before every member handed over its copies")
	}
	y.Step(outs[1].To, by[outs[1].To].Handle(outs[1].Msg, 0))
	if !y.Done() || !local.syncedRange("k", rng) {
		t.Fatal("a copy sync did not finish once every member handed over its copies")
	}
	if st, ok := local.Get("k", "xx"); !ok || st.Stamp != stamp(5, 1) {
		t.Fatalf(`"xx" = %+v (%v), want a's newer copy`, st, ok)
	}
	if st, ok := local.Get("k", "yyy"); !ok || st.Stamp != stamp(6, 1) {
		t.Fatalf(`"yyy" = %+v (%v), want b's copy`, st, ok)
	}

	// Copies travel on the wire.
	raw, err := outs[0].Msg.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if m, err := Decode(raw); err != nil || !m.Copies {
		t.Fatalf("decoded %+v, %v: the copies flag was lost", m, err)
	}
}
