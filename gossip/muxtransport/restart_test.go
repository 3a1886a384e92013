package muxtransport

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/casty-go/casty/gossip"
)

// A member killed and restarted at once at its address with a new
// identity, the new process connecting to every survivor before their
// transports report the old link's loss: each survivor's transport finds
// a live session at the address and reports no failure (links are kept
// by address), yet every survivor declares the old identity DEAD and
// sees the new one ALIVE, and no survivor is declared dead.
func TestSocketRestartWithANewIdentityAtTheSameAddress(t *testing.T) {
	if testing.Short() {
		t.Skip("real sockets: skipped in -short")
	}
	// a session that closed is taken over by a live one at its address
	// for 3 s: long enough for the new process to connect everywhere
	slow := func(tr *Transport) { tr.grace = 3 * time.Second }
	var nodes []*socketNode
	for i := range 4 {
		var seeds []string
		if i > 0 {
			seeds = []string{nodes[0].tr.Addr()}
		}
		nodes = append(nodes, startSocketNodeWith(t, fmt.Sprintf("127.0.0.%d:0", 40+i), gossip.NodeID{0xcc, byte(i + 1)}, slow, seeds...))
	}
	var restarted *socketNode
	t.Cleanup(func() {
		var wg sync.WaitGroup
		for _, s := range append(nodes, restarted) {
			if s != nil {
				wg.Go(s.close)
			}
		}
		wg.Wait()
	})
	waitFor(t, 15*time.Second, "4 socket nodes converge", func() bool {
		for _, o := range nodes {
			for _, s := range nodes {
				if !o.sees(s.agent.Self().ID, isStatus(gossip.Alive)) {
					return false
				}
			}
		}
		return true
	})
	victim := nodes[3]
	addr, old := victim.tr.Addr(), victim.agent.Self().ID
	victim.close()
	survivors := nodes[:3]
	restarted = startSocketNodeAt(t, addr, gossip.NodeID{0xcc, 0x44}, survivors[0].tr.Addr())
	for _, o := range survivors { // as casty's data path would
		if _, err := restarted.tr.node.Dial(context.Background(), o.tr.Addr()); err != nil {
			t.Fatal(err)
		}
	}
	fresh := restarted.agent.Self().ID
	waitFor(t, 15*time.Second, "every survivor to see the old id DEAD and the new one ALIVE", func() bool {
		return allSee(survivors, []gossip.NodeID{old}, isStatus(gossip.Dead)) &&
			allSee(survivors, []gossip.NodeID{fresh}, isStatus(gossip.Alive))
	})
	for i, o := range survivors {
		for _, s := range survivors {
			if id := s.agent.Self().ID; o.count(gossip.EventDead, id) != 0 {
				t.Errorf("survivor %d declared survivor %v dead", i, id)
			}
		}
		if o.count(gossip.EventDead, fresh) != 0 {
			t.Errorf("survivor %d declared the restarted member's new id dead", i)
		}
	}
}
