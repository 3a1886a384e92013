package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/yamux"

	"github.com/casty-go/casty/casty"
	"github.com/casty-go/casty/casty/castytest/benchkit"
	"github.com/casty-go/casty/mux"
)

var quietLog = casty.WithLogger(slog.New(slog.DiscardHandler))

// cluster measures calls across members in one process, over loopback
// TCP, against raw yamux round trips measured in the same run.
func cluster() {
	ctx := context.Background()
	yfloor := best(yamuxPingPong, 3)
	ypipe := best(func(b *testing.B) { yamuxPipelined(b, 64) }, 3)
	mesh := best(func(b *testing.B) { muxMesh(b, 3, 64, 1000) }, 3)

	nodes := startMembers(3)
	defer func() {
		for _, n := range nodes {
			n.Close(ctx)
		}
	}()
	a, b := nodes[0], nodes[1]
	remoteKey := keyOwned(a, b.Addr())
	localKey := keyOwned(a, a.Addr())

	seq := best(func(bb *testing.B) {
		ref := Counters.Ref(a, remoteKey)
		for bb.Loop() {
			if _, err := casty.Call(ctx, ref, (*Counter).Add, 1); err != nil {
				bb.Fatal(err)
			}
		}
	}, 3)
	add("sequential cross-node Call, two members in one process",
		fmt.Sprintf("%.1f µs/call = %.1f k calls/s", perOp(seq)/1e3, 1e6/perOp(seq)),
		fmt.Sprintf("raw yamux ping-pong %.1f µs (%.1f k/s)", perOp(yfloor)/1e3, 1e6/perOp(yfloor)),
		fmt.Sprintf("%.2f× the floor's rate", perOp(yfloor)/perOp(seq)), "goal ≥ 0.8×")

	par := best(func(bb *testing.B) { clusterParallel(bb, nodes, 64, 1000, anyOwner) }, 3)
	add("64 callers over 1,000 keys, 3 members",
		fmt.Sprintf("%.0f k calls/s, %s", 1e6/perOp(par), cpus(par)),
		fmt.Sprintf("mux alone in the same shape (3 nodes, 64 callers, echo handler): %.0f k/s, %s; raw yamux, 64 pipelined requesters, no batching: %.0f k/s",
			1e6/perOp(mesh), cpus(mesh), 1e6/perOp(ypipe)),
		fmt.Sprintf("%.2f× mux alone, %.2f× raw yamux", perOp(mesh)/perOp(par), perOp(ypipe)/perOp(par)), "goal ≥ 250 k/s")

	// Where the time goes: the same callers on the keys their own member
	// owns only (no network), then on the others' keys only.
	here := best(func(bb *testing.B) { clusterParallel(bb, nodes, 64, 1000, ownedHere) }, 3)
	remote := best(func(bb *testing.B) { clusterParallel(bb, nodes, 64, 1000, ownedRemote) }, 3)
	add("64 callers, 3 members, split: keys owned by the caller's member only / by another member only",
		fmt.Sprintf("%.0f k / %.0f k calls/s (%s / %s)", 1e6/perOp(here), 1e6/perOp(remote), cpus(here), cpus(remote)),
		fmt.Sprintf("the mixed figure above, if each call cost what it costs alone: %.0f k/s", 1e6/(perOp(here)/3+2*perOp(remote)/3)),
		"-", "diagnostic: a third of the mixed calls are local")

	localOwned := best(func(bb *testing.B) {
		ref := Counters.Ref(a, localKey)
		for bb.Loop() {
			if _, err := casty.Call(ctx, ref, (*Counter).Add, 1); err != nil {
				bb.Fatal(err)
			}
		}
	}, 5)
	sys := casty.Local()
	defer sys.Close(ctx)
	localMode := best(func(bb *testing.B) {
		ref := Counters.Ref(sys, "k")
		for bb.Loop() {
			if _, err := casty.Call(ctx, ref, (*Counter).Add, 1); err != nil {
				bb.Fatal(err)
			}
		}
	}, 5)
	add("call to a locally owned key through a clustered system",
		fmt.Sprintf("%.0f ns/call", perOp(localOwned)),
		fmt.Sprintf("local-mode call %.0f ns", perOp(localMode)),
		fmt.Sprintf("%.2f×", perOp(localOwned)/perOp(localMode)), "goal ≤ 1.5×")
}

// startMembers starts n members on loopback TCP (benchkit.StartMembers),
// panicking if they do not see each other within 30 s.
func startMembers(n int) []*casty.System {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nodes, err := benchkit.StartMembers(ctx, n, quietLog)
	if err != nil {
		panic(err)
	}
	return nodes
}

func keyOwned(via *casty.System, addr string) string {
	return benchkit.KeyOwnedBy(via, Counters.Name(), addr, "bench-")
}

// keyOwnership selects, for each caller's member, which of its keys it calls.
type keyOwnership int

const (
	anyOwner    keyOwnership = iota
	ownedHere                // keys the calling member owns
	ownedRemote              // keys another member owns
)

// clusterParallel: callers spread over the members call keys p0..p<keys>
// (of which, with want, only those owned as it says).
func clusterParallel(b *testing.B, nodes []*casty.System, callers, keys int, want keyOwnership) {
	ctx := context.Background()
	mine := make([][]string, len(nodes)) // per member, the keys its callers call
	for i := range keys {
		k := "p" + strconv.Itoa(i)
		if _, err := casty.Call(ctx, Counters.Ref(nodes[0], k), (*Counter).Add, 0); err != nil {
			b.Fatal(err) // activate every key before timing
		}
		for n, s := range nodes {
			m, _ := s.OwnerOf(Counters.Name(), k)
			if here := m.Addr == s.Addr(); want == anyOwner || here == (want == ownedHere) {
				mine[n] = append(mine[n], k)
			}
		}
	}
	// Walk the first member's share length on every member, so the three
	// selections cost the same bookkeeping.
	runCallers(b, callers, len(mine[0]), 31, func(w, i int) error {
		ks := mine[w%len(nodes)]
		_, err := casty.Call(ctx, Counters.Ref(nodes[w%len(nodes)], ks[i%len(ks)]), (*Counter).Add, 1)
		return err
	})
}

// yamuxPair returns a client and server yamux session over loopback TCP.
func yamuxPair() (client, server *yamux.Session, closeAll func()) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	cc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		panic(err)
	}
	sc := <-accepted
	ln.Close()
	cfg := yamux.DefaultConfig()
	cfg.LogOutput = io.Discard
	client, _ = yamux.Client(cc, cfg)
	server, _ = yamux.Server(sc, cfg)
	return client, server, func() { client.Close(); server.Close() }
}

// yamuxPingPong: one stream, 64-byte request, 64-byte reply.
func yamuxPingPong(b *testing.B) {
	client, server, closeAll := yamuxPair()
	defer closeAll()
	go func() {
		st, err := server.AcceptStream()
		if err != nil {
			return
		}
		buf := make([]byte, 64)
		for {
			if _, err := io.ReadFull(st, buf); err != nil {
				return
			}
			if _, err := st.Write(buf); err != nil {
				return
			}
		}
	}()
	st, err := client.OpenStream()
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 64)
	for b.Loop() {
		st.Write(buf)
		io.ReadFull(st, buf)
	}
	st.Close()
}

// yamuxPipelined: n requesters share one session, each with its own stream,
// one write per message (no batching).
func yamuxPipelined(b *testing.B, n int) {
	client, server, closeAll := yamuxPair()
	defer closeAll()
	go func() {
		for {
			st, err := server.AcceptStream()
			if err != nil {
				return
			}
			go func() {
				buf := make([]byte, 64)
				for {
					if _, err := io.ReadFull(st, buf); err != nil {
						return
					}
					if _, err := st.Write(buf); err != nil {
						return
					}
				}
			}()
		}
	}()
	b.ResetTimer()
	per := b.N/n + 1
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := client.OpenStream()
			if err != nil {
				return
			}
			defer st.Close()
			buf := make([]byte, 64)
			for range per {
				st.Write(buf)
				io.ReadFull(st, buf)
			}
		}()
	}
	wg.Wait()
}

// muxMesh is the transport under the 64-caller figure, without casty:
// nodes mux nodes in one process, fully connected over loopback TCP;
// caller w runs on node w%nodes and walks the keys; a key's owner is a
// hash of it modulo nodes. A call to its own node's key runs the handler
// directly, any other is one 64-byte request to the owner, echoed back.
func muxMesh(b *testing.B, nodes, callers, keys int) {
	echo := func(_ context.Context, _ *mux.Session, p []byte) ([]byte, error) { return p, nil }
	ns := make([]*mux.Node, nodes)
	addrs := make([]string, nodes)
	defer func() {
		for _, n := range ns {
			if n != nil {
				n.Close()
			}
		}
	}()
	for i := range ns {
		c := mux.DefaultConfig()
		c.NodeID[0] = byte(i + 1)
		c.Logger = slog.New(slog.DiscardHandler)
		n, err := mux.New(c)
		if err != nil {
			b.Fatal(err)
		}
		n.HandleRequests(mux.LaneMessage, echo)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		go n.Serve(ln)
		ns[i], addrs[i] = n, ln.Addr().String()
	}
	ctx := context.Background()
	sessions := make([][]*mux.Session, nodes) // [from][to]
	for i := range ns {
		sessions[i] = make([]*mux.Session, nodes)
		for j := range ns {
			if i != j {
				var id mux.NodeID
				id[0] = byte(j + 1)
				s, err := ns[i].Connect(ctx, id, addrs[j])
				if err != nil {
					b.Fatal(err)
				}
				sessions[i][j] = s
			}
		}
	}
	msg := make([]byte, 64)
	runCallers(b, callers, keys, 31, func(w, i int) error {
		from, owner := w%nodes, (i*2654435761>>7)%nodes
		if owner == from {
			_, err := echo(ctx, nil, msg)
			return err
		}
		_, err := sessions[from][owner].RequestTimeout(ctx, mux.LaneMessage, msg, 5*time.Second)
		return err
	})
}
