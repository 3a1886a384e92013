package castytest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"net"
	"os"
	"sync"
	"testing"
	"time"
)

// pair dials node 1 from node 0 on nw and returns both ends and the
// listener.
func pair(t *testing.T, nw *network) (dialer, acceptor net.Conn) {
	t.Helper()
	ln, err := endpoint{nw: nw, self: 1}.Listen(addrOf(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	d, err := endpoint{nw: nw, self: 0}.Dial(context.Background(), addrOf(1))
	if err != nil {
		t.Fatal(err)
	}
	a, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(); a.Close() })
	return d, a
}

// Bytes cross in order, a closed side reads EOF after what was written,
// and the addresses name the nodes.
func TestNetworkCarriesAStream(t *testing.T) {
	nw := newNetwork(1)
	d, a := pair(t, nw)
	if got := a.RemoteAddr().(*net.TCPAddr).IP; !got.Equal(ipOf(0)) {
		t.Errorf("acceptor sees the dialler at %v, want %v", got, ipOf(0))
	}
	for _, s := range []string{"one ", "two ", "three"} {
		if _, err := d.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	d.Close()
	got, err := io.ReadAll(a)
	if err != nil || string(got) != "one two three" {
		t.Fatalf("read %q, %v", got, err)
	}
	if _, err := (endpoint{nw: nw, self: 0}).Dial(context.Background(), addrOf(7)); !errors.Is(err, ErrRefused) {
		t.Errorf("dial to nobody: %v, want ErrRefused", err)
	}
}

// A delayed link delivers a write no sooner than the delay, and a read
// deadline interrupts the wait.
func TestNetworkDelay(t *testing.T) {
	nw := newNetwork(1)
	d, a := pair(t, nw)
	const delay = 80 * time.Millisecond
	nw.link(0, 1).delay.Store(int64(delay))
	start := time.Now()
	d.Write([]byte("x"))
	a.SetReadDeadline(time.Now().Add(delay / 4))
	if _, err := a.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read before the delay: %v, want a deadline error", err)
	}
	a.SetReadDeadline(time.Time{})
	if _, err := a.Read(make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < delay {
		t.Errorf("delivered after %v, before the link's delay %v", took, delay)
	}
}

// A paused node's links deliver nothing until it resumes; then all of it,
// in order.
func TestNetworkPause(t *testing.T) {
	nw := newNetwork(1)
	d, a := pair(t, nw)
	nw.node(1).paused.Store(true)
	d.Write([]byte("held"))
	a.SetReadDeadline(time.Now().Add(30 * time.Millisecond))
	if _, err := a.Read(make([]byte, 4)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read from a paused link: %v, want a deadline error", err)
	}
	a.SetReadDeadline(time.Time{})
	var wg sync.WaitGroup
	var got []byte
	wg.Go(func() { got, _ = io.ReadAll(io.LimitReader(a, 4)) })
	nw.node(1).paused.Store(false)
	nw.wakeWhere(func(x, y int) bool { return true })
	wg.Wait()
	if string(got) != "held" {
		t.Fatalf("after resume read %q", got)
	}
}

// A cut link resets its connections and refuses new dials until healed.
func TestNetworkCut(t *testing.T) {
	nw := newNetwork(1)
	d, a := pair(t, nw)
	nw.link(0, 1).cut.Store(true)
	nw.resetWhere(func(x, y int) bool { return true })
	if _, err := a.Read(make([]byte, 1)); !errors.Is(err, ErrReset) {
		t.Errorf("read on a cut connection: %v, want ErrReset", err)
	}
	if _, err := d.Write([]byte("x")); !errors.Is(err, ErrReset) {
		t.Errorf("write on a cut connection: %v, want ErrReset", err)
	}
	if _, err := (endpoint{nw: nw, self: 0}).Dial(context.Background(), addrOf(1)); !errors.Is(err, ErrUnreachable) {
		t.Errorf("dial across the cut: %v, want ErrUnreachable", err)
	}
}

// lossyRun writes on a fresh lossy link until it resets and returns how
// many writes got through.
func lossyRun(t *testing.T, seed int64, p float64) int {
	nw := newNetwork(seed)
	d, _ := pair(t, nw)
	nw.link(0, 1).loss.Store(math.Float64bits(p))
	for n := 0; ; n++ {
		if _, err := d.Write([]byte("x")); err != nil {
			if !errors.Is(err, ErrReset) {
				t.Fatalf("lossy write: %v, want ErrReset", err)
			}
			return n
		}
	}
}

// A lossy link resets the connection at a write drawn from the seed: the
// same seed, the same write.
func TestNetworkLossyIsSeeded(t *testing.T) {
	distinct := map[int]bool{}
	for seed := range int64(8) {
		first := lossyRun(t, seed, 0.2)
		if again := lossyRun(t, seed, 0.2); again != first {
			t.Fatalf("seed %d: reset after %d writes, then after %d", seed, first, again)
		}
		distinct[first] = true
	}
	if len(distinct) < 2 {
		t.Errorf("8 seeds reset a p=0.2 link after the same number of writes: %v", distinct)
	}
}

// A duplicating link delivers the write, then resets before the reader
// can answer: the request arrived, its answer cannot.
func TestNetworkDuplicateDeliversThenResets(t *testing.T) {
	nw := newNetwork(1)
	d, a := pair(t, nw)
	nw.link(0, 1).dup.Store(math.Float64bits(1))
	if _, err := d.Write([]byte("request")); err != nil {
		t.Fatalf("the write itself succeeds: %v", err)
	}
	buf := make([]byte, 16)
	n, err := a.Read(buf)
	if err != nil || !bytes.Equal(buf[:n], []byte("request")) {
		t.Fatalf("the peer reads %q, %v; want the request", buf[:n], err)
	}
	if _, err := a.Write([]byte("reply")); !errors.Is(err, ErrReset) {
		t.Errorf("the reply: %v, want ErrReset", err)
	}
	if _, err := d.Read(buf); !errors.Is(err, ErrReset) {
		t.Errorf("the caller waiting for its reply: %v, want ErrReset", err)
	}
}
