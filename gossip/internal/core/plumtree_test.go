package core

import "testing"

// A node that had to graft a payload turns its links eager and pushes the
// payload to every neighbour instead of announcing it to the lazy ones:
// they may sit behind the same cut of the tree and would each wait
// GraftTimeout in turn (the N = 1000 leave figure had p99 1.03 s from
// exactly that).
func TestGraftedPayloadIsPushedToEveryNeighbour(t *testing.T) {
	tn := cluster(t, 10)
	n := tn.nodes["a0:1"]
	active := n.Active()
	if len(active) < 3 {
		t.Skipf("a0 has %d neighbours; the check needs 3", len(active))
	}
	from := active[0]
	for _, a := range active { // a tree that reaches a0 through none of them
		n.setEager(a.ID, false)
	}
	rec := Member{ID: NodeID{0xfe}, Addr: "new:1", Role: RoleMember, Status: Alive, Incarnation: 1}
	id := idOf(rec)
	now := tn.now
	n.Step(now, &Message{Kind: KindIHave, From: from, IDs: []MsgID{id}})
	out := n.Tick(now.Add(n.cfg.GraftTimeout))
	grafted := false
	for _, s := range out.Sends {
		grafted = grafted || (s.Msg.Kind == KindGraft && s.To.ID == from.ID)
	}
	if !grafted {
		t.Fatal("no GRAFT after GraftTimeout")
	}
	out = n.Step(now.Add(n.cfg.GraftTimeout), &Message{Kind: KindGossip, From: from, Members: []Member{rec}})
	pushed := map[NodeID]bool{}
	for _, s := range out.Sends {
		if s.Msg.Kind == KindGossip {
			pushed[s.To.ID] = true
		}
	}
	for _, a := range active[1:] {
		if !pushed[a.ID] {
			t.Errorf("neighbour %v did not get the grafted payload", a.Addr)
		}
	}
	if pushed[from.ID] {
		t.Error("the payload went back to the node it came from")
	}
	if eager := n.Eager(); len(eager) != len(active) {
		t.Errorf("%d of %d links eager after the repair", len(eager), len(active))
	}
}
