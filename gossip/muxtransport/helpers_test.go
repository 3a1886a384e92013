package muxtransport

import (
	"github.com/casty-go/casty/internal/wait"
	"net"
	"time"

	"github.com/casty-go/casty/gossip"
	"github.com/casty-go/casty/mux"
)

// listen starts a mux node with cfg on addr (TCP, "host:port"; port 0
// picks one, and AdvertiseAddr defaults to the bound address), serves it
// and returns a Transport over it, with a function that closes the node
// and waits for its Serve to return (call it after closing the agent).
func listen(addr string, cfg mux.Config) (*Transport, func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	if cfg.AdvertiseAddr == "" {
		cfg.AdvertiseAddr = ln.Addr().String()
	}
	node, err := mux.New(cfg)
	if err != nil {
		ln.Close()
		return nil, nil, err
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		node.Serve(ln)
	}()
	closeNode := func() {
		node.Close()
		<-served
	}
	return New(node, cfg.AdvertiseAddr), closeNode, nil
}

// fastConfig shrinks every interval so the socket tests finish in seconds.
func fastConfig(seeds ...string) *gossip.Config {
	c := gossip.DefaultConfig()
	c.ShuffleInterval = 200 * time.Millisecond
	c.SuspicionTimeout = 400 * time.Millisecond
	c.AntiEntropyInterval = 500 * time.Millisecond
	c.TombstoneTTL = 10 * time.Second
	c.GraftTimeout = 50 * time.Millisecond
	c.JoinTimeout = time.Second
	c.NeighborTimeout = 200 * time.Millisecond
	c.Seeds = seeds
	return c
}

var waitFor = wait.For

func isStatus(s gossip.Status) func(gossip.Member) bool {
	return func(m gossip.Member) bool { return m.Status == s }
}
