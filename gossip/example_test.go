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
