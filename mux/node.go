package mux

import (
	"cmp"
	"context"
	crand "crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/yamux"

	"github.com/casty-go/casty/internal/sweep"
)

// RequestHandler answers a request received on a lane. payload belongs to
// the handler. ctx is cancelled when the requester gives up (its context
// ended) or the connection closes. A returned error travels to the
// requester as *RemoteError (see RemoteError for the code rules). A
// handler that called Answered(ctx) sends nothing, whatever it returns.
//
// A handler may run on the connection's reader goroutine: when a read ends
// with requests and nothing else buffered, the reader runs them itself,
// one after another, and reads nothing more from that connection (no
// answers to this node's requests, no messages, no stream data) until they
// return. So a handler must call HandOff(ctx) before it waits on anything
// (a lock, a channel, an actor's mailbox, another node), which moves the
// reading to another goroutine; Session.Request calls HandOff itself. A
// handler that waits without it stalls the connection until the node's
// watchdog moves the reading, one to two milliseconds later, and deadlocks
// for that long if it waits for something only that connection can bring.
//
// Otherwise a handler runs on a worker goroutine. Requests on one lane are
// handled concurrently and answered in completion order.
type RequestHandler func(ctx context.Context, from *Session, payload []byte) ([]byte, error)

// MessageHandler receives a one-way message. Messages of one lane of one
// session are delivered one at a time, in the order they were sent, on a
// worker goroutine of that lane: a slow handler delays only its own lane's
// messages, never calls and answers on the others. Received messages wait
// for it up to 4 × Config.MaxMessage bytes per lane; beyond that the
// connection's reader waits too, which slows the peer's sends (and every
// lane) until the handler catches up.
type MessageHandler func(from *Session, payload []byte)

// StreamHandler serves an ephemeral stream opened by the peer. It runs in
// its own goroutine and owns st: it must Close it.
type StreamHandler func(from *Session, st *Stream)

// Node is one endpoint of the transport: it listens, dials, and keeps at
// most one live Session per peer node id. All methods are safe for
// concurrent use.
type Node struct {
	cfg  Config
	info localInfo
	log  *slog.Logger
	ycfg *yamux.Config

	reqHandlers   [numLanes]atomic.Pointer[RequestHandler]
	msgHandlers   [numLanes]atomic.Pointer[MessageHandler]
	streamHandler atomic.Pointer[StreamHandler]
	wg            sync.WaitGroup
	done          chan struct{}
	workers       workerPool
	timeouts      sweep.Sweeper   // expires requests past RequestTimeout (sweep.go)
	zstd          zstdCoders      // the zstd codec's, made on first use (codec.go)
	epoch         time.Time       // origin of nanotime (sweep.go)
	watching      atomic.Bool     // the inline watchdog runs (inline.go)
	inline        atomic.Int32    // readers running a request themselves
	takeovers     [2]atomic.Int64 // readers replaced, by reason (inline.go)
	watchTicks    atomic.Int64    // the inline watchdog's ticks (inline.go; tests read it)
	mu            sync.Mutex
	closed        bool
	live          map[NodeID]*Session
	liveSnap      atomic.Pointer[map[NodeID]*Session] // copy of live for lock-free lookups
	all           map[*Session]struct{}
	listeners     map[net.Listener]struct{}
	handshaking   map[net.Conn]struct{}
	names         map[NodeID]string        // CertIdentity: node id → certificate member name
	dialing       map[uint64]int           // dial nonces of this node's handshakes in progress (claim.go)
	contests      map[NodeID]chan struct{} // peers whose newcomer awaits a claim check; closed when decided
	elsewhere     map[NodeID]answeredAt    // peers Connect found another node in place of (answeredAt)
	adm           admission                // connections accepted by Serve (limits.go)
	rand          *rand.Rand
	authRand      io.Reader        // the handshake's challenges; nil: crypto/rand (tests set it)
	traffic       trafficCounters  // bytes through sessions' connections (stats.go)
	overload      overloadCounters // what the byte budgets refused (budget.go)
	partialHeld   atomic.Int64     // bytes of partly received messages, all sessions (budget.go)
	queuedHeld    atomic.Int64     // what Session.queued counts, all sessions (budget.go)
	queuedPeak    atomic.Int64     // the most queuedHeld ever was (tests read it)
}

// authRandom is where the handshake's challenges come from.
func (n *Node) authRandom() io.Reader {
	if n.authRand != nil {
		return n.authRand
	}
	return crand.Reader
}

// New builds a Node from cfg (validated).
func New(cfg Config) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n := &Node{
		cfg:         cfg,
		epoch:       time.Now(),
		log:         cfg.Logger,
		done:        make(chan struct{}),
		live:        make(map[NodeID]*Session),
		all:         make(map[*Session]struct{}),
		listeners:   make(map[net.Listener]struct{}),
		rand:        cfg.Rand,
		handshaking: make(map[net.Conn]struct{}),
		names:       make(map[NodeID]string),
		dialing:     make(map[uint64]int),
		contests:    make(map[NodeID]chan struct{}),
		elsewhere:   make(map[NodeID]answeredAt),
	}
	if n.log == nil {
		n.log = slog.Default()
	}
	n.log = n.log.With("mux_node", cfg.NodeID.String()[:8])
	if n.rand == nil {
		n.rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	n.cfg.MaxClientConns, n.cfg.MaxClientConnsPerHost = cfg.clientConns(), cfg.clientConnsPerHost()
	n.info = localInfo{nodeID: cfg.NodeID, role: cfg.Role, cluster: cfg.ClusterName,
		addr: cfg.AdvertiseAddr, codecs: cfg.Codecs, secret: cfg.requiresSecret(), authOnly: cfg.AuthOnly}
	yc := yamux.DefaultConfig()
	yc.AcceptBacklog = 256
	yc.EnableKeepAlive = false // keepalive is ours, so failures reach the callback
	yc.ConnectionWriteTimeout = cfg.KeepAliveTimeout
	yc.MaxStreamWindowSize = uint32(cfg.StreamWindow)
	yc.StreamOpenTimeout = cfg.HandshakeTimeout + cfg.KeepAliveTimeout
	yc.StreamCloseTimeout = cfg.SupersedeGrace + cfg.KeepAliveTimeout
	yc.LogOutput = nil
	yc.Logger = yamuxLogger{n.log}
	n.ycfg = yc
	return n, nil
}

// ID returns this node's id.
func (n *Node) ID() NodeID { return n.cfg.NodeID }

// Config returns the node's configuration.
func (n *Node) Config() Config { return n.cfg }

// HandleRequests installs the request handler of a lane (nil removes it;
// requests then fail remotely with CodeNoHandler). Install handlers before
// the first session is established to avoid that race.
func (n *Node) HandleRequests(l Lane, h RequestHandler) {
	if h == nil {
		n.reqHandlers[l].Store(nil)
		return
	}
	n.reqHandlers[l].Store(&h)
}

// HandleMessages installs the one-way message handler of a lane (nil
// removes it; messages are then dropped).
func (n *Node) HandleMessages(l Lane, h MessageHandler) {
	if h == nil {
		n.msgHandlers[l].Store(nil)
		return
	}
	n.msgHandlers[l].Store(&h)
}

// HandleStreams installs the handler of inbound ephemeral streams (nil
// removes it; inbound streams are then closed at once).
func (n *Node) HandleStreams(h StreamHandler) {
	if h == nil {
		n.streamHandler.Store(nil)
		return
	}
	n.streamHandler.Store(&h)
}

// Serve accepts connections on ln until ln fails or the Node is closed,
// running the server side of the handshake for each in its own goroutine.
// Handshake failures are logged, never returned. A temporary Accept error
// (out of file descriptors, a connection aborted before it was accepted, a
// timeout) is logged and retried after a backoff that doubles from 5 ms to
// 1 s, so the listener outlives descriptor exhaustion. Any other Accept
// error is logged and returned. Serve closes ln when it returns, and
// returns ErrClosed after Close.
func (n *Node) Serve(ln net.Listener) error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		ln.Close()
		return ErrClosed
	}
	n.listeners[ln] = struct{}{}
	n.wg.Add(1)
	n.mu.Unlock()
	defer n.wg.Done()
	defer func() {
		n.mu.Lock()
		delete(n.listeners, ln)
		n.mu.Unlock()
		ln.Close()
	}()
	var delay time.Duration // backoff after a temporary Accept error
	for {
		conn, err := ln.Accept()
		if err != nil {
			select {
			case <-n.done:
				return ErrClosed
			default:
			}
			if !acceptRetryable(err) {
				n.log.Error("mux: listener failed, no longer accepting", "addr", ln.Addr().String(), "err", err)
				return err
			}
			delay = min(max(2*delay, acceptBackoffMin), acceptBackoffMax)
			n.log.Warn("mux: accept failed, retrying", "addr", ln.Addr().String(), "err", err, "retry_in", delay)
			select {
			case <-time.After(delay):
				continue
			case <-n.done:
				return ErrClosed
			}
		}
		delay = 0
		host := remoteHost(conn)
		in := &inboundConn{Conn: conn, node: n, host: host}
		slot, evicted, limit := n.admit(host, in)
		if evicted != nil {
			evicted.Close()
		}
		if limit != "" {
			conn.Close()
			n.shed(shedRefused, limit, conn)
			continue
		}
		if !n.goTracked(func() { n.serveConn(in, slot) }) {
			n.handshakeDone(slot)
			in.Close()
			return ErrClosed
		}
	}
}

// The backoff of Serve after a temporary Accept error (as net/http's).
const (
	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = time.Second
)

// acceptRetryable reports whether an Accept error is temporary: a timeout,
// or an error that says of itself it is temporary (EMFILE, ENFILE,
// ECONNABORTED, EINTR and the like from the system call).
func acceptRetryable(err error) bool {
	if errors.Is(err, net.ErrClosed) {
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	var tmp interface{ Temporary() bool }
	return errors.As(err, &tmp) && tmp.Temporary()
}

// goTracked runs f in a goroutine counted by the node's WaitGroup, unless
// the node is closed.
func (n *Node) goTracked(f func()) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return false
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		f()
	}()
	return true
}

// Dial connects to addr over TCP, or through Config.Dial when set (TLS
// when Config.ClientTLS is set), runs the handshake and returns the live
// session to the node found there. If
// a live session to that node already exists and wins the tie-break (see
// the package docs), that one is returned and the new connection drains.
// On a closed node, or one that Close interrupted, it fails with ErrClosed.
//
// ctx bounds the connect and the caller's wait, not the handshake: once
// the hello is on its way the listener may register the session and route
// work over it, and a dialler that hung up half way would make it fail
// there — and, as the winner of the tie-break, take a healthy session down
// with it. So when ctx ends during the handshake, Dial returns ctx's error
// at once and the handshake goes on, bounded by Config.HandshakeTimeout
// and interrupted by Close; if it succeeds, the session is registered
// like any other.
func (n *Node) Dial(ctx context.Context, addr string) (*Session, error) {
	if n.isClosed() {
		return nil, ErrClosed
	}
	dctx, cancel := context.WithTimeout(ctx, n.cfg.ConnectTimeout)
	defer cancel()
	var conn net.Conn
	var err error
	if n.cfg.Dial != nil {
		conn, err = n.cfg.Dial(dctx, addr)
	} else {
		var d net.Dialer
		conn, err = d.DialContext(dctx, "tcp", addr)
	}
	if err != nil {
		return nil, fmt.Errorf("mux: dial %s: %w", addr, err)
	}
	host, _, _ := net.SplitHostPort(addr)
	type dialed struct {
		s   *Session
		err error
	}
	done := make(chan dialed, 1)
	if !n.goTracked(func() {
		s, err := n.dialConn(context.WithoutCancel(ctx), conn, host)
		done <- dialed{s, err}
	}) {
		conn.Close()
		return nil, ErrClosed
	}
	var r dialed
	select {
	case r = <-done:
	case <-ctx.Done():
		return nil, fmt.Errorf("mux: dial %s: %w (the handshake goes on)", addr, ctx.Err())
	}
	if r.err != nil && !errors.Is(r.err, ErrClosed) && n.isClosed() {
		// Close interrupted the handshake: say so, not only how it broke.
		r.err = fmt.Errorf("%w: %w", ErrClosed, r.err)
	}
	return r.s, r.err
}

// Connect returns the live session to peer, dialling addr if there is
// none. It fails with ErrUnexpectedPeer if the node at addr is not peer.
// The session to the node that answered stays open: it is that node's
// live session, which others may be using (a process restarted on its
// address under a new id, say). Until that session closes, Connect to
// peer at addr fails at once, without dialling: while the node that
// answered holds its session, it holds the address too, so peer is not
// there (a caller that keeps asking a departed identity costs no
// connections).
func (n *Node) Connect(ctx context.Context, peer NodeID, addr string) (*Session, error) {
	if s, ok := n.Session(peer); ok {
		return s, nil
	}
	if other := n.answeredFor(peer, addr); other != nil {
		return nil, fmt.Errorf("%w: %s has %s, want %s", ErrUnexpectedPeer, addr, other.Peer(), peer)
	}
	s, err := n.Dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	if s.Peer() != peer {
		n.noteAnswered(peer, addr, s)
		return nil, fmt.Errorf("%w: %s has %s, want %s", ErrUnexpectedPeer, addr, s.Peer(), peer)
	}
	return s, nil
}

// answeredAt records that a dial of addr for some peer reached the node
// of session s instead.
type answeredAt struct {
	addr string
	s    *Session
}

// maxElsewhere bounds Node.elsewhere: past it, the records start over (a
// record only spares dials).
const maxElsewhere = 4096

// noteAnswered records that the node of s answered at addr when peer was
// asked for.
func (n *Node) noteAnswered(peer NodeID, addr string, s *Session) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.elsewhere) >= maxElsewhere {
		clear(n.elsewhere)
	}
	n.elsewhere[peer] = answeredAt{addr: addr, s: s}
}

// answeredFor returns the live session of the node a dial of addr for peer
// last reached, nil when there is none (no such dial, or that session is
// no longer the node's live one).
func (n *Node) answeredFor(peer NodeID, addr string) *Session {
	n.mu.Lock()
	defer n.mu.Unlock()
	a, ok := n.elsewhere[peer]
	if !ok {
		return nil
	}
	if a.addr != addr || n.live[a.s.peer] != a.s || a.s.Err() != nil {
		delete(n.elsewhere, peer)
		return nil
	}
	return a.s
}

// DialConn runs the dialling side of the handshake over an established
// connection (TLS is added when Config.ClientTLS is set; its ServerName
// must then be set, as there is no address to take it from). It is what
// Dial does after connecting; tests use it with net.Pipe.
func (n *Node) DialConn(ctx context.Context, conn net.Conn) (*Session, error) {
	return n.dialConn(ctx, conn, "")
}

// handshakeDeadline arms conn's deadline for the handshake and makes ctx
// cancellation interrupt it. The returned func disarms both.
func (n *Node) handshakeDeadline(ctx context.Context, conn net.Conn) func() {
	deadline := time.Now().Add(n.cfg.HandshakeTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	n.mu.Lock()
	n.handshaking[conn] = struct{}{} // Close interrupts handshakes in progress
	if n.closed {
		_ = conn.SetDeadline(time.Unix(1, 0))
	}
	n.mu.Unlock()
	return func() {
		stop()
		_ = conn.SetDeadline(time.Time{})
		n.mu.Lock()
		delete(n.handshaking, conn)
		n.mu.Unlock()
	}
}

func handshakeFailed(msg string, err error) error {
	var he *HandshakeError
	if errors.As(err, &he) {
		return he
	}
	return &HandshakeError{Code: CodeMalformed, Message: msg, Err: err}
}

func (n *Node) dialConn(ctx context.Context, conn net.Conn, host string) (*Session, error) {
	if n.isClosed() {
		conn.Close()
		return nil, ErrClosed
	}
	disarm := n.handshakeDeadline(ctx, conn)
	if n.cfg.ClientTLS != nil {
		tc := n.cfg.ClientTLS
		if tc.ServerName == "" && !tc.InsecureSkipVerify && host != "" {
			tc = tc.Clone()
			tc.ServerName = host
		}
		tlsConn := tls.Client(conn, tc)
		if err := tlsConn.HandshakeContext(ctx); err != nil {
			disarm()
			conn.Close()
			return nil, handshakeFailed("TLS handshake failed (is the listener plaintext, or does it distrust our certificate?)", err)
		}
		conn = tlsConn
	}
	sniff := &sniffConn{Conn: conn}
	fail := func(msg string, err error) (*Session, error) {
		disarm()
		conn.Close()
		if n.cfg.ClientTLS == nil && sniff.sawTLS() {
			return nil, &HandshakeError{Code: CodeMalformed, Message: "the listener speaks TLS and this node dials plaintext (set ClientTLS)", Err: err}
		}
		return nil, handshakeFailed(msg, err)
	}
	var cert certIdentity
	if tc, ok := conn.(*tls.Conn); ok && n.cfg.CertIdentity {
		cert = identityOf(tc.ConnectionState())
	}
	h := n.info.hello()
	n.mu.Lock()
	h.nonce = n.rand.Uint64()
	n.dialing[h.nonce]++ // the listener may ask (claim.go) until our session is registered
	n.mu.Unlock()
	defer func() {
		n.mu.Lock()
		if n.dialing[h.nonce]--; n.dialing[h.nonce] <= 0 {
			delete(n.dialing, h.nonce)
		}
		n.mu.Unlock()
	}()
	h.creds = n.cfg.credentials()
	if h.creds != 0 {
		// The authenticated exchange is version 4's, and version 5 seals
		// the records after it: offer 5 (and 4 with AuthOnly), so a
		// listener that cannot run them says so (no common version).
		h.versions = n.info.authVersions()
		if _, err := io.ReadFull(n.authRandom(), h.challenge[:]); err != nil {
			return fail("no randomness for the challenge", err)
		}
	}
	hb := h.encode()
	// A listener that rejects us closes the connection right after its
	// answer, which can make our hello's write fail although it went out;
	// so read the answer even then, and report the write error only if
	// there is no answer.
	_, werr := conn.Write(hb)
	typ, body, err := readHandshake(sniff)
	if err != nil {
		if werr != nil {
			err = werr
		}
		return fail("no handshake answer (plaintext dial to a TLS listener, or peer closed)", err)
	}
	var ch *challenge
	var tr transcript
	var secret []byte // the proven credential's
	if typ == hsChallenge {
		// We prove our secret first (the listener has shown nothing yet),
		// then the listener proves it over everything, its welcome too.
		if h.creds == 0 {
			return fail("", malformed("unexpected challenge"))
		}
		c, err := decodeChallenge(body)
		if err != nil {
			return fail("", err)
		}
		if !h.creds.has(c.cred) {
			return fail("", malformed("the listener chose a credential we did not offer"))
		}
		secret = n.cfg.secretFor(c.cred)
		tr.add(hb[hsHeaderSize:])
		tr.add(body)
		mine := tr.proof(secret, labelDialler)
		if _, err := conn.Write((&proofMsg{proof: mine}).encode()); err != nil {
			return fail("sending the proof failed", err)
		}
		ch = &c
		if typ, body, err = readHandshake(sniff); err != nil {
			return fail("no answer to the proof", err)
		}
		if typ == hsProof {
			theirs, err := decodeProof(body)
			if err != nil {
				return fail("", err)
			}
			if typ, body, err = readHandshake(sniff); err != nil {
				return fail("no welcome after the listener's proof", err)
			}
			if typ != hsWelcome {
				return fail("", malformed("expected a welcome after the listener's proof"))
			}
			tr.add(mine[:])
			tr.add(body)
			if !tr.verify(secret, labelListener, theirs.proof) {
				return fail("", &HandshakeError{Code: CodeUnauthenticated, Message: "the listener's proof did not verify"})
			}
		} else if typ == hsWelcome {
			return fail("", &HandshakeError{Code: CodeUnauthenticated, Message: "the listener sent no proof"})
		}
	}
	var w welcome
	var keys *sessionKeys // the records are sealed
	switch typ {
	case hsWelcome:
		if w, err = decodeWelcome(body); err != nil {
			return fail("", err)
		}
		if herr := n.info.check(w); herr != nil {
			return fail("", herr)
		}
		if h.creds != 0 && ch == nil {
			return fail("", &HandshakeError{Code: CodeUnauthenticated, Message: "the listener did not prove a credential (it has no secret)"})
		}
		if h.creds != 0 && !slices.Contains(h.versions, w.version) {
			return fail("", malformed("listener chose a version we did not offer"))
		}
		if ch != nil && w.version >= sealVersion {
			k, err := tr.keys(secret)
			if err != nil {
				return fail("deriving the session keys failed", err)
			}
			keys = &k
		}
	case hsReject:
		r, err := decodeReject(body)
		if err != nil {
			return fail("", err)
		}
		disarm()
		conn.Close()
		return nil, &HandshakeError{Code: r.code, Message: r.msg, Remote: true}
	default:
		return fail("", malformed("unexpected handshake message"))
	}
	cred := CredentialNone
	if ch != nil {
		cred = ch.cred
	}
	if n.cfg.CertIdentity {
		if rej := checkCert(cert, w.nodeID, w.role); rej != nil {
			return fail("", &HandshakeError{Code: rej.code, Message: "listener: " + rej.msg})
		}
		if rej := n.bind(w.nodeID, cert.name); rej != nil {
			return fail("", &HandshakeError{Code: rej.code, Message: rej.msg})
		}
		cred = stronger(cred, cert.cred)
	}
	disarm()
	s := n.newSession(conn, true, w.nodeID, w.addr, w.role, w.version, w.codec, n.cfg.NodeID, h.nonce, keys)
	s.cred, s.peerName = cred, cert.name
	live, err := n.register(s)
	if errors.Is(err, errClaimRefused) {
		s.fail(errClaimRefused)
		return nil, &HandshakeError{Code: CodeIdentity, Message: "the node id at this address belongs to a live session that did not make this connection"}
	}
	return live, err
}

// Accept runs the listening side of the handshake over an established
// connection (TLS is added when Config.ServerTLS is set) and returns the
// new session. Serve calls it for every accepted connection; tests use it
// with net.Pipe. A rejected dialler gets its code, and Accept returns the
// same *HandshakeError with Remote false.
func (n *Node) Accept(ctx context.Context, conn net.Conn) (*Session, error) {
	if n.isClosed() {
		conn.Close()
		return nil, ErrClosed
	}
	in, _ := conn.(*inboundConn) // accepted by Serve: admission counts it
	disarm := n.handshakeDeadline(ctx, conn)
	if n.cfg.ServerTLS != nil {
		tlsConn := tls.Server(conn, n.cfg.ServerTLS)
		if err := tlsConn.HandshakeContext(ctx); err != nil {
			disarm()
			conn.Close()
			return nil, handshakeFailed("TLS handshake failed (plaintext dialler, or untrusted certificate?)", err)
		}
		conn = tlsConn
	}
	sniff := &sniffConn{Conn: conn}
	fail := func(msg string, err error) (*Session, error) {
		disarm()
		conn.Close()
		if n.cfg.ServerTLS == nil && sniff.sawTLS() {
			return nil, &HandshakeError{Code: CodeMalformed, Message: "the dialler speaks TLS and this listener is plaintext (set ServerTLS)", Err: err}
		}
		return nil, handshakeFailed(msg, err)
	}
	typ, body, err := readHandshake(sniff)
	if err != nil {
		return fail("reading hello failed", err)
	}
	if typ != hsHello {
		return fail("", malformed("expected hello"))
	}
	h, err := decodeHello(body)
	if err != nil {
		// Tell the dialler, best effort, then give up.
		var he *HandshakeError
		errors.As(err, &he)
		_, _ = conn.Write((&reject{code: CodeMalformed, msg: he.Message}).encode())
		return fail("", err)
	}
	refuse := func(rej *reject) (*Session, error) {
		_, _ = conn.Write(rej.encode())
		disarm()
		conn.Close()
		return nil, &HandshakeError{Code: rej.code, Message: rej.msg}
	}
	var cert certIdentity
	if n.cfg.CertIdentity {
		if tc, ok := conn.(*tls.Conn); ok {
			cert = identityOf(tc.ConnectionState())
		}
		if rej := checkCert(cert, h.nodeID, h.role); rej != nil {
			return refuse(rej)
		}
	}
	cred := CredentialNone
	var tr transcript
	var secret []byte
	if n.cfg.requiresSecret() {
		// The dialler proves a secret before anything else is checked or
		// shown: a peer without one learns nothing, not even whether its
		// cluster name was right, and gets nothing derived from a secret.
		switch {
		case h.creds == 0:
			return refuse(&reject{code: CodeUnauthenticated, msg: "a credential is required"})
		case n.info.authVersion(h.versions) == 0:
			// An older node (version 4 only), whose records would not be
			// sealed: refused before anything is proven.
			return refuse(&reject{code: CodeNoCommonVersion, msg: "no common protocol version: records must be sealed (version 5)"})
		}
		c := challenge{cred: n.cfg.choose(h.creds)}
		if _, err := io.ReadFull(n.authRandom(), c.nonce[:]); err != nil {
			return fail("no randomness for the challenge", err)
		}
		if _, err := conn.Write(c.encode()); err != nil {
			return fail("sending the challenge failed", err)
		}
		typ, pbody, err := readHandshake(sniff)
		if err != nil {
			return fail("reading the proof failed", err)
		}
		switch typ {
		case hsProof:
		case hsReject:
			r, err := decodeReject(pbody)
			if err != nil {
				return fail("", err)
			}
			return fail("", &HandshakeError{Code: r.code, Message: r.msg, Remote: true})
		default:
			return fail("", malformed("expected a proof"))
		}
		p, err := decodeProof(pbody)
		if err != nil {
			return fail("", err)
		}
		secret = n.cfg.secretFor(c.cred)
		tr.add(body)
		tr.add(c.body())
		if !tr.verify(secret, labelDialler, p.proof) {
			return refuse(&reject{code: CodeUnauthenticated, msg: "credential refused"})
		}
		tr.add(p.proof[:])
		cred = c.cred
		if n.cfg.Role == RoleMember && !cred.allows(h.role) {
			// A client listener hosts nothing: whoever proves a credential
			// it holds may reach it in any role.
			return refuse(&reject{code: CodeIdentity, msg: "the credential does not allow role " + h.role.String()})
		}
	}
	w, rej := n.info.accept(h)
	if rej != nil {
		return refuse(rej)
	}
	if n.cfg.CertIdentity {
		if rej := n.bind(h.nodeID, cert.name); rej != nil {
			return refuse(rej)
		}
		cred = stronger(cred, cert.cred)
	}
	if in != nil && n.cfg.clientPeer(cred, h.role) {
		if limit := n.takeClientRoom(in); limit != "" {
			return refuse(&reject{code: CodeTooManyClients, msg: "the room for client sessions is full (" + limit + ")"})
		}
	}
	answer := w.encode()
	var keys *sessionKeys
	if secret != nil {
		// The listener's proof covers the welcome: the dialler learns the
		// listener's identity from a message only the secret's holder
		// could have sent.
		tr.add(answer[hsHeaderSize:])
		answer = append((&proofMsg{proof: tr.proof(secret, labelListener)}).encode(), answer...)
		if w.version >= sealVersion {
			k, err := tr.keys(secret)
			if err != nil {
				return fail("deriving the session keys failed", err)
			}
			keys = &k
		}
	}
	s := n.newSession(conn, false, h.nodeID, h.addr, h.role, w.version, w.codec, h.nodeID, h.nonce, keys)
	s.cred, s.peerName = cred, cert.name
	// Records queued once the session is registered wait behind the
	// welcome, which goes out on the raw connection.
	s.w.hold()
	live, err := n.register(s)
	if errors.Is(err, errClaimRefused) {
		_, _ = conn.Write((&reject{code: CodeIdentity, msg: "the node id belongs to a live session"}).encode())
		disarm()
		s.fail(errClaimRefused)
		return nil, &HandshakeError{Code: CodeIdentity, Message: "the node id belongs to a live session that did not make this connection"}
	}
	if err != nil {
		disarm()
		return nil, err
	}
	if _, err := conn.Write(answer); err != nil {
		disarm()
		s.fail(connectionLost(err))
		return nil, handshakeFailed("sending welcome failed", err)
	}
	disarm()
	s.w.release()
	return live, nil
}

// stronger returns the stronger of two credentials (member before
// operator before client; none is weakest).
func stronger(a, b Credential) Credential {
	if a == CredentialNone || (b != CredentialNone && b < a) {
		return b
	}
	return a
}

// maxBindings bounds the node-id-to-member-name table of CertIdentity.
const maxBindings = 1 << 16

// bind records that node id peer belongs to the certificate member name
// (CertIdentity), refusing a claim on a node id already bound to another
// name, or to any name when name is "" (a client certificate).
func (n *Node) bind(peer NodeID, name string) *reject {
	n.mu.Lock()
	defer n.mu.Unlock()
	if have, ok := n.names[peer]; ok {
		if have != name {
			return &reject{code: CodeIdentity, msg: "the node id belongs to another certificate"}
		}
		return nil
	}
	if name == "" {
		return nil
	}
	if len(n.names) >= maxBindings {
		for id := range n.names { // forget one, not one with a live session
			if _, live := n.live[id]; !live {
				delete(n.names, id)
				break
			}
		}
	}
	n.names[peer] = name
	return nil
}

// tieBreak reports whether a should be kept over b: the session whose
// initiator has the smaller node id wins; between two sessions initiated
// by the same node, the smaller dial nonce wins. Both ends compute the
// same answer from the same facts.
func tieBreak(a, b *Session) bool {
	if c := a.initiator.Compare(b.initiator); c != 0 {
		return c < 0
	}
	return cmp.Compare(a.nonce, b.nonce) < 0
}

// entrenched reports whether the live session cur must be kept against
// the newcomer s, whatever the tie-break says (n.mu held). A newcomer
// that proved the same certificate member name as cur may take over, as
// the tie-break decides. Otherwise it may not when its credential is
// weaker than cur's, nor while cur is healthy: older than a dial and a
// handshake can take (ConnectTimeout + HandshakeTimeout, so the two
// sessions of a simultaneous dial are both younger and the tie-break
// stands), and a record was read from its peer (a pong, say: monitor)
// within KeepAliveInterval + KeepAliveTimeout (or keepalive is
// off). So a stranger claiming a live
// peer's node id never takes its traffic, while a peer that redials after
// its old connection died does, once that connection is seen dead. Since
// version 4 a live session's peer is asked instead (decide, claim.go):
// this rule remains for peers of version 3 or 2, which cannot answer.
func (n *Node) entrenched(cur, s *Session, now time.Time) bool {
	if cur.peerName != "" && cur.peerName == s.peerName {
		return false
	}
	if stronger(cur.cred, s.cred) != s.cred && cur.cred != s.cred {
		return true
	}
	if now.Sub(cur.created) < n.cfg.ConnectTimeout+n.cfg.HandshakeTimeout {
		return false
	}
	iv := n.cfg.KeepAliveInterval
	if iv == 0 {
		return cur.Err() == nil
	}
	last := cur.heard.Load()
	return last != 0 && now.Sub(time.Unix(0, last)) <= iv+n.cfg.KeepAliveTimeout
}

// register makes s known and decides which session to keep for its peer
// (decide, claim.go): it returns the live session (s or the one that beat
// it) and starts s; or, when the live session's peer said it did not make
// s, fails with errClaimRefused, s not started (the caller closes it). A
// claim check is asked without the lock, one per peer at a time.
func (n *Node) register(s *Session) (*Session, error) {
	n.mu.Lock()
	for {
		if n.closed {
			n.mu.Unlock()
			s.fail(ErrClosed)
			return nil, ErrClosed
		}
		if err := s.Err(); err != nil {
			// It died (a violation on a lane, say) before it was registered.
			n.mu.Unlock()
			return nil, connectionLost(err)
		}
		busy, ok := n.contests[s.peer]
		if !ok {
			break
		}
		n.mu.Unlock()
		select { // ends within claimTimeout
		case <-busy:
		case <-n.done:
		}
		n.mu.Lock()
	}
	cur := n.live[s.peer]
	v := n.decide(cur, s)
	if v == askTheLiveOne {
		decided := make(chan struct{})
		n.contests[s.peer] = decided
		n.mu.Unlock()
		yes, answered := cur.askClaim(s.initiator, s.nonce)
		n.mu.Lock()
		delete(n.contests, s.peer)
		close(decided)
		switch {
		case n.closed:
			n.mu.Unlock()
			s.fail(ErrClosed)
			return nil, ErrClosed
		case answered && !yes:
			n.mu.Unlock()
			return nil, errClaimRefused // the caller closes s, after telling its peer
		case s.Err() != nil:
			n.mu.Unlock()
			return nil, connectionLost(s.Err())
		}
		// Confirmed (the tie-break stands), or the live session did not
		// answer (taken for dead), or it closed meanwhile.
		cur = n.live[s.peer]
		v = newcomerWins
	}
	n.all[s] = struct{}{}
	n.wg.Add(3)
	go func() { defer n.wg.Done(); s.readLoop() }()
	go func() { defer n.wg.Done(); s.acceptLoop() }()
	go func() { defer n.wg.Done(); s.monitor() }()
	winner, loser := s, cur
	if v == newcomerLoses {
		winner, loser = cur, s
	}
	n.live[s.peer] = winner
	n.publishLive()
	if loser != nil {
		loser.supersede(winner)
	}
	if winner == s && n.cfg.OnSession != nil {
		cb := n.cfg.OnSession
		n.wg.Add(1)
		go func() { defer n.wg.Done(); cb(s) }()
	}
	n.mu.Unlock()
	return winner, nil
}

// unregister forgets a closed session and reports the peer lost when it
// was the live one.
func (n *Node) unregister(s *Session, err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.all, s)
	if n.live[s.peer] != s {
		return
	}
	delete(n.live, s.peer)
	n.publishLive()
	if n.cfg.OnPeerLost != nil && !n.closed {
		cb := n.cfg.OnPeerLost
		n.wg.Add(1)
		go func() { defer n.wg.Done(); cb(s.peer, err) }()
	}
}

// Session returns the live session to peer, if any.
func (n *Node) Session(peer NodeID) (*Session, bool) {
	if m := n.liveSnap.Load(); m != nil {
		s, ok := (*m)[peer]
		return s, ok
	}
	return nil, false
}

// publishLive refreshes the lock-free copy of n.live (n.mu held). Sessions
// change rarely; every request looks one up.
func (n *Node) publishLive() {
	m := maps.Clone(n.live)
	n.liveSnap.Store(&m)
}

// Sessions returns the live sessions, one per peer, in no particular order.
func (n *Node) Sessions() []*Session {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]*Session, 0, len(n.live))
	for _, s := range n.live {
		out = append(out, s)
	}
	return out
}

func (n *Node) isClosed() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.closed
}

// Close stops every listener passed to Serve, closes every session
// (pending requests fail with ErrConnectionLost wrapping ErrClosed), and
// waits for every goroutine the Node started, handlers included: handlers
// must return once their context is cancelled. Close is idempotent.
func (n *Node) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		n.wg.Wait()
		return nil
	}
	n.closed = true
	close(n.done)
	n.workers.close()
	for ln := range n.listeners {
		ln.Close()
	}
	for c := range n.handshaking {
		_ = c.SetDeadline(time.Unix(1, 0))
	}
	sessions := make([]*Session, 0, len(n.all))
	for s := range n.all {
		sessions = append(sessions, s)
	}
	n.mu.Unlock()
	for _, s := range sessions {
		s.fail(ErrClosed)
	}
	n.wg.Wait()
	return nil
}

// yamuxLogger routes yamux's log lines to slog at debug level.
type yamuxLogger struct{ l *slog.Logger }

// Print logs at debug level.
func (y yamuxLogger) Print(v ...any) { y.l.Debug(fmt.Sprint(v...)) }

// Printf logs at debug level.
func (y yamuxLogger) Printf(format string, v ...any) { y.l.Debug(fmt.Sprintf(format, v...)) }

// Println logs at debug level.
func (y yamuxLogger) Println(v ...any) { y.l.Debug(fmt.Sprint(v...)) }
