package mux

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/yamux"

	"github.com/casty-go/casty/internal/sweep"
)

// Stream preamble kinds: the first byte of every yamux stream says what it
// is. Kind 1 (a lane, in protocol version 1) is no longer valid: lanes
// travel in records.
const (
	preambleStream byte = 2 // followed by u32 header length and the header

	maxStreamHeader = 64 << 10
)

// Session is the single connection to one peer node: three lanes for
// messages plus ephemeral streams. All methods are safe for concurrent
// use. A Session that lost the simultaneous-dial tie-break forwards new
// requests, messages and streams to the session that won.
type Session struct {
	node      *Node
	ys        *yamux.Session
	conn      net.Conn    // the connection (TLS included) after the handshake
	w         *connWriter // every record written to conn
	yc        *yconn      // the conn yamux runs on (channel 3)
	rd        *reader     // the connection's reader state (see readLoop)
	outbound  bool
	peer      NodeID
	peerAddr  string
	peerRole  Role
	version   uint16
	codec     codec
	initiator NodeID
	nonce     uint64
	cred      Credential    // what the peer proved in the handshake
	sealed    bool          // records are sealed (seal.go)
	peerName  string        // CertIdentity: the member name of its certificate
	created   time.Time     // when the handshake completed
	heard     atomic.Int64  // unix nanoseconds of the keepalive tick that last saw records read from the peer (monitor)
	recordsIn atomic.Uint64 // records read from the peer (the keepalive's proof)

	// Bytes held for the peer's requests: their payloads while they wait
	// or run, then their answers until queued (budget.go); and the most
	// ever held.
	queued, queuedPeak atomic.Int64
	// turn lets one handler at a time start while the peer does not read
	// its answers (budget.go).
	turn     chan struct{}
	starting atomic.Int64 // handlers waiting to start (a gauge; tests read it)
	// answerClosed: this session was closed with ErrAnswerBudget (counted
	// once).
	answerClosed atomic.Bool

	lanes   [numLanes]*lane
	inboxes [numLanes]inbox // one-way messages waiting for their handler
	nextID  atomic.Uint64

	mu         sync.Mutex
	pending    map[uint64]pendingReq
	inflight   map[uint64]*reqCtx
	claims     map[uint64]chan bool // claim checks asked, by id (claim.go)
	streamsOut int
	streamsIn  int
	successor  atomic.Pointer[Session] // set once, when superseded
	closeErr   error
	done       chan struct{}
	idle       chan struct{} // signalled (cap 1) when pending and inflight may have reached zero
}

type result struct {
	payload []byte
	err     error
}

// newSession builds the session for a connection whose handshake is done
// and starts yamux on it (not yet the goroutines: see register). With
// keys, every record is sealed.
func (n *Node) newSession(conn net.Conn, outbound bool, peer NodeID, addr string,
	role Role, version uint16, codecName string, initiator NodeID, nonce uint64, keys *sessionKeys) *Session {
	conn = countedConn{Conn: conn, c: &n.traffic}
	s := &Session{
		node: n, conn: conn, outbound: outbound, peer: peer, peerAddr: addr,
		peerRole: role, version: version, initiator: initiator, nonce: nonce, created: time.Now(),
		pending:  make(map[uint64]pendingReq),
		inflight: make(map[uint64]*reqCtx),
		done:     make(chan struct{}),
		idle:     make(chan struct{}, 1),
		turn:     make(chan struct{}, 1),
	}
	if codecName != "" {
		s.codec = codecByName(codecName, &n.zstd)
	}
	for l := range Lane(numLanes) {
		s.lanes[l] = &lane{s: s, id: l}
		s.inboxes[l].space.L = &s.inboxes[l].mu
	}
	var seal, open *recordCipher
	if keys != nil {
		seal, open = keys.ciphers(outbound)
		s.sealed = true
	}
	s.w = newConnWriter(s, conn, seal)
	s.yc = newYconn(s)
	s.rd = &reader{rr: newRecordReader(conn, open), again: taskFunc(s.readLoop)}
	if outbound {
		s.ys, _ = yamux.Client(s.yc, n.ycfg) // fails only on an invalid config, checked in New
	} else {
		s.ys, _ = yamux.Server(s.yc, n.ycfg)
	}
	return s
}

// Peer returns the peer's node id.
func (s *Session) Peer() NodeID { return s.peer }

// Credential returns what the peer proved in the handshake (a secret,
// a certificate identity, or CredentialNone in an open cluster).
func (s *Session) Credential() Credential { return s.cred }

// PeerName returns the member name of the peer's certificate under
// Config.CertIdentity, "" otherwise.
func (s *Session) PeerName() string { return s.peerName }

// Member reports whether the peer may act as a member (be sent calls and
// replicas, take part in replication): it proved the member credential,
// or this node requires no credential at all (an open cluster). A node
// that holds no ClusterSecret and no CertIdentity (a lite client with a
// client or operator secret) cannot tell a member from another holder of
// its own secret: for it, a peer that proved that secret and announces
// RoleMember is a member.
func (s *Session) Member() bool { return s.node.cfg.mayBeMember(s.cred, s.peerRole) }

// mayBeMember is Session.Member for a peer that proved cred and
// announces role.
func (c *Config) mayBeMember(cred Credential, role Role) bool {
	switch {
	case !c.Enforcing() || cred == CredentialMember:
		return true
	case len(c.ClusterSecret) == 0 && !c.CertIdentity:
		return cred != CredentialNone && role == RoleMember
	}
	return false
}

// Operator reports whether the peer may use operator functions (read an
// actor's state, spy, and the like): it proved a member or operator
// credential, or this node requires no credential at all (an open
// cluster, where every peer is trusted as a member).
func (s *Session) Operator() bool {
	return !s.node.cfg.Enforcing() || s.cred == CredentialMember || s.cred == CredentialOperator
}

// PeerAddr returns the address the peer advertised in the handshake.
func (s *Session) PeerAddr() string { return s.peerAddr }

// PeerRole returns the role the peer announced.
func (s *Session) PeerRole() Role { return s.peerRole }

// Outbound reports whether this node dialled the connection.
func (s *Session) Outbound() bool { return s.outbound }

// Sealed reports whether every record of the session is sealed: encrypted
// and authenticated with keys derived from the secret its handshake
// proved (protocol version 5 with a secret, unless both nodes set
// Config.AuthOnly). TLS, when used, protects the records either way.
func (s *Session) Sealed() bool { return s.sealed }

// Version returns the negotiated protocol version.
func (s *Session) Version() uint16 { return s.version }

// Codec returns the negotiated compression codec, "" for none.
func (s *Session) Codec() string {
	if s.codec == nil {
		return ""
	}
	return s.codec.name()
}

// LocalAddr returns the local network address of the connection.
func (s *Session) LocalAddr() net.Addr { return s.conn.LocalAddr() }

// RemoteAddr returns the remote network address of the connection.
func (s *Session) RemoteAddr() net.Addr { return s.conn.RemoteAddr() }

// Done is closed when the session's connection is closed.
func (s *Session) Done() <-chan struct{} { return s.done }

// Err returns why the session closed, nil while it is open.
func (s *Session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closeErr
}

// Pending returns how many requests sent on the session (or on the
// session that superseded it) still await their answers: a gauge.
func (s *Session) Pending() int {
	s = s.current()
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending)
}

// Close closes the connection. Pending requests fail with
// ErrConnectionLost; the peer sees the same for its own.
func (s *Session) Close() error {
	s.fail(ErrClosed)
	return nil
}

// current follows successors to the session new work should use.
func (s *Session) current() *Session {
	for {
		next := s.successor.Load()
		if next == nil {
			return s
		}
		s = next
	}
}

// Ping measures one round trip through the connection, bounded by ctx and
// by Config.KeepAliveTimeout.
func (s *Session) Ping(ctx context.Context) (time.Duration, error) {
	type pong struct {
		d   time.Duration
		err error
	}
	ch := make(chan pong, 1)
	if !s.node.goTracked(func() { d, err := s.ys.Ping(); ch <- pong{d, err} }) { // returns within KeepAliveTimeout
		return 0, ErrClosed
	}
	select {
	case p := <-ch:
		if p.err != nil {
			return 0, connectionLost(p.err)
		}
		return p.d, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

func checkLane(l Lane) error {
	if l >= numLanes {
		return fmt.Errorf("mux: unknown lane %d", l)
	}
	return nil
}

// Request sends payload on lane and waits for the answer. It fails with
// ErrMessageTooLarge or ErrSessionClosed (nothing sent: the session had
// failed before the request could be queued), *RemoteError (the handler
// failed), ErrConnectionLost (indeterminate) or ctx's error
// (indeterminate; the peer's handler context is cancelled). It never
// retries. payload may be reused when Request returns.
func (s *Session) Request(ctx context.Context, l Lane, payload []byte) ([]byte, error) {
	return s.request(ctx, l, payload, 0)
}

// RequestTimeout is Request with a timeout of its own besides ctx's: when
// it passes first, the request is abandoned as if ctx had ended and the
// error is context.DeadlineExceeded. It allocates no context and no timer,
// so callers that apply a default timeout to every request use it. A
// timeout of sweep.Threshold (a second) or more is enforced by the node's
// sweeper, which checks pending requests every sweep.Every (10 ms; such a
// timeout fires up to that much late), and takes no timer at all; shorter
// ones take a pooled timer.
func (s *Session) RequestTimeout(ctx context.Context, l Lane, payload []byte, timeout time.Duration) ([]byte, error) {
	return s.request(ctx, l, payload, timeout)
}

// Pools for the per-request answer channel and timeout timer.
var (
	resultChans = sync.Pool{New: func() any { return make(chan result, 1) }}
	timers      = sync.Pool{New: func() any {
		t := time.NewTimer(time.Hour)
		t.Stop()
		return t
	}}
)

func (s *Session) request(ctx context.Context, l Lane, payload []byte, timeout time.Duration) ([]byte, error) {
	if err := checkLane(l); err != nil {
		return nil, err
	}
	if len(payload) > s.node.cfg.MaxMessage {
		return nil, ErrMessageTooLarge
	}
	if err := ctx.Err(); err != nil {
		return nil, err // definite: nothing was sent
	}
	s = s.current()
	id := s.nextID.Add(1)
	ch := resultChans.Get().(chan result)
	p := pendingReq{ch: ch, lane: l}
	coarse := timeout >= sweep.Threshold
	if coarse {
		p.deadline = s.node.nanotime() + int64(timeout)
	}
	s.mu.Lock()
	if s.closeErr != nil {
		err := s.closeErr
		s.mu.Unlock()
		resultChans.Put(ch)
		return nil, notSent(err) // definite: never queued
	}
	s.pending[id] = p
	s.mu.Unlock()
	if coarse {
		s.node.sweepPending()
	}
	ln := s.lanes[l]
	if err := ln.send(ctx, frameRequest, id, payload); err != nil {
		if s.dropPending(id) {
			resultChans.Put(ch)
		}
		return nil, err
	}
	// A handler running on a connection's reader is about to wait for an
	// answer, maybe one that reader must read: hand the reading on.
	HandOff(ctx)
	var expired <-chan time.Time
	if timeout > 0 && !coarse {
		t := timers.Get().(*time.Timer)
		t.Reset(timeout)
		defer func() {
			t.Stop()
			timers.Put(t)
		}()
		expired = t.C
	}
	done := ctx.Done()
	if done == nil && expired == nil {
		// The common case (a coarse timeout, or none): one receive.
		r := <-ch
		resultChans.Put(ch) // drained: nobody else sends to it
		return r.payload, r.err
	}
	var err error
	select {
	case r := <-ch:
		resultChans.Put(ch) // drained: nobody else sends to it
		return r.payload, r.err
	case <-done:
		err = ctx.Err()
	case <-expired:
		err = context.DeadlineExceeded
	}
	if s.dropPending(id) {
		resultChans.Put(ch)
		_ = ln.send(nil, frameCancel, id, nil)
	}
	return nil, err
}

// dropPending forgets a pending request; it reports whether it was still there.
func (s *Session) dropPending(id uint64) bool {
	s.mu.Lock()
	_, ok := s.pending[id]
	delete(s.pending, id)
	s.signalIdleLocked()
	s.mu.Unlock()
	return ok
}

func (s *Session) signalIdleLocked() {
	if s.successor.Load() != nil && len(s.pending) == 0 && len(s.inflight) == 0 {
		select {
		case s.idle <- struct{}{}:
		default:
		}
	}
}

// Send queues a one-way message on lane. A nil error means the message
// was queued for the connection, not that the peer received it;
// ErrSessionClosed, that it was not (the session had failed).
func (s *Session) Send(ctx context.Context, l Lane, payload []byte) error {
	if err := checkLane(l); err != nil {
		return err
	}
	if len(payload) > s.node.cfg.MaxMessage {
		return ErrMessageTooLarge
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.current().lanes[l].send(ctx, frameMessage, 0, payload)
}

// complete delivers an answer to its pending request, if still pending.
func (s *Session) complete(id uint64, r result) {
	s.mu.Lock()
	p, ok := s.pending[id]
	delete(s.pending, id)
	s.signalIdleLocked()
	s.mu.Unlock()
	if ok {
		p.deliver(r)
	}
}

// prepareRequest registers one request as in flight and returns the job
// that runs the lane's handler and sends its answer (nil if the session is
// closing). The reader decides where the job runs (see readLoop).
func (s *Session) prepareRequest(ln *lane, id uint64, payload []byte) (task, error) {
	// Not derived from a session context: registering 64 concurrent
	// children with one parent contends on its lock. fail cancels every
	// inflight context instead.
	r := &inbound{s: s, ln: ln, id: id, payload: payload}
	s.mu.Lock()
	if s.closeErr != nil {
		s.mu.Unlock()
		return nil, nil
	}
	if _, dup := s.inflight[id]; dup {
		s.mu.Unlock()
		return nil, protocolError("duplicate request id %d", id)
	}
	if len(s.inflight) >= s.node.cfg.MaxRequests {
		s.mu.Unlock()
		return nil, errOverloaded
	}
	if !s.admits(len(payload)) {
		s.mu.Unlock()
		return nil, errOverBudget
	}
	s.inflight[id] = &r.ctx
	s.mu.Unlock()
	s.hold(len(payload))
	return r, nil
}

// inbound is a request being served: the job that runs the lane's handler
// and sends its answer, with the handler's context in the same allocation.
type inbound struct {
	ctx     reqCtx
	s       *Session
	ln      *lane
	id      uint64
	payload []byte
	held    bool // answer queued without a write: the batch flushes
}

func (r *inbound) run() {
	s, ln, id := r.s, r.ln, r.id
	held := len(r.payload) // counted in s.queued by prepareRequest
	defer func() { s.hold(-held) }()
	turn, ok := r.awaitRoom()
	if turn {
		defer func() { <-s.turn }()
	}
	if !ok {
		// The requester gave up, or the connection failed, while the
		// handler waited to start: it does not run, and nothing is sent.
		s.mu.Lock()
		delete(s.inflight, id)
		s.signalIdleLocked()
		s.mu.Unlock()
		r.ctx.cancel()
		return
	}
	resp, err := s.callHandler(&r.ctx, ln.id, r.payload)
	r.payload = nil
	s.mu.Lock()
	_, stillWanted := s.inflight[id]
	delete(s.inflight, id)
	closing := s.closeErr != nil
	s.signalIdleLocked()
	s.mu.Unlock()
	r.ctx.cancel()
	if !stillWanted || r.ctx.answered.Load() {
		return // the requester cancelled, or has its answer (Answered)
	}
	if closing && err != nil {
		// The session is failing, and fail cancelled this handler: its
		// error most likely says so ("context canceled"), which the
		// requester would take for the handler's own definite answer.
		// Sending nothing leaves it ErrConnectionLost — indeterminate,
		// which is the truth.
		return
	}
	max := s.node.cfg.MaxMessage
	if err == nil && len(resp) > max {
		err = &RemoteError{Code: CodeResponseTooLarge,
			Message: fmt.Sprintf("response of %d bytes exceeds %d", len(resp), max)}
	}
	if err != nil {
		var re *RemoteError
		if !errors.As(err, &re) {
			re = &RemoteError{Code: CodeApplication, Message: err.Error()}
		}
		r.sendAnswer(frameError, encodeRemoteError(re.Code, re.Message, max))
		return
	}
	// The answer takes the request's place in MaxQueuedBytes until it is
	// queued for the socket.
	s.hold(len(resp) - held)
	held = len(resp)
	r.sendAnswer(frameResponse, resp)
}

func (s *Session) callHandler(ctx context.Context, l Lane, payload []byte) (resp []byte, err error) {
	hp := s.node.reqHandlers[l].Load()
	if hp == nil {
		return nil, &RemoteError{Code: CodeNoHandler, Message: "no handler for lane " + l.String()}
	}
	defer func() {
		if p := recover(); p != nil {
			s.node.log.Error("mux: request handler panicked", "lane", l.String(), "panic", p)
			resp, err = nil, &RemoteError{Code: CodeHandlerPanic, Message: fmt.Sprint("handler panicked: ", p)}
		}
	}()
	return (*hp)(ctx, s, payload)
}

// cancelInflight cancels the handler of a request the peer gave up on.
func (s *Session) cancelInflight(id uint64) {
	s.mu.Lock()
	rc, ok := s.inflight[id]
	delete(s.inflight, id)
	s.signalIdleLocked()
	s.mu.Unlock()
	if ok {
		rc.cancel()
	}
}

// fail closes the session once, failing everything pending on it.
func (s *Session) fail(err error) {
	s.mu.Lock()
	if s.closeErr != nil {
		s.mu.Unlock()
		return
	}
	s.closeErr = err
	pending := s.pending
	s.pending = make(map[uint64]pendingReq)
	for _, rc := range s.inflight {
		rc.cancel()
	}
	s.mu.Unlock()
	close(s.done)
	s.wakeInboxes()
	lost := connectionLost(err)
	// Writer, yamux's conn and the socket first: yamux's Close waits for
	// its send loop, which may be waiting in the writer.
	s.w.close(lost)
	s.yc.Close()
	s.conn.Close()
	s.ys.Close()
	for _, p := range pending {
		p.deliver(result{err: lost})
	}
	if !errors.Is(err, errSuperseded) && !errors.Is(err, ErrClosed) && !errors.Is(err, errClaimRefused) {
		// The peer ending the connection in order (EOF: it closed the
		// session or its node, or its process exited) is routine — a
		// client going away, a member leaving — and membership reports a
		// member that is gone; anything else (a reset, a keepalive or
		// protocol failure) is news.
		level := slog.LevelInfo
		if errors.Is(err, io.EOF) {
			level = slog.LevelDebug
		}
		s.node.log.Log(context.Background(), level, "mux: session closed", "peer", s.peer.String()[:8], "err", err)
	}
	s.node.unregister(s, err)
}

// supersede marks s as the loser of a tie-break against winner (called
// under the node lock): new work moves to winner, and s closes once
// what is in flight on it is done, or after Config.SupersedeGrace.
func (s *Session) supersede(winner *Session) {
	s.mu.Lock()
	s.successor.Store(winner)
	s.signalIdleLocked()
	s.mu.Unlock()
	grace := s.node.cfg.SupersedeGrace
	s.node.wg.Add(1) // caller holds the node lock and checked closed
	go func() {
		defer s.node.wg.Done()
		t := time.NewTimer(grace)
		defer t.Stop()
		for {
			select {
			case <-s.done:
				return
			case <-t.C:
				s.fail(errSuperseded)
				return
			case <-s.idle:
				s.mu.Lock()
				idle := len(s.pending) == 0 && len(s.inflight) == 0
				s.mu.Unlock()
				if idle {
					// The peer may still have requests in flight to us
					// that we have not read yet; the peer's own drain
					// waits for their answers, and closing here would
					// lose them. Give the peer's drain the chance to
					// close first, bounded by the grace timer.
					select {
					case <-s.done:
					case <-t.C:
						s.fail(errSuperseded)
					case <-time.After(min(grace/10, 500*time.Millisecond)):
						s.mu.Lock()
						idle = len(s.pending) == 0 && len(s.inflight) == 0
						s.mu.Unlock()
						if idle {
							s.fail(errSuperseded)
						} else {
							continue
						}
					}
					return
				}
			}
		}
	}()
}

// monitor runs the keepalive: every KeepAliveInterval it sends a yamux
// ping, unless the last one is still out, and it wakes when the silence
// would pass its bound. Any record read proves the peer
// there, the pong included, however late: a peer starved of CPU answers
// pings seconds late while its connection still carries its calls, and
// judging each pong against KeepAliveTimeout closed such connections,
// losing what was in flight on them. A connection from which nothing was
// read for KeepAliveInterval + KeepAliveTimeout is closed (ErrKeepalive)
// as soon as that much has passed: pings go out every interval, so only a
// peer that stopped, or a path that did, stays silent that long.
func (s *Session) monitor() {
	iv := s.node.cfg.KeepAliveInterval
	silence := iv + s.node.cfg.KeepAliveTimeout
	s.heard.Store(time.Now().UnixNano()) // the handshake was heard
	var wake <-chan time.Time
	var timer *time.Timer
	nextPing := time.Now().Add(iv)
	if iv > 0 {
		timer = time.NewTimer(iv)
		defer timer.Stop()
		wake = timer.C
	}
	pinging := make(chan struct{}, 1) // holds a token while a ping is out
	for {
		select {
		case <-s.done:
			return
		case <-s.ys.CloseChan():
			s.fail(errors.New("mux: connection closed"))
			return
		case now := <-wake:
			if quiet := now.Sub(time.Unix(0, s.heard.Load())); quiet > silence {
				kerr := fmt.Errorf("%w: nothing heard from the peer for %v", ErrKeepalive, quiet.Round(time.Millisecond))
				s.node.log.Warn("mux: keepalive failed", "peer", s.peer.String()[:8], "err", kerr)
				if cb := s.node.cfg.OnKeepaliveFailure; cb != nil {
					s.node.goTracked(func() { cb(s.peer, kerr) })
				}
				s.fail(kerr)
				return
			}
			if !now.Before(nextPing) {
				nextPing = now.Add(iv)
				select {
				case pinging <- struct{}{}:
					// Its result does not matter: the pong is a record
					// read (readRecord notes it), and a ping cut short by
					// the session's close or yamux's own timeout proves
					// nothing either way.
					if !s.node.goTracked(func() { defer func() { <-pinging }(); _, _ = s.ys.Ping() }) {
						return
					}
				default: // the last ping is still out
				}
			}
			// Wake for the next ping, or when the silence would last too
			// long if nothing is read meanwhile (on a live connection the
			// pongs come first, and this costs nothing).
			next := time.Unix(0, s.heard.Load()).Add(silence + time.Millisecond)
			if nextPing.Before(next) {
				next = nextPing
			}
			timer.Reset(max(time.Until(next), 0))
		}
	}
}

// acceptLoop accepts the peer's ephemeral streams.
func (s *Session) acceptLoop() {
	for {
		st, err := s.ys.AcceptStream()
		if err != nil {
			return // the session is closing; monitor reports why
		}
		if !s.node.goTracked(func() { s.handleStream(st) }) {
			st.Close()
			return
		}
	}
}

func (s *Session) handleStream(st *yamux.Stream) {
	_ = st.SetReadDeadline(time.Now().Add(s.node.cfg.HandshakeTimeout))
	var kind [1]byte
	if _, err := io.ReadFull(st, kind[:]); err != nil {
		st.Close()
		return
	}
	switch kind[0] {
	case preambleStream:
		var n [4]byte
		if _, err := io.ReadFull(st, n[:]); err != nil {
			st.Close()
			return
		}
		size := binary.BigEndian.Uint32(n[:])
		if size > maxStreamHeader {
			s.violation(protocolError("stream header of %d bytes", size))
			return
		}
		hdr := make([]byte, size)
		if _, err := io.ReadFull(st, hdr); err != nil {
			st.Close()
			return
		}
		_ = st.SetReadDeadline(time.Time{})
		s.mu.Lock()
		full := s.streamsIn >= s.node.cfg.MaxStreams
		if !full {
			s.streamsIn++
		}
		s.mu.Unlock()
		hp := s.node.streamHandler.Load()
		if full || hp == nil {
			if !full {
				s.mu.Lock()
				s.streamsIn--
				s.mu.Unlock()
			}
			st.Close()
			return
		}
		(*hp)(s, newStream(s, st, hdr, &s.streamsIn))
	default:
		s.violation(protocolError("unknown stream kind %d", kind[0]))
	}
}

// violation logs a protocol violation and closes the connection.
func (s *Session) violation(err error) {
	s.node.log.Warn("mux: protocol violation, closing connection", "peer", s.peer.String()[:8], "err", err)
	s.fail(err)
}

// OpenStream opens an ephemeral stream to the peer carrying header (at
// most 64 KiB), which the peer's StreamHandler receives with the stream.
// The stream has its own credit window: a reader that stops reading
// stalls only this stream. It fails with ErrTooManyStreams when
// Config.MaxStreams streams opened by this side are still open.
func (s *Session) OpenStream(ctx context.Context, header []byte) (*Stream, error) {
	if len(header) > maxStreamHeader {
		return nil, fmt.Errorf("mux: stream header of %d bytes exceeds %d", len(header), maxStreamHeader)
	}
	s = s.current()
	s.mu.Lock()
	if s.closeErr != nil {
		err := s.closeErr
		s.mu.Unlock()
		return nil, notSent(err)
	}
	if s.streamsOut >= s.node.cfg.MaxStreams {
		s.mu.Unlock()
		return nil, ErrTooManyStreams
	}
	s.streamsOut++
	s.mu.Unlock()
	release := func() {
		s.mu.Lock()
		s.streamsOut--
		s.mu.Unlock()
	}
	if err := ctx.Err(); err != nil {
		release()
		return nil, err
	}
	st, err := s.ys.OpenStream()
	if err != nil {
		release()
		return nil, connectionLost(err)
	}
	pre := make([]byte, 5, 5+len(header))
	pre[0] = preambleStream
	binary.BigEndian.PutUint32(pre[1:], uint32(len(header)))
	if _, err := st.Write(append(pre, header...)); err != nil {
		st.Close()
		release()
		return nil, connectionLost(err)
	}
	return newStream(s, st, header, &s.streamsOut), nil
}
