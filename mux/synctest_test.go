package mux

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"testing"
	"testing/synctest"
	"time"
)

// TestKeepaliveDefaultsInFakeTime runs the default keepalive schedule
// (15 s interval, 5 s timeout) on a fake clock: a healthy idle connection
// survives an hour of pings, and a peer that stops answering is reported
// within one interval plus one timeout.
//
// yamux v0.1.2 keeps timers in a package-level sync.Pool, and a timer
// created inside a synctest bubble must never be touched outside it (the
// runtime aborts), so the bubble runs in a child process of its own.
func TestKeepaliveDefaultsInFakeTime(t *testing.T) {
	if os.Getenv(fakeTimeChild) == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKeepaliveDefaultsInFakeTime$", "-test.count=1")
		cmd.Env = append(os.Environ(), fakeTimeChild+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child process: %v\n%s", err, out)
		}
		return
	}
	synctest.Test(t, func(t *testing.T) {
		ca, cb := testConfig(1), testConfig(2)
		ca.HandshakeTimeout, cb.HandshakeTimeout = 5*time.Second, 5*time.Second
		failedAt := make(chan time.Time, 1)
		ca.OnKeepaliveFailure = func(p NodeID, err error) {
			if errors.Is(err, ErrKeepalive) {
				failedAt <- time.Now()
			}
		}
		a, err := New(ca)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := New(cb)
		c1, c2 := net.Pipe()
		fc := &freezeConn{Conn: c1, thaw: make(chan struct{})}
		go b.Accept(context.Background(), c2)
		if _, err := a.DialConn(context.Background(), fc); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		select {
		case at := <-failedAt:
			t.Fatalf("healthy connection failed its keepalive at %v", at)
		default:
		}
		frozen := time.Now()
		fc.frozen.Store(true)
		at := <-failedAt
		if d := at.Sub(frozen); d > 15*time.Second+5*time.Second {
			t.Fatalf("failure reported %v after the peer went silent", d)
		}
		a.Close()
		b.Close()
	})
}

const fakeTimeChild = "MUX_SYNCTEST_CHILD"
