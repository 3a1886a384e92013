package replica

import (
	"testing"

	"github.com/casty-go/casty/pager"
)

// A member whose need-full arrives after its round ended (the owner and
// another member made the quorum) gets the full page set with the next
// commit instead of a delta it would refuse again; once it answers a
// newer commit ok, deltas again. Without the rule it stays behind for
// every later commit.
func TestALateNeedFullGetsTheFullPageSetNext(t *testing.T) {
	c, members, s := openCluster(t, 3, 2)
	fast, slow := members[1], members[2]
	commit := func(wall int64, v byte, basis pager.Stamp) map[NodeID]*Msg {
		t.Helper()
		d := pager.Delta{Basis: basis, Stamp: stamp(wall, 1), Pages: []pager.Page{{Key: "V", Data: []byte{v}}}}
		sent := map[NodeID]*Msg{}
		for _, o := range s.Commit(d) {
			if sent[o.To] != nil {
				t.Fatalf("commit %d: two messages to %v", wall, o.To)
			}
			sent[o.To] = o.Msg
		}
		if len(sent) != 2 {
			t.Fatalf("commit %d: %d members sent to, want 2", wall, len(sent))
		}
		return sent
	}
	held := func(id NodeID) pager.Stamp {
		st, _ := c[id].Get("k", "x")
		return st.Stamp
	}

	// Commit 11 everywhere, then the slow member loses its copy.
	for id, m := range commit(11, 1, pager.Stamp{}) {
		s.Step(id, c[id].Handle(m, 0))
	}
	if res := s.Results(); len(res) != 1 || res[0].Err != nil {
		t.Fatalf("commit 11: %+v", res)
	}
	c[slow].Drop("k", "x")

	// Commit 12: the fast member's ack ends the round; the slow member's
	// need-full comes after.
	sent := commit(12, 2, stamp(11, 1))
	s.Step(fast, c[fast].Handle(sent[fast], 0))
	if res := s.Results(); len(res) != 1 || res[0].Err != nil {
		t.Fatalf("commit 12: %+v", res)
	}
	late := c[slow].Handle(sent[slow], 0)
	if late.Status != StatusNeedFull {
		t.Fatalf("the slow member answered %v, want need-full", late.Status)
	}
	if out := s.Step(slow, late); len(out) != 0 {
		t.Fatalf("a late answer started %d requests", len(out))
	}

	// Commit 13: the slow member gets the full page set, the fast one the
	// delta; both apply it.
	sent = commit(13, 3, stamp(12, 1))
	if d := sent[slow].Delta; !d.Full || d.Stamp != stamp(13, 1) {
		t.Fatalf("commit 13 to the member that refused late: full=%v stamp %v, want the full page set at 13", d.Full, d.Stamp)
	}
	if sent[fast].Delta.Full {
		t.Fatal("commit 13 to the up-to-date member is a full page set")
	}
	for _, id := range []NodeID{slow, fast} {
		if r := c[id].Handle(sent[id], 0); r.Status != StatusOK {
			t.Fatalf("commit 13 at %v: %v", id, r.Status)
		} else {
			s.Step(id, r)
		}
	}
	if res := s.Results(); len(res) != 1 || res[0].Err != nil {
		t.Fatalf("commit 13: %+v", res)
	}
	if got := held(slow); got != stamp(13, 1) {
		t.Fatalf("the slow member holds %v, want 13", got)
	}

	// Its ok to 13 replaced the memory, and the need-full of 12 arriving
	// again (a duplicate) is older news: commit 14 is a delta for both.
	s.Step(slow, late)
	sent = commit(14, 4, stamp(13, 1))
	for id, m := range sent {
		if m.Delta.Full {
			t.Fatalf("commit 14 to %v is a full page set", id)
		}
	}
}
