package mux

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/casty-go/casty/internal/sweep"
)

// TestKeepaliveDefaultsInFakeTime runs the default keepalive schedule
// (1 s interval, 5 s timeout) on a fake clock: a healthy idle connection
// survives an hour of pings, and a peer that goes silent (a stopped
// process: its kernel still takes what is sent to it) is reported as soon
// as nothing was read from it for one interval plus one timeout, the
// last thing read being at most about an interval old when it stopped.
//
// yamux v0.1.2 keeps timers in a package-level sync.Pool, and a timer
// created inside a synctest bubble must never be touched outside it (the
// runtime aborts), so the bubble runs in a child process of its own.
func TestKeepaliveDefaultsInFakeTime(t *testing.T) {
	if inParent(t) {
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
		mute := &muteConn{Conn: c2}
		go b.Accept(context.Background(), mute)
		if _, err := a.DialConn(context.Background(), c1); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		select {
		case at := <-failedAt:
			t.Fatalf("healthy connection failed its keepalive at %v", at)
		default:
		}
		muted := time.Now()
		mute.muted.Store(true)
		at := <-failedAt
		iv, to := ca.KeepAliveInterval, ca.KeepAliveTimeout
		if d := at.Sub(muted); d > iv+to+time.Millisecond || d < to {
			t.Fatalf("failure reported %v after the peer went silent, want between %v and %v", d, to, iv+to)
		}
		a.Close()
		b.Close()
	})
}

// muteConn, once muted, takes what is written to it and sends nothing:
// a peer whose process stopped, while its kernel still accepts data.
type muteConn struct {
	net.Conn
	muted atomic.Bool
}

func (c *muteConn) Write(b []byte) (int, error) {
	if c.muted.Load() {
		return len(b), nil
	}
	return c.Conn.Write(b)
}

const fakeTimeChild = "MUX_SYNCTEST_CHILD"

// inParent runs t's test again in a child process of its own, where its
// bubble may create yamux's pooled timers, and reports true (t is done)
// unless this process is that child.
func inParent(t *testing.T) bool {
	t.Helper()
	if os.Getenv(fakeTimeChild) != "" {
		return false
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), fakeTimeChild+"=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child process: %v\n%s", err, out)
	}
	return true
}

// TestAReplacedReaderStopsTheWatchdog: a request that runs on its
// connection's reader and then waits for long, without handing the
// reading on (a call waiting for a quorum that is down, say), is replaced
// as the reader within two watchdog periods; the watchdog then has no
// reader left to watch and stops, though the request runs on. It ticked
// every millisecond for as long as the request ran (10,000 ticks in the
// 10 s here): on a fake clock, a simulated cluster whose calls waited on
// replication timeouts spent a seventh of its CPU on it.
func TestAReplacedReaderStopsTheWatchdog(t *testing.T) {
	if inParent(t) {
		return
	}
	synctest.Test(t, func(t *testing.T) {
		a, err := New(testConfig(1))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := New(testConfig(2))
		b.HandleRequests(LaneMessage, func(ctx context.Context, _ *Session, p []byte) ([]byte, error) {
			time.Sleep(10 * time.Second) // waits without HandOff
			return p, nil
		})
		c1, c2 := net.Pipe()
		go b.Accept(context.Background(), c2)
		sa, err := a.DialConn(context.Background(), c1)
		if err != nil {
			t.Fatal(err)
		}
		if out, err := sa.Request(context.Background(), LaneMessage, []byte("slow")); err != nil || string(out) != "slow" {
			t.Fatalf("the slow request: %q, %v", out, err)
		}
		if stuck := b.takeovers[takeoverStuck].Load(); stuck != 1 {
			t.Fatalf("the watchdog replaced %d readers, want the slow request's", stuck)
		}
		if ticks := b.watchTicks.Load(); ticks > 100 {
			t.Fatalf("the watchdog ticked %d times while the replaced request waited 10 s", ticks)
		}
		a.Close()
		b.Close()
	})
}

// TestShortAsyncTimeoutsFireOnTimeBesideLongOnes: the node's sweeper,
// asleep until the earliest watched deadline (here a request with an
// hour to go), still fails a RequestAsync given 50 ms within sweep.Every
// of its deadline: registering it wakes the loop.
func TestShortAsyncTimeoutsFireOnTimeBesideLongOnes(t *testing.T) {
	if inParent(t) {
		return
	}
	synctest.Test(t, func(t *testing.T) {
		a, err := New(testConfig(1))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := New(testConfig(2))
		release := make(chan struct{})
		b.HandleRequests(LaneMessage, func(ctx context.Context, _ *Session, p []byte) ([]byte, error) {
			HandOff(ctx)
			select {
			case <-release:
			case <-ctx.Done():
			}
			return p, nil
		})
		c1, c2 := net.Pipe()
		go b.Accept(context.Background(), c2)
		sa, err := a.DialConn(context.Background(), c1)
		if err != nil {
			t.Fatal(err)
		}
		go sa.RequestTimeout(context.Background(), LaneMessage, []byte("long"), time.Hour)
		time.Sleep(100 * time.Millisecond) // the loop now sleeps toward its first sweep
		ended := make(chan time.Time, 1)
		start := time.Now()
		sa.RequestAsync(context.Background(), LaneMessage, []byte("short"), 50*time.Millisecond, func(_ []byte, err error) {
			if errors.Is(err, context.DeadlineExceeded) {
				ended <- time.Now()
			}
		})
		at := <-ended
		if late := at.Sub(start) - 50*time.Millisecond; late < 0 || late > sweep.Every {
			t.Fatalf("a 50 ms RequestAsync failed %v after its deadline, want within [0, %v]", late, sweep.Every)
		}
		close(release)
		a.Close()
		b.Close()
	})
}

// lateYamuxConn delays, by delay, every yamux record (channel 3: pings
// and pongs among them) written through it once armed, and passes lane
// records at once: the connection carries calls, its keepalive answers
// come late, as from a peer starved of CPU. The connection writer hands
// Write whole records (a round), so each Write splits cleanly.
type lateYamuxConn struct {
	net.Conn
	delay time.Duration
	armed atomic.Bool
	mu    sync.Mutex // one Write on Conn at a time
	late  chan []byte
	stop  chan struct{}
}

func newLateYamuxConn(c net.Conn, delay time.Duration) *lateYamuxConn {
	l := &lateYamuxConn{Conn: c, delay: delay, late: make(chan []byte, 1024), stop: make(chan struct{})}
	go func() {
		for {
			var b []byte
			select {
			case b = <-l.late:
			case <-l.stop:
				return
			}
			due := time.Unix(0, int64(binary.BigEndian.Uint64(b)))
			select {
			case <-time.After(time.Until(due)):
			case <-l.stop:
				return
			}
			l.write(b[8:])
		}
	}()
	return l
}

func (l *lateYamuxConn) write(b []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = l.Conn.Write(b)
}

func (l *lateYamuxConn) Write(b []byte) (int, error) {
	if !l.armed.Load() {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.Conn.Write(b)
	}
	var now []byte
	for rest := b; len(rest) > 0; {
		n := recordHeaderSize + int(binary.BigEndian.Uint32(rest[1:5]))
		if rest[0] == chanYamux {
			// The first 8 bytes say when it is due.
			r := binary.BigEndian.AppendUint64(make([]byte, 0, 8+n), uint64(time.Now().Add(l.delay).UnixNano()))
			l.late <- append(r, rest[:n]...)
		} else {
			now = append(now, rest[:n]...)
		}
		rest = rest[n:]
	}
	if len(now) > 0 {
		l.mu.Lock()
		_, err := l.Conn.Write(now)
		l.mu.Unlock()
		if err != nil {
			return 0, err
		}
	}
	return len(b), nil
}

// end stops the pump; what it holds is dropped.
func (l *lateYamuxConn) end() { close(l.stop) }

// TestLatePongsDoNotCloseABusyConnection: a peer whose keepalive answers
// come much later than KeepAliveTimeout (its process starved of CPU)
// while its connection carries requests and answers is still there, and
// the connection stays up: any record read proves the peer. Before, each
// ping had to be answered within KeepAliveTimeout, and such connections
// were closed with everything in flight on them. A connection on which
// nothing at all arrives for KeepAliveInterval + KeepAliveTimeout still
// fails (TestKeepaliveDefaultsInFakeTime).
func TestLatePongsDoNotCloseABusyConnection(t *testing.T) {
	if inParent(t) {
		return
	}
	synctest.Test(t, func(t *testing.T) {
		ca, cb := testConfig(1), testConfig(2)
		for _, c := range []*Config{&ca, &cb} {
			c.HandshakeTimeout = 5 * time.Second
			c.KeepAliveInterval, c.KeepAliveTimeout = time.Second, 2*time.Second
		}
		failed := make(chan error, 2)
		ca.OnKeepaliveFailure = func(p NodeID, err error) { failed <- err }
		cb.OnKeepaliveFailure = ca.OnKeepaliveFailure
		a, err := New(ca)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := New(cb)
		b.HandleRequests(LaneMessage, echo)
		c1, c2 := net.Pipe()
		late := newLateYamuxConn(c2, 10*time.Second)
		defer late.end()
		go b.Accept(context.Background(), late)
		sa, err := a.DialConn(context.Background(), c1)
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		late.armed.Store(true)
		// A minute of calls, one every 500 ms; b's pongs (and pings) reach
		// a 10 s late.
		for i := range 120 {
			if _, err := sa.Request(context.Background(), LaneMessage, []byte("x")); err != nil {
				t.Fatalf("call %d, %v after b's yamux records started coming late: %v", i, time.Duration(i)*500*time.Millisecond, err)
			}
			time.Sleep(500 * time.Millisecond)
		}
		select {
		case err := <-failed:
			t.Fatalf("a keepalive failed: %v", err)
		default:
		}
		a.Close()
		b.Close()
	})
}

// TestAReaderThatHandsOffGoesOnReadingWhileTheSocketIsFull: a batch whose
// first answer is held and whose second request's handler hands the
// reading off (it is about to wait) must not leave the connection unread
// while the held answer waits for a peer that does not read: the next
// reader starts before anything is written. Before, takeOver wrote the
// held answers first, on the goroutine handing off, and started the next
// reader only once the socket took them; the peer's further requests
// were never read (TestAnswersToASlowReaderWaitForRoom saw one stay
// unread under load).
func TestAReaderThatHandsOffGoesOnReadingWhileTheSocketIsFull(t *testing.T) {
	if inParent(t) {
		return
	}
	synctest.Test(t, func(t *testing.T) {
		ca, cb := testConfig(1), testConfig(2)
		ca.KeepAliveInterval, cb.KeepAliveInterval = 0, 0
		cb.KeepAliveTimeout = time.Hour // the write deadline: the peer reads, later
		ca.CompressThreshold, cb.CompressThreshold = -1, -1
		big := make([]byte, 512<<10)
		release := make(chan struct{})
		var pings atomic.Int64
		a, err := New(ca)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := New(cb)
		b.HandleRequests(LaneMessage, func(ctx context.Context, s *Session, p []byte) ([]byte, error) {
			switch string(p) {
			case "big":
				return big, nil
			case "wait":
				HandOff(ctx) // as a handler about to wait on an actor does
				<-release
				return nil, nil
			}
			pings.Add(1)
			return p, nil
		})
		c1, c2 := net.Pipe() // no buffer: b's writes wait for a's reads
		gc := &gatedConn{Conn: c1, gate: make(chan struct{})}
		go b.Accept(context.Background(), c2)
		sa, err := a.DialConn(context.Background(), gc)
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		gc.shut.Store(true) // a stops reading
		// One record holding two requests: b's reader runs them as one
		// batch, the first answer held until the batch ends.
		req := func(id uint64, p string) []byte {
			return append(appendEnvelopeHeader(nil, frameRequest, 0, id, len(p)), p...)
		}
		rawEnvelope(t, sa, append(req(1<<40+1, "big"), req(1<<40+3, "wait")...))
		synctest.Wait()
		done := make(chan error, 1)
		go func() { _, err := sa.Request(context.Background(), LaneMessage, []byte("ping")); done <- err }()
		synctest.Wait()
		got := pings.Load()
		close(release)
		close(gc.gate)
		if err := <-done; err != nil {
			t.Errorf("the later request: %v", err)
		}
		a.Close()
		b.Close()
		if got != 1 {
			t.Fatalf("a request sent after the hand-off ran %d times before a read again, want 1: the connection went unread while the held answer waited for the socket", got)
		}
	})
}
