package muxtransport

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/casty-go/casty/gossip"
	"github.com/casty-go/casty/mux"
)

// blackhole forwards TCP connections to target until frozen; frozen, it
// keeps both sockets open and discards what either side sends, so the
// peers see a connection that stopped answering rather than one that closed.
type blackhole struct {
	ln     net.Listener
	frozen atomic.Bool
	mu     sync.Mutex
	conns  []net.Conn
	wg     sync.WaitGroup
}

func newBlackhole(t *testing.T, target string) *blackhole {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &blackhole{ln: ln}
	b.wg.Go(func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			b.mu.Lock()
			b.conns = append(b.conns, in, out)
			b.mu.Unlock()
			b.wg.Go(func() { b.pipe(out, in) })
			b.wg.Go(func() { b.pipe(in, out) })
		}
	})
	t.Cleanup(b.close)
	return b
}

func (b *blackhole) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !b.frozen.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (b *blackhole) close() {
	b.ln.Close()
	b.mu.Lock()
	for _, c := range b.conns {
		c.Close()
	}
	b.mu.Unlock()
	b.wg.Wait()
}

// linkPair serves node B behind a blackhole (B advertises the blackhole's
// address) and runs a Transport on node A that monitors B. It returns the
// transport, B's address, the blackhole and a function closing B's node.
func linkPair(t *testing.T) (*Transport, string, *blackhole, func()) {
	t.Helper()
	lnB, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hole := newBlackhole(t, lnB.Addr().String())
	cfgB := muxConfig(gossip.NodeID{0xb})
	cfgB.AdvertiseAddr = hole.ln.Addr().String()
	cfgB.KeepAliveInterval = 0 // only A probes, so only A can see a keepalive failure
	nodeB, err := mux.New(cfgB)
	if err != nil {
		t.Fatal(err)
	}
	servedB := make(chan struct{})
	go func() {
		defer close(servedB)
		nodeB.Serve(lnB)
	}()
	closeB := sync.OnceFunc(func() {
		nodeB.Close()
		<-servedB
	})
	t.Cleanup(closeB)

	cfgA := muxConfig(gossip.NodeID{0xa})
	cfgA.KeepAliveInterval = 50 * time.Millisecond
	cfgA.KeepAliveTimeout = 300 * time.Millisecond
	tr, closeA, err := listen("127.0.0.1:0", cfgA)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		tr.Close()
		closeA()
	})
	addrB := cfgB.AdvertiseAddr
	tr.Monitor(addrB)
	waitFor(t, 10*time.Second, "A has a session to B", func() bool { return tr.liveSession(addrB) != nil })
	return tr, addrB, hole, closeB
}

// nextFailure returns the first link failure reported within d.
func nextFailure(t *testing.T, tr *Transport, d time.Duration) gossip.TransportEvent {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case ev := <-tr.Events():
			if ev.Failure != 0 {
				return ev
			}
		case <-timeout:
			t.Fatalf("no link failure within %v", d)
		}
	}
}

func TestSilentPeerIsReportedAsKeepaliveFailed(t *testing.T) {
	tr, addrB, hole, _ := linkPair(t)
	hole.frozen.Store(true)
	ev := nextFailure(t, tr, 10*time.Second)
	if ev.From != addrB || ev.Failure != gossip.KeepaliveFailed {
		t.Fatalf("got failure %v from %q, want %v from %q", ev.Failure, ev.From, gossip.KeepaliveFailed, addrB)
	}
}

func TestClosedPeerIsReportedAsLinkLost(t *testing.T) {
	tr, addrB, _, closeB := linkPair(t)
	closeB()
	ev := nextFailure(t, tr, 10*time.Second)
	if ev.From != addrB || ev.Failure != gossip.LinkLost {
		t.Fatalf("got failure %v from %q, want %v from %q", ev.Failure, ev.From, gossip.LinkLost, addrB)
	}
}

// Sends to addresses that refuse connections leave no per-address state
// behind: a forged table can name any number of them, and membership
// probes each it has not verified.
func TestRefusedAddressesAreForgotten(t *testing.T) {
	tr, closeNode, err := listen("127.0.0.1:0", muxConfig(gossip.NodeID{0xc}))
	if err != nil {
		t.Fatal(err)
	}
	defer closeNode()
	defer tr.Close()
	// port 1 on loopback addresses: nothing listens there, and unlike a
	// port just freed no other process can take it meanwhile
	var refused []string
	for i := range 50 {
		refused = append(refused, fmt.Sprintf("127.0.%d.%d:1", i/200, 2+i%200))
	}
	for _, a := range refused {
		if err := tr.Send(a, []byte{1}); err != nil {
			t.Fatal(err)
		}
	}
	failed := 0
	waitFor(t, 10*time.Second, "a LinkLost per refused address", func() bool {
		for {
			select {
			case ev := <-tr.Events():
				if ev.Failure == gossip.LinkLost {
					failed++
				}
				continue
			default:
			}
			return failed >= len(refused)
		}
	})
	waitFor(t, 5*time.Second, "no entry left for the refused addresses", func() bool {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		return len(tr.peers) == 0
	})
}
