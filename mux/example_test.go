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

// Members prove a shared secret to each other; a lite client proves the
// weaker client secret and is not granted operator functions. A node
// without a secret is refused.
func ExampleConfig_clusterSecret() {
	member := []byte("0123456789abcdef0123456789abcdef") // use 32 random bytes
	client := []byte("fedcba9876543210fedcba9876543210")
	mk := func(id byte, role mux.Role, edit func(*mux.Config)) *mux.Node {
		cfg := mux.DefaultConfig()
		cfg.NodeID[0], cfg.Role = id, role
		cfg.Logger = slog.New(slog.DiscardHandler)
		edit(&cfg)
		n, err := mux.New(cfg)
		if err != nil {
			panic(err)
		}
		return n
	}
	srv := mk(1, mux.RoleMember, func(c *mux.Config) { c.ClusterSecret, c.ClientSecret = member, client })
	defer srv.Close()
	got := make(chan *mux.Session, 1)
	srv.HandleRequests(mux.LaneMessage, func(ctx context.Context, from *mux.Session, p []byte) ([]byte, error) {
		got <- from
		return nil, nil
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go srv.Serve(ln)
	ctx := context.Background()

	lite := mk(2, mux.RoleClient, func(c *mux.Config) { c.ClientSecret = client })
	defer lite.Close()
	s, err := lite.Dial(ctx, ln.Addr().String())
	if err != nil {
		panic(err)
	}
	s.Request(ctx, mux.LaneMessage, nil)
	from := <-got
	fmt.Println(from.Credential(), from.Operator())

	stranger := mk(3, mux.RoleMember, func(c *mux.Config) {})
	defer stranger.Close()
	_, err = stranger.Dial(ctx, ln.Addr().String())
	fmt.Println(err)
	// Output:
	// client false
	// mux: handshake rejected by the peer (unauthenticated): a credential is required
}
