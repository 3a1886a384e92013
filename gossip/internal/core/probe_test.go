package core

import (
	"testing"
	"time"
)

func suspected(out Output, id NodeID) bool {
	for _, e := range out.Events {
		if e.Kind == EventSuspect && e.Member.ID == id {
			return true
		}
	}
	return false
}

// probeOf runs n's next anti-entropy round and returns the ALIVE
// non-neighbour it probed.
func probeOf(t *testing.T, tn *testNet, n *Node) Peer {
	t.Helper()
	out := n.Tick(n.nextSync)
	for _, s := range out.Sends {
		if s.Msg.Kind != KindSyncDigest || !s.Msg.Flag {
			continue
		}
		if m, ok := n.Member(s.To.ID); ok && m.Status == Alive && !n.isActive(s.To.ID) {
			return s.To
		}
	}
	t.Fatalf("the anti-entropy round probed no ALIVE non-neighbour: %v", out.Sends)
	return Peer{}
}

func TestAntiEntropyRoundProbesAnAliveNonNeighbour(t *testing.T) {
	tn := cluster(t, 10)
	n := tn.nodes["a0:1"]
	seen := map[NodeID]bool{}
	for range 20 {
		p := probeOf(t, tn, n)
		if n.isActive(p.ID) || p.ID == n.self.ID {
			t.Fatalf("probed %v, an active neighbour or self", p)
		}
		seen[p.ID] = true
	}
	if len(seen) < 2 {
		t.Fatalf("20 rounds probed %d distinct members, want a random choice", len(seen))
	}
}

func TestFailedProbeRaisesARefutableSuspicion(t *testing.T) {
	tn := cluster(t, 10)
	n := tn.nodes["a0:1"]
	p := probeOf(t, tn, n)
	out := n.LinkDown(n.now, p.Addr, LinkLost)
	if !suspected(out, p.ID) {
		t.Fatalf("a failed probe of ALIVE %v raised no suspicion", p)
	}
	// the member is in fact alive: it hears the suspicion and refutes
	tn.now = n.now
	tn.out("a0:1", out)
	tn.run()
	tn.advance(2 * DefaultConfig().SuspicionTimeout)
	if inc := tn.nodes[p.Addr].Self().Incarnation; inc == 0 {
		t.Fatal("the suspected member did not refute")
	}
	for _, o := range tn.order {
		if o != p.Addr && tn.status(o, p.Addr) != Alive {
			t.Fatalf("%s sees the refuted member %v", o, tn.status(o, p.Addr))
		}
		if c := tn.count(o, EventDead, p.Addr); c != 0 {
			t.Fatalf("%s declared the live member dead", o)
		}
	}
}

func TestFailedNeighborRequestRaisesASuspicion(t *testing.T) {
	tn := cluster(t, 10)
	n := tn.nodes["a0:1"]
	nb := n.Active()[0]
	n.nextPromote = time.Time{}
	out := n.LinkDown(tn.now, nb.Addr, KeepaliveFailed) // frees a slot: a NEIGHBOR request goes out
	var c Peer
	for _, s := range out.Sends {
		if s.Msg.Kind == KindNeighbor {
			c = s.To
		}
	}
	if c.ID.IsZero() {
		t.Fatalf("no NEIGHBOR request after losing a neighbour: %v", out.Sends)
	}
	if out := n.LinkDown(tn.now, c.Addr, LinkLost); !suspected(out, c.ID) {
		t.Fatalf("a failed NEIGHBOR request to ALIVE %v raised no suspicion", c)
	}
}

func TestLinkLossOfAnUndialledNonNeighbourRaisesNoSuspicion(t *testing.T) {
	tn := cluster(t, 10)
	n := tn.nodes["a0:1"]
	n.watched = nil
	for _, a := range tn.order[1:] {
		id := tn.nodes[a].Self().ID
		if n.isActive(id) {
			continue
		}
		if out := n.LinkDown(tn.now, a, LinkLost); suspected(out, id) {
			t.Fatalf("the loss of a link nobody dialled as overlay suspected %s", a)
		}
	}
}

func TestIsolatedNodeDoesNotSuspectOnAFailedDial(t *testing.T) {
	tn := cluster(t, 10)
	n := tn.nodes["a0:1"]
	p := probeOf(t, tn, n)
	for _, a := range n.Active() {
		n.LinkDown(n.now, a.Addr, KeepaliveFailed)
	}
	n.pending = nil
	if len(n.Active()) != 0 {
		t.Fatal("a0 still has neighbours")
	}
	if out := n.LinkDown(n.now, p.Addr, LinkLost); suspected(out, p.ID) {
		t.Fatal("a node with no active neighbour suspected a member whose dial failed")
	}
}

func TestOneDialSuspicionAtATime(t *testing.T) {
	tn := cluster(t, 10)
	n := tn.nodes["a0:1"]
	var others []Peer
	for _, a := range tn.order[1:] {
		if p := tn.nodes[a].Self().Peer(); !n.isActive(p.ID) {
			others = append(others, p)
		}
	}
	if len(others) < 3 {
		t.Skip("too few non-neighbours")
	}
	for _, p := range others[:3] {
		n.watchDial(p)
	}
	if out := n.LinkDown(n.now, others[0].Addr, LinkLost); !suspected(out, others[0].ID) {
		t.Fatal("first failed dial: no suspicion")
	}
	if out := n.LinkDown(n.now, others[1].Addr, LinkLost); suspected(out, others[1].ID) {
		t.Fatal("second failed dial suspected while the first dial suspicion runs")
	}
	// once the first expires the next failed dial counts again
	n.Tick(n.now.Add(DefaultConfig().SuspicionTimeout))
	if m, _ := n.Member(others[0].ID); m.Status != Dead {
		t.Fatalf("the unrefuted suspicion is %v, want dead", m.Status)
	}
	if out := n.LinkDown(n.now, others[2].Addr, LinkLost); !suspected(out, others[2].ID) {
		t.Fatal("a failed dial after the previous suspicion expired raised no suspicion")
	}
}
