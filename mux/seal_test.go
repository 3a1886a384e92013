package mux

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A relay: a host a member dials (a stale seed address, a host that took
// over an old member's IP, an address a lite client advertised) that
// passes the handshake through to another member, to be welcomed there as
// the dialling member.

// relayed is one relayed connection: the dialler's side (a) and the
// listener's (b), both past the handshake.
type relayed struct {
	a, b net.Conn
}

// relayTo accepts one connection on ln, dials addr, and passes the
// handshake through, message by message, until the listener's welcome
// reached the dialler. edit, if set, may change each message on its way
// (from says who sent it). It returns both connections.
func relayTo(t *testing.T, ln net.Listener, addr string, edit func(fromDialler bool, typ byte, body []byte) []byte) (*relayed, error) {
	t.Helper()
	a, err := ln.Accept()
	if err != nil {
		return nil, err
	}
	b, err := net.Dial("tcp", addr)
	if err != nil {
		a.Close()
		return nil, err
	}
	r := &relayed{a: a, b: b}
	deadline := time.Now().Add(5 * time.Second)
	a.SetDeadline(deadline)
	b.SetDeadline(deadline)
	pass := func(from, to net.Conn, fromDialler bool) (byte, error) {
		typ, body, err := readHandshake(from)
		if err != nil {
			return 0, err
		}
		if edit != nil {
			body = edit(fromDialler, typ, body)
		}
		_, err = to.Write(frameHandshake(typ, body))
		return typ, err
	}
	// hello, challenge, dialler's proof, then the listener's proof and
	// welcome (or a reject anywhere).
	for _, fromDialler := range []bool{true, false, true} {
		from, to := b, a
		if fromDialler {
			from, to = a, b
		}
		if typ, err := pass(from, to, fromDialler); err != nil || typ == hsReject {
			r.close()
			return nil, errors.Join(err, errors.New("handshake rejected"))
		}
	}
	for {
		typ, err := pass(b, a, false)
		if err != nil {
			r.close()
			return nil, err
		}
		if typ != hsProof {
			break
		}
	}
	a.SetDeadline(time.Time{})
	b.SetDeadline(time.Time{})
	return r, nil
}

func (r *relayed) close() {
	r.a.Close()
	r.b.Close()
}

// relayFixture is a listener b holding the member secret that counts the
// requests it serves on the message lane and answers "served:"+payload, a
// dialler a holding the same secret, and a relay's listening socket.
type relayFixture struct {
	a, b    *Node
	relayLn net.Listener
	bAddr   string
	served  chan []byte
	bSess   chan *Session
}

func newRelayFixture(t *testing.T, edit func(a, b *Config)) *relayFixture {
	t.Helper()
	f := &relayFixture{served: make(chan []byte, 16), bSess: make(chan *Session, 4)}
	ca, cb := withSecret(testConfig(1), memberSecret), withSecret(testConfig(2), memberSecret)
	if edit != nil {
		edit(&ca, &cb)
	}
	cb.OnSession = func(s *Session) { f.bSess <- s }
	f.a, f.b = newNode(t, ca), newNode(t, cb)
	f.b.HandleRequests(LaneMessage, func(_ context.Context, _ *Session, p []byte) ([]byte, error) {
		f.served <- bytes.Clone(p)
		return append([]byte("served:"), p...), nil
	})
	f.bAddr = listen(t, f.b)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	f.relayLn = ln
	return f
}

// dialThroughRelay has a dial the relay's address while the relay passes
// the handshake through to b; it returns a's session and the relayed
// connections.
func (f *relayFixture) dialThroughRelay(t *testing.T) (*Session, *relayed) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	type dialed struct {
		s   *Session
		err error
	}
	done := make(chan dialed, 1)
	go func() { s, err := f.a.Dial(ctx, f.relayLn.Addr().String()); done <- dialed{s, err} }()
	r, err := relayTo(t, f.relayLn, f.bAddr, nil)
	if err != nil {
		t.Fatalf("relaying the handshake: %v", err)
	}
	d := <-done
	if d.err != nil {
		r.close()
		t.Fatalf("the dialler's handshake through the relay: %v", d.err)
	}
	return d.s, r
}

// TestRelayedHandshakeGivesTheRelayNothing: a member a dials a relay,
// which passes the handshake through to member b and so is welcomed by b
// as a. The relay cannot speak as a (an injected request is not served;
// b closes the connection), nor read what a and b say (a request passed
// through intact is answered, and its payload never crosses the relay in
// the clear).
func TestRelayedHandshakeGivesTheRelayNothing(t *testing.T) {
	t.Run("inject", func(t *testing.T) {
		f := newRelayFixture(t, nil)
		if served, closed := f.injectThroughRelay(t); served || !closed {
			t.Fatalf("b served the relay's injected request (%v) or kept the connection open (%v)", served, !closed)
		}
	})
	t.Run("read", func(t *testing.T) {
		f := newRelayFixture(t, nil)
		sa, r := f.dialThroughRelay(t)
		var seen syncBuffer
		var wg sync.WaitGroup
		wg.Add(2)
		// Kept before forwarded: all a request and its answer carried is
		// in seen once the answer reaches a.
		go func() { defer wg.Done(); io.Copy(io.MultiWriter(&seen, r.b), r.a); r.b.Close() }()
		go func() { defer wg.Done(); io.Copy(io.MultiWriter(&seen, r.a), r.b); r.a.Close() }()
		defer wg.Wait()
		defer r.close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		secret := []byte("confidential: the relay must not read this")
		got, err := sa.Request(ctx, LaneMessage, secret)
		if err != nil {
			t.Fatalf("a request passed through the relay intact failed: %v", err)
		}
		if want := append([]byte("served:"), secret...); !bytes.Equal(got, want) {
			t.Fatalf("answer %q, want %q", got, want)
		}
		if strings.Contains(seen.String(), "confidential") {
			t.Fatal("the relay read the request's payload in the clear")
		}
	})
}

// injectThroughRelay relays a's handshake to b, then sends b a request of
// the relay's own, and reports whether b served it (and the relay read
// the answer), or closed the connection.
func (f *relayFixture) injectThroughRelay(t *testing.T) (served, closed bool) {
	t.Helper()
	_, r := f.dialThroughRelay(t)
	defer r.close()
	// The request's record is followed by 16 bytes, where a sealed
	// record's tag goes, shaped as a second record that carries the
	// start of another envelope: whichever format b reads, it has whole
	// records, and unsealed the request is complete.
	payload := []byte("injected by the relay")
	env := append(appendEnvelopeHeader(nil, frameRequest, 0, 1, len(payload)), payload...)
	inject := appendRecord(nil, byte(LaneMessage), env, 0)
	inject = appendRecord(inject, byte(LaneMessage), appendEnvelopeHeader(nil, frameRequest, 0, 2, 1)[:16-recordHeaderSize], 0)
	if _, err := r.b.Write(inject); err != nil {
		t.Fatalf("writing the injected record: %v", err)
	}
	// Read what b sends back until it closes the connection or shows that
	// it served the request.
	r.b.SetReadDeadline(time.Now().Add(5 * time.Second))
	var got []byte
	buf := make([]byte, 4096)
	var err error
	for !bytes.Contains(got, []byte("served:"+string(payload))) {
		var n int
		n, err = r.b.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			break
		}
	}
	if bytes.Contains(got, []byte("served:"+string(payload))) {
		return true, false
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatal("b neither served the injected request nor closed the connection")
	}
	select {
	case p := <-f.served:
		t.Fatalf("b's handler ran for %q, and its answer did not reach the relay", p)
	default:
	}
	return false, true
}

// TestRelayTakesOverAnAuthOnlySession: what Config.AuthOnly gives up.
// With it on both members, the relay of the test above is served as the
// dialling member and reads the answer.
func TestRelayTakesOverAnAuthOnlySession(t *testing.T) {
	authOnly := func(a, b *Config) { a.AuthOnly, b.AuthOnly = true, true }
	t.Run("inject", func(t *testing.T) {
		f := newRelayFixture(t, authOnly)
		if served, _ := f.injectThroughRelay(t); !served {
			t.Fatal("b did not serve the relay's request on an auth-only session")
		}
	})
}

// readSealedRecord reads the next sealed record of c, header included.
func readSealedRecord(c net.Conn) ([]byte, error) {
	var h [recordHeaderSize]byte
	if _, err := io.ReadFull(c, h[:]); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint32(h[1:]))
	rec := make([]byte, recordHeaderSize+n+sealOverhead)
	copy(rec, h[:])
	_, err := io.ReadFull(c, rec[recordHeaderSize:])
	return rec, err
}

// TestTamperedSealedRecordsCloseTheConnection: an on-path relay that
// alters, replays or drops one of a's sealed records, or changes its
// header, gets b to close the connection with ErrRecordForged, counted in
// Traffic.RecordsForged; nothing it touched is served.
func TestTamperedSealedRecordsCloseTheConnection(t *testing.T) {
	cases := []struct {
		name string
		// tamper returns the records to forward in place of a's first.
		tamper func(rec []byte) [][]byte
	}{
		{"altered body", func(rec []byte) [][]byte { rec[recordHeaderSize] ^= 1; return [][]byte{rec} }},
		{"altered header", func(rec []byte) [][]byte { rec[0] ^= 1; return [][]byte{rec} }},
		{"replayed", func(rec []byte) [][]byte { return [][]byte{rec, rec} }},
		{"dropped", func(rec []byte) [][]byte { return nil }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newRelayFixture(t, nil)
			sa, r := f.dialThroughRelay(t)
			sb := <-f.bSess
			if !sa.Sealed() || !sb.Sealed() {
				t.Fatalf("sealed: dialler %v, listener %v", sa.Sealed(), sb.Sealed())
			}
			var wg sync.WaitGroup
			tampered := make(chan struct{})
			wg.Add(2)
			go func() { defer wg.Done(); io.Copy(r.a, r.b); r.a.Close() }()
			go func() {
				defer wg.Done()
				defer r.b.Close()
				for first := true; ; first = false {
					rec, err := readSealedRecord(r.a)
					if err != nil {
						return
					}
					out := [][]byte{rec}
					if first {
						out = c.tamper(rec)
					}
					for _, o := range out {
						if _, err := r.b.Write(o); err != nil {
							return
						}
					}
					if first {
						close(tampered)
					}
				}
			}()
			defer wg.Wait()
			defer r.close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			// The first record a sends is tampered with; the request
			// follows in another record (which, after a dropped one, is
			// the one that fails to open).
			_ = sa.Send(ctx, LaneMessage, []byte("one-way"))
			select {
			case <-tampered:
			case <-ctx.Done():
				t.Fatal("the relay saw no record")
			}
			_, _ = sa.Request(ctx, LaneMessage, []byte("first request"))
			select {
			case <-sb.Done():
			case <-ctx.Done():
				t.Fatal("b kept the connection open")
			}
			if err := sb.Err(); !errors.Is(err, ErrRecordForged) || !errors.Is(err, ErrProtocol) {
				t.Fatalf("b closed the session with %v, want ErrRecordForged", err)
			}
			if got := f.b.Traffic().RecordsForged; got != 1 {
				t.Fatalf("RecordsForged = %d, want 1", got)
			}
			if len(f.served) != 0 {
				t.Fatalf("b served %d requests", len(f.served))
			}
		})
	}
}

// TestSealedRecordsNeedBothNodesToAgreeOnAuthOnly: which sessions are
// sealed, by configuration, and how old and new nodes refuse each other.
func TestSealedRecordsNeedBothNodesToAgreeOnAuthOnly(t *testing.T) {
	authOnly := func(c Config) Config { c.AuthOnly = true; return c }
	secret := func(c Config) Config { return withSecret(c, memberSecret) }
	same := func(c Config) Config { return c }
	cases := []struct {
		name           string
		dialler, lstnr func(Config) Config
		ct             connType
		version        uint16
		sealed         bool
	}{
		{"secret", secret, secret, viaPipe, 5, true},
		{"secret, both auth-only", func(c Config) Config { return authOnly(secret(c)) },
			func(c Config) Config { return authOnly(secret(c)) }, viaPipe, 4, false},
		{"secret, auth-only listener", secret, func(c Config) Config { return authOnly(secret(c)) }, viaPipe, 5, true},
		{"secret, auth-only dialler", func(c Config) Config { return authOnly(secret(c)) }, secret, viaPipe, 5, true},
		{"secret over mutual TLS", secret, secret, viaTLS, 5, true},
		{"open", same, same, viaPipe, 5, false},
		{"open, auth-only set", authOnly, authOnly, viaPipe, 5, false},
		{"mutual TLS", same, same, viaTLS, 5, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, sa, sb := connect(t, c.ct, c.dialler(testConfig(1)), c.lstnr(testConfig(2)), func(_, b *Node) {
				b.HandleRequests(LaneMessage, echo)
			})
			for _, s := range []*Session{sa, sb} {
				if s.Version() != c.version || s.Sealed() != c.sealed {
					t.Fatalf("outbound %v: version %d sealed %v, want %d %v", s.Outbound(), s.Version(), s.Sealed(), c.version, c.sealed)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if got, err := sa.Request(ctx, LaneMessage, []byte("ping")); err != nil || string(got) != "ping" {
				t.Fatalf("request: %q %v", got, err)
			}
		})
	}

	t.Run("a version 4 dialler with a secret is refused", func(t *testing.T) {
		b := newNode(t, withSecret(testConfig(2), memberSecret))
		typ, body, err := rawDial(t, b, func(h *hello) {
			h.versions, h.creds, h.challenge = []uint16{4}, credAll, [authNonceSize]byte{7}
		}, nil)
		r, derr := decodeReject(body)
		if typ != hsReject || derr != nil || r.code != CodeNoCommonVersion {
			t.Fatalf("answer type %d %+v (%v), want a reject with code %d", typ, r, derr, CodeNoCommonVersion)
		}
		if code, _ := handshakeCode(err); code != CodeNoCommonVersion {
			t.Fatalf("listener's error %v", err)
		}
	})
	t.Run("an auth-only listener serves a version 4 dialler", func(t *testing.T) {
		b := newNode(t, authOnly(withSecret(testConfig(2), memberSecret)))
		w := rawAuthDial(t, b, []uint16{4})
		if w.version != 4 {
			t.Fatalf("welcome version %d", w.version)
		}
	})
	t.Run("a sealing dialler offers version 5 only", func(t *testing.T) {
		a := newNode(t, withSecret(testConfig(1), memberSecret))
		c1, c2 := net.Pipe()
		defer c2.Close()
		got := make(chan []uint16, 1)
		go func() {
			// An old listener: it requires version 4 from a dialler that
			// names credentials.
			_, body, err := readHandshake(c2)
			h, derr := decodeHello(body)
			if err != nil || derr != nil {
				got <- nil
				return
			}
			got <- h.versions
			c2.Write((&reject{code: CodeNoCommonVersion, msg: "no common protocol version"}).encode())
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := a.DialConn(ctx, c1)
		if v := <-got; !slices.Equal(v, []uint16{5}) {
			t.Fatalf("hello offers %v", v)
		}
		var he *HandshakeError
		if !errors.As(err, &he) || he.Code != CodeNoCommonVersion || !he.Remote {
			t.Fatalf("dial error %v", err)
		}
	})
	t.Run("a relay cannot downgrade a session to auth-only", func(t *testing.T) {
		// a (auth-only) offers 5 and 4; b (sealing) chooses 5; the relay
		// rewrites the welcome to 4, or the hello to offer 4 only.
		for _, from := range []bool{false, true} {
			f := newRelayFixture(t, func(a, _ *Config) { a.AuthOnly = true })
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			done := make(chan error, 1)
			go func() { _, err := f.a.Dial(ctx, f.relayLn.Addr().String()); done <- err }()
			r, rerr := relayTo(t, f.relayLn, f.bAddr, func(fromDialler bool, typ byte, body []byte) []byte {
				switch {
				case fromDialler && from && typ == hsHello:
					h, _ := decodeHello(body)
					h.versions = []uint16{4}
					return h.encode()[hsHeaderSize:]
				case !fromDialler && !from && typ == hsWelcome:
					body = bytes.Clone(body)
					binary.BigEndian.PutUint16(body, 4)
				}
				return body
			})
			if rerr == nil {
				r.close()
			}
			err := <-done
			cancel()
			if code, ok := handshakeCode(err); !ok || (code != CodeUnauthenticated && code != CodeNoCommonVersion) {
				t.Fatalf("rewriting the %s: dial gave %v", map[bool]string{true: "hello", false: "welcome"}[from], err)
			}
		}
	})
}

// rawAuthDial proves the member secret to b's Accept over a pipe with a
// hello offering versions, and returns b's welcome.
func rawAuthDial(t *testing.T, b *Node, versions []uint16) welcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c1, c2 := net.Pipe()
	defer c1.Close()
	done := make(chan error, 1)
	go func() {
		s, err := b.Accept(ctx, c2)
		if s != nil {
			s.Close()
		}
		done <- err
	}()
	c1.SetDeadline(time.Now().Add(5 * time.Second))
	h := hello{versions: versions, nodeID: testID(1), role: RoleMember, cluster: "test", creds: credAll}
	hb := h.encode()
	go c1.Write(hb)
	typ, body, err := readHandshake(c1)
	if err != nil || typ != hsChallenge {
		t.Fatalf("expected a challenge, got type %d (%v)", typ, err)
	}
	go c1.Write(proveWith(memberSecret)(hb[hsHeaderSize:], body))
	if typ, _, err = readHandshake(c1); err != nil || typ != hsProof {
		t.Fatalf("expected the listener's proof, got type %d (%v)", typ, err)
	}
	typ, body, err = readHandshake(c1)
	if err != nil || typ != hsWelcome {
		t.Fatalf("expected a welcome, got type %d (%v)", typ, err)
	}
	w, err := decodeWelcome(body)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("accept: %v", err)
	}
	return w
}

// TestSealedSessionCarriesEveryChannel: requests, one-way messages,
// streams (yamux on channel 3) and a payload spanning several records all
// cross a sealed session intact.
func TestSealedSessionCarriesEveryChannel(t *testing.T) {
	var msgs atomic.Int64
	ca, cb := withSecret(testConfig(1), memberSecret), withSecret(testConfig(2), memberSecret)
	_, _, sa, _ := connect(t, viaTCP, ca, cb, func(_, b *Node) {
		b.HandleRequests(LaneMessage, echo)
		b.HandleMessages(LaneControl, func(_ *Session, p []byte) { msgs.Add(1) })
		b.HandleStreams(func(_ *Session, st *Stream) {
			defer st.Close()
			io.Copy(st, st)
		})
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	big := bytes.Repeat([]byte("0123456789abcdef"), (2*maxRecord)/16+3)
	if got, err := sa.Request(ctx, LaneMessage, big); err != nil || !bytes.Equal(got, big) {
		t.Fatalf("large request: %d bytes, %v", len(got), err)
	}
	if err := sa.Send(ctx, LaneControl, []byte("hi")); err != nil {
		t.Fatal(err)
	}
	st, err := sa.OpenStream(ctx, []byte("h"))
	if err != nil {
		t.Fatal(err)
	}
	go func() { st.Write(big); st.Close() }()
	got, err := io.ReadAll(st)
	st.Close()
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("stream echo: %d bytes, %v", len(got), err)
	}
	waitFor(t, 5*time.Second, "the one-way message", func() bool { return msgs.Load() == 1 })
}

// BenchmarkSealRecord times sealing and opening one record (both ends of
// one direction): the CPU a sealed session adds per record, without the
// network.
//
//	go test -run '^$' -bench 'BenchmarkSealRecord' ./mux/
func BenchmarkSealRecord(b *testing.B) {
	for _, size := range []int{78, 16 << 10, 64 << 10} { // 78: a 64-byte request's envelope
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			k := sessionKeys{dialler: [32]byte{1}, listener: [32]byte{2}}
			seal, _ := k.ciphers(true)
			_, open := k.ciphers(false)
			body := make([]byte, size)
			var out []byte
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				out = appendRecord(out[:0], byte(LaneMessage), body, sealOverhead)
				seal.sealRound(out)
				if _, err := open.open(out[:recordHeaderSize], out[recordHeaderSize:]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
