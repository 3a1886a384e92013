package castytest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// The test network's errors. Every connection error wraps one of them, so
// a test can tell the network's doing from casty's.
var (
	// ErrRefused: nothing listens at the address (the member crashed or
	// was never started).
	ErrRefused = errors.New("castytest: connection refused")
	// ErrUnreachable: the link is cut (Cut, Partition).
	ErrUnreachable = errors.New("castytest: host unreachable (link cut)")
	// ErrReset: the connection was dropped (Cut, Crash, Lossy, Duplicate).
	ErrReset = errors.New("castytest: connection reset")
)

// maxInFlight is how many bytes a direction of a connection buffers before
// its writer blocks, as a TCP send buffer fills when the peer does not read
// (Pause).
const maxInFlight = 4 << 20

// network is an in-process network of numbered nodes: members 0..n-1 and
// lite members after them. It starts no goroutine; every wait happens in
// the goroutine that reads, writes or dials.
type network struct {
	seed int64

	mu        sync.Mutex
	listeners map[string]*listener
	links     map[[2]int]*link
	nodes     map[int]*nodeState
	conns     map[*pipe]struct{}
	nextPort  int
	nextConn  uint64
}

// nodeState is what the network knows of one node.
type nodeState struct {
	paused atomic.Bool
}

// link holds the faults of the pair of nodes it joins, both directions.
type link struct {
	cut atomic.Bool
	// stall[d]: bytes from the link's lower node to its higher (d = 0) or
	// back (d = 1) are held, undelivered, as a one-way loss holds them
	// (CutOneWay).
	stall [2]atomic.Bool
	delay atomic.Int64  // time.Duration
	loss  atomic.Uint64 // float64 bits: P(reset before a write)
	dup   atomic.Uint64 // float64 bits: P(reset after a write is delivered)
}

func newNetwork(seed int64) *network {
	return &network{
		seed: seed, listeners: map[string]*listener{}, links: map[[2]int]*link{},
		nodes: map[int]*nodeState{}, conns: map[*pipe]struct{}{}, nextPort: 40000,
	}
}

// addrOf is node i's address: a loopback address of its own (so casty
// sees a loopback listener and each node's connections come from a host
// of their own), on which no real socket is ever opened.
func addrOf(i int) string { return net.JoinHostPort(ipOf(i).String(), "7000") }

// ipOf is node i's loopback IP address.
func ipOf(i int) net.IP { return net.IPv4(127, 77, byte(i/250), byte(i%250+1)) }

func (nw *network) node(i int) *nodeState {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	return nw.nodeLocked(i)
}

func (nw *network) nodeLocked(i int) *nodeState {
	s := nw.nodes[i]
	if s == nil {
		s = &nodeState{}
		nw.nodes[i] = s
	}
	return s
}

func (nw *network) link(i, j int) *link {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	return nw.linkLocked(i, j)
}

func (nw *network) linkLocked(i, j int) *link {
	if i > j {
		i, j = j, i
	}
	l := nw.links[[2]int{i, j}]
	if l == nil {
		l = &link{}
		nw.links[[2]int{i, j}] = l
	}
	return l
}

// endpoint is node i's view of the network: what its mux node listens on
// and dials through.
type endpoint struct {
	nw   *network
	self int
}

// Listen registers node self's listener at addr.
func (e endpoint) Listen(addr string) (net.Listener, error) {
	nw := e.nw
	nw.mu.Lock()
	defer nw.mu.Unlock()
	if addr == "" {
		addr = addrOf(e.self)
	}
	if _, busy := nw.listeners[addr]; busy {
		return nil, fmt.Errorf("castytest: listen %s: address in use", addr)
	}
	tcp, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return nil, err
	}
	l := &listener{nw: nw, node: e.self, addr: tcp, queue: make(chan *conn, 128), done: make(chan struct{})}
	nw.listeners[addr] = l
	return l, nil
}

// Dial connects node self to the node listening at addr.
func (e endpoint) Dial(ctx context.Context, addr string) (net.Conn, error) {
	nw := e.nw
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	nw.mu.Lock()
	l := nw.listeners[addr]
	if l == nil {
		nw.mu.Unlock()
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: fmt.Errorf("%w: %s", ErrRefused, addr)}
	}
	lk := nw.linkLocked(e.self, l.node)
	if lk.cut.Load() {
		nw.mu.Unlock()
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: fmt.Errorf("%w: %s", ErrUnreachable, addr)}
	}
	nw.nextPort++
	nw.nextConn++
	local := &net.TCPAddr{IP: ipOf(e.self), Port: nw.nextPort}
	p := &pipe{
		nw: nw, ends: [2]int{e.self, l.node}, link: lk,
		state: [2]*nodeState{nw.nodeLocked(e.self), nw.nodeLocked(l.node)},
	}
	for dir := range 2 {
		p.rng[dir] = rand.New(rand.NewPCG(uint64(nw.seed), nw.nextConn<<1|uint64(dir)))
	}
	p.conns[0] = &conn{p: p, side: 0, local: local, remote: l.addr}
	p.conns[1] = &conn{p: p, side: 1, local: l.addr, remote: local}
	nw.conns[p] = struct{}{}
	nw.mu.Unlock()
	select {
	case l.queue <- p.conns[1]:
		return p.conns[0], nil
	case <-l.done:
		p.reset()
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: fmt.Errorf("%w: %s", ErrRefused, addr)}
	case <-ctx.Done():
		p.reset()
		return nil, ctx.Err()
	}
}

// resetWhere drops every connection for which match holds.
func (nw *network) resetWhere(match func(a, b int) bool) {
	nw.mu.Lock()
	var drop []*pipe
	for p := range nw.conns {
		if match(p.ends[0], p.ends[1]) {
			drop = append(drop, p)
		}
	}
	nw.mu.Unlock()
	for _, p := range drop {
		p.reset()
	}
}

// wakeWhere wakes every connection for which match holds, to look at its
// link again (Resume, Delay).
func (nw *network) wakeWhere(match func(a, b int) bool) {
	nw.mu.Lock()
	var ps []*pipe
	for p := range nw.conns {
		if match(p.ends[0], p.ends[1]) {
			ps = append(ps, p)
		}
	}
	nw.mu.Unlock()
	for _, p := range ps {
		p.mu.Lock()
		p.broadcast()
		p.mu.Unlock()
	}
}

// listener is a node's listener on the test network.
type listener struct {
	nw    *network
	node  int
	addr  *net.TCPAddr
	queue chan *conn
	done  chan struct{}
	once  sync.Once
}

// Accept returns the next connection dialled to the listener.
func (l *listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.queue:
		return c, nil
	case <-l.done:
		return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.addr, Err: net.ErrClosed}
	}
}

// Close stops the listener and refuses the connections not yet accepted.
func (l *listener) Close() error {
	l.once.Do(func() {
		l.nw.mu.Lock()
		if l.nw.listeners[l.addr.String()] == l {
			delete(l.nw.listeners, l.addr.String())
		}
		l.nw.mu.Unlock()
		close(l.done)
		for {
			select {
			case c := <-l.queue:
				c.p.reset()
			default:
				return
			}
		}
	})
	return nil
}

// Addr is the listener's address.
func (l *listener) Addr() net.Addr { return l.addr }

// pipe is one connection: two directions of buffered chunks, each
// delivered no sooner than its link's delay after it was written, and not
// while either end is paused.
type pipe struct {
	nw    *network
	ends  [2]int // the dialling node, the accepting node
	link  *link
	state [2]*nodeState
	conns [2]*conn
	rng   [2]*rand.Rand // the draws of writes by side 0 and side 1

	mu     sync.Mutex
	q      [2][]chunk // q[s]: bytes on their way to side s
	size   [2]int
	closed [2]bool // side s closed its conn
	err    error   // the connection was reset
	// wake[s][w], made by the first goroutine to wait since the last
	// wake-up (nil while none waits), is closed to wake side s's reader
	// (w = reading) or writers (w = writing): a write wakes only the
	// reader it wrote to, a read only a writer blocked on a full queue, a
	// deadline only its own side (each wake-up of a goroutine in a
	// synctest bubble costs the simulation as much as a message).
	wake [2][2]chan struct{}
}

// Whom a wait is for, the second index of pipe.wake.
const (
	reading = 0
	writing = 1
)

type chunk struct {
	data  []byte
	at    time.Time // deliverable from
	reset bool      // Duplicate: the connection resets once this is read
}

// broadcast wakes every goroutine waiting on the pipe. Call with mu held.
func (p *pipe) broadcast() {
	for s := range 2 {
		p.wakeUp(s, reading)
		p.wakeUp(s, writing)
	}
}

// wakeUp wakes side s's goroutines waiting for w. Call with mu held.
func (p *pipe) wakeUp(s, w int) {
	if p.wake[s][w] != nil {
		close(p.wake[s][w])
		p.wake[s][w] = nil
	}
}

// reset drops the connection: both ends fail at once, buffered bytes are
// lost.
func (p *pipe) reset() {
	p.mu.Lock()
	if p.err == nil {
		p.err = ErrReset
		p.q = [2][]chunk{}
		p.size = [2]int{}
		p.broadcast()
	}
	p.mu.Unlock()
	p.forget()
}

// forget removes the pipe from the network once it can carry nothing.
func (p *pipe) forget() {
	p.nw.mu.Lock()
	delete(p.nw.conns, p)
	p.nw.mu.Unlock()
}

func (p *pipe) stalled() bool { return p.state[0].paused.Load() || p.state[1].paused.Load() }

// stalledTo reports whether bytes on their way to side s are held by a
// one-way cut of their direction.
func (p *pipe) stalledTo(s int) bool {
	from, to := p.ends[1-s], p.ends[s]
	d := 0
	if from > to {
		d = 1
	}
	return p.link.stall[d].Load()
}

// conn is one side of a pipe.
type conn struct {
	p             *pipe
	side          int
	local, remote net.Addr

	// deadlines, under p.mu
	rdl, wdl time.Time
}

func loadProb(u *atomic.Uint64) float64 {
	return math.Float64frombits(u.Load())
}

// wait blocks, for w (reading or writing), until the pipe changes for
// it, until (when not zero) or deadline. Call with p.mu held; it returns
// with it held, false past the deadline.
func (c *conn) wait(w int, until, deadline time.Time) bool {
	p := c.p
	if p.wake[c.side][w] == nil {
		p.wake[c.side][w] = make(chan struct{})
	}
	wake := p.wake[c.side][w]
	if !deadline.IsZero() && (until.IsZero() || deadline.Before(until)) {
		until = deadline
	}
	p.mu.Unlock()
	if until.IsZero() {
		<-wake
	} else if d := time.Until(until); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-wake:
		case <-t.C:
		}
		t.Stop()
	}
	p.mu.Lock()
	return deadline.IsZero() || time.Now().Before(deadline)
}

func (c *conn) opErr(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Source: c.local, Addr: c.remote, Err: err}
}

// Read returns the bytes the other side wrote that the link has
// delivered.
func (c *conn) Read(b []byte) (int, error) {
	p := c.p
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		switch {
		case p.closed[c.side]:
			return 0, c.opErr("read", net.ErrClosed)
		case p.err != nil:
			return 0, c.opErr("read", p.err)
		}
		q := p.q[c.side]
		var next time.Time
		if len(q) > 0 && !p.stalled() && !p.stalledTo(c.side) {
			now := time.Now()
			if !q[0].at.After(now) {
				n := copy(b, q[0].data)
				q[0].data = q[0].data[n:]
				p.size[c.side] -= n
				if len(q[0].data) == 0 {
					reset := q[0].reset
					p.q[c.side] = q[1:]
					if reset {
						// Duplicate: delivered, then the connection dies
						// before any answer can travel back.
						p.err = ErrReset
						p.q = [2][]chunk{}
						p.size = [2]int{}
						p.forget()
						p.broadcast()
					}
				}
				p.wakeUp(1-c.side, writing) // room in the queue it writes to
				return n, nil
			}
			next = q[0].at
		}
		if len(q) == 0 && p.closed[1-c.side] {
			return 0, io.EOF
		}
		if !c.wait(reading, next, c.rdl) {
			return 0, c.opErr("read", os.ErrDeadlineExceeded)
		}
	}
}

// Write queues b for the other side, after the link's faults have had
// their say.
func (c *conn) Write(b []byte) (int, error) {
	p := c.p
	p.mu.Lock()
	defer p.mu.Unlock()
	to := 1 - c.side
	for {
		switch {
		case p.closed[c.side]:
			return 0, c.opErr("write", net.ErrClosed)
		case p.err != nil:
			return 0, c.opErr("write", p.err)
		case p.closed[to]:
			return 0, c.opErr("write", fmt.Errorf("%w: the peer closed the connection", ErrReset))
		}
		if p.size[to] < maxInFlight {
			break
		}
		if !c.wait(writing, time.Time{}, c.wdl) {
			return 0, c.opErr("write", os.ErrDeadlineExceeded)
		}
	}
	rng := p.rng[c.side]
	if loss := loadProb(&p.link.loss); loss > 0 && rng.Float64() < loss {
		p.err = ErrReset
		p.q = [2][]chunk{}
		p.size = [2]int{}
		p.broadcast()
		p.forget()
		return 0, c.opErr("write", fmt.Errorf("%w (lossy link)", ErrReset))
	}
	ch := chunk{data: append([]byte(nil), b...), at: time.Now()}
	if d := time.Duration(p.link.delay.Load()); d > 0 {
		ch.at = ch.at.Add(d + time.Duration(rng.Int64N(int64(d)/10+1)))
	}
	if q := p.q[to]; len(q) > 0 && q[len(q)-1].at.After(ch.at) {
		ch.at = q[len(q)-1].at // a stream stays in order
	}
	if dup := loadProb(&p.link.dup); dup > 0 && rng.Float64() < dup {
		ch.reset = true
	}
	p.q[to] = append(p.q[to], ch)
	p.size[to] += len(b)
	p.wakeUp(to, reading)
	return len(b), nil
}

// Close closes this side: the other side reads what is buffered for it,
// then EOF.
func (c *conn) Close() error {
	p := c.p
	p.mu.Lock()
	if p.closed[c.side] {
		p.mu.Unlock()
		return nil
	}
	p.closed[c.side] = true
	p.q[c.side], p.size[c.side] = nil, 0
	both := p.closed[0] && p.closed[1] || p.err != nil
	p.broadcast()
	p.mu.Unlock()
	if both {
		p.forget()
	}
	return nil
}

// LocalAddr is this side's address.
func (c *conn) LocalAddr() net.Addr { return c.local }

// RemoteAddr is the other side's address.
func (c *conn) RemoteAddr() net.Addr { return c.remote }

// SetDeadline sets both deadlines.
func (c *conn) SetDeadline(t time.Time) error {
	c.p.mu.Lock()
	c.rdl, c.wdl = t, t
	c.p.wakeUp(c.side, reading)
	c.p.wakeUp(c.side, writing)
	c.p.mu.Unlock()
	return nil
}

// SetReadDeadline sets the read deadline.
func (c *conn) SetReadDeadline(t time.Time) error {
	c.p.mu.Lock()
	c.rdl = t
	c.p.wakeUp(c.side, reading)
	c.p.mu.Unlock()
	return nil
}

// SetWriteDeadline sets the write deadline.
func (c *conn) SetWriteDeadline(t time.Time) error {
	c.p.mu.Lock()
	c.wdl = t
	c.p.wakeUp(c.side, writing)
	c.p.mu.Unlock()
	return nil
}
