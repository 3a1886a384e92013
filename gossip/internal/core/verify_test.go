package core

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// forger is a peer that is no member: it only sends frames.
var forger = Peer{ID: NodeID{0xee}, Addr: "forger:1"}

// fakes returns k ALIVE records of members that do not exist.
func fakes(k int) []Member {
	out := make([]Member, k)
	for i := range out {
		var id NodeID
		id[0] = 0xfa
		binary.BigEndian.PutUint32(id[12:], uint32(i))
		out[i] = Member{ID: id, Addr: fmt.Sprintf("fake%d:1", i), Status: Alive}
	}
	return out
}

func isFake(id NodeID) bool { return id[0] == 0xfa }

// noFakes fails the test if n's table or events name a fake member.
func noFakes(t *testing.T, tn *testNet, addr string) {
	t.Helper()
	for _, m := range tn.nodes[addr].Members() {
		if isFake(m.ID) {
			t.Fatalf("%s's table holds fake %v", addr, m)
		}
	}
	for _, e := range tn.events[addr] {
		if isFake(e.Member.ID) {
			t.Fatalf("%s emitted %v for fake %v", addr, e.Kind, e.Member)
		}
	}
}

func countSends(ss []Send, k Kind) int {
	c := 0
	for _, s := range ss {
		if s.Msg.Kind == k {
			c++
		}
	}
	return c
}

// A SYNC frame naming 1,000 members admits none of them: each is probed,
// none answers, and the claims are gone within (1 + probeAttempts) ×
// NeighborTimeout. The probes are bounded too (probeAttempts per fake).
func TestForgedSyncAdmitsNoFakeMember(t *testing.T) {
	for _, silent := range []bool{false, true} {
		t.Run(fmt.Sprintf("silent=%v", silent), func(t *testing.T) {
			tn := cluster(t, 3)
			fs := fakes(1000)
			if silent { // no dial failure comes back: only timeouts settle the claims
				for _, f := range fs {
					tn.cut[f.Addr] = true
				}
			}
			before := len(tn.sent)
			tn.out("a0:1", tn.nodes["a0:1"].Step(tn.now, &Message{Kind: KindSync, From: forger, Members: fs}))
			tn.run()
			noFakes(t, tn, "a0:1")
			n := tn.nodes["a0:1"]
			if u := n.Unverified(); u > len(fs) {
				t.Fatalf("%d unverified records for %d fakes", u, len(fs))
			}
			tn.advance(time.Duration(1+probeAttempts) * DefaultConfig().NeighborTimeout)
			for _, o := range tn.order {
				noFakes(t, tn, o)
				if u := tn.nodes[o].Unverified(); u != 0 {
					t.Fatalf("%s still holds %d unverified records after the bound", o, u)
				}
				if got := len(tn.nodes[o].Members()); got != 3 {
					t.Fatalf("%s holds %d records, want 3", o, got)
				}
			}
			if pings := countSends(tn.sent[before:], KindPing); pings > probeAttempts*len(fs) {
				t.Fatalf("%d probes for %d fakes, want at most %d", pings, len(fs), probeAttempts*len(fs))
			}
		})
	}
}

// The table bound holds against a SYNC larger than it: the excess is
// refused, and nothing already held is evicted.
func TestTableBoundRefusesNewUnverifiedRecords(t *testing.T) {
	tn := newTestNet(t)
	c := testCfg()
	c.MaxTableSize = 100
	n, err := NewNode(Peer{ID: NodeID{1}, Addr: "a0:1"}, c)
	if err != nil {
		t.Fatal(err)
	}
	tn.nodes["a0:1"], tn.order = n, []string{"a0:1"}
	tn.out("a0:1", n.Start(tn.now))
	fs := fakes(1000)
	for _, f := range fs {
		tn.cut[f.Addr] = true
	}
	tn.out("a0:1", n.Step(tn.now, &Message{Kind: KindSync, From: forger, Members: fs}))
	tn.run()
	if got := n.table.Len() + n.Unverified(); got > 100 {
		t.Fatalf("table + unverified = %d, over the bound 100", got)
	}
	if n.Refused() < 900 {
		t.Fatalf("refused %d records, want at least 900", n.Refused())
	}
	if _, ok := n.Member(n.self.ID); !ok {
		t.Fatal("the node's own record was evicted")
	}
	// tombstones of unknown ids count against the bound as well
	tombs := fakes(1000)
	for i := range tombs {
		tombs[i].ID[0] = 0xfb
		tombs[i].Status = Dead
	}
	tn.out("a0:1", n.Step(tn.now, &Message{Kind: KindSync, From: forger, Members: tombs}))
	if got := n.table.Len() + n.Unverified(); got > 100 {
		t.Fatalf("table + unverified = %d after tombstones, over the bound 100", got)
	}
}

// An honest record learned second-hand is adopted once its member answers
// the probe: a join costs one more round trip, not a rumour's word.
func TestSecondHandRecordIsAdoptedAfterAProbeAnswer(t *testing.T) {
	tn := cluster(t, 3)
	n := tn.nodes["a0:1"]
	j := tn.add("a09:1", 10) // started, but known to nobody yet
	rec := j.Self()
	out := n.Step(tn.now, &Message{Kind: KindSync, From: forger, Members: []Member{rec}})
	if _, ok := n.Member(rec.ID); ok || len(out.Events) != 0 {
		t.Fatal("a second-hand record was adopted before any probe")
	}
	if countSends(out.Sends, KindPing) != 1 {
		t.Fatalf("want one probe, got sends %v", out.Sends)
	}
	tn.out("a0:1", out)
	tn.run()
	if tn.status("a0:1", "a09:1") != Alive || tn.count("a0:1", EventJoined, "a09:1") != 1 {
		t.Fatal("the probed member was not adopted ALIVE with one joined event")
	}
}

// A PONG that does not echo the probe's nonce, or comes from another
// address, admits nothing: a forger that did not see the PING cannot answer it.
func TestPongWithoutTheNonceAdmitsNothing(t *testing.T) {
	tn := cluster(t, 3)
	n := tn.nodes["a0:1"]
	f := fakes(1)[0]
	out := n.Step(tn.now, &Message{Kind: KindSync, From: forger, Members: []Member{f}})
	nonce := out.Sends[0].Msg.Digest
	for _, m := range []*Message{
		{Kind: KindPong, From: f.Peer(), Digest: nonce + 1},
		{Kind: KindPong, From: f.Peer()},
		{Kind: KindPong, From: Peer{ID: f.ID, Addr: "forger:1"}, Digest: nonce},
		{Kind: KindPong, From: Peer{ID: f.ID, Addr: f.Addr, Role: RoleClient}, Digest: nonce},
	} {
		if out := n.Step(tn.now, m); len(out.Events) != 0 {
			t.Fatalf("pong %+v emitted %v", m, out.Events)
		}
		if _, ok := n.Member(f.ID); ok {
			t.Fatalf("pong %+v admitted the fake", m)
		}
	}
	if out := n.Step(tn.now, &Message{Kind: KindPong, From: f.Peer(), Digest: nonce}); len(out.Events) != 1 {
		t.Fatal("the right answer did not admit the member") // sanity: the test's pongs are well formed
	}
}

// A forged LEFT for a live member, by rumour or by table exchange, is
// refuted by the member's answer to the probe: no LEFT event anywhere.
func TestForgedLeftForALiveMemberIsRefuted(t *testing.T) {
	for _, c := range []struct {
		kind Kind
		addr string // the address the forged record names ("": the victim's)
	}{{KindGossip, ""}, {KindSync, ""}, {KindGossip, "nowhere:1"}, {KindSync, "nowhere:1"}} {
		t.Run(fmt.Sprintf("%v addr=%q", c.kind, c.addr), func(t *testing.T) {
			kind := c.kind
			tn := cluster(t, 4)
			victim := tn.nodes["a02:1"].Self()
			left := victim
			left.Status = Left
			left.Incarnation++ // outranks the live record
			if c.addr != "" {  // the probe must still go to the victim
				left.Addr = c.addr
			}
			tn.out("a0:1", tn.nodes["a0:1"].Step(tn.now, &Message{Kind: kind, From: forger, Members: []Member{left}}))
			tn.run()
			tn.advance(3 * DefaultConfig().NeighborTimeout)
			for _, o := range tn.order {
				if tn.count(o, EventLeft, "a02:1") != 0 || tn.count(o, EventDead, "a02:1") != 0 {
					t.Fatalf("%s removed the live victim", o)
				}
				if got := tn.status(o, "a02:1"); got != Alive {
					t.Fatalf("%s sees the victim %v, want alive", o, got)
				}
			}
		})
	}
}

// A forged DEAD for a live member becomes a suspicion it refutes: never a
// DEAD event, and ALIVE again everywhere within the same run of messages.
func TestForgedDeadBecomesARefutableSuspicion(t *testing.T) {
	for _, kind := range []Kind{KindGossip, KindSync} {
		t.Run(kind.String(), func(t *testing.T) {
			tn := cluster(t, 4)
			victim := tn.nodes["a02:1"].Self()
			dead := victim
			dead.Status = Dead
			tn.out("a0:1", tn.nodes["a0:1"].Step(tn.now, &Message{Kind: kind, From: forger, Members: []Member{dead}}))
			tn.run() // instant network: the suspicion, the refutation
			for _, o := range tn.order {
				if o != "a02:1" && tn.status(o, "a02:1") != Alive {
					t.Fatalf("%s sees the victim %v after the refutation", o, tn.status(o, "a02:1"))
				}
			}
			tn.advance(DefaultConfig().SuspicionTimeout + time.Second)
			for _, o := range tn.order {
				if tn.count(o, EventDead, "a02:1") != 0 {
					t.Fatalf("%s declared the live victim dead", o)
				}
			}
		})
	}
}

// A LEFT relayed for a member that really left is adopted: the leaver
// answers the probe "leaving" while it lingers, or refuses it once gone.
func TestRelayedLeftOfADepartedMemberIsAdopted(t *testing.T) {
	for _, gone := range []bool{false, true} {
		t.Run(fmt.Sprintf("gone=%v", gone), func(t *testing.T) {
			tn := cluster(t, 4)
			leaver := tn.nodes["a02:1"]
			leaver.Leave(tn.now) // its goodbyes are dropped: only a relay tells a0
			left := leaver.Self()
			tn.down["a02:1"] = gone
			tn.out("a0:1", tn.nodes["a0:1"].Step(tn.now, &Message{Kind: KindGossip, From: tn.nodes["a01:1"].Self().Peer(), Members: []Member{left}}))
			tn.run()
			if got := tn.status("a0:1", "a02:1"); got != Left {
				t.Fatalf("a0 sees the leaver %v, want left", got)
			}
		})
	}
}

// A forged SUSPECT followed at once by a forged DEAD leaves the suspect
// SuspicionTimeout/2 to refute: a silent victim is not declared DEAD
// sooner, and is once that window passed (its probes go unanswered).
func TestForgedDeadLeavesTheSuspectHalfTheTimeoutToRefute(t *testing.T) {
	tn := cluster(t, 4)
	tn.cut["a02:1"] = true // the victim hears nothing and answers nothing
	n := tn.nodes["a0:1"]
	victim := tn.nodes["a02:1"].Self()
	sus, dead := victim, victim
	sus.Status, dead.Status = Suspect, Dead
	t0 := tn.now
	tn.out("a0:1", n.Step(tn.now, &Message{Kind: KindGossip, From: forger, Members: []Member{sus}}))
	tn.out("a0:1", n.Step(tn.now, &Message{Kind: KindGossip, From: forger, Members: []Member{dead}}))
	tn.run()
	half := DefaultConfig().SuspicionTimeout / 2
	tn.advance(half - 200*time.Millisecond)
	if got := tn.status("a0:1", "a02:1"); got != Suspect {
		t.Fatalf("a0 sees the victim %v %v after the forged DEAD, want suspect", got, tn.now.Sub(t0))
	}
	tn.advance(400 * time.Millisecond)
	if got := tn.status("a0:1", "a02:1"); got != Dead {
		t.Fatalf("a0 sees the silent victim %v %v after the forged DEAD, want dead", got, tn.now.Sub(t0))
	}
}

// A sender whose connection did not prove the member credential
// (Message.ClientOnly) cannot get itself adopted as a member: its own
// member-role record, pushed or in a table exchange, is neither held nor
// forwarded, and a member-role claim about it is not adopted on its
// PONG. The same client with the client role is admitted, and the same
// PONG over a member connection admits the member record.
func TestClientCredentialCannotClaimMemberRole(t *testing.T) {
	tn := cluster(t, 3)
	n := tn.nodes["a0:1"]
	lite := Member{ID: NodeID{0xc1}, Addr: "lite:1", Role: RoleMember, Status: Alive}
	before := len(tn.sent)
	for _, m := range []*Message{
		{Kind: KindGossip, From: lite.Peer(), Members: []Member{lite}, ClientOnly: true},
		{Kind: KindSync, From: lite.Peer(), Members: []Member{lite}, ClientOnly: true},
	} {
		out := n.Step(tn.now, m)
		if n.Unverified() != 0 || len(out.Events) != 0 || countSends(out.Sends, KindGossip)+countSends(out.Sends, KindPing) != 0 {
			t.Fatalf("%v of its own member record from a client-only sender: held %d, events %v, sends %v", m.Kind, n.Unverified(), out.Events, out.Sends)
		}
		tn.out("a0:1", out)
	}
	tn.run()
	if _, ok := n.Member(lite.ID); ok || countSends(tn.sent[before:], KindGossip) != 0 {
		t.Fatal("the client-only sender's member record was adopted or forwarded")
	}
	// relayed by someone else, the claim is probed; the PONG comes back
	// over the client's connection
	out := n.Step(tn.now, &Message{Kind: KindSync, From: forger, Members: []Member{lite}})
	nonce := out.Sends[0].Msg.Digest
	n.Step(tn.now, &Message{Kind: KindPong, From: lite.Peer(), Digest: nonce, ClientOnly: true})
	if _, ok := n.Member(lite.ID); ok {
		t.Fatal("a member-role claim was adopted on a PONG over a client-only connection")
	}
	// control: the same PONG over a member connection admits it
	n.Step(tn.now, &Message{Kind: KindPong, From: lite.Peer(), Digest: nonce})
	if m, ok := n.Member(lite.ID); !ok || m.Status != Alive {
		t.Fatal("the control PONG over a member connection did not admit the record")
	}
	// a client-role record from a client-only sender is admitted as usual
	client := Member{ID: NodeID{0xc2}, Addr: "lite2:1", Role: RoleClient, Status: Alive}
	out = n.Step(tn.now, &Message{Kind: KindGossip, From: client.Peer(), Members: []Member{client}, ClientOnly: true})
	if countSends(out.Sends, KindPing) != 1 {
		t.Fatalf("a client-role record was not probed: %v", out.Sends)
	}
	for _, s := range out.Sends {
		if s.Msg.Kind == KindPing {
			nonce = s.Msg.Digest
		}
	}
	n.Step(tn.now, &Message{Kind: KindPong, From: client.Peer(), Digest: nonce, ClientOnly: true})
	if m, ok := n.Member(client.ID); !ok || m.Status != Alive || m.Role != RoleClient {
		t.Fatal("a lite client's own client-role record was not admitted")
	}
}

// A PONG echoing the nonce of a probe sent to a member's address, from
// another id, gets the member held there suspected and out of the views:
// the address answers as another node (a restart with a new identity).
// Over a client-only connection it does not.
func TestAnotherIDAnsweringAtAMembersAddressSuspectsIt(t *testing.T) {
	for _, clientOnly := range []bool{true, false} {
		t.Run(fmt.Sprintf("clientOnly=%v", clientOnly), func(t *testing.T) {
			tn := cluster(t, 3)
			n := tn.nodes["a0:1"]
			old, _ := n.Member(tn.nodes["a02:1"].Self().ID)
			fresh := Member{ID: NodeID{0x77}, Addr: old.Addr, Status: Alive}
			out := n.Step(tn.now, &Message{Kind: KindGossip, From: forger, Members: []Member{fresh}})
			var nonce uint64
			for _, s := range out.Sends {
				if s.Msg.Kind == KindPing && s.To.Addr == old.Addr {
					nonce = s.Msg.Digest
				}
			}
			if nonce == 0 {
				t.Fatalf("no probe of the new record at %s: %v", old.Addr, out.Sends)
			}
			n.Step(tn.now, &Message{Kind: KindPong, From: fresh.Peer(), Digest: nonce, ClientOnly: clientOnly})
			got, _ := n.Member(old.ID)
			if clientOnly {
				if got.Status != Alive {
					t.Fatalf("a client-only answer got the member %v", got)
				}
				return
			}
			if got.Status != Suspect {
				t.Fatalf("the member whose address answers as another id is %v, want suspect", got)
			}
			if m, ok := n.Member(fresh.ID); !ok || m.Status != Alive {
				t.Fatal("the new id was not admitted")
			}
			if n.isActive(old.ID) || n.passiveIndex(old.ID) >= 0 {
				t.Fatal("the replaced member is still in the views")
			}
		})
	}
}

// warnLoggedNode starts node a0:1 with c, its WARN lines and above going
// to the returned buffer.
func warnLoggedNode(t *testing.T, c *Config) (*Node, *bytes.Buffer) {
	t.Helper()
	buf := new(bytes.Buffer)
	c.Logger = slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	n, err := NewNode(Peer{ID: NodeID{1}, Addr: "a0:1"}, c)
	if err != nil {
		t.Fatal(err)
	}
	n.Start(testEpoch)
	return n, buf
}

// Records refused by a full table are counted (Node.Refused) and logged,
// at most one line per refusedLogInterval whatever the flood, each line
// giving the count since the previous one.
func TestTableFullRefusalsAreCountedAndLoggedAtAPace(t *testing.T) {
	c := testCfg()
	c.MaxTableSize = 10
	n, buf := warnLoggedNode(t, c)
	now := testEpoch
	lines := func() []string {
		var out []string
		for _, l := range strings.Split(buf.String(), "\n") {
			if strings.Contains(l, "member table full") {
				out = append(out, l)
			}
		}
		return out
	}
	flood := func(first int) {
		fs := fakes(first + 100)[first:]
		n.Step(now, &Message{Kind: KindSync, From: forger, Members: fs})
	}
	flood(0)
	refused := n.Refused()
	if refused < 90 || len(lines()) != 1 {
		t.Fatalf("after a flood of 100: refused %d, %d log lines %q; want >= 90 and 1", refused, len(lines()), lines())
	}
	now = now.Add(refusedLogInterval / 2)
	flood(100)
	if n.Refused() != refused+100 || len(lines()) != 1 {
		t.Fatalf("a second flood within the interval: refused %d, %d log lines; want %d and 1", n.Refused(), len(lines()), refused+100)
	}
	now = now.Add(refusedLogInterval)
	r2 := n.Refused()
	flood(200)
	// each line is written at the first refusal past the interval and
	// counts the refusals since the previous line, that one included
	ls := lines()
	want := fmt.Sprintf("refused=%d refused_total=%d ", r2, r2+1)
	if len(ls) != 2 || !strings.Contains(ls[1], want) {
		t.Fatalf("after the interval: log lines %q; want a second one with %q", ls, want)
	}
}

// A flood of claims over a few connections neither takes every probe slot
// nor fills the table against a claim relayed over another connection: the
// honest record is probed at once and adopted when its member answers
// (SPEC.md, Admission). Before probes were shared between sources the
// flood held all 64 slots (the honest claim waited in a queue and was
// dropped unprobed) and, at the table bound, the honest claim was refused.
func TestFloodOfClaimsDoesNotStarveAnotherConnectionsClaim(t *testing.T) {
	for _, tc := range []struct {
		name    string
		conns   int
		perConn int
		bound   int
	}{
		{"probe slots, 4 connections", 4, 250, 0},
		{"probe slots, 100 connections", 100, 10, 0},
		{"table bound", 1, 1000, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tn := newTestNet(t)
			c := testCfg()
			c.MaxTableSize = tc.bound
			n, err := NewNode(Peer{ID: NodeID{1}, Addr: "a0:1"}, c)
			if err != nil {
				t.Fatal(err)
			}
			tn.nodes["a0:1"], tn.order = n, []string{"a0:1"}
			tn.out("a0:1", n.Start(tn.now))
			fs := fakes(tc.conns * tc.perConn)
			for _, f := range fs {
				tn.cut[f.Addr] = true // nobody answers there
			}
			for k := range tc.conns {
				part := fs[k*tc.perConn : (k+1)*tc.perConn]
				tn.out("a0:1", n.Step(tn.now, &Message{Kind: KindSync, From: forger, Via: fmt.Sprintf("forger%d:1", k), Members: part}))
			}
			tn.run()
			j := tn.add("a09:1", 10) // started, known to nobody yet
			out := n.Step(tn.now, &Message{Kind: KindGossip, From: Peer{ID: NodeID{2}, Addr: "a01:1"}, Members: []Member{j.Self()}})
			if got := countSends(out.Sends, KindPing); got != 1 {
				t.Fatalf("the honest claim got %d probes at once, want 1 (refused so far: %d)", got, n.Refused())
			}
			tn.out("a0:1", out)
			tn.run()
			if m, ok := n.Member(j.Self().ID); !ok || m.Status != Alive {
				t.Fatalf("the honest member was not adopted: %v %v", m, ok)
			}
			if lim := n.tableLimit(); n.table.Len()+n.Unverified() > lim {
				t.Fatalf("table + unverified = %d, over the bound %d", n.table.Len()+n.Unverified(), lim)
			}
		})
	}
}

// A sender whose connection proved no member credential (a lite client, or
// whoever holds only the client secret) introduces at most its own record:
// records of other ids it names in a SYNC or a GOSSIP, ALIVE or tombstone,
// are neither held, probed, adopted nor forwarded, so it cannot fill the table with
// fakes it answers for. Its own record, at its connection's address, is
// probed and admitted; another id at that address is not while the
// previous one is suspected; and the same records over a member
// connection are probed as before.
func TestClientOnlySenderIntroducesOnlyItself(t *testing.T) {
	const k = 50
	tn := cluster(t, 3)
	n := tn.nodes["a0:1"]
	lite := Member{ID: NodeID{0xc1}, Addr: "lite:1", Role: RoleClient, Status: Alive}
	fakes := make([]Member, k)
	for i := range fakes {
		fakes[i] = Member{ID: NodeID{0xfa, byte(i)}, Addr: fmt.Sprintf("fake%d:1", i), Role: RoleClient, Status: Alive}
		if i%5 == 0 {
			fakes[i].Status = Dead
		}
	}
	before := n.table.Len()
	for _, kind := range []Kind{KindSync, KindGossip} {
		for _, f := range fakes {
			out := n.Step(tn.now, &Message{Kind: kind, From: lite.Peer(), Members: []Member{f}, ClientOnly: true, Via: lite.Addr})
			if countSends(out.Sends, KindPing)+countSends(out.Sends, KindGossip) != 0 || len(out.Events) != 0 {
				t.Fatalf("%v naming %v from a client-only sender: sends %v, events %v", kind, f, out.Sends, out.Events)
			}
		}
	}
	out := n.Step(tn.now, &Message{Kind: KindSync, From: lite.Peer(), Members: fakes, ClientOnly: true, Via: lite.Addr})
	if n.Unverified() != 0 || n.table.Len() != before || countSends(out.Sends, KindPing) != 0 {
		t.Fatalf("a client-only sender's %d records of others: %d held, table %d -> %d, %d probes",
			k, n.Unverified(), before, n.table.Len(), countSends(out.Sends, KindPing))
	}
	// its own record, in the same frame as the fakes, is probed and admitted
	out = n.Step(tn.now, &Message{Kind: KindSync, From: lite.Peer(), Members: append([]Member{lite}, fakes...), ClientOnly: true, Via: lite.Addr})
	pings := pingsTo(out.Sends)
	if len(pings) != 1 || pings[lite.Addr] == 0 {
		t.Fatalf("probes after the client's own record: %v", pings)
	}
	n.Step(tn.now, &Message{Kind: KindPong, From: lite.Peer(), Digest: pings[lite.Addr], ClientOnly: true, Via: lite.Addr})
	if m, ok := n.Member(lite.ID); !ok || m.Status != Alive || n.table.Len() != before+1 {
		t.Fatalf("the client's own record was not admitted (table %d -> %d)", before, n.table.Len())
	}
	// its own record at another address than its connection's is not
	other := Member{ID: NodeID{0xc3}, Addr: "elsewhere:1", Role: RoleClient, Status: Alive}
	out = n.Step(tn.now, &Message{Kind: KindGossip, From: other.Peer(), Members: []Member{other}, ClientOnly: true, Via: lite.Addr})
	if countSends(out.Sends, KindPing) != 0 {
		t.Fatalf("a record at an address other than the connection's was probed: %v", out.Sends)
	}
	// a new identity at the lite client's address is admitted (a restart)
	// and the old one suspected; a third is not while the old one is
	// suspected
	for i, id := range []NodeID{{0xc4}, {0xc5}} {
		re := Member{ID: id, Addr: lite.Addr, Role: RoleClient, Status: Alive}
		out = n.Step(tn.now, &Message{Kind: KindGossip, From: re.Peer(), Members: []Member{re}, ClientOnly: true, Via: lite.Addr})
		pings = pingsTo(out.Sends)
		if i == 1 {
			if len(pings) != 0 {
				t.Fatalf("a third identity at the address was probed while the first is suspected: %v", out.Sends)
			}
			break
		}
		n.Step(tn.now, &Message{Kind: KindPong, From: re.Peer(), Digest: pings[lite.Addr], ClientOnly: true, Via: lite.Addr})
		if m, ok := n.Member(re.ID); !ok || m.Status != Alive {
			t.Fatal("a restarted lite client's new identity was not admitted")
		}
		if m, _ := n.Member(lite.ID); m.Status != Suspect {
			t.Fatalf("the restarted lite client's old identity is %v, want suspect", m.Status)
		}
	}
	// control: relayed over a member connection, the records are probed
	out = n.Step(tn.now, &Message{Kind: KindSync, From: forger, Members: fakes})
	if n.Unverified() == 0 || countSends(out.Sends, KindPing) == 0 {
		t.Fatalf("over a member connection the records were not held and probed: %d held", n.Unverified())
	}
}

// pingsTo returns the nonce of the PING sent to each address among sends.
func pingsTo(sends []Send) map[string]uint64 {
	out := map[string]uint64{}
	for _, s := range sends {
		if s.Msg.Kind == KindPing {
			out[s.To.Addr] = s.Msg.Digest
		}
	}
	return out
}

// Lite-client records stay within Config.MaxClientRecords, so members keep
// the rest of the table: a client-credential holder opening one connection
// per fake lite client, each introducing its own record and answering its
// probe (SECURITY.md), gets MaxClientRecords of them adopted; the next ones
// are refused, counted and logged, and so is a client tombstone of an id
// the table does not hold, while a new member's record relayed by a member
// is still probed and adopted. Before the bound the fakes took every
// table slot (20 here) and the member's record was refused.
func TestClientBoundKeepsRoomForMembers(t *testing.T) {
	const bound, clients, fakesN = 20, 5, 30
	c := testCfg()
	c.MaxTableSize, c.MaxClientRecords = bound, clients
	n, buf := warnLoggedNode(t, c)
	now := testEpoch
	fs := fakes(fakesN)
	for i := range fs {
		f := fs[i]
		f.Role = RoleClient
		out := n.Step(now, &Message{Kind: KindGossip, From: f.Peer(), Members: []Member{f}, ClientOnly: true, Via: f.Addr})
		if nonce, ok := pingsTo(out.Sends)[f.Addr]; ok {
			n.Step(now, &Message{Kind: KindPong, From: f.Peer(), Digest: nonce, ClientOnly: true, Via: f.Addr})
		}
	}
	if got := n.table.Clients(); got != clients {
		t.Fatalf("%d lite-client records adopted from %d fakes, want the bound %d (table %d)", got, fakesN, clients, n.table.Len())
	}
	if n.Refused() != fakesN-clients {
		t.Fatalf("refused %d, want %d", n.Refused(), fakesN-clients)
	}
	if !strings.Contains(buf.String(), "lite-client records at their bound") || !strings.Contains(buf.String(), fmt.Sprintf("limit=%d ", clients)) {
		t.Fatalf("no WARN line about the lite-client bound: %q", buf.String())
	}
	// a tombstone of a lite client the table never held adds a client
	// record too: refused
	tomb := fakes(fakesN + 1)[fakesN]
	tomb.Role, tomb.Status = RoleClient, Dead
	r := n.Refused()
	n.Step(now, &Message{Kind: KindSync, From: forger, Members: []Member{tomb}})
	if _, ok := n.Member(tomb.ID); ok || n.Refused() != r+1 {
		t.Fatalf("a client tombstone past the bound: held %v, refused %d -> %d", ok, r, n.Refused())
	}
	// a new member, relayed over a member connection, still gets in
	joiner := Member{ID: NodeID{0x77}, Addr: "joiner:1", Status: Alive}
	out := n.Step(now, &Message{Kind: KindGossip, From: forger, Members: []Member{joiner}})
	nonce, ok := pingsTo(out.Sends)[joiner.Addr]
	if !ok {
		t.Fatalf("the member's record was not probed (refused %d, table %d of %d)", n.Refused(), n.table.Len(), bound)
	}
	n.Step(now, &Message{Kind: KindPong, From: joiner.Peer(), Digest: nonce})
	if m, ok := n.Member(joiner.ID); !ok || m.Status != Alive {
		t.Fatal("the member's record was not adopted")
	}
	// and the member room is what the client bound leaves: a flood of
	// member records fills the table to MaxTableSize, not further
	ms := fakes(2 * bound)
	for i := range ms {
		ms[i].ID[0] = 0xfb
	}
	n.Step(now, &Message{Kind: KindSync, From: forger, Members: ms})
	if got := n.table.Len() + n.Unverified(); got != bound {
		t.Fatalf("table + unverified = %d after a member flood, want the bound %d", got, bound)
	}
}

// A lite client's record refused for the lite-client bound is not relayed
// either: a flood of them over a connection per fake would otherwise cost
// every member the flood again, through every other member, and prune the
// broadcast tree. Below the bound the same GOSSIP is relayed (eagerly or
// lazily) as before.
func TestRecordRefusedForTheClientBoundIsNotRelayed(t *testing.T) {
	tn := cluster(t, 3)
	n := tn.nodes["a0:1"]
	n.cfg.MaxClientRecords = 1
	relays := func(f Member) int {
		f.Role = RoleClient
		out := n.Step(tn.now, &Message{Kind: KindGossip, From: f.Peer(), Members: []Member{f}, ClientOnly: true, Via: f.Addr})
		return countSends(out.Sends, KindGossip) + countSends(out.Sends, KindIHave)
	}
	fs := fakes(2)
	if got := relays(fs[0]); got == 0 {
		t.Fatal("a lite client's record below the bound was not relayed")
	}
	r := n.Refused()
	if got := relays(fs[1]); got != 0 || n.Refused() != r+1 {
		t.Fatalf("a lite client's record past the bound: %d relays, refused %d -> %d; want 0 and one more", got, r, n.Refused())
	}
}
