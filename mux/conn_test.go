package mux

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestPendingRequestsFailWithConnectionLost(t *testing.T) {
	forEachConn(t, func(t *testing.T, ct connType) {
		entered := make(chan struct{}, 8)
		var runs atomic.Int32
		_, _, sa, sb := connect(t, ct, testConfig(1), testConfig(2), func(a, b *Node) {
			b.HandleRequests(LaneMessage, func(ctx context.Context, s *Session, p []byte) ([]byte, error) {
				runs.Add(1)
				entered <- struct{}{}
				<-ctx.Done()
				return nil, ctx.Err()
			})
		})
		errs := make(chan error, 4)
		for range 4 {
			go func() {
				_, err := sa.Request(context.Background(), LaneMessage, []byte("x"))
				errs <- err
			}()
		}
		for range 4 {
			<-entered
		}
		sb.conn.Close() // the network dies under the listener
		for range 4 {
			if err := <-errs; !errors.Is(err, ErrConnectionLost) {
				t.Fatalf("got %v", err)
			}
		}
		<-sa.Done()
		// Made after the connection died, a request or message is never
		// queued: definite, so that a caller may send it elsewhere.
		if _, err := sa.Request(context.Background(), LaneMessage, nil); !errors.Is(err, ErrSessionClosed) || errors.Is(err, ErrConnectionLost) {
			t.Fatalf("request on a dead session: %v, want ErrSessionClosed (definite), not ErrConnectionLost", err)
		}
		if err := sa.Send(context.Background(), LaneMessage, nil); !errors.Is(err, ErrSessionClosed) || errors.Is(err, ErrConnectionLost) {
			t.Fatalf("message on a dead session: %v, want ErrSessionClosed", err)
		}
		// mux never retries a request: each handler ran once, the one sent
		// on the dead session not at all.
		if n := runs.Load(); n != 4 {
			t.Fatalf("handlers ran %d times for 4 requests", n)
		}
	})
}

// rawEnvelope writes bytes straight onto a's message lane, bypassing the
// encoder, to play a misbehaving peer.
func rawEnvelope(t *testing.T, s *Session, b []byte) {
	t.Helper()
	// The peer may close the connection before the write completes; what
	// matters is what the peer did with the bytes.
	_ = s.w.enqueue(nil, byte(LaneMessage), func(q []byte) []byte { return append(q, b...) }, false)
}

func TestProtocolViolationsCloseTheConnection(t *testing.T) {
	zbomb := func() []byte {
		var buf bytes.Buffer
		w, _ := zlib.NewWriterLevel(&buf, zlib.BestSpeed)
		w.Write(make([]byte, 5<<20)) // decompresses past the 4 MiB limit
		w.Close()
		return buf.Bytes()
	}()
	cases := map[string][]byte{
		"unknown type":      appendEnvelopeHeader(nil, 9, 0, 1, 0),
		"unknown flag":      appendEnvelopeHeader(nil, frameRequest, 0x80, 1, 0),
		"length over limit": appendEnvelopeHeader(nil, frameRequest, 0, 1, 4<<20+1),
		"request id zero":   appendEnvelopeHeader(nil, frameRequest, 0, 0, 0),
		"short error":       append(appendEnvelopeHeader(nil, frameError, 0, 1, 1), 0),
		"garbage compressed": append(appendEnvelopeHeader(nil, frameMessage, flagCompressed, 0, 4),
			1, 2, 3, 4),
		"compression bomb":  append(appendEnvelopeHeader(nil, frameMessage, flagCompressed, 0, len(zbomb)), zbomb...),
		"claim off lane 0":  append(appendEnvelopeHeader(nil, frameClaim, 0, 1, claimPayloadSize), make([]byte, claimPayloadSize)...),
		"short claim":       append(appendEnvelopeHeader(nil, frameClaim, 0, 1, 3), 1, 2, 3),
		"compressed answer": append(appendEnvelopeHeader(nil, frameClaimAnswer, flagCompressed, 1, 1), 1),
	}
	for name, raw := range cases {
		t.Run(name, func(t *testing.T) {
			forEachConn(t, func(t *testing.T, ct connType) { violate(t, ct, raw) })
		})
	}
}

func violate(t *testing.T, ct connType, raw []byte) {
	{
		{
			ca, cb := testConfig(1), testConfig(2)
			ca.Codecs, cb.Codecs = []string{CodecZlib}, []string{CodecZlib}
			hold := make(chan struct{})
			defer close(hold)
			_, _, sa, sb := connect(t, ct, ca, cb, func(a, b *Node) {
				a.HandleRequests(LaneMessage, func(ctx context.Context, s *Session, p []byte) ([]byte, error) {
					select {
					case <-hold:
					case <-ctx.Done():
					}
					return nil, nil
				})
			})
			pending := make(chan error, 1)
			go func() {
				_, err := sb.Request(context.Background(), LaneMessage, []byte("x"))
				pending <- err
			}()
			waitFor(t, 5*time.Second, "request in flight", func() bool {
				sa.mu.Lock()
				defer sa.mu.Unlock()
				return len(sa.inflight) == 1
			})
			rawEnvelope(t, sa, raw)
			select {
			case <-sb.Done():
			case <-time.After(5 * time.Second):
				t.Fatal("violation did not close the connection")
			}
			if !errors.Is(sb.Err(), ErrProtocol) {
				t.Fatalf("closed for %v", sb.Err())
			}
			if err := <-pending; !errors.Is(err, ErrConnectionLost) {
				t.Fatalf("pending request: %v", err)
			}
		}
	}
}

func TestDuplicateRequestIDIsAViolation(t *testing.T) {
	forEachConn(t, func(t *testing.T, ct connType) {
		hold := make(chan struct{})
		defer close(hold)
		_, _, sa, sb := connect(t, ct, testConfig(1), testConfig(2), func(a, b *Node) {
			b.HandleRequests(LaneMessage, func(ctx context.Context, s *Session, p []byte) ([]byte, error) {
				select {
				case <-hold:
				case <-ctx.Done():
				}
				return nil, nil
			})
		})
		req := appendEnvelopeHeader(nil, frameRequest, 0, 77, 0)
		rawEnvelope(t, sa, append(req, req...))
		select {
		case <-sb.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("duplicate id did not close the connection")
		}
	})
}

func TestHandshakeRejections(t *testing.T) {
	t.Run("wrong cluster", func(t *testing.T) {
		forEachConn(t, func(t *testing.T, ct connType) {
			ca, cb := testConfig(1), testConfig(2)
			cb.ClusterName = "other"
			_, err := dialOnce(t, ct, ca, cb)
			assertHandshake(t, err, CodeWrongCluster, true)
		})
	})
	t.Run("wrong cluster does not reveal the listener's name", func(t *testing.T) {
		forEachConn(t, func(t *testing.T, ct connType) {
			ca, cb := testConfig(1), testConfig(2)
			ca.ClusterName, cb.ClusterName = "guess", "the-real-name"
			_, err := dialOnce(t, ct, ca, cb)
			assertHandshake(t, err, CodeWrongCluster, true)
			if strings.Contains(err.Error(), cb.ClusterName) {
				t.Fatalf("the rejection reveals the listener's cluster name: %v", err)
			}
		})
	})
	t.Run("connected to itself", func(t *testing.T) {
		forEachConn(t, func(t *testing.T, ct connType) {
			_, err := dialOnce(t, ct, testConfig(1), testConfig(1))
			assertHandshake(t, err, CodeSelf, true)
		})
	})
	t.Run("same node over one listener", func(t *testing.T) {
		n := newNode(t, testConfig(1))
		addr := listen(t, n)
		_, err := n.Dial(context.Background(), addr)
		assertHandshake(t, err, CodeSelf, true)
	})
	t.Run("no common version", func(t *testing.T) {
		// Play a dialler from the future that only speaks version 99.
		b := newNode(t, testConfig(2))
		c1, c2 := net.Pipe()
		accErr := make(chan error, 1)
		go func() { _, err := b.Accept(context.Background(), c2); accErr <- err }()
		defer c1.Close()
		h := hello{versions: []uint16{99}, nodeID: testID(1), role: RoleMember, cluster: "test"}
		go c1.Write(h.encode())
		st := c1
		typ, body, err := readHandshake(st)
		if err != nil || typ != hsReject {
			t.Fatalf("answer %d %v", typ, err)
		}
		r, _ := decodeReject(body)
		if r.code != CodeNoCommonVersion {
			t.Fatalf("code %v", r.code)
		}
		assertHandshake(t, <-accErr, CodeNoCommonVersion, false)
	})
}

func assertHandshake(t *testing.T, err error, code HandshakeCode, remote bool) {
	t.Helper()
	var he *HandshakeError
	if !errors.As(err, &he) || he.Code != code || he.Remote != remote {
		t.Fatalf("want handshake code %v remote=%v, got %v", code, remote, err)
	}
}

// dialOnce dials from a node built with ca to one built with cb and
// returns the dialler's result.
func dialOnce(t *testing.T, ct connType, ca, cb Config) (*Session, error) {
	if ct == viaTLS {
		ca, cb = withTLS(t, ca), withTLS(t, cb)
	}
	a, b := newNode(t, ca), newNode(t, cb)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if ct == viaPipe {
		c1, c2 := net.Pipe()
		go b.Accept(ctx, c2)
		return a.DialConn(ctx, c1)
	}
	return a.Dial(ctx, listen(t, b))
}

func TestTLSMismatchFailsCleanly(t *testing.T) {
	p := getPKI(t)
	cases := []struct {
		name   string
		dialer func(Config) Config
		server func(Config) Config
	}{
		{"plaintext dialler, TLS listener", func(c Config) Config { return c }, func(c Config) Config { return withTLS(t, c) }},
		{"TLS dialler, plaintext listener", func(c Config) Config { return withTLS(t, c) }, func(c Config) Config { return c }},
		{"dialler without client certificate", func(c Config) Config {
			c.ClientTLS = &tls.Config{RootCAs: p.pool, MinVersion: tls.VersionTLS13}
			return c
		}, func(c Config) Config { return withTLS(t, c) }},
		{"dialler not trusting the listener", func(c Config) Config {
			c = withTLS(t, c)
			c.ClientTLS.RootCAs = x509EmptyPool()
			return c
		}, func(c Config) Config { return withTLS(t, c) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ca, cb := c.dialer(testConfig(1)), c.server(testConfig(2))
			ca.HandshakeTimeout, cb.HandshakeTimeout = time.Second, time.Second
			a, b := newNode(t, ca), newNode(t, cb)
			addr := listen(t, b)
			start := time.Now()
			s, err := a.Dial(context.Background(), addr)
			if err == nil {
				// TLS 1.3 lets a client finish before the server checks
				// its certificate; the first use must fail instead.
				_, err = s.Request(context.Background(), LaneMessage, nil)
				if err == nil {
					t.Fatal("mismatched connection worked")
				}
				return
			}
			var he *HandshakeError
			if !errors.As(err, &he) {
				t.Fatalf("not a handshake error: %v", err)
			}
			if time.Since(start) > 3*time.Second {
				t.Fatalf("took %v to fail", time.Since(start))
			}
			if len(b.Sessions()) != 0 {
				t.Fatal("listener kept a session")
			}
		})
	}
}

func TestSessionIsReusedForOutboundTraffic(t *testing.T) {
	ca, cb := testConfig(1), testConfig(2)
	ca.AdvertiseAddr = "a.example:7001"
	a, b := newNode(t, ca), newNode(t, cb)
	a.HandleRequests(LaneMessage, echo)
	addrB := listen(t, b)
	sa, err := a.Dial(context.Background(), addrB)
	if err != nil {
		t.Fatal(err)
	}
	var sb *Session
	waitFor(t, 5*time.Second, "inbound session", func() bool {
		var ok bool
		sb, ok = b.Session(testID(1))
		return ok
	})
	if sb.PeerAddr() != "a.example:7001" || sb.PeerRole() != RoleMember {
		t.Fatalf("peer addr %q role %v", sb.PeerAddr(), sb.PeerRole())
	}
	// B reaches A over the inbound connection; no dial happens (the
	// advertised address does not even resolve).
	s, err := b.Connect(context.Background(), testID(1), "a.example:7001")
	if err != nil || s != sb {
		t.Fatalf("connect: %v %v", s == sb, err)
	}
	if got, err := s.Request(context.Background(), LaneMessage, []byte("hi")); err != nil || string(got) != "hi" {
		t.Fatal(got, err)
	}
	// Dialling again converges on the existing session.
	again, err := a.Dial(context.Background(), addrB)
	if live, _ := a.Session(testID(2)); err != nil || again != live {
		t.Fatalf("second dial did not return the live session (%v)", err)
	}
	// Whichever connection lost the tie-break forwards to the winner.
	b.HandleRequests(LaneMessage, echo)
	for _, s := range []*Session{sa, again} {
		if got, err := s.Request(context.Background(), LaneMessage, []byte("x")); err != nil || string(got) != "x" {
			t.Fatal(got, err)
		}
	}
	waitFor(t, 5*time.Second, "one connection", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.all) == 1
	})
	if _, err := a.Connect(context.Background(), testID(9), addrB); !errors.Is(err, ErrUnexpectedPeer) {
		t.Fatalf("wrong peer: %v", err)
	}
}

func TestSimultaneousDialConverges(t *testing.T) {
	for round := range 5 {
		a, b := newNode(t, testConfig(1)), newNode(t, testConfig(2))
		a.HandleRequests(LaneMessage, echo)
		b.HandleRequests(LaneMessage, echo)
		addrA, addrB := listen(t, a), listen(t, b)
		var wg sync.WaitGroup
		var sa, sb *Session
		var ea, eb error
		wg.Add(2)
		go func() { defer wg.Done(); sa, ea = a.Dial(context.Background(), addrB) }()
		go func() { defer wg.Done(); sb, eb = b.Dial(context.Background(), addrA) }()
		wg.Wait()
		if ea != nil || eb != nil {
			t.Fatal(ea, eb)
		}
		// Requests on whatever Dial returned keep working throughout.
		for _, s := range []*Session{sa, sb} {
			if got, err := s.Request(context.Background(), LaneMessage, []byte("x")); err != nil || string(got) != "x" {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		waitFor(t, 10*time.Second, "one connection per side", func() bool {
			a.mu.Lock()
			na := len(a.all)
			a.mu.Unlock()
			b.mu.Lock()
			nb := len(b.all)
			b.mu.Unlock()
			return na == 1 && nb == 1
		})
		la, _ := a.Session(testID(2))
		lb, _ := b.Session(testID(1))
		// Both sides kept the same connection: the one node 1 initiated.
		if la.LocalAddr().String() != lb.RemoteAddr().String() || !la.Outbound() || lb.Outbound() {
			t.Fatalf("round %d: sides disagree: %v/%v outbound %v/%v", round,
				la.LocalAddr(), lb.RemoteAddr(), la.Outbound(), lb.Outbound())
		}
		a.Close()
		b.Close()
	}
}

// freezeConn stops delivering reads once frozen, like a peer whose
// machine hung while its socket stays open.
type freezeConn struct {
	net.Conn
	frozen atomic.Bool
	thaw   chan struct{}
}

func (c *freezeConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if c.frozen.Load() {
		<-c.thaw
		return 0, io.EOF
	}
	return n, err
}

func (c *freezeConn) Close() error {
	if c.frozen.CompareAndSwap(true, false) {
		close(c.thaw)
	}
	return c.Conn.Close()
}

func TestKeepaliveFailureIsReported(t *testing.T) {
	ca, cb := testConfig(1), testConfig(2)
	ca.KeepAliveInterval, ca.KeepAliveTimeout = 50*time.Millisecond, 500*time.Millisecond
	failed := make(chan NodeID, 1)
	lost := make(chan error, 1)
	ca.OnKeepaliveFailure = func(p NodeID, err error) { failed <- p }
	ca.OnPeerLost = func(p NodeID, err error) { lost <- err }
	a, b := newNode(t, ca), newNode(t, cb)
	c1, c2 := net.Pipe()
	fc := &freezeConn{Conn: c1, thaw: make(chan struct{})}
	go b.Accept(context.Background(), c2)
	sa, err := a.DialConn(context.Background(), fc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sa.Ping(context.Background()); err != nil {
		t.Fatalf("healthy ping: %v", err)
	}
	fc.frozen.Store(true)
	select {
	case p := <-failed:
		if p != testID(2) {
			t.Fatalf("reported %v", p)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("keepalive failure not reported")
	}
	if err := <-lost; !errors.Is(err, ErrKeepalive) {
		t.Fatalf("peer lost with %v", err)
	}
}

func TestSupersededSessionFinishesInFlightWorkAndForwards(t *testing.T) {
	for _, ct := range []connType{viaTCP, viaTLS} {
		t.Run(string(ct), func(t *testing.T) {
			ca, cb := testConfig(1), testConfig(2)
			ca.SupersedeGrace, cb.SupersedeGrace = time.Minute, time.Minute // the slow request must outlive any timer
			if ct == viaTLS {
				ca, cb = withTLS(t, ca), withTLS(t, cb)
			}
			a, b := newNode(t, ca), newNode(t, cb)
			release := make(chan struct{})
			entered := make(chan struct{}, 1)
			a.HandleRequests(LaneMessage, func(ctx context.Context, from *Session, p []byte) ([]byte, error) {
				if string(p) == "slow" {
					entered <- struct{}{}
					<-release
				}
				if from.Outbound() {
					return []byte("via a's dial"), nil
				}
				return []byte("via b's dial"), nil
			})
			addrA, addrB := listen(t, a), listen(t, b)
			ctx := context.Background()
			s1, err := b.Dial(ctx, addrA) // initiator 2: will lose
			if err != nil {
				t.Fatal(err)
			}
			slow := make(chan error, 1)
			go func() {
				got, err := s1.Request(ctx, LaneMessage, []byte("slow"))
				if err == nil && string(got) != "via b's dial" {
					err = errors.New("answered on " + string(got))
				}
				slow <- err
			}()
			<-entered
			if _, err := a.Dial(ctx, addrB); err != nil { // initiator 1: wins
				t.Fatal(err)
			}
			waitFor(t, 5*time.Second, "b to switch to a's dial", func() bool {
				s, ok := b.Session(testID(1))
				return ok && !s.Outbound()
			})
			// New work on the old handle moves to the winner...
			got, err := s1.Request(ctx, LaneMessage, []byte("new"))
			if err != nil || string(got) != "via a's dial" {
				t.Fatalf("forwarded request: %q %v", got, err)
			}
			// ...while the loser stays open for the request in flight on it.
			select {
			case <-s1.Done():
				t.Fatal("superseded session closed with a request in flight")
			default:
			}
			close(release)
			if err := <-slow; err != nil {
				t.Fatal(err)
			}
			select {
			case <-s1.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("superseded session never closed")
			}
		})
	}
}

func TestHandshakeTimeout(t *testing.T) {
	cfg := testConfig(1)
	cfg.HandshakeTimeout = 200 * time.Millisecond
	n := newNode(t, cfg)
	t.Run("silent dialler", func(t *testing.T) {
		c1, c2 := net.Pipe()
		defer c1.Close()
		start := time.Now()
		_, err := n.Accept(context.Background(), c2)
		assertHandshake(t, err, CodeMalformed, false)
		if el := time.Since(start); el > 3*time.Second {
			t.Fatalf("gave up after %v", el)
		}
	})
	t.Run("silent listener", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		accepted := make(chan net.Conn, 1)
		go func() {
			c, err := ln.Accept()
			if err == nil {
				accepted <- c // hold it open, say nothing
			}
		}()
		start := time.Now()
		_, err = n.Dial(context.Background(), ln.Addr().String())
		assertHandshake(t, err, CodeMalformed, false)
		if el := time.Since(start); el > 3*time.Second {
			t.Fatalf("gave up after %v", el)
		}
		(<-accepted).Close()
	})
}

func TestConcurrentRequestsShareWrites(t *testing.T) {
	a, b := newNode(t, testConfig(1)), newNode(t, testConfig(2))
	b.HandleRequests(LaneMessage, echo)
	c1, c2 := net.Pipe()
	cc := &countingWrites{Conn: c1}
	go b.Accept(context.Background(), c2)
	s, err := a.DialConn(context.Background(), cc)
	if err != nil {
		t.Fatal(err)
	}
	const requesters, each = 64, 30
	before := cc.n.Load()
	var wg sync.WaitGroup
	for range requesters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				if _, err := s.Request(context.Background(), LaneMessage, make([]byte, 64)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	writes := cc.n.Load() - before
	t.Logf("%d requests in %d writes", requesters*each, writes)
	if writes > requesters*each/3 {
		t.Fatalf("%d requests took %d writes: small envelopes are not being combined", requesters*each, writes)
	}
}

type countingWrites struct {
	net.Conn
	n atomic.Int64
}

func (c *countingWrites) Write(b []byte) (int, error) {
	c.n.Add(1)
	return c.Conn.Write(b)
}

func TestTLSMismatchIsExplained(t *testing.T) {
	plain, secure := testConfig(1), withTLS(t, testConfig(2))
	plain.HandshakeTimeout, secure.HandshakeTimeout = time.Second, time.Second
	a, b := newNode(t, plain), newNode(t, secure)
	secure.ClientTLS.ServerName = "127.0.0.1"

	// A TLS dialler reaching the plaintext listener a.
	c1, c2 := net.Pipe()
	go func() {
		tc := tls.Client(c1, secure.ClientTLS)
		tc.Handshake()
		tc.Close()
	}()
	_, err := a.Accept(context.Background(), c2)
	if err == nil || !strings.Contains(err.Error(), "set ServerTLS") {
		t.Fatalf("plaintext listener: %v", err)
	}
	// A plaintext dialler reaching the TLS listener b.
	c1, c2 = net.Pipe()
	go b.Accept(context.Background(), c2)
	_, err = a.DialConn(context.Background(), c1)
	if err == nil || !strings.Contains(err.Error(), "TLS") {
		t.Fatalf("plaintext dialler: %v", err)
	}
}

// A client announces its role in the handshake: the member it dials sees
// RoleClient, and the client sees the member's RoleMember.
func TestRolesCrossTheHandshake(t *testing.T) {
	forEachConn(t, func(t *testing.T, ct connType) {
		ca, cb := testConfig(1), testConfig(2)
		ca.Role, cb.Role = RoleClient, RoleMember
		_, _, sa, sb := connect(t, ct, ca, cb, nil)
		if sb.PeerRole() != RoleClient || sa.PeerRole() != RoleMember {
			t.Fatalf("member sees %v, client sees %v", sb.PeerRole(), sa.PeerRole())
		}
	})
}

// rawRecord writes b on s's connection as it is, around the record framing:
// it takes the writer for good (the peer is about to drop the connection).
func rawRecord(s *Session, b []byte) {
	w := s.w
	w.mu.Lock()
	for w.writing {
		w.mu.Unlock()
		runtime.Gosched()
		w.mu.Lock()
	}
	w.writing = true
	w.mu.Unlock()
	_, _ = s.conn.Write(b)
}

// A record the protocol does not allow — an unknown channel, an empty one,
// one longer than 1 MiB — closes the connection, on every transport.
func TestRecordViolationsCloseTheConnection(t *testing.T) {
	cases := map[string][]byte{
		"unknown channel":   {9, 0, 0, 0, 1, 0},
		"empty record":      {0, 0, 0, 0, 0},
		"record over 1 MiB": {0, 0, 0x10, 0, 1},
	}
	for name, raw := range cases {
		t.Run(name, func(t *testing.T) {
			forEachConn(t, func(t *testing.T, ct connType) {
				_, _, sa, sb := connect(t, ct, testConfig(1), testConfig(2), nil)
				rawRecord(sa, raw)
				select {
				case <-sb.Done():
					if !errors.Is(sb.Err(), ErrProtocol) {
						t.Fatalf("closed with %v, want a protocol violation", sb.Err())
					}
				case <-time.After(5 * time.Second):
					t.Fatal("the violation did not close the connection")
				}
			})
		})
	}
}

// Payloads handed on by the reader are copies (its buffer is reused), and
// the small ones of a batch share one: appending to one payload must not
// write into the next, and a payload must not pin a large batch.
func TestParsedPayloadsAreIndependent(t *testing.T) {
	for _, size := range []int{5, sharedCopyMax/2 + 1} {
		var in []byte
		var want [][]byte
		for i := range 3 {
			p := bytes.Repeat([]byte{byte('a' + i)}, size)
			want = append(want, p)
			in = append(appendEnvelopeHeader(in, frameMessage, 0, 0, len(p)), p...)
		}
		var got [][]byte
		used, err := parseEnvelopes(in, 1<<20, func(env envelope) error {
			got = append(got, env.payload)
			return nil
		})
		if err != nil || used != len(in) || len(got) != 3 {
			t.Fatalf("size %d: used %d of %d, %d envelopes, err %v", size, used, len(in), len(got), err)
		}
		clear(in) // the reader reuses its buffer
		for i := range got {
			if cap(got[i]) >= 2*size {
				t.Errorf("size %d: payload %d keeps %d bytes alive", size, i, cap(got[i]))
			}
			got[i] = append(got[i], "more"...)
		}
		for i := range got {
			if !bytes.Equal(got[i][:size], want[i]) {
				t.Errorf("size %d: payload %d changed: %q", size, i, got[i][:min(size, 16)])
			}
		}
	}
}

// A Connect for an identity whose address another node now holds (a
// process restarted there under a new id) fails with ErrUnexpectedPeer
// and leaves the session to the node that answered open: Connect once
// closed it, though it was that node's live session, so every caller
// still asking the departed identity cut the link others were using.
// Until that session closes, Connect fails at once, without dialling.
func TestConnectToADepartedIdentityKeepsTheLiveSession(t *testing.T) {
	ca := testConfig(1)
	var dials atomic.Int64
	ca.Dial = func(ctx context.Context, addr string) (net.Conn, error) {
		dials.Add(1)
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}
	a, b := newNode(t, ca), newNode(t, testConfig(2))
	b.HandleRequests(LaneMessage, echo)
	addrB := listen(t, b)
	if _, err := a.Connect(context.Background(), testID(2), addrB); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, err := a.Connect(context.Background(), testID(9), addrB); !errors.Is(err, ErrUnexpectedPeer) {
			t.Fatalf("Connect for the departed identity: %v, want ErrUnexpectedPeer", err)
		}
	}
	live, ok := a.Session(testID(2))
	if !ok {
		t.Fatal("no live session to the node at the address any more")
	}
	if err := live.Err(); err != nil {
		t.Fatalf("the session to the node at the address closed: %v", err)
	}
	if got, err := live.Request(context.Background(), LaneMessage, []byte("x")); err != nil || string(got) != "x" {
		t.Fatalf("request on the live session: %q, %v", got, err)
	}
	if n := dials.Load(); n != 2 {
		t.Fatalf("%d dials, want 2: one for the live session, one that found the address taken", n)
	}
}
