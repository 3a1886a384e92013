package mux

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// silentConns opens n TCP connections to addr from local IP from that
// never send a byte (handshakes that do not progress).
func silentConns(t *testing.T, addr, from string, n int) []net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	var conns []net.Conn
	for range n {
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		conns = append(conns, c)
	}
	return conns
}

// refused counts the connections the server closed at once: a read returns
// EOF (or a reset) within wait instead of timing out.
func refused(t *testing.T, conns []net.Conn, wait time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(wait)
	closed := make(chan bool, len(conns))
	for _, c := range conns {
		go func() {
			_ = c.SetReadDeadline(deadline)
			n, err := c.Read(make([]byte, 1))
			closed <- n == 0 && !errors.Is(err, os.ErrDeadlineExceeded)
		}()
	}
	n := 0
	for range conns {
		if <-closed {
			n++
		}
	}
	return n
}

// limitedNode serves a node whose handshakes wait 30 s for their first
// byte and their hello, with edit applied to its config.
func limitedNode(t *testing.T, edit func(*Config)) (*Node, string) {
	t.Helper()
	c := testConfig(2)
	c.HandshakeTimeout, c.FirstByteTimeout = 30*time.Second, 30*time.Second
	edit(&c)
	n := newNode(t, c)
	return n, listen(t, n)
}

// closedAt reports, for each connection, whether the server closed it:
// a read returns EOF (or a reset) within wait instead of timing out.
func closedAt(t *testing.T, conns []net.Conn, wait time.Duration) []bool {
	t.Helper()
	deadline := time.Now().Add(wait)
	out := make([]bool, len(conns))
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Go(func() {
			_ = c.SetReadDeadline(deadline)
			n, err := c.Read(make([]byte, 1))
			out[i] = n == 0 && !errors.Is(err, os.ErrDeadlineExceeded)
		})
	}
	wg.Wait()
	return out
}

// silentFrom opens one silent connection from each of the given local IPs,
// in order, each once srv's Serve has taken the one before (so their
// handshakes start in that order).
func silentFrom(t *testing.T, srv *Node, addr string, from []string) []net.Conn {
	t.Helper()
	var conns []net.Conn
	for _, ip := range from {
		before := accepts(srv)
		conns = append(conns, silentConns(t, addr, ip, 1)...)
		waitFor(t, 5*time.Second, "the connection taken by Serve", func() bool { return accepts(srv) > before })
	}
	return conns
}

// accepts counts the connections srv's Serve took so far.
func accepts(srv *Node) int {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return srv.adm.accepts
}

func TestInboundLimits(t *testing.T) {
	cases := []struct {
		name string
		edit func(*Config)
		from []string
		want []bool // closed at once (refused, or evicted by a later one)
	}{
		// The oldest silent handshakes of the host make room for the newest.
		{"handshakes per host", func(c *Config) { c.MaxHandshakesPerHost = 3 }, hosts(1, 1),
			[]bool{true, true, true, true, true, false, false, false}},
		// The same across hosts, one connection each.
		{"handshakes in total", func(c *Config) { c.MaxHandshakes, c.MaxHandshakesPerHost = 3, 3 }, hosts(2, 8),
			[]bool{true, true, true, true, true, false, false, false}},
		{"connections in total", func(c *Config) { c.MaxInboundConns, c.MaxInboundConnsPerHost = 4, 4 }, hosts(1, 1),
			[]bool{false, false, false, false, true, true, true, true}},
		{"connections per host", func(c *Config) { c.MaxInboundConnsPerHost = 2 }, hosts(1, 1),
			[]bool{false, false, true, true, true, true, true, true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, addr := limitedNode(t, tc.edit)
			var from []string
			for i := range tc.want {
				from = append(from, tc.from[i%len(tc.from)])
			}
			conns := silentFrom(t, srv, addr, from)
			if got := closedAt(t, conns, time.Second); !slices.Equal(got, tc.want) {
				t.Fatalf("closed at once: %v, want %v", got, tc.want)
			}
		})
	}
}
func TestPerHostLimitLeavesOtherHostsAlone(t *testing.T) {
	_, addr := limitedNode(t, func(c *Config) { c.MaxInboundConnsPerHost = 2 })
	silentConns(t, addr, "127.0.0.1", 2) // 127.0.0.1 is at its limit
	other := silentConns(t, addr, "127.0.0.2", 2)
	if got := refused(t, other, 500*time.Millisecond); got != 0 {
		t.Fatalf("%d connections from another host refused", got)
	}
}

func TestInboundSlotsAreReleasedWhenConnectionsClose(t *testing.T) {
	srv, addr := limitedNode(t, func(c *Config) { c.MaxHandshakes, c.MaxHandshakesPerHost = 2, 2 })
	handshakes := func() int {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return len(srv.adm.handshakes)
	}
	a := newNode(t, testConfig(1))
	for round := range 3 {
		waitFor(t, 5*time.Second, "every handshake slot free", func() bool { return handshakes() == 0 })
		conns := silentConns(t, addr, "127.0.0.1", 2)
		waitFor(t, 5*time.Second, "the silent connections to hold both slots", func() bool { return handshakes() == 2 })
		// A dial takes the place of the oldest silent one.
		evicted := srv.Admission().Evicted
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		s, err := a.Dial(ctx, addr)
		cancel()
		if err != nil {
			t.Fatalf("round %d: a dial while silent connections held every slot: %v", round, err)
		}
		s.Close()
		if got := srv.Admission().Evicted - evicted; got != 1 {
			t.Fatalf("round %d: %d handshakes evicted for the dial, want 1", round, got)
		}
		for _, c := range conns {
			c.Close()
		}
	}
	// The slots come back once the server sees the closes, and so do the
	// connection counts.
	waitFor(t, 5*time.Second, "every slot back", func() bool {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return len(srv.adm.handshakes) == 0 && srv.adm.conns == 0 && len(srv.adm.hsPerHost) == 0 && len(srv.adm.perHost) == 0
	})
}

// A handshake that has sent its first byte is not evicted for a newcomer
// of its own host, and is evicted for one of another host only when its
// host holds more handshakes.
func TestHandshakesThatSpokeAreKept(t *testing.T) {
	srv, addr := limitedNode(t, func(c *Config) { c.MaxHandshakes, c.MaxHandshakesPerHost = 3, 2 })
	speak := func(conns []net.Conn) {
		for _, c := range conns {
			if _, err := c.Write([]byte(handshakeMagic[:1])); err != nil {
				t.Fatal(err)
			}
		}
	}
	heard := func(n int) func() bool {
		return func() bool {
			srv.mu.Lock()
			defer srv.mu.Unlock()
			k := 0
			for s := range srv.adm.handshakes {
				if s.heard.Load() {
					k++
				}
			}
			return k == n
		}
	}
	a := silentFrom(t, srv, addr, []string{"127.0.0.2", "127.0.0.2"}) // 127.0.0.2 at its cap
	speak(a)
	waitFor(t, 5*time.Second, "both heard", heard(2))
	third := silentFrom(t, srv, addr, hosts(2, 1)) // its host holds 2 that spoke: refused
	if got := closedAt(t, append(a, third...), time.Second); !slices.Equal(got, []bool{false, false, true}) {
		t.Fatalf("closed: %v, want only the third", got)
	}
	b := silentFrom(t, srv, addr, hosts(3, 1)) // 127.0.0.3: fills MaxHandshakes
	speak(b)
	waitFor(t, 5*time.Second, "three heard", heard(3))
	// MaxHandshakes is reached and every handshake spoke: a newcomer from
	// 127.0.0.4 (none) takes the place of 127.0.0.2's oldest (two), one
	// from 127.0.0.3 (one) would not take 127.0.0.4's (one).
	c := silentFrom(t, srv, addr, hosts(4, 1))
	if got := closedAt(t, append(append(a, b...), c...), time.Second); !slices.Equal(got, []bool{true, false, false, false}) {
		t.Fatalf("closed: %v, want only 127.0.0.2's oldest", got)
	}
	if ad := srv.Admission(); ad.Evicted != 1 || ad.Refused != 1 {
		t.Fatalf("admission %+v, want 1 evicted, 1 refused", ad)
	}
}

// A connection that sends nothing is closed after FirstByteTimeout; one
// that sent a byte goes on, bounded by HandshakeTimeout.
func TestSilentConnectionsAreClosedAfterFirstByteTimeout(t *testing.T) {
	srv, addr := limitedNode(t, func(c *Config) { c.FirstByteTimeout = 100 * time.Millisecond })
	conns := silentConns(t, addr, "127.0.0.1", 2)
	if _, err := conns[1].Write([]byte(handshakeMagic[:2])); err != nil {
		t.Fatal(err)
	}
	if got := closedAt(t, conns[:1], 5*time.Second); !got[0] {
		t.Fatal("a silent connection outlived FirstByteTimeout by seconds")
	}
	waitFor(t, 5*time.Second, "the silent one counted", func() bool { return srv.Admission().Silent == 1 })
	srv.mu.Lock()
	left := len(srv.adm.handshakes)
	srv.mu.Unlock()
	if left != 1 {
		t.Fatalf("%d handshakes in progress, want the one that spoke", left)
	}
}

// Connections shed under a flood are counted one by one and logged on
// one WARN line per 10 s at most.
func TestShedConnectionsAreLoggedAtAPace(t *testing.T) {
	rec := &logRecorder{}
	srv, addr := limitedNode(t, func(c *Config) {
		c.MaxHandshakesPerHost = 1
		c.Logger = slog.New(rec)
	})
	silentFrom(t, srv, addr, slices.Repeat(hosts(1, 1), 20))
	waitFor(t, 5*time.Second, "19 evictions counted", func() bool { return srv.Admission().Evicted == 19 })
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var lines []string
	for _, r := range rec.recs {
		if strings.Contains(r, "shed") {
			lines = append(lines, r)
		}
	}
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "WARN ") || !strings.Contains(lines[0], "evicted=1") ||
		!strings.Contains(lines[0], "last_limit=MaxHandshakesPerHost") {
		t.Fatalf("shed log lines: %q, want one WARN naming the first eviction", lines)
	}
}

func TestRequestsBeyondMaxRequestsAreRefusedWithoutRunning(t *testing.T) {
	const limit, sent = 4, 12
	cb := testConfig(2)
	cb.MaxRequests = limit
	release := make(chan struct{})
	var running, peak atomic.Int32
	_, b, sa, _ := connect(t, viaTCP, testConfig(1), cb, func(a, b *Node) {
		b.HandleRequests(LaneMessage, func(ctx context.Context, s *Session, p []byte) ([]byte, error) {
			HandOff(ctx)
			now := running.Add(1)
			for old := peak.Load(); now > old && !peak.CompareAndSwap(old, now); old = peak.Load() {
			}
			defer running.Add(-1)
			select {
			case <-release:
			case <-ctx.Done():
			}
			return p, nil
		})
	})
	errs := make(chan error, sent)
	for range sent {
		go func() {
			_, err := sa.Request(context.Background(), LaneMessage, []byte("x"))
			errs <- err
		}()
	}
	for i := range sent - limit { // the excess is refused at once, while the first ones hold
		var err error
		select {
		case err = <-errs:
		case <-time.After(5 * time.Second):
			t.Fatalf("%d of %d requests refused within 5 s, want %d", i, sent, sent-limit)
		}
		var re *RemoteError
		if !errors.As(err, &re) || re.Code != CodeOverloaded {
			t.Fatalf("refusal %d: got %v, want a RemoteError with CodeOverloaded", i, err)
		}
	}
	waitFor(t, 5*time.Second, "the admitted handlers run", func() bool { return running.Load() == limit })
	close(release)
	for range limit {
		if err := <-errs; err != nil {
			t.Fatalf("an admitted request failed: %v", err)
		}
	}
	if p := peak.Load(); p != limit {
		t.Fatalf("at most %d handlers ran at once, want %d", p, limit)
	}
	if o := b.Overload(); o.Refused != sent-limit || o.RefusedBytes != 0 {
		t.Fatalf("Node.Overload() = %+v, want %d refused for MaxRequests", o, sent-limit)
	}
	if _, err := sa.Request(context.Background(), LaneMessage, []byte("y")); err != nil {
		t.Fatalf("a request after the burst: %v", err)
	}
}

// A peer that sends the start of a message and never the rest is cut off
// after PartialMessageTimeout, although its connection is otherwise alive
// (keepalives answered).
func TestPartlyReceivedMessageIsBoundedInTime(t *testing.T) {
	const timeout = 300 * time.Millisecond
	forEachConn(t, func(t *testing.T, ct connType) {
		ca, cb := testConfig(1), testConfig(2)
		ca.KeepAliveInterval, cb.KeepAliveInterval = 50*time.Millisecond, 50*time.Millisecond
		cb.PartialMessageTimeout = timeout
		_, _, sa, sb := connect(t, ct, ca, cb, func(a, b *Node) { b.HandleRequests(LaneMessage, echo) })
		start := time.Now()
		rawEnvelope(t, sa, append(appendEnvelopeHeader(nil, frameRequest, 0, 7, 1000), make([]byte, 10)...))
		select {
		case <-sb.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("a message left partly received kept the connection open for 5 s")
		}
		if d := time.Since(start); d < timeout {
			t.Fatalf("closed after %v, before PartialMessageTimeout (%v)", d, timeout)
		}
		if err := sb.Err(); !errors.Is(err, ErrProtocol) {
			t.Fatalf("closed with %v, want a protocol violation", err)
		}
	})
}

// Large messages streamed back to back on every lane keep some message
// partly received nearly all the time, often right behind a complete one;
// none of them is late, so the connection must outlive many
// PartialMessageTimeouts.
func TestBackToBackLargeMessagesAreNotCutOff(t *testing.T) {
	cb := testConfig(2)
	cb.PartialMessageTimeout = time.Second
	var got atomic.Int64
	_, _, sa, sb := connect(t, viaTCP, testConfig(1), cb, func(a, b *Node) {
		for l := range Lane(numLanes) {
			b.HandleMessages(l, func(s *Session, p []byte) { got.Add(1) })
		}
	})
	payload := make([]byte, 200<<10)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	end := time.Now().Add(3 * time.Second)
	errs := make(chan error, numLanes)
	for l := range Lane(numLanes) {
		go func() {
			for time.Now().Before(end) {
				if err := sa.Send(context.Background(), l, payload); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range numLanes {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if err := sb.Err(); err != nil {
		t.Fatalf("the receiver closed the connection after %d messages: %v", got.Load(), err)
	}
}

// deadlineConn records the read deadlines set on it.
type deadlineConn struct {
	net.Conn
	set []time.Time
}

func (c *deadlineConn) SetReadDeadline(t time.Time) error {
	c.set = append(c.set, t)
	return nil
}

// The read deadline follows the earliest partly received message of any
// lane, restarts for a message that follows a complete one, and is
// cleared once no lane holds a partial message.
func TestPartialDeadlineFollowsTheEarliestPartialMessage(t *testing.T) {
	const timeout = time.Hour
	c := &deadlineConn{}
	s := &Session{node: &Node{cfg: Config{PartialMessageTimeout: timeout}}, conn: c, rd: &reader{}}
	last := func() time.Time { return c.set[len(c.set)-1] }

	s.trackPartial(0, false, 10) // lane 0: a message starts
	first := last()
	if first.IsZero() {
		t.Fatal("no deadline for a partial message")
	}
	time.Sleep(time.Millisecond) // the clock must move for the next starts to differ
	s.trackPartial(1, false, 10) // lane 1 starts later: lane 0 still bounds it
	if !last().Equal(first) {
		t.Fatalf("deadline %v, want lane 0's %v", last(), first)
	}
	s.trackPartial(0, false, 20) // more of lane 0's message: no restart
	if !last().Equal(first) {
		t.Fatalf("deadline moved to %v while lane 0's message was still the same", last())
	}
	s.trackPartial(0, true, 5) // lane 0's message completed, the next one started
	if second := last(); !second.After(first) || second.After(time.Now().Add(timeout)) {
		t.Fatalf("deadline %v after a restart on lane 0, want lane 1's (after %v)", second, first)
	}
	s.trackPartial(0, true, 0)
	s.trackPartial(1, true, 0)
	if !last().IsZero() {
		t.Fatalf("deadline %v with no partial message, want none", last())
	}
}
