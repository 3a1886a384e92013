package mux

import (
	"context"
	"errors"
	"net"
	"os"
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

// limitedNode serves a node whose handshakes wait 30 s for a hello, with
// edit applied to its config.
func limitedNode(t *testing.T, edit func(*Config)) (*Node, string) {
	t.Helper()
	c := testConfig(2)
	c.HandshakeTimeout = 30 * time.Second
	edit(&c)
	n := newNode(t, c)
	return n, listen(t, n)
}

func TestInboundLimits(t *testing.T) {
	cases := []struct {
		name string
		edit func(*Config)
		open int
		want int // refused at once
	}{
		{"handshakes in progress", func(c *Config) { c.MaxHandshakes = 3 }, 8, 5},
		{"connections in total", func(c *Config) { c.MaxInboundConns, c.MaxInboundConnsPerHost = 4, 4 }, 8, 4},
		{"connections per host", func(c *Config) { c.MaxInboundConnsPerHost = 2 }, 8, 6},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, addr := limitedNode(t, tc.edit)
			conns := silentConns(t, addr, "127.0.0.1", tc.open)
			if got := refused(t, conns, time.Second); got != tc.want {
				t.Fatalf("%d of %d silent connections refused at once, want %d", got, tc.open, tc.want)
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
	srv, addr := limitedNode(t, func(c *Config) { c.MaxHandshakes = 2 })
	handshakes := func() int {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return srv.adm.handshakes
	}
	a := newNode(t, testConfig(1))
	for round := range 3 {
		// Every slot of the last round is back (a dial that succeeded
		// shows one is, not both), and both silent connections hold one
		// before the dial that must be refused.
		waitFor(t, 5*time.Second, "every handshake slot free", func() bool { return handshakes() == 0 })
		conns := silentConns(t, addr, "127.0.0.1", 2)
		waitFor(t, 5*time.Second, "the silent connections to hold both slots", func() bool { return handshakes() == 2 })
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		if _, err := a.Dial(ctx, addr); err == nil {
			t.Fatalf("round %d: a dial got a handshake slot while both were taken", round)
		}
		cancel()
		for _, c := range conns {
			c.Close()
		}
		// The slots come back once the server sees the closes.
		waitFor(t, 5*time.Second, "a dial succeeds once the silent connections closed", func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			s, err := a.Dial(ctx, addr)
			if err == nil {
				s.Close()
			}
			return err == nil
		})
	}
}

func TestRequestsBeyondMaxRequestsAreRefusedWithoutRunning(t *testing.T) {
	const limit, sent = 4, 12
	cb := testConfig(2)
	cb.MaxRequests = limit
	release := make(chan struct{})
	var running, peak atomic.Int32
	_, _, sa, _ := connect(t, viaTCP, testConfig(1), cb, func(a, b *Node) {
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
