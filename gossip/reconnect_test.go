package gossip

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// Reconnect (SPEC.md, Reconnect): two sides of a partition held longer
// than TombstoneTTL find each other again once it heals.

// reconnectConfig is fastConfig with tombstones that expire within a
// second and a reconnect round every 300 ms.
func reconnectConfig(seeds ...string) *Config {
	c := fastConfig(seeds...)
	c.TombstoneTTL = time.Second
	c.ReconnectInterval = 300 * time.Millisecond
	return c
}

// startMemSeeds starts n agents m0..m(n-1) on c.net, agent i with the
// seeds seedsOf(i), one at a time, waiting for each to be seen ALIVE.
func startMemSeeds(t *testing.T, n int, seedsOf func(i int) []string) *memCluster {
	t.Helper()
	c := &memCluster{net: NewMemNetwork(1)}
	t.Cleanup(func() {
		for _, a := range c.agents {
			a.Close()
		}
	})
	for i := range n {
		addr := fmt.Sprintf("m%d", i)
		tr, err := c.net.Transport(addr)
		if err != nil {
			t.Fatal(err)
		}
		a, err := Start(Peer{ID: NodeID{byte(i + 1)}, Addr: addr}, reconnectConfig(seedsOf(i)...), tr)
		if err != nil {
			t.Fatal(err)
		}
		c.agents = append(c.agents, a)
	}
	all := c.all()
	waitFor(t, 10*time.Second, "every agent to see every agent ALIVE", func() bool {
		return c.everyoneIn(all, all, isStatus(Alive))
	})
	return c
}

func (c *memCluster) all() []int {
	out := make([]int, len(c.agents))
	for i := range out {
		out[i] = i
	}
	return out
}

// holdsNone reports whether no agent of who holds any record of subjects.
func (c *memCluster) holdsNone(who, subjects []int) bool {
	for _, o := range who {
		for _, s := range subjects {
			if holds(c.agents[o], c.agents[s].Self().ID, func(Member) bool { return true }) {
				return false
			}
		}
	}
	return true
}

// partitionPastTombstones cuts a from b, waits until each side declared the
// other DEAD and then dropped the tombstones, heals, and waits until every
// agent holds every agent ALIVE.
func partitionPastTombstones(t *testing.T, c *memCluster, a, b []int) {
	t.Helper()
	c.cutApart(a, b)
	waitFor(t, detectWithin(), "each side to hold the other DEAD", func() bool {
		return c.everyoneIn(a, b, isStatus(Dead)) && c.everyoneIn(b, a, isStatus(Dead))
	})
	waitFor(t, 10*time.Second, "each side's tombstones of the other to expire", func() bool {
		return c.holdsNone(a, b) && c.holdsNone(b, a)
	})
	// held a while longer: several reconnect rounds fail across the cut
	time.Sleep(time.Second)
	if !c.holdsNone(a, b) || !c.holdsNone(b, a) {
		t.Fatal("a side learned of the other while the partition lasts")
	}
	c.net.Heal()
	all := c.all()
	waitFor(t, 10*time.Second, "every agent to hold every agent ALIVE after the partition healed", func() bool {
		return c.everyoneIn(all, all, isStatus(Alive))
	})
}

// A 2|3 partition held past TombstoneTTL, with every member's seed on the
// minority side: both rules work (the majority has no live seed left).
func TestAPartitionOutlastingTombstonesHeals(t *testing.T) {
	c := startMemSeeds(t, 5, func(i int) []string {
		if i == 0 {
			return nil
		}
		return []string{"m0"}
	})
	partitionPastTombstones(t, c, []int{0, 1}, []int{2, 3, 4})
}

// The same with a live seed on each side (m0 and m2): only the reconnect
// list of members lost to a failure brings the sides together.
func TestAPartitionOutlastingTombstonesHealsThroughTheReconnectList(t *testing.T) {
	c := startMemSeeds(t, 5, func(i int) []string {
		switch i {
		case 0:
			return nil
		case 1:
			return []string{"m0"}
		}
		return []string{"m0", "m2"}
	})
	partitionPastTombstones(t, c, []int{0, 1}, []int{2, 3, 4})
	waitFor(t, 5*time.Second, "every agent to drop its reconnect list entries", func() bool {
		for _, a := range c.agents {
			var r []Peer
			if err := a.do(context.Background(), func() { r = a.node.Reconnecting() }); err != nil || len(r) != 0 {
				return false
			}
		}
		return true
	})
}
