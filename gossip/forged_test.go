package gossip

import (
	"fmt"
	"testing"
	"time"

	"github.com/casty-go/casty/gossip/internal/core"
)

// A forger attached to the network (no member session: it claims any
// sender it likes) sends one SYNC frame naming 1,000 live members to a
// running agent. The agent answers it (so the frame was processed), yet no
// fake ever appears in any agent's table or event stream.
func TestAgentAdmitsNoMemberNamedOnlyByAForgedSync(t *testing.T) {
	c := startMem(t, 3)
	waitFor(t, 5*time.Second, "converged", func() bool {
		return c.allSee(0, isStatus(Alive)) && c.allSee(1, isStatus(Alive)) && c.allSee(2, isStatus(Alive))
	})
	ft, err := c.net.Transport("forger")
	if err != nil {
		t.Fatal(err)
	}
	defer ft.Close()
	fakes := make([]Member, 1000)
	for i := range fakes {
		fakes[i] = Member{ID: NodeID{0xfa, byte(i >> 8), byte(i)}, Addr: fmt.Sprintf("fake%d", i), Status: Alive}
	}
	frame := core.EncodeMessage(&core.Message{Kind: core.KindSync, Flag: true,
		From: Peer{ID: NodeID{0xee}, Addr: "forger"}, Members: fakes})
	if err := ft.Send("m0", frame); err != nil {
		t.Fatal(err)
	}
	var reply *core.Message
	waitFor(t, 5*time.Second, "m0's table in reply to the forged SYNC", func() bool {
		select {
		case ev := <-ft.Events():
			if m, err := core.DecodeMessage(ev.Frame); err == nil && m.Kind == core.KindSync {
				reply = m
			}
		default:
		}
		return reply != nil
	})
	// the reply is m0's table right after it processed the frame
	if len(reply.Members) != 3 {
		t.Fatalf("m0's table holds %d records after the forged SYNC, want 3", len(reply.Members))
	}
	for i, a := range c.agents {
		for _, m := range a.Members() {
			if m.ID[0] == 0xfa {
				t.Fatalf("agent %d holds fake %v", i, m)
			}
		}
	}
	eventsUntilSuspected(t, c, 0, 2, func(ev Event) bool { return ev.Member.ID[0] == 0xfa })
}

// eventsUntilSuspected crashes agent crash and reads agent o's events up
// to its suspicion of it (events are in order: whatever came before is
// read), failing the test on the first bad one.
func eventsUntilSuspected(t *testing.T, c *memCluster, o, crash int, bad func(Event) bool) {
	t.Helper()
	id := c.agents[crash].Self().ID
	c.net.Crash(c.agents[crash].Self().Addr)
	deadline := time.After(5 * time.Second)
	for {
		select {
		case ev := <-c.events[o]:
			if bad(ev) {
				t.Fatalf("agent %d emitted %v for %v", o, ev.Kind, ev.Member)
			}
			if ev.Member.ID == id && ev.Kind == EventSuspect {
				return
			}
		case <-deadline:
			t.Fatalf("agent %d did not suspect the crashed agent %d within 5s", o, crash)
		}
	}
}

// A forged LEFT for a live agent, sent by the forger to another, removes
// nobody: the probe reaches the victim, which also hears the relayed
// record and refutes it with a higher incarnation.
func TestAgentKeepsALiveMemberDespiteAForgedLeft(t *testing.T) {
	c := startMem(t, 3)
	waitFor(t, 5*time.Second, "converged", func() bool {
		return c.allSee(0, isStatus(Alive)) && c.allSee(1, isStatus(Alive)) && c.allSee(2, isStatus(Alive))
	})
	ft, err := c.net.Transport("forger")
	if err != nil {
		t.Fatal(err)
	}
	defer ft.Close()
	victim := c.agents[1].Self()
	left := victim
	left.Status, left.Incarnation = Left, victim.Incarnation+1
	frame := core.EncodeMessage(&core.Message{Kind: core.KindGossip,
		From: Peer{ID: NodeID{0xee}, Addr: "forger"}, Members: []Member{left}})
	if err := ft.Send("m0", frame); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the victim's refutation ALIVE at every agent", func() bool {
		return c.allSee(1, func(m Member) bool { return m.Status == Alive && m.Incarnation > left.Incarnation })
	})
	id := victim.ID
	eventsUntilSuspected(t, c, 0, 2, func(ev Event) bool {
		return ev.Member.ID == id && (ev.Kind == EventLeft || ev.Kind == EventDead)
	})
}

// Records refused because the member table is full are counted in the
// agent's Stats: a forged SYNC of 100 members to an agent bounded to 10
// records is refused past the bound.
func TestAgentCountsRecordsRefusedByAFullTable(t *testing.T) {
	nw := NewMemNetwork(1)
	tr, err := nw.Transport("m0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := fastConfig()
	cfg.MaxTableSize = 10
	a, err := Start(Peer{ID: NodeID{1}, Addr: "m0"}, cfg, tr)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ft, err := nw.Transport("forger")
	if err != nil {
		t.Fatal(err)
	}
	defer ft.Close()
	fakes := make([]Member, 100)
	for i := range fakes {
		fakes[i] = Member{ID: NodeID{0xfa, byte(i)}, Addr: fmt.Sprintf("fake%d", i), Status: Alive}
	}
	frame := core.EncodeMessage(&core.Message{Kind: core.KindSync, From: Peer{ID: NodeID{0xee}, Addr: "forger"}, Members: fakes})
	if err := ft.Send("m0", frame); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the agent's stats to count the refused records", func() bool {
		return a.Stats().Refused >= 91
	})
	// the agent's own record and 9 claims fill the bound of 10: the
	// other 91 are refused, all in the one step that read the frame
	if st := a.Stats(); st.Refused != 91 {
		t.Fatalf("stats %+v, want 91 refused", st)
	}
}
