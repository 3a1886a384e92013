// Consumer of github.com/casty-go/casty/mux alone: two nodes over a TCP
// loopback connection make a request and get its reply.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/casty-go/casty/mux"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, b := node(1), node(2)
	defer a.Close()
	defer b.Close()
	b.HandleRequests(mux.LaneMessage, func(ctx context.Context, from *mux.Session, p []byte) ([]byte, error) {
		return []byte("hello, " + string(p)), nil
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail(err)
	}
	go b.Serve(ln)
	s, err := a.Dial(ctx, ln.Addr().String())
	if err != nil {
		fail(err)
	}
	reply, err := s.Request(ctx, mux.LaneMessage, []byte("consumer"))
	if err != nil {
		fail(err)
	}
	if string(reply) != "hello, consumer" {
		fail(fmt.Errorf("reply %q", reply))
	}
	fmt.Println("mux consumer:", string(reply))
}

func node(id byte) *mux.Node {
	cfg := mux.DefaultConfig()
	cfg.NodeID[0] = id
	cfg.ClusterName = "consumer"
	cfg.Logger = slog.New(slog.DiscardHandler)
	n, err := mux.New(cfg)
	if err != nil {
		fail(err)
	}
	return n
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "mux consumer:", err)
	os.Exit(1)
}
