package casty_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync/atomic"

	"github.com/casty-go/casty/casty"
)

// loggedTCP is a casty.Network over TCP that counts the connections a
// node dials: where a proxy, a tunnel or an in-process network would
// carry them instead.
type loggedTCP struct{ dials atomic.Int64 }

func (n *loggedTCP) Listen(addr string) (net.Listener, error) {
	if addr == "" { // a lite client's: the network picks it
		addr = "127.0.0.1:0"
	}
	return net.Listen("tcp", addr)
}

func (n *loggedTCP) Dial(ctx context.Context, addr string) (net.Conn, error) {
	n.dials.Add(1)
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}

// Two members whose connections a Network of their own carries: the
// second joins the first through it.
func ExampleWithNetwork() {
	ctx := context.Background()
	quiet := casty.WithLogger(slog.New(slog.DiscardHandler))
	first, err := casty.Start(ctx, "127.0.0.1:0", casty.WithNetwork(&loggedTCP{}), quiet)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer first.Close(ctx)
	nw := &loggedTCP{}
	second, err := casty.Start(ctx, "127.0.0.1:0", casty.Seeds(first.Addr()), casty.WithNetwork(nw), quiet)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer second.Close(ctx)

	err = second.WaitMembers(ctx, 2)
	fmt.Println(len(second.Members()), err)
	fmt.Println("joined through the network:", nw.dials.Load() > 0)
	// Output:
	// 2 <nil>
	// joined through the network: true
}
