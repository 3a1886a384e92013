package gossip_test

import (
	"context"
	"fmt"
	"time"

	"github.com/casty-go/casty/gossip"
)

// Three agents over the in-memory network form a cluster; one leaves and
// the others see it LEFT.
func Example() {
	net := gossip.NewMemNetwork(1)
	cfg := gossip.DefaultConfig()
	cfg.ShuffleInterval = 100 * time.Millisecond
	var agents []*gossip.Agent
	for i, addr := range []string{"a", "b", "c"} {
		tr, _ := net.Transport(addr)
		c := *cfg
		if i > 0 {
			c.Seeds = []string{"a"}
		}
		ag, err := gossip.Start(gossip.Peer{ID: gossip.NodeID{byte(i + 1)}, Addr: addr}, &c, tr)
		if err != nil {
			panic(err)
		}
		agents = append(agents, ag)
	}
	waitFor := func(cond func() bool) {
		for deadline := time.Now().Add(5 * time.Second); !cond() && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitFor(func() bool { return len(agents[0].Alive()) == 3 && len(agents[2].Alive()) == 3 })
	fmt.Println("alive at a:", len(agents[0].Alive()))

	events, cancel := agents[0].Subscribe()
	defer cancel()
	agents[2].Leave(context.Background())
	for ev := range events {
		if ev.Kind == gossip.EventLeft {
			fmt.Println("a saw", ev.Member.Addr, ev.Kind)
			break
		}
	}
	agents[0].Close()
	agents[1].Close()
	// Output:
	// alive at a: 3
	// a saw c left
}

// Driving the pure state machine by hand: a node with no seeds starts a
// cluster; a second node joins through it. Every Output is carried out by
// the caller (here: delivered at once).
func ExampleNode() {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a, _ := gossip.NewNode(gossip.Peer{ID: gossip.NodeID{1}, Addr: "a:1"}, nil)
	cfg := gossip.DefaultConfig()
	cfg.Seeds = []string{"a:1"}
	b, _ := gossip.NewNode(gossip.Peer{ID: gossip.NodeID{2}, Addr: "b:1"}, cfg)
	nodes := map[string]*gossip.Node{"a:1": a, "b:1": b}
	queue := append(a.Start(now).Sends, b.Start(now).Sends...)
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		m, _ := gossip.DecodeMessage(gossip.EncodeMessage(s.Msg))
		out := nodes[s.To.Addr].Step(now, m)
		for _, ev := range out.Events {
			fmt.Println(s.To.Addr, "event:", ev.Kind, ev.Member.Addr)
		}
		queue = append(queue, out.Sends...)
	}
	fmt.Println("a knows", len(a.Members()), "members; b knows", len(b.Members()))
	// Output:
	// b:1 event: joined a:1
	// a:1 event: joined b:1
	// a knows 2 members; b knows 2
}
