package mux

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// flakyListener fails its first n Accepts the way accept(2) does when the
// process is out of file descriptors, then accepts normally.
type flakyListener struct {
	net.Listener
	mu    sync.Mutex
	fails int
}

func (l *flakyListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	if l.fails > 0 {
		l.fails--
		l.mu.Unlock()
		return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.Addr(), Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	l.mu.Unlock()
	return l.Listener.Accept()
}

// syncBuffer is a log sink safe for the node's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestServeSurvivesTemporaryAcceptErrors(t *testing.T) {
	var logs syncBuffer
	cb := testConfig(2)
	cb.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	b := newNode(t, cb)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- b.Serve(&flakyListener{Listener: ln, fails: 3}) }()

	a := newNode(t, testConfig(1))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := a.Dial(ctx, ln.Addr().String()); err != nil {
		t.Fatalf("dial after accept errors: %v (Serve: %v)", err, drain(served))
	}
	if got := strings.Count(logs.String(), "too many open files"); got != 3 {
		t.Fatalf("logged %d accept errors, want 3:\n%s", got, logs.String())
	}
	b.Close()
	if err := <-served; err != ErrClosed {
		t.Fatalf("Serve returned %v after Close, want ErrClosed", err)
	}
}

// drain returns what ch holds, or nil.
func drain(ch chan error) error {
	select {
	case err := <-ch:
		return err
	default:
		return nil
	}
}
