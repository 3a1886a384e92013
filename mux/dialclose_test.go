package mux

import (
	"context"
	"errors"
	"net"
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
