package mux_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"

	"github.com/casty-go/casty/mux"
)

func node(id byte) *mux.Node {
	cfg := mux.DefaultConfig()
	cfg.NodeID[0] = id
	cfg.ClusterName = "example"
	cfg.Logger = slog.New(slog.DiscardHandler)
	n, err := mux.New(cfg)
	if err != nil {
		panic(err)
	}
	return n
}

// Two nodes, one connection: a request/response call, a remote error and
// a bulk stream.
func Example() {
	a, b := node(1), node(2)
	defer a.Close()
	defer b.Close()

	b.HandleRequests(mux.LaneMessage, func(ctx context.Context, from *mux.Session, p []byte) ([]byte, error) {
		if string(p) == "restock" {
			return nil, &mux.RemoteError{Code: mux.CodeUser, Message: "warehouse closed"}
		}
		return []byte("hello, " + string(p)), nil
	})
	b.HandleStreams(func(from *mux.Session, st *mux.Stream) {
		n, _ := io.Copy(io.Discard, st)
		fmt.Fprintf(st, "%s: got %d bytes", st.Header(), n)
		st.Close()
	})

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go b.Serve(ln)

	ctx := context.Background()
	s, err := a.Dial(ctx, ln.Addr().String())
	if err != nil {
		panic(err)
	}
	reply, err := s.Request(ctx, mux.LaneMessage, []byte("world"))
	fmt.Println(string(reply), err)

	_, err = s.Request(ctx, mux.LaneMessage, []byte("restock"))
	var re *mux.RemoteError
	fmt.Println(errors.As(err, &re), re.Code == mux.CodeUser, re.Message)

	st, err := s.OpenStream(ctx, []byte("upload"))
	if err != nil {
		panic(err)
	}
	st.Write(make([]byte, 1<<20))
	st.Close() // half-close: the handler sees EOF and answers
	summary, _ := io.ReadAll(st)
	fmt.Println(string(summary))
	// Output:
	// hello, world <nil>
	// true true warehouse closed
	// upload: got 1048576 bytes
}

// A dial into another cluster is refused with a coded *HandshakeError.
func ExampleHandshakeError() {
	a := node(1)
	defer a.Close()
	cfg := mux.DefaultConfig()
	cfg.NodeID[0] = 2
	cfg.ClusterName = "other"
	cfg.Logger = slog.New(slog.DiscardHandler)
	b, _ := mux.New(cfg)
	defer b.Close()

	c1, c2 := net.Pipe()
	go b.Accept(context.Background(), c2)
	_, err := a.DialConn(context.Background(), c1)
	var he *mux.HandshakeError
	if errors.As(err, &he) {
		fmt.Println(he.Code == mux.CodeWrongCluster, he.Remote)
	}
	// Output: true true
}

// Reconnect delays for a peer that keeps failing.
func ExampleBackoff() {
	b := mux.NewBackoff(mux.DefaultConfig(), nil)
	b.Jitter = 0 // the default ±25 % would vary the figures
	for range 9 {
		fmt.Print(b.Next(), " ")
	}
	fmt.Println()
	// Output: 100ms 200ms 400ms 800ms 1.6s 3.2s 6.4s 12.8s 15s
}
