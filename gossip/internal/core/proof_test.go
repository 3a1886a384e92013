package core

import (
	"testing"
	"time"
)

// liteSender is a lite client's peer: it relays what members tell it.
var liteSender = Peer{ID: NodeID{0xcc}, Addr: "lite:1", Role: RoleClient}

// suspectAt makes the node at addr suspect victim (a member's SUSPECT
// record relayed to it), without delivering anything it sends.
func suspectAt(t *testing.T, tn *testNet, addr string, victim Member, from Peer) {
	t.Helper()
	sus := victim
	sus.Status = Suspect
	tn.nodes[addr].Step(tn.now, &Message{Kind: KindGossip, From: from, Members: []Member{sus}})
	if got := tn.status(addr, tn.addrOfID(victim.ID)); got != Suspect {
		t.Fatalf("%s holds the victim %v after its suspicion, want SUSPECT", addr, got)
	}
}

func (tn *testNet) addrOfID(id NodeID) string {
	for a, n := range tn.nodes {
		if n.Self().ID == id {
			return a
		}
	}
	return ""
}

// A member cut off from the others (its messages vanish) is suspected;
// its refutations reach the accuser only through a lite client, and a
// forger keeps sending ALIVE and SUSPECT at ever higher incarnations, as
// a lite client, over a client-only connection claiming the suspect's own
// identity, and in SYNCs. None of it refutes: the accuser probes the
// suspect itself, gets no answer, and declares it DEAD when its suspicion
// runs out. No relay carried it to the other member either.
func TestRefutationsTheSuspectDidNotProveDoNotRefute(t *testing.T) {
	tn := cluster(t, 3)
	victim := tn.nodes["a01:1"].Self()
	accuser := tn.nodes["a0:1"]
	tn.cut["a01:1"] = true
	suspectAt(t, tn, "a0:1", victim, tn.nodes["a02:1"].Self().Peer())
	timeout := DefaultConfig().SuspicionTimeout
	start := tn.now
	for i := 0; tn.now.Before(start.Add(timeout + 2*time.Second)); i++ {
		rec := victim
		rec.Incarnation = uint64(i + 1)
		rec.Status = Alive
		if i%2 == 1 {
			rec.Status = Suspect
		}
		var m *Message
		switch i % 4 {
		case 0: // a lite client relays the suspect's refutation
			m = &Message{Kind: KindGossip, From: liteSender, Members: []Member{rec}}
		case 1: // in a table exchange
			m = &Message{Kind: KindSync, From: liteSender, Members: []Member{rec}}
		case 2: // a client credential claiming the suspect's identity
			m = &Message{Kind: KindGossip, From: victim.Peer(), ClientOnly: true, Members: []Member{rec}}
		case 3: // a stranger claiming role member
			m = &Message{Kind: KindGossip, From: Peer{ID: NodeID{0xee}, Addr: "forger:1"}, Members: []Member{rec}}
		}
		tn.out("a0:1", accuser.Step(tn.now, m))
		tn.run()
		if tn.now.Before(start.Add(timeout)) {
			if got := tn.status("a0:1", "a01:1"); got != Suspect {
				t.Fatalf("after %v of forged refutations the accuser holds the victim %v, want SUSPECT", tn.now.Sub(start), got)
			}
		}
		tn.advance(200 * time.Millisecond)
	}
	if got := tn.status("a0:1", "a01:1"); got != Dead {
		t.Fatalf("the accuser holds the victim %v SuspicionTimeout + 2s after suspecting it, want DEAD", got)
	}
	if tn.count("a0:1", EventAlive, "a01:1") != 0 {
		t.Fatal("the accuser emitted ALIVE for the victim")
	}
	if m, _ := tn.nodes["a02:1"].Member(victim.ID); m.Status == Alive && m.Incarnation > 0 {
		t.Fatalf("the other member adopted a forged refutation: %v", m)
	}
}

// A refutation relayed by a lite client is held for this node's probe of
// the suspect: it is not applied or forwarded on arrival, a PING goes to
// the suspect's recorded address, and the record is adopted (and relayed)
// when the suspect answers.
func TestARelayedRefutationIsAdoptedWhenTheSuspectAnswersTheProbe(t *testing.T) {
	tn := cluster(t, 3)
	victim := tn.nodes["a01:1"].Self()
	accuser := tn.nodes["a0:1"]
	suspectAt(t, tn, "a0:1", victim, tn.nodes["a02:1"].Self().Peer())
	ref := victim
	ref.Incarnation = 1
	out := accuser.Step(tn.now, &Message{Kind: KindGossip, From: liteSender, Members: []Member{ref}})
	pinged := false
	for _, s := range out.Sends {
		switch {
		case s.Msg.Kind == KindPing && s.To.Addr == victim.Addr && s.Msg.Digest != 0:
			pinged = true
		case s.Msg.Kind == KindGossip || s.Msg.Kind == KindIHave:
			t.Fatalf("the unproven refutation was relayed: %v to %s", s.Msg.Kind, s.To.Addr)
		}
	}
	if !pinged || tn.status("a0:1", "a01:1") != Suspect {
		t.Fatalf("want a nonce PING to the suspect and the suspicion kept; pinged %v, status %v", pinged, tn.status("a0:1", "a01:1"))
	}
	tn.out("a0:1", out)
	tn.run()
	if m, _ := accuser.Member(victim.ID); m.Status != Alive || m.Incarnation < 1 {
		t.Fatalf("the accuser holds the victim %v after it answered the probe, want ALIVE#1 or later", m)
	}
}

// The suspect's own refutation, and one relayed by a member the node
// holds ALIVE, refute at once, as before.
func TestARefutationFromTheSuspectOrAMemberRefutesAtOnce(t *testing.T) {
	for _, name := range []string{"suspect", "member"} {
		t.Run(name, func(t *testing.T) {
			tn := cluster(t, 3)
			victim := tn.nodes["a01:1"].Self()
			accuser := tn.nodes["a0:1"]
			suspectAt(t, tn, "a0:1", victim, tn.nodes["a02:1"].Self().Peer())
			ref := victim
			ref.Incarnation = 1
			from := victim.Peer()
			if name == "member" {
				from = tn.nodes["a02:1"].Self().Peer()
			}
			accuser.Step(tn.now, &Message{Kind: KindGossip, From: from, Members: []Member{ref}})
			if m, _ := accuser.Member(victim.ID); m.Status != Alive || m.Incarnation != 1 {
				t.Fatalf("the accuser holds the victim %v, want ALIVE#1", m)
			}
		})
	}
}
