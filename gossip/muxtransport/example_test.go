package muxtransport_test

import (
	"fmt"
	"net"
	"time"

	"github.com/casty-go/casty/gossip"
	"github.com/casty-go/casty/gossip/muxtransport"
	"github.com/casty-go/casty/mux"
)

// Two nodes run membership over mux on loopback TCP; the second joins
// through the first. Each caller owns its mux node: it serves it and closes
// it after the agent (which closes the transport).
func Example() {
	start := func(id byte, seeds ...string) (*gossip.Agent, *mux.Node) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			panic(err)
		}
		cfg := mux.DefaultConfig()
		cfg.ClusterName = "example"
		cfg.NodeID = mux.NodeID{id}
		cfg.AdvertiseAddr = ln.Addr().String()
		node, err := mux.New(cfg)
		if err != nil {
			panic(err)
		}
		go node.Serve(ln)
		gcfg := gossip.DefaultConfig()
		gcfg.Seeds = seeds
		agent, err := gossip.Start(gossip.Peer{ID: gossip.NodeID{id}, Addr: cfg.AdvertiseAddr},
			gcfg, muxtransport.New(node, cfg.AdvertiseAddr))
		if err != nil {
			panic(err)
		}
		return agent, node
	}
	a, nodeA := start(1)
	b, nodeB := start(2, a.Self().Addr)
	for deadline := time.Now().Add(10 * time.Second); len(b.Alive()) < 2 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Println("b sees", len(b.Alive()), "alive members")
	b.Close()
	nodeB.Close()
	a.Close()
	nodeA.Close()
	// Output:
	// b sees 2 alive members
}
