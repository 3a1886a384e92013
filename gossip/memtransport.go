package gossip

import (
	"fmt"
	"math/rand/v2"
	"sync"

	"github.com/casty-go/casty/gossip/internal/queue"
)

// MemNetwork is an in-memory network of MemTransports for tests (this
// module's and others'): frames are delivered in order per sender, and
// faults can be injected — partitions, cut links, random frame drops,
// crashes — and endpoints marked as connections that proved only the
// client credential.
// Link failures are reported at once (no keepalive delay). Safe for
// concurrent use.
type MemNetwork struct {
	mu     sync.Mutex
	nodes  map[string]*MemTransport
	group  map[string]int // partition group; absent = 0
	cuts   map[[2]string]bool
	client map[string]bool // frames from these addresses are ClientOnly
	drop   float64
	rng    *rand.Rand
}

// NewMemNetwork returns an empty network; seed drives the drop decisions.
func NewMemNetwork(seed uint64) *MemNetwork {
	return &MemNetwork{nodes: map[string]*MemTransport{}, group: map[string]int{},
		cuts: map[[2]string]bool{}, client: map[string]bool{},
		rng: rand.New(rand.NewPCG(seed, seed+1))}
}

// Transport attaches a new endpoint at addr. An address can be reused
// after its previous transport closed (a restart).
func (n *MemNetwork) Transport(addr string) (*MemTransport, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if t, ok := n.nodes[addr]; ok && !t.isClosed() {
		return nil, fmt.Errorf("gossip: memory address %q in use", addr)
	}
	t := &MemTransport{net: n, addr: addr, monitored: map[string]bool{},
		events: queue.New[TransportEvent](), stop: make(chan struct{}), done: make(chan struct{})}
	n.nodes[addr] = t
	go func() {
		defer close(t.done)
		t.events.Run(t.stop)
	}()
	return t, nil
}

// Partition splits the network: each group can talk only within itself;
// addresses in no group form one more group. Monitored links across groups
// fail at once (both ends are told).
func (n *MemNetwork) Partition(groups ...[]string) {
	n.mu.Lock()
	n.group = map[string]int{}
	for i, g := range groups {
		for _, a := range g {
			n.group[a] = i + 1
		}
	}
	for _, t := range n.nodes {
		for _, a := range t.monitoredList() {
			if n.group[a] != n.group[t.addr] {
				t.enqueue(TransportEvent{From: a, Failure: KeepaliveFailed})
			}
		}
	}
	n.mu.Unlock()
}

// Cut severs the link between a and b, both ways, until Heal: frames
// between them are not delivered (the sender sees LinkLost) and monitored
// links between them fail at once (both ends are told). Unlike Partition,
// each endpoint keeps its other links, so a third endpoint can reach both.
func (n *MemNetwork) Cut(a, b string) {
	n.mu.Lock()
	n.cuts[cutKey(a, b)] = true
	for _, pair := range [][2]string{{a, b}, {b, a}} {
		if t := n.nodes[pair[0]]; t != nil && t.isMonitoring(pair[1]) {
			t.enqueue(TransportEvent{From: pair[1], Failure: KeepaliveFailed})
		}
	}
	n.mu.Unlock()
}

func cutKey(a, b string) [2]string {
	if b < a {
		a, b = b, a
	}
	return [2]string{a, b}
}

// SetClientOnly marks every frame sent from addr (on) as having arrived
// over a connection whose peer proved only the client credential
// (TransportEvent.ClientOnly), as an authenticating transport marks a
// lite client's, or a holder of only the client secret's.
func (n *MemNetwork) SetClientOnly(addr string, on bool) {
	n.mu.Lock()
	if on {
		n.client[addr] = true
	} else {
		delete(n.client, addr)
	}
	n.mu.Unlock()
}

// Heal removes every partition and every cut.
func (n *MemNetwork) Heal() {
	n.mu.Lock()
	n.group = map[string]int{}
	n.cuts = map[[2]string]bool{}
	n.mu.Unlock()
}

// SetDrop makes every frame vanish with probability p (no failure is
// reported: loss, not disconnection).
func (n *MemNetwork) SetDrop(p float64) {
	n.mu.Lock()
	n.drop = p
	n.mu.Unlock()
}

// Crash closes addr's transport abruptly: its monitors see LinkLost, and
// its pending inbound frames are discarded.
func (n *MemNetwork) Crash(addr string) {
	n.mu.Lock()
	t := n.nodes[addr]
	n.mu.Unlock()
	if t != nil {
		t.Close()
	}
}

// route returns to's transport, whether a frame from from gets
// there (ok) or is randomly lost (lost), and whether from is marked
// client-only.
func (n *MemNetwork) route(from, to string) (t *MemTransport, ok, lost, client bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	t = n.nodes[to]
	if t == nil || t.isClosed() || n.group[from] != n.group[to] || n.cuts[cutKey(from, to)] {
		return nil, false, false, false
	}
	lost = n.drop > 0 && n.rng.Float64() < n.drop
	return t, true, lost, n.client[from]
}

// closedAddr tells every transport monitoring addr that its link died.
func (n *MemNetwork) closedAddr(addr string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, t := range n.nodes {
		if t.addr != addr && !t.isClosed() && t.isMonitoring(addr) {
			t.enqueue(TransportEvent{From: addr, Failure: LinkLost})
		}
	}
}

// MemTransport is one endpoint of a MemNetwork.
type MemTransport struct {
	net  *MemNetwork
	addr string

	mu        sync.Mutex
	monitored map[string]bool
	closed    bool

	events *queue.Pump[TransportEvent]
	stop   chan struct{}
	done   chan struct{}
}

// Addr returns the endpoint's address.
func (t *MemTransport) Addr() string { return t.addr }

func (t *MemTransport) isClosed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.closed
}

func (t *MemTransport) isMonitoring(a string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.monitored[a]
}

func (t *MemTransport) monitoredList() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for a := range t.monitored {
		out = append(out, a)
	}
	return out
}

func (t *MemTransport) enqueue(ev TransportEvent) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	t.mu.Unlock()
	t.events.Push(ev)
}

// Send delivers frame to addr's queue, or reports LinkLost for addr.
func (t *MemTransport) Send(addr string, frame []byte) error {
	if t.isClosed() {
		return ErrClosed
	}
	dst, ok, lost, client := t.net.route(t.addr, addr)
	if !ok {
		t.enqueue(TransportEvent{From: addr, Failure: LinkLost})
		return fmt.Errorf("%w: %s", ErrUnreachable, addr)
	}
	if !lost {
		dst.enqueue(TransportEvent{From: t.addr, Frame: append([]byte(nil), frame...), ClientOnly: client})
	}
	return nil
}

// Monitor watches the link to addr; an unreachable addr fails at once.
func (t *MemTransport) Monitor(addr string) {
	t.mu.Lock()
	t.monitored[addr] = true
	t.mu.Unlock()
	if _, ok, _, _ := t.net.route(t.addr, addr); !ok {
		t.enqueue(TransportEvent{From: addr, Failure: LinkLost})
	}
}

// Unmonitor stops watching addr.
func (t *MemTransport) Unmonitor(addr string) {
	t.mu.Lock()
	delete(t.monitored, addr)
	t.mu.Unlock()
}

// Events returns the inbound channel.
func (t *MemTransport) Events() <-chan TransportEvent { return t.events.Out() }

// Close detaches the endpoint; monitors of its address see LinkLost.
func (t *MemTransport) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		<-t.done
		return nil
	}
	t.closed = true
	t.mu.Unlock()
	close(t.stop)
	<-t.done
	t.net.closedAddr(t.addr)
	return nil
}
