package mux

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"
)

func echoStreams(from *Session, st *Stream) {
	defer st.Close()
	if string(st.Header()) == "echo" {
		io.Copy(st, st)
	}
}

func TestStreamsCarryBulkData(t *testing.T) {
	forEachConn(t, func(t *testing.T, ct connType) {
		_, _, sa, _ := connect(t, ct, testConfig(1), testConfig(2), func(a, b *Node) {
			b.HandleStreams(echoStreams)
		})
		st, err := sa.OpenStream(context.Background(), []byte("echo"))
		if err != nil {
			t.Fatal(err)
		}
		data := make([]byte, 1<<20) // four windows
		rand.NewChaCha8([32]byte{7}).Read(data)
		go func() {
			st.Write(data)
			st.Close() // half-close: the echo sees EOF and closes its side
		}()
		got, err := io.ReadAll(st)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("echoed %d of %d bytes: %v", len(got), len(data), err)
		}
	})
}

func TestStalledStreamStallsOnlyItself(t *testing.T) {
	forEachConn(t, func(t *testing.T, ct connType) {
		release := make(chan struct{})
		_, _, sa, _ := connect(t, ct, testConfig(1), testConfig(2), func(a, b *Node) {
			b.HandleRequests(LaneMessage, echo)
			b.HandleStreams(func(from *Session, st *Stream) {
				if string(st.Header()) == "stall" {
					<-release // never reads until released
					io.Copy(io.Discard, st)
					st.Close()
					return
				}
				echoStreams(from, st)
			})
		})
		stalled, err := sa.OpenStream(context.Background(), []byte("stall"))
		if err != nil {
			t.Fatal(err)
		}
		var written atomic.Int64
		done := make(chan error, 1)
		go func() {
			chunk := make([]byte, 1<<10)
			for range 2048 { // 2 MiB, far past the 256 KiB window
				n, err := stalled.Write(chunk)
				written.Add(int64(n))
				if err != nil {
					done <- err
					return
				}
			}
			done <- stalled.Close()
		}()
		waitFor(t, 5*time.Second, "the window to fill", func() bool {
			return written.Load() >= int64(sa.node.cfg.StreamWindow-2<<10)
		})
		// The writer is stuck on credit...
		select {
		case err := <-done:
			t.Fatalf("stalled writer finished: %v", err)
		default:
		}
		if w := written.Load(); w > int64(sa.node.cfg.StreamWindow) {
			t.Fatalf("wrote %d bytes past a %d window", w, sa.node.cfg.StreamWindow)
		}
		// ...while requests and other streams keep flowing.
		for range 20 {
			if got, err := sa.Request(context.Background(), LaneMessage, []byte("x")); err != nil || string(got) != "x" {
				t.Fatal(got, err)
			}
		}
		other, err := sa.OpenStream(context.Background(), []byte("echo"))
		if err != nil {
			t.Fatal(err)
		}
		go func() { other.Write(make([]byte, 1<<20)); other.Close() }()
		if n, err := io.Copy(io.Discard, other); err != nil || n != 1<<20 {
			t.Fatalf("other stream moved %d bytes: %v", n, err)
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, stalled) // wait for the peer's close
	})
}

func TestStreamLimits(t *testing.T) {
	forEachConn(t, func(t *testing.T, ct connType) {
		ca, cb := testConfig(1), testConfig(2)
		ca.MaxStreams, cb.MaxStreams = 2, 1
		var served atomic.Int32
		hold := make(chan struct{})
		_, _, sa, _ := connect(t, ct, ca, cb, func(a, b *Node) {
			b.HandleStreams(func(from *Session, st *Stream) {
				served.Add(1)
				<-hold
				st.Close()
			})
		})
		s1, err := sa.OpenStream(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, 5*time.Second, "first stream served", func() bool { return served.Load() == 1 })
		s2, err := sa.OpenStream(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sa.OpenStream(context.Background(), nil); !errors.Is(err, ErrTooManyStreams) {
			t.Fatalf("third stream: %v", err)
		}
		// The listener allows one inbound stream: the second is closed at once.
		if _, err := io.ReadAll(s2); err != nil {
			t.Fatalf("refused stream: %v", err)
		}
		if served.Load() != 1 {
			t.Fatal("refused stream reached the handler")
		}
		s2.Close()
		s3, err := sa.OpenStream(context.Background(), make([]byte, maxStreamHeader+1))
		if err == nil {
			s3.Close()
			t.Fatal("oversized header accepted")
		}
		if s3, err = sa.OpenStream(context.Background(), nil); err != nil {
			t.Fatalf("slot not released: %v", err)
		}
		close(hold)
		s1.Close()
		s3.Close()
	})
}
