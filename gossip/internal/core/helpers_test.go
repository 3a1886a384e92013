package core

import (
	"slices"
	"testing"
	"time"
)

var testEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// testNet is a minimal, instant, FIFO network for protocol tests: it
// delivers every Send of every Output until nothing is in flight.
type testNet struct {
	t      *testing.T
	now    time.Time
	nodes  map[string]*Node
	order  []string
	q      []Send
	down   map[string]bool // crashed: messages vanish, senders see LinkDown
	cut    map[string]bool // partitioned: messages to and from vanish silently
	events map[string][]Event
	sent   []Send
}

func newTestNet(t *testing.T) *testNet {
	return &testNet{t: t, now: testEpoch, nodes: map[string]*Node{}, down: map[string]bool{}, cut: map[string]bool{}, events: map[string][]Event{}}
}

func testCfg() *Config {
	c := DefaultConfig()
	return c
}

func (tn *testNet) add(addr string, id byte, seeds ...string) *Node {
	c := testCfg()
	c.Seeds = seeds
	n, err := NewNode(Peer{ID: NodeID{id}, Addr: addr}, c)
	if err != nil {
		tn.t.Fatal(err)
	}
	tn.nodes[addr] = n
	tn.order = append(tn.order, addr)
	tn.out(addr, n.Start(tn.now))
	return n
}

func (tn *testNet) out(addr string, o Output) {
	tn.events[addr] = append(tn.events[addr], o.Events...)
	tn.q = append(tn.q, o.Sends...)
	tn.sent = append(tn.sent, o.Sends...)
}

func (tn *testNet) run() {
	for steps := 0; len(tn.q) > 0; steps++ {
		if steps > 100000 {
			tn.t.Fatal("test network did not quiesce")
		}
		s := tn.q[0]
		tn.q = tn.q[1:]
		from := s.Msg.From.Addr
		if tn.cut[from] || tn.cut[s.To.Addr] {
			continue
		}
		n, ok := tn.nodes[s.To.Addr]
		if !ok || tn.down[s.To.Addr] {
			if src, ok := tn.nodes[from]; ok && !tn.down[from] {
				tn.out(from, src.LinkDown(tn.now, s.To.Addr, LinkLost))
			}
			continue
		}
		// through the wire, as a transport would
		m, err := DecodeMessage(EncodeMessage(s.Msg))
		if err != nil {
			tn.t.Fatalf("encode/decode %v: %v", s.Msg.Kind, err)
		}
		tn.out(s.To.Addr, n.Step(tn.now, m))
	}
}

// advance moves time by d in steps of 100 ms, ticking every live node.
func (tn *testNet) advance(d time.Duration) {
	end := tn.now.Add(d)
	for tn.now.Before(end) {
		tn.now = tn.now.Add(100 * time.Millisecond)
		for _, a := range tn.order {
			if !tn.down[a] {
				tn.out(a, tn.nodes[a].Tick(tn.now))
			}
		}
		tn.run()
	}
}

func (tn *testNet) status(observer, subject string) Status {
	m, ok := tn.nodes[observer].Member(tn.nodes[subject].Self().ID)
	if !ok {
		return 255
	}
	return m.Status
}

func (tn *testNet) count(observer string, k EventKind, subject string) int {
	id := tn.nodes[subject].Self().ID
	return len(slices.DeleteFunc(slices.Clone(tn.events[observer]), func(e Event) bool { return e.Kind != k || e.Member.ID != id }))
}

// cluster builds n nodes a0..a(n-1) joined through a0 and settled.
func cluster(t *testing.T, n int) *testNet {
	tn := newTestNet(t)
	tn.add("a0:1", 1)
	for i := 1; i < n; i++ {
		tn.add(addrOf(i), byte(i+1), "a0:1")
		tn.run()
	}
	tn.advance(2 * time.Second)
	for _, o := range tn.order {
		for _, s := range tn.order {
			if got := tn.status(o, s); got != Alive {
				t.Fatalf("%s sees %s as %v after the cluster formed", o, s, got)
			}
		}
	}
	return tn
}

func addrOf(i int) string { return "a" + string(rune('0'+i/10)) + string(rune('0'+i%10)) + ":1" }
