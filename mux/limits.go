package mux

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Inbound admission: Serve counts the connections it accepted that are
// still open (in handshake or established), in total and per remote host,
// and the handshakes among them still in progress, in total and per host.
//
//   - A connection beyond MaxInboundConns or MaxInboundConnsPerHost is
//     closed at once (refused).
//   - A connection beyond MaxHandshakesPerHost takes the place of the
//     oldest handshake of its host that has not sent a byte yet (evicted),
//     and is refused when there is none.
//   - A connection beyond MaxHandshakes takes the place of a handshake
//     that has not sent a byte yet, preferring hosts whose connections
//     were shed lately, then hosts holding the most (globalVictim); when
//     every handshake has sent a byte, of the host holding the most if it
//     holds more than the newcomer's. Otherwise it is refused.
//   - A connection whose first byte does not arrive within
//     FirstByteTimeout is closed (silent).
//
// So connections held open without a word, from one host or from many,
// cannot keep a peer that speaks at once from completing its handshake:
// it takes the place of the oldest idle one. A connection's slot is
// released when it closes, whoever closes it (a failed handshake, the
// session's end, Node.Close), because the connection handed to Accept is
// wrapped in an inboundConn. What is refused, evicted or silent is counted
// (Node.Admission) and logged on one WARN line per shedLogEvery at most.
//
// Established sessions are counted once more by room: a session whose
// peer is a client (clientPeer) takes a place in the clients' room,
// MaxClientConns in all and MaxClientConnsPerHost per host, as its
// handshake ends (takeClientRoom, from Accept); beyond either it is
// refused with CodeTooManyClients instead of welcomed (counted as
// ClientRefused). The place is returned with the connection's slot, when
// it closes. Members have no room of their own: they have whatever of
// MaxInboundConns the clients cannot take. A client beyond its room is
// refused rather than an older client evicted: the older one may be a
// lite client in use, and eviction would let whoever holds the client
// credential cycle the honest ones out. No client session is evicted for
// a member either: clients never hold more than their room, so when a
// member finds MaxInboundConns full, members and handshakes in progress
// hold the rest.

// shedLogEvery paces the WARN line about connections shed.
const shedLogEvery = 10 * time.Second

// admission holds the counts (guarded by Node.mu).
type admission struct {
	accepts    int // connections admit was asked about
	conns      int
	perHost    map[string]int
	handshakes map[*hsSlot]struct{}
	hsPerHost  map[string]int

	// Client sessions established (takeClientRoom), in all and per host.
	clients        int
	clientsPerHost map[string]int

	// Connections shed per host in this window and the previous one
	// (strikes), a window being shedLogEvery long.
	shedCur, shedPrev map[string]uint32
	window            time.Time

	// Totals (Node.Admission), and what the next WARN line reports.
	refused, evicted, silent, clientRefused atomic.Uint64
	logged                                  time.Time // when the last WARN line went out
	since                                   Admission // counts since then
	lastLimit, lastRemote                   string
}

// hsSlot is one inbound handshake in progress.
type hsSlot struct {
	host  string
	start time.Time
	conn  *inboundConn
	heard atomic.Bool // its first byte arrived
	gone  bool        // released or evicted (Node.mu)
}

// Admission counts what Serve turned away or cut short, since the node
// started, to keep room for peers that complete their handshakes and
// for members. Each
// field only grows; Node.Admission reads them.
type Admission struct {
	// Refused counts connections closed as soon as they were accepted:
	// MaxInboundConns or MaxInboundConnsPerHost was reached, or a
	// handshake limit with no handshake it could evict.
	Refused uint64
	// Evicted counts handshakes in progress closed to make room for a
	// newer connection (MaxHandshakesPerHost or MaxHandshakes reached).
	Evicted uint64
	// Silent counts connections closed because their first byte did not
	// arrive within Config.FirstByteTimeout.
	Silent uint64
	// ClientRefused counts client sessions refused right after their
	// handshake, with CodeTooManyClients: Config.MaxClientConns or
	// MaxClientConnsPerHost was reached.
	ClientRefused uint64
}

// Admission reports what Serve refused, evicted or closed as silent, and
// the client sessions it refused, since the node started. It costs four
// atomic loads: metrics may poll it.
func (n *Node) Admission() Admission {
	return Admission{Refused: n.adm.refused.Load(), Evicted: n.adm.evicted.Load(),
		Silent: n.adm.silent.Load(), ClientRefused: n.adm.clientRefused.Load()}
}

// clientPeer reports whether a peer that proved cred and announces role
// is a client, counted in the clients' room: it announces RoleClient, or
// may not act as a member (mayBeMember: where this node requires
// credentials, it did not prove the member credential). In an open
// cluster the announced role decides.
func (c *Config) clientPeer(cred Credential, role Role) bool {
	return role == RoleClient || !c.mayBeMember(cred, role)
}

// takeClientRoom gives the connection of an established client session a
// place in the clients' room (it takes n.mu). It returns the name of
// the limit that refuses it, counted and logged, or "".
func (n *Node) takeClientRoom(c *inboundConn) (refused string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case c.client:
		return ""
	case n.adm.clients >= n.cfg.MaxClientConns:
		refused = "MaxClientConns"
	case n.adm.clientsPerHost[c.host] >= n.cfg.MaxClientConnsPerHost:
		refused = "MaxClientConnsPerHost"
	}
	if refused != "" {
		n.noteShed(shedClient, refused, c)
		return refused
	}
	if n.adm.clientsPerHost == nil {
		n.adm.clientsPerHost = make(map[string]int)
	}
	c.client = true
	n.adm.clients++
	n.adm.clientsPerHost[c.host]++
	return ""
}

// admit takes a connection and a handshake slot for conn from host. It
// returns the slot, the connection evicted to make room (to be closed by
// the caller, without the lock), or the name of the limit that refuses
// conn.
func (n *Node) admit(host string, conn *inboundConn) (slot *hsSlot, evicted *inboundConn, refused string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.adm.accepts++
	switch {
	case n.adm.conns >= n.cfg.MaxInboundConns:
		return nil, nil, "MaxInboundConns"
	case n.adm.perHost[host] >= n.cfg.MaxInboundConnsPerHost:
		return nil, nil, "MaxInboundConnsPerHost"
	}
	var victim *hsSlot
	limit := ""
	switch {
	case n.adm.hsPerHost[host] >= n.cfg.MaxHandshakesPerHost:
		limit = "MaxHandshakesPerHost"
		for s := range n.adm.handshakes {
			if s.host == host && !s.heard.Load() && (victim == nil || s.start.Before(victim.start)) {
				victim = s
			}
		}
	case len(n.adm.handshakes) >= n.cfg.MaxHandshakes:
		limit = "MaxHandshakes"
		victim = n.globalVictim(host)
	}
	if limit != "" {
		if victim == nil {
			return nil, nil, limit
		}
		n.dropSlot(victim)
		n.noteShed(shedEvicted, limit, victim.conn)
		evicted = victim.conn
	}
	if n.adm.perHost == nil {
		n.adm.perHost = make(map[string]int)
		n.adm.hsPerHost = make(map[string]int)
		n.adm.handshakes = make(map[*hsSlot]struct{})
	}
	n.adm.conns++
	n.adm.perHost[host]++
	slot = &hsSlot{host: host, start: time.Now(), conn: conn}
	n.adm.handshakes[slot] = struct{}{}
	n.adm.hsPerHost[host]++
	return slot, evicted, ""
}

// globalVictim picks the handshake a connection from host takes the place
// of when MaxHandshakes is reached (n.mu held). Among those that have not
// sent a byte: one of a host whose connections were shed the most lately
// (an attacker that reopens what is closed piles them up; a peer that
// completes its handshakes has none), then of a host holding the most of
// them, the oldest. When all have sent a byte: the first in the same
// order, counting every handshake of a host, if its host holds more than
// host does. nil: none.
func (n *Node) globalVictim(host string) *hsSlot {
	silentPer := make(map[string]int)
	for s := range n.adm.handshakes {
		if !s.heard.Load() {
			silentPer[s.host]++
		}
	}
	order := func(count map[string]int) func(a, b *hsSlot) bool {
		return func(a, b *hsSlot) bool { // a before b
			if sa, sb := n.adm.strikes(a.host), n.adm.strikes(b.host); sa != sb {
				return sa > sb
			}
			if ca, cb := count[a.host], count[b.host]; ca != cb {
				return ca > cb
			}
			return a.start.Before(b.start)
		}
	}
	bySilent, byAll := order(silentPer), order(n.adm.hsPerHost)
	var silent, any *hsSlot
	for s := range n.adm.handshakes {
		if silentPer[s.host] > 0 && !s.heard.Load() && (silent == nil || bySilent(s, silent)) {
			silent = s
		}
		if any == nil || byAll(s, any) {
			any = s
		}
	}
	switch {
	case silent != nil:
		return silent
	case any != nil && n.adm.hsPerHost[any.host] > n.adm.hsPerHost[host]:
		return any
	}
	return nil
}

// dropSlot forgets a handshake slot (n.mu held).
func (n *Node) dropSlot(s *hsSlot) {
	if s.gone {
		return
	}
	s.gone = true
	delete(n.adm.handshakes, s)
	if n.adm.hsPerHost[s.host]--; n.adm.hsPerHost[s.host] <= 0 {
		delete(n.adm.hsPerHost, s.host)
	}
}

// handshakeDone releases a handshake slot taken by admit, unless it was
// evicted. It reports whether it was.
func (n *Node) handshakeDone(s *hsSlot) (evicted bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	evicted = s.gone
	n.dropSlot(s)
	return evicted
}

// maxStrikeHosts bounds the hosts whose sheds a window remembers.
const maxStrikeHosts = 4096

// strikes is how many connections of host were shed in this window and
// the previous one (n.mu held).
func (a *admission) strikes(host string) uint32 { return a.shedCur[host] + a.shedPrev[host] }

// strike counts a shed connection of host (n.mu held), starting a new
// window once the current one is shedLogEvery old or holds
// maxStrikeHosts hosts.
func (a *admission) strike(host string, now time.Time) {
	if a.shedCur == nil || now.Sub(a.window) >= shedLogEvery || len(a.shedCur) >= maxStrikeHosts {
		a.shedPrev, a.shedCur, a.window = a.shedCur, make(map[string]uint32), now
	}
	a.shedCur[host]++
}

// What a shed connection was.
type shedKind uint8

const (
	shedRefused shedKind = iota
	shedEvicted
	shedSilent
	shedClient
)

// noteShed counts a connection refused, evicted or silent and logs the
// counts since the previous line, at most once per shedLogEvery (n.mu
// held).
func (n *Node) noteShed(kind shedKind, limit string, conn net.Conn) {
	switch kind {
	case shedRefused:
		n.adm.refused.Add(1)
		n.adm.since.Refused++
	case shedEvicted:
		n.adm.evicted.Add(1)
		n.adm.since.Evicted++
	case shedSilent:
		n.adm.silent.Add(1)
		n.adm.since.Silent++
	case shedClient:
		n.adm.clientRefused.Add(1)
		n.adm.since.ClientRefused++
	}
	n.adm.lastLimit, n.adm.lastRemote = limit, conn.RemoteAddr().String()
	now := time.Now()
	n.adm.strike(remoteHost(conn), now)
	if !n.adm.logged.IsZero() && now.Sub(n.adm.logged) < shedLogEvery {
		return
	}
	s := n.adm.since
	n.log.Warn("mux: inbound connections shed to keep room for handshakes and members",
		"refused", s.Refused, "evicted", s.Evicted, "silent", s.Silent, "client_refused", s.ClientRefused,
		"last_limit", n.adm.lastLimit, "last_remote", n.adm.lastRemote,
		"since", sinceAttr(n.adm.logged, now))
	n.adm.logged, n.adm.since = now, Admission{}
}

// sinceAttr is how long ago the previous shed line was, "" for the first.
func sinceAttr(prev, now time.Time) string {
	if prev.IsZero() {
		return "start"
	}
	return now.Sub(prev).Round(time.Millisecond).String()
}

// shed counts and logs a connection refused or silent (not under n.mu).
func (n *Node) shed(kind shedKind, limit string, conn net.Conn) {
	n.mu.Lock()
	n.noteShed(kind, limit, conn)
	n.mu.Unlock()
}

// release returns the connection slot of c, and its place in the
// clients' room if it has one.
func (n *Node) release(c *inboundConn) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.adm.conns--
	if n.adm.perHost[c.host]--; n.adm.perHost[c.host] <= 0 {
		delete(n.adm.perHost, c.host)
	}
	if c.client {
		c.client = false
		n.adm.clients--
		if n.adm.clientsPerHost[c.host]--; n.adm.clientsPerHost[c.host] <= 0 {
			delete(n.adm.clientsPerHost, c.host)
		}
	}
}

// inboundConn returns its admission slot on its first Close, and replays
// the byte awaitFirstByte read.
type inboundConn struct {
	net.Conn
	node   *Node
	host   string // remoteHost
	client bool   // holds a place in the clients' room (node.mu)
	once   sync.Once
	first  []byte // read by awaitFirstByte, not yet returned by Read
}

// Read returns the byte awaitFirstByte read first, then reads on.
func (c *inboundConn) Read(b []byte) (int, error) {
	if len(c.first) > 0 && len(b) > 0 {
		n := copy(b, c.first)
		c.first = c.first[n:]
		return n, nil
	}
	return c.Conn.Read(b)
}

// Close closes the connection and releases its slot once.
func (c *inboundConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.node.release(c) })
	return err
}

// errSilent is awaitFirstByte's error for a connection that sent nothing
// within FirstByteTimeout.
var errSilent = errors.New("mux: no byte within FirstByteTimeout")

// awaitFirstByte waits for the first byte of an accepted connection, for
// at most Config.FirstByteTimeout and not past deadline, and keeps it for
// the handshake to read. Close interrupts it.
func (n *Node) awaitFirstByte(c *inboundConn, deadline time.Time) error {
	limit := time.Now().Add(n.cfg.FirstByteTimeout)
	if deadline.Before(limit) {
		limit = deadline
	}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return ErrClosed
	}
	n.handshaking[c] = struct{}{} // Close interrupts the wait
	_ = c.Conn.SetReadDeadline(limit)
	n.mu.Unlock()
	var b [1]byte
	_, err := io.ReadFull(c.Conn, b[:])
	n.mu.Lock()
	delete(n.handshaking, c)
	closed := n.closed
	if err == nil && !closed {
		_ = c.Conn.SetReadDeadline(time.Time{}) // under the lock: Close's interruption is not undone
	}
	n.mu.Unlock()
	switch {
	case closed:
		return ErrClosed
	case errors.Is(err, os.ErrDeadlineExceeded):
		return errSilent
	case err != nil:
		return err
	}
	c.first = b[:]
	return nil
}

// serveConn runs the listener's side of the handshake of a connection
// admitted by Serve: its first byte within FirstByteTimeout, then Accept,
// the whole bounded by HandshakeTimeout from the accept. Failures are
// logged, except those of connections evicted (counted and logged by
// admit), of client sessions beyond their room (by takeClientRoom) or
// silent (counted and logged here).
func (n *Node) serveConn(conn *inboundConn, slot *hsSlot) {
	ctx, cancel := context.WithDeadline(context.Background(), slot.start.Add(n.cfg.HandshakeTimeout))
	defer cancel()
	err := n.awaitFirstByte(conn, slot.start.Add(n.cfg.HandshakeTimeout))
	if err == nil {
		slot.heard.Store(true)
		_, err = n.Accept(ctx, conn)
	} else {
		conn.Close()
	}
	evicted := n.handshakeDone(slot)
	switch {
	case err == nil, evicted, errors.Is(err, ErrClosed), errors.Is(err, ErrTooManyClients): // the last counted and logged by takeClientRoom
	case errors.Is(err, errSilent):
		n.shed(shedSilent, "FirstByteTimeout", conn)
	default:
		n.log.Warn("mux: inbound handshake failed", "remote", conn.RemoteAddr().String(), "err", err)
	}
}

// remoteHost is the IP address part of conn's remote address (the whole
// address if it has no port).
func remoteHost(conn net.Conn) string {
	addr := conn.RemoteAddr().String()
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}
