package mux

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"
)

// A dial whose handshake Close interrupts fails with ErrClosed, so a
// caller that retries dials (gossip's transport) knows to stop at once.
func TestDialInterruptedByCloseIsErrClosed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept() // and never answer the handshake
		if err == nil {
			accepted <- c
		}
		close(accepted)
	}()
	defer func() {
		ln.Close()
		for c := range accepted {
			c.Close()
		}
	}()
	n := newNode(t, testConfig(1))
	dialed := make(chan error, 1)
	go func() {
		_, err := n.Dial(context.Background(), ln.Addr().String())
		dialed <- err
	}()
	waitFor(t, 5*time.Second, "the handshake under way", func() bool {
		n.mu.Lock()
		defer n.mu.Unlock()
		return len(n.handshaking) > 0
	})
	n.Close()
	select {
	case err := <-dialed:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("a dial Close interrupted: %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not interrupt the dial")
	}
}

// hangUpConn is the dialler's connection in
// TestDialAbandonedMidHandshakeKeepsTheSession: its first read — the
// listener's answer to the hello, sent once the listener has registered
// the session — cancels the dial's context and then waits until either
// Dial has returned or the handshake's deadline was pulled into the past
// (a dial that gives up half way).
type hangUpConn struct {
	net.Conn
	cancel   context.CancelFunc
	returned <-chan struct{}
	once     sync.Once
	pulled   chan struct{}
}

func (c *hangUpConn) Read(p []byte) (int, error) {
	c.once.Do(func() {
		c.cancel()
		select {
		case <-c.returned:
		case <-c.pulled:
		}
	})
	return c.Conn.Read(p)
}

func (c *hangUpConn) SetDeadline(t time.Time) error {
	if !t.IsZero() && t.Before(time.Now()) {
		select {
		case c.pulled <- struct{}{}:
		default:
		}
	}
	return c.Conn.SetDeadline(t)
}

// A dial whose context ends after the listener registered the session
// must not hang up: the listener routes work over it (and, as the winner
// of a tie-break, would have superseded a healthy session for it). Dial
// returns the context's error at once; the handshake completes and the
// session serves both ways.
func TestDialAbandonedMidHandshakeKeepsTheSession(t *testing.T) {
	b := newNode(t, testConfig(2))
	b.HandleRequests(LaneMessage, echo)
	addr := listen(t, b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	returned := make(chan struct{})
	ca := testConfig(1)
	ca.Dial = func(dctx context.Context, to string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(dctx, "tcp", to)
		if err != nil {
			return nil, err
		}
		return &hangUpConn{Conn: c, cancel: cancel, returned: returned, pulled: make(chan struct{}, 1)}, nil
	}
	a := newNode(t, ca)
	a.HandleRequests(LaneMessage, echo)
	_, err := a.Dial(ctx, addr)
	close(returned)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("a dial whose context ended: %v, want context.Canceled", err)
	}
	waitFor(t, 5*time.Second, "the dialler's session, registered after Dial returned", func() bool {
		_, ok := a.Session(testID(2))
		return ok
	})
	sa, _ := a.Session(testID(2))
	sb, ok := b.Session(testID(1))
	if !ok {
		t.Fatal("the listener has no session to the dialler")
	}
	for _, s := range []*Session{sa, sb} {
		out, err := s.Request(context.Background(), LaneMessage, []byte("ping"))
		if err != nil || string(out) != "ping" {
			t.Fatalf("request over the session: %q %v", out, err)
		}
	}
}
