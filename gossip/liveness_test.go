package gossip

import (
	"sync"
	"testing"
	"time"

	"github.com/casty-go/casty/gossip/internal/core"
)

// Liveness is proven by members, not heard (SPEC.md, Failure detection):
// the failures a lite client's relay or a forger's records used to hide.

// startLite adds a lite client (role client) at "lite" to c, joined through
// m0, and waits until it and every member see each other ALIVE.
func startLite(t *testing.T, c *memCluster) *Agent {
	t.Helper()
	tr, err := c.net.Transport("lite")
	if err != nil {
		t.Fatal(err)
	}
	lite, err := Start(Peer{ID: NodeID{0xc1}, Addr: "lite", Role: RoleClient}, fastConfig("m0"), tr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lite.Close() })
	waitFor(t, 10*time.Second, "the members and the lite client to see each other ALIVE", func() bool {
		for i := range c.agents {
			if !c.allSee(i, isStatus(Alive)) || !holds(lite, c.agents[i].Self().ID, isStatus(Alive)) {
				return false
			}
		}
		for _, a := range c.agents {
			if !holds(a, lite.Self().ID, isStatus(Alive)) {
				return false
			}
		}
		return true
	})
	return lite
}

// holds reports whether a's table holds id with ok.
func holds(a *Agent, id NodeID, ok func(Member) bool) bool {
	for _, m := range a.Members() {
		if m.ID == id {
			return ok(m)
		}
	}
	return false
}

// cutApart cuts every link between members of side a and members of side b
// (the lite client keeps its links to both).
func (c *memCluster) cutApart(a, b []int) {
	for _, i := range a {
		for _, j := range b {
			c.net.Cut(c.agents[i].Self().Addr, c.agents[j].Self().Addr)
		}
	}
}

// detectWithin is how long a test waits for a death the members must see
// within SuspicionTimeout + 2 s: that, with slack for a loaded machine.
func detectWithin() time.Duration {
	return fastConfig().SuspicionTimeout + 2*time.Second + 3*time.Second
}

// everyoneIn reports whether every agent of who holds every agent of
// subjects with ok.
func (c *memCluster) everyoneIn(who, subjects []int, ok func(Member) bool) bool {
	for _, o := range who {
		for _, s := range subjects {
			if !holds(c.agents[o], c.agents[s].Self().ID, ok) {
				return false
			}
		}
	}
	return true
}

// A 2|3 partition of five members, bridged by a lite client that reaches
// both sides: the cut members hear their suspicion through the client and
// refute it, and the client relays the refutations (and its table) to the
// majority. The majority declares both cut members DEAD anyway, and keeps
// them dead while the partition lasts: their refutations reach it only
// through a client, and its own probes of them fail. Once the partition
// heals, they refute and rejoin.
func TestABridgingLiteClientDoesNotKeepACutSideAlive(t *testing.T) {
	c := startMem(t, 5)
	lite := startLite(t, c)
	minority, majority := []int{0, 1}, []int{2, 3, 4}
	c.cutApart(minority, majority)
	waitFor(t, detectWithin(), "the majority to hold both cut members DEAD", func() bool {
		return c.everyoneIn(majority, minority, isStatus(Dead))
	})
	// the client keeps relaying: the majority still holds them dead a
	// while later (several anti-entropy rounds and refutations on)
	until := time.Now().Add(3 * fastConfig().AntiEntropyInterval)
	for time.Now().Before(until) {
		if !c.everyoneIn(majority, minority, isStatus(Dead)) {
			t.Fatal("a cut member came back ALIVE at the majority while the partition lasts")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !holds(lite, c.agents[0].Self().ID, func(m Member) bool { return m.Status == Alive && m.Incarnation > 0 }) {
		t.Log("note: the lite client did not hold a refutation of member 0 (it relayed none)")
	}
	c.net.Heal()
	waitFor(t, 15*time.Second, "every member to hold every member ALIVE after the partition healed", func() bool {
		all := []int{0, 1, 2, 3, 4}
		return c.everyoneIn(all, all, isStatus(Alive))
	})
}

// A member whose only path to the others is a lite client is unreachable:
// the others declare it DEAD within SuspicionTimeout + 2 s, though it
// hears its suspicion through the client and refutes. Once its links heal
// it refutes again and rejoins.
func TestAMemberReachableOnlyThroughALiteClientIsDeadUntilItsLinksHeal(t *testing.T) {
	c := startMem(t, 5)
	startLite(t, c)
	c.cutApart([]int{4}, []int{0, 1, 2, 3})
	waitFor(t, detectWithin(), "the members to hold the cut-off member DEAD", func() bool {
		return c.everyoneIn([]int{0, 1, 2, 3}, []int{4}, isStatus(Dead))
	})
	c.net.Heal()
	waitFor(t, 15*time.Second, "the cut-off member to rejoin: every member holds every member ALIVE", func() bool {
		all := []int{0, 1, 2, 3, 4}
		return c.everyoneIn(all, all, isStatus(Alive))
	})
}

// A forger learns a member's incarnation (a lite client receives every
// member's record in SYNC) and, from before that member crashes, sends
// one member an ALIVE at the next incarnation every 250 ms, as a GOSSIP
// and in a SYNC. It cannot keep the crashed member alive: every survivor
// declares it DEAD within SuspicionTimeout + 2 s. The forger holds only
// the client credential (its frames arrive marked client-only), or, in an
// open cluster, is a stranger claiming role member.
func TestAForgerCannotKeepACrashedMemberAlive(t *testing.T) {
	for _, tc := range []struct {
		name   string
		client bool
		role   Role
	}{{"client credential", true, RoleClient}, {"open stranger", false, RoleMember}} {
		t.Run(tc.name, func(t *testing.T) {
			c := startMem(t, 5)
			waitFor(t, 5*time.Second, "converged", func() bool {
				all := []int{0, 1, 2, 3, 4}
				return c.everyoneIn(all, all, isStatus(Alive))
			})
			ft, err := c.net.Transport("forger")
			if err != nil {
				t.Fatal(err)
			}
			c.net.SetClientOnly("forger", tc.client)
			forger := Peer{ID: NodeID{0xee}, Addr: "forger", Role: tc.role}
			victim := c.agents[2].Self().ID
			stop, done := make(chan struct{}), make(chan struct{})
			var once sync.Once
			halt := func() { once.Do(func() { close(stop); <-done; ft.Close() }) }
			t.Cleanup(halt)
			go func() {
				defer close(done)
				tick := time.NewTicker(250 * time.Millisecond)
				defer tick.Stop()
				for {
					select {
					case <-stop:
						return
					case <-ft.Events(): // the members' answers: read and dropped
						continue
					case <-tick.C:
					}
					for _, m := range c.agents[0].Members() {
						if m.ID != victim {
							continue
						}
						m.Status, m.Incarnation = Alive, m.Incarnation+1
						for _, msg := range []*core.Message{
							{Kind: core.KindGossip, From: forger, Members: []Member{m}},
							{Kind: core.KindSync, From: forger, Members: []Member{m}},
						} {
							_ = ft.Send("m0", core.EncodeMessage(msg))
						}
					}
				}
			}()
			time.Sleep(600 * time.Millisecond) // a few forged records before the crash (not a convergence wait)
			c.net.Crash("m2")
			waitFor(t, detectWithin(), "every survivor to hold the crashed member DEAD", func() bool {
				return c.everyoneIn([]int{0, 1, 3, 4}, []int{2}, isStatus(Dead))
			})
			halt()
		})
	}
}
