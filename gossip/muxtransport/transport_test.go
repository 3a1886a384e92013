package muxtransport

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/casty-go/casty/gossip"
	"github.com/casty-go/casty/gossip/internal/core"
	"github.com/casty-go/casty/mux"
)

// socketNode is one agent over a real mux transport on a loopback address.
type socketNode struct {
	agent     *gossip.Agent
	tr        *Transport
	closeNode func()
	mu        sync.Mutex
	events    []gossip.Event
	stop      func()
	done      chan struct{}
}

func (s *socketNode) count(k gossip.EventKind, id gossip.NodeID) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, e := range s.events {
		if e.Kind == k && e.Member.ID == id {
			n++
		}
	}
	return n
}

func (s *socketNode) sees(id gossip.NodeID, ok func(gossip.Member) bool) bool {
	for _, m := range s.agent.Members() {
		if m.ID == id {
			return ok(m)
		}
	}
	return false
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func muxConfig(id gossip.NodeID) mux.Config {
	c := mux.DefaultConfig()
	c.NodeID = mux.NodeID(id)
	c.ClusterName = "gossip-test"
	// killed nodes close their sockets, which peers see at once; the
	// keepalive only has to catch silent deaths, so keep it tolerant of a
	// loaded machine running the race detector
	c.KeepAliveInterval = time.Second
	c.KeepAliveTimeout = 5 * time.Second
	c.Logger = quietLogger()
	return c
}

func startSocketNode(t *testing.T, id gossip.NodeID, seeds ...string) *socketNode {
	t.Helper()
	return startSocketNodeAt(t, "127.0.0.1:0", id, seeds...)
}

// socketConfig is the agent configuration of the socket tests.
func socketConfig(seeds ...string) *gossip.Config {
	cfg := fastConfig(seeds...)
	cfg.SuspicionTimeout = 1500 * time.Millisecond
	return cfg
}

func startSocketNodeAt(t *testing.T, addr string, id gossip.NodeID, seeds ...string) *socketNode {
	t.Helper()
	return startSocketNodeWith(t, addr, id, nil, seeds...)
}

// startSocketNodeWith is startSocketNodeAt with prep (if not nil) run on
// the transport before the agent starts (no goroutine of it reads its
// fields yet).
func startSocketNodeWith(t *testing.T, addr string, id gossip.NodeID, prep func(*Transport), seeds ...string) *socketNode {
	t.Helper()
	return startSocketNodeAs(t, addr, muxConfig(id), gossip.RoleMember, prep, seeds...)
}

// startSocketNodeAs is startSocketNodeWith over a mux node configured by
// mcfg (the agent's id is mcfg.NodeID), the agent announcing role.
func startSocketNodeAs(t *testing.T, addr string, mcfg mux.Config, role gossip.Role, prep func(*Transport), seeds ...string) *socketNode {
	t.Helper()
	tr, closeNode, err := listen(addr, mcfg)
	if err != nil {
		t.Fatal(err)
	}
	if prep != nil {
		prep(tr)
	}
	cfg := socketConfig(seeds...)
	if os.Getenv("GOSSIP_DEBUG") != "" {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	a, err := gossip.Start(gossip.Peer{ID: gossip.NodeID(mcfg.NodeID), Addr: tr.Addr(), Role: role}, cfg, tr)
	if err != nil {
		t.Fatal(err)
	}
	ch, stop := a.Subscribe()
	s := &socketNode{agent: a, tr: tr, closeNode: closeNode, stop: stop, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for ev := range ch {
			s.mu.Lock()
			s.events = append(s.events, ev)
			s.mu.Unlock()
		}
	}()
	return s
}

func (s *socketNode) close() {
	s.stop()
	s.agent.Close()
	s.closeNode()
	<-s.done
}

// startSocketNodes starts n agents, each on an address of its own from
// 127.0.0.<host> on (all of 127/8 is loopback on Linux: peers are told
// apart by address, not port), the others joining through the first; they
// are closed when the test ends.
func startSocketNodes(t *testing.T, n, host int) []*socketNode {
	t.Helper()
	var nodes []*socketNode
	for i := range n {
		var seeds []string
		if i > 0 {
			seeds = []string{nodes[0].tr.Addr()}
		}
		addr := fmt.Sprintf("127.0.0.%d:0", host+i)
		nodes = append(nodes, startSocketNodeAt(t, addr, gossip.NodeID{0xaa, byte(i + 1)}, seeds...))
	}
	t.Cleanup(func() {
		var wg sync.WaitGroup
		for _, s := range nodes {
			wg.Go(s.close)
		}
		wg.Wait()
	})
	return nodes
}

func startSocketCluster(t *testing.T, n int) []*socketNode {
	t.Helper()
	nodes := startSocketNodes(t, n, 2)
	waitFor(t, 15*time.Second, "10 socket nodes converge", func() bool {
		for _, o := range nodes {
			for _, s := range nodes {
				if !o.sees(s.agent.Self().ID, isStatus(gossip.Alive)) {
					return false
				}
			}
		}
		return true
	})
	return nodes
}

func TestSocketClusterConvergesAndSurvivesThreeKills(t *testing.T) {
	if testing.Short() {
		t.Skip("real sockets: skipped in -short")
	}
	nodes := startSocketCluster(t, 10)
	killed := nodes[7:]
	var ids []gossip.NodeID
	for _, k := range killed {
		ids = append(ids, k.agent.Self().ID)
	}
	var wg sync.WaitGroup
	for _, k := range killed { // no leave, all at once: agents and sockets just stop
		wg.Go(k.close)
	}
	wg.Wait()
	survivorsSeeDeadOnce(t, 15*time.Second, nodes[:7], ids)
}

// allSee reports whether every observer sees every id with status ok.
func allSee(observers []*socketNode, ids []gossip.NodeID, ok func(gossip.Member) bool) bool {
	for _, o := range observers {
		for _, id := range ids {
			if !o.sees(id, ok) {
				return false
			}
		}
	}
	return true
}

// survivorsSeeDeadOnce waits, at most within, until every survivor sees
// every killed id DEAD, then checks that each emitted exactly one DEAD event per killed id
// and still sees every survivor ALIVE.
func survivorsSeeDeadOnce(t *testing.T, within time.Duration, survivors []*socketNode, killed []gossip.NodeID) {
	t.Helper()
	waitFor(t, within, "the survivors see the killed DEAD", func() bool {
		return allSee(survivors, killed, isStatus(gossip.Dead))
	})
	// absence check after the condition above: give duplicate DEAD events
	// a chance to show up (not a wait for convergence)
	time.Sleep(time.Second)
	for i, o := range survivors {
		for _, id := range killed {
			if c := o.count(gossip.EventDead, id); c != 1 {
				t.Errorf("observer %d emitted %d DEAD events for %v, want exactly 1", i, c, id)
			}
		}
		for _, s := range survivors {
			if !o.sees(s.agent.Self().ID, isStatus(gossip.Alive)) {
				t.Errorf("observer %d lost survivor %v: %v", i, s.agent.Self().ID, o.agent.Members())
			}
		}
	}
}

func TestSocketGracefulLeaveIsLeftWithoutSuspicion(t *testing.T) {
	if testing.Short() {
		t.Skip("real sockets: skipped in -short")
	}
	nodes := startSocketCluster(t, 10)
	leaver := nodes[4]
	id := leaver.agent.Self().ID
	if err := leaver.agent.Leave(context.Background()); err != nil {
		t.Fatal(err)
	}
	others := append(append([]*socketNode(nil), nodes[:4]...), nodes[5:]...)
	waitFor(t, 10*time.Second, "LEFT everywhere", func() bool {
		for _, o := range others {
			if !o.sees(id, isStatus(gossip.Left)) {
				return false
			}
		}
		return true
	})
	time.Sleep(2 * time.Second) // absence check: past SuspicionTimeout, nobody may suspect it
	for i, o := range others {
		if o.count(gossip.EventSuspect, id)+o.count(gossip.EventDead, id) != 0 {
			t.Errorf("observer %d suspected or declared dead the node that left", i)
		}
	}
}

func TestSocketForgedSuspicionIsRefuted(t *testing.T) {
	if testing.Short() {
		t.Skip("real sockets: skipped in -short")
	}
	nodes := startSocketCluster(t, 10)
	victim := nodes[3].agent.Self()
	// an outsider speaks the protocol to node 6 and accuses node 3
	forger, err := mux.New(muxConfig(gossip.NodeID{0xee}))
	if err != nil {
		t.Fatal(err)
	}
	defer forger.Close()
	sess, err := forger.Dial(context.Background(), nodes[6].tr.Addr())
	if err != nil {
		t.Fatal(err)
	}
	forged := victim
	forged.Status = gossip.Suspect
	msg := &core.Message{Kind: core.KindGossip, From: gossip.Peer{ID: gossip.NodeID{0xee}, Addr: "127.0.0.1:1"}, Members: []gossip.Member{forged}}
	if err := sess.Send(context.Background(), mux.LaneControl, core.EncodeMessage(msg)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the victim refutes: ALIVE with incarnation > 0 everywhere", func() bool {
		for _, o := range nodes {
			if !o.sees(victim.ID, func(m gossip.Member) bool { return m.Status == gossip.Alive && m.Incarnation > 0 }) {
				return false
			}
		}
		return true
	})
	time.Sleep(2 * time.Second) // absence check: past SuspicionTimeout nobody declared it dead
	for i, o := range nodes {
		if o.count(gossip.EventDead, victim.ID) != 0 {
			t.Errorf("observer %d declared the falsely accused node dead", i)
		}
	}
}
