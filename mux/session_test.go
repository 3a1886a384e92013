package mux

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/casty-go/casty/internal/sweep"
)

func forEachConn(t *testing.T, f func(t *testing.T, ct connType)) {
	for _, ct := range connTypes {
		t.Run(string(ct), func(t *testing.T) { f(t, ct) })
	}
}

func TestRequestEchoesOnEveryLane(t *testing.T) {
	forEachConn(t, func(t *testing.T, ct connType) {
		_, _, sa, sb := connect(t, ct, testConfig(1), testConfig(2), func(a, b *Node) {
			for l := range Lane(numLanes) {
				b.HandleRequests(l, func(ctx context.Context, s *Session, p []byte) ([]byte, error) {
					return []byte(fmt.Sprintf("%s/%s", l, p)), nil
				})
				a.HandleRequests(l, echo)
			}
		})
		ctx := context.Background()
		for l := range Lane(numLanes) {
			got, err := sa.Request(ctx, l, []byte("x"))
			if err != nil || string(got) != l.String()+"/x" {
				t.Fatalf("lane %s: %q %v", l, got, err)
			}
			// The listener's side of the session carries requests too.
			got, err = sb.Request(ctx, l, []byte("back"))
			if err != nil || string(got) != "back" {
				t.Fatalf("reverse lane %s: %q %v", l, got, err)
			}
		}
		if sa.Peer() != testID(2) || sb.Peer() != testID(1) || !sa.Outbound() || sb.Outbound() {
			t.Fatalf("wrong identities")
		}
		if sa.Codec() != CodecZstd || sb.Codec() != CodecZstd || sa.Version() != ProtocolVersion {
			t.Fatalf("codec %q/%q version %d", sa.Codec(), sb.Codec(), sa.Version())
		}
	})
}

func TestRepliesArriveOutOfOrder(t *testing.T) {
	forEachConn(t, func(t *testing.T, ct connType) {
		release := make(chan struct{})
		_, _, sa, _ := connect(t, ct, testConfig(1), testConfig(2), func(a, b *Node) {
			b.HandleRequests(LaneMessage, func(ctx context.Context, s *Session, p []byte) ([]byte, error) {
				if string(p) == "slow" {
					select {
					case <-release:
					case <-ctx.Done():
						return nil, ctx.Err()
					}
				}
				return p, nil
			})
		})
		slow := make(chan error, 1)
		go func() {
			got, err := sa.Request(context.Background(), LaneMessage, []byte("slow"))
			if err == nil && string(got) != "slow" {
				err = fmt.Errorf("got %q", got)
			}
			slow <- err
		}()
		// The fast request is answered while the slow one is still held.
		for range 10 {
			if got, err := sa.Request(context.Background(), LaneMessage, []byte("fast")); err != nil || string(got) != "fast" {
				t.Fatal(got, err)
			}
		}
		select {
		case err := <-slow:
			t.Fatalf("slow request finished early: %v", err)
		default:
		}
		close(release)
		if err := <-slow; err != nil {
			t.Fatal(err)
		}
	})
}

func TestRemoteErrors(t *testing.T) {
	forEachConn(t, func(t *testing.T, ct connType) {
		_, _, sa, _ := connect(t, ct, testConfig(1), testConfig(2), func(a, b *Node) {
			b.HandleRequests(LaneMessage, func(ctx context.Context, s *Session, p []byte) ([]byte, error) {
				switch string(p) {
				case "coded":
					return nil, fmt.Errorf("wrapped: %w", &RemoteError{Code: CodeUser + 7, Message: "out of stock"})
				case "plain":
					return nil, errors.New("boom")
				case "panic":
					panic("handler bug")
				case "huge":
					return make([]byte, s.node.cfg.MaxMessage+1), nil
				}
				return p, nil
			})
		})
		cases := []struct {
			req  string
			code uint16
			msg  string
		}{
			{"coded", CodeUser + 7, "out of stock"},
			{"plain", CodeApplication, "boom"},
			{"panic", CodeHandlerPanic, "handler bug"},
			{"huge", CodeResponseTooLarge, "exceeds"},
		}
		for _, c := range cases {
			_, err := sa.Request(context.Background(), LaneMessage, []byte(c.req))
			var re *RemoteError
			if !errors.As(err, &re) || re.Code != c.code || !strings.Contains(re.Message, c.msg) {
				t.Fatalf("%s: got %v", c.req, err)
			}
		}
		_, err := sa.Request(context.Background(), LaneReplication, []byte("x"))
		var re *RemoteError
		if !errors.As(err, &re) || re.Code != CodeNoHandler {
			t.Fatalf("no handler: %v", err)
		}
		// The connection survived all of it.
		if got, err := sa.Request(context.Background(), LaneMessage, []byte("ok")); err != nil || string(got) != "ok" {
			t.Fatal(got, err)
		}
	})
}

func TestDeadlineCancelsRemoteHandler(t *testing.T) {
	t.Run("ctx deadline", func(t *testing.T) {
		deadlineCancelsRemoteHandler(t, func(sa *Session) error {
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			_, err := sa.Request(ctx, LaneMessage, []byte("wait"))
			return err
		})
	})
	t.Run("RequestTimeout", func(t *testing.T) {
		deadlineCancelsRemoteHandler(t, func(sa *Session) error {
			_, err := sa.RequestTimeout(context.Background(), LaneMessage, []byte("wait"), 50*time.Millisecond)
			return err
		})
	})
	t.Run("RequestTimeout swept", func(t *testing.T) {
		deadlineCancelsRemoteHandler(t, func(sa *Session) error {
			start := time.Now()
			_, err := sa.RequestTimeout(context.Background(), LaneMessage, []byte("wait"), sweep.Threshold)
			if el := time.Since(start); el < sweep.Threshold || el > sweep.Threshold+500*time.Millisecond {
				t.Errorf("a %v timeout fired after %v", sweep.Threshold, el)
			}
			return err
		})
	})
}

// The sweeper that enforces long request timeouts runs only while such a
// request is pending: answered requests do not keep it alive.
func TestSweeperStopsWhenNothingIsWatched(t *testing.T) {
	release := make(chan struct{})
	a, _, sa, _ := connect(t, viaTCP, testConfig(1), testConfig(2), func(a, b *Node) {
		b.HandleRequests(LaneMessage, func(ctx context.Context, _ *Session, p []byte) ([]byte, error) {
			<-release
			return p, nil
		})
	})
	answered := make(chan error, 1)
	go func() {
		_, err := sa.RequestTimeout(context.Background(), LaneMessage, []byte("x"), time.Hour)
		answered <- err
	}()
	waitFor(t, 5*time.Second, "the sweeper to start", func() bool { return a.timeouts.Running() })
	// It keeps running while the request is pending.
	time.Sleep(5 * sweep.Every) // an absence check: it must not stop meanwhile
	if !a.timeouts.Running() {
		t.Fatal("the sweeper stopped while a watched request was pending")
	}
	close(release)
	if err := <-answered; err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the sweeper to stop", func() bool { return !a.timeouts.Running() })
}

func deadlineCancelsRemoteHandler(t *testing.T, request func(*Session) error) {
	forEachConn(t, func(t *testing.T, ct connType) {
		cancelled := make(chan struct{})
		_, _, sa, _ := connect(t, ct, testConfig(1), testConfig(2), func(a, b *Node) {
			b.HandleRequests(LaneMessage, func(ctx context.Context, s *Session, p []byte) ([]byte, error) {
				<-ctx.Done()
				close(cancelled)
				return nil, ctx.Err()
			})
		})
		start := time.Now()
		err := request(sa)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("got %v", err)
		}
		if el := time.Since(start); el > 2*time.Second {
			t.Fatalf("deadline honoured late: %v", el)
		}
		select {
		case <-cancelled:
		case <-time.After(5 * time.Second):
			t.Fatal("remote handler context was not cancelled")
		}
	})
}

func TestOneWayMessagesArriveInOrder(t *testing.T) {
	forEachConn(t, func(t *testing.T, ct connType) {
		var mu sync.Mutex
		var got []string
		_, _, sa, _ := connect(t, ct, testConfig(1), testConfig(2), func(a, b *Node) {
			b.HandleMessages(LaneControl, func(s *Session, p []byte) {
				mu.Lock()
				got = append(got, string(p))
				mu.Unlock()
			})
		})
		const n = 500
		for i := range n {
			if err := sa.Send(context.Background(), LaneControl, []byte(fmt.Sprint(i))); err != nil {
				t.Fatal(err)
			}
		}
		waitFor(t, 5*time.Second, "all messages", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(got) == n
		})
		for i, s := range got {
			if s != fmt.Sprint(i) {
				t.Fatalf("message %d is %q", i, s)
			}
		}
	})
}

// A slow message handler on one lane (state fan-out on the replication
// lane) holds up only that lane: calls on the message lane are answered
// meanwhile, and the lane's own messages still arrive in order.
func TestSlowMessageHandlerHoldsUpOnlyItsLane(t *testing.T) {
	forEachConn(t, func(t *testing.T, ct connType) {
		release := make(chan struct{})
		var mu sync.Mutex
		var got []string
		_, _, sa, _ := connect(t, ct, testConfig(1), testConfig(2), func(a, b *Node) {
			b.HandleMessages(LaneReplication, func(_ *Session, p []byte) {
				<-release
				mu.Lock()
				got = append(got, string(p))
				mu.Unlock()
			})
			b.HandleRequests(LaneMessage, func(_ context.Context, _ *Session, p []byte) ([]byte, error) { return p, nil })
		})
		defer close(release)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for i := range 3 {
			if err := sa.Send(ctx, LaneReplication, []byte(fmt.Sprint(i))); err != nil {
				t.Fatal(err)
			}
		}
		// The replication handler is stuck; a call must still be answered.
		if out, err := sa.Request(ctx, LaneMessage, []byte("ping")); err != nil || string(out) != "ping" {
			t.Fatalf("call while the replication handler is stuck: %q %v", out, err)
		}
		release <- struct{}{}
		release <- struct{}{}
		release <- struct{}{}
		waitFor(t, 5*time.Second, "the replication messages", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(got) == 3
		})
		if !slices.Equal(got, []string{"0", "1", "2"}) {
			t.Fatalf("replication messages %v, want in order", got)
		}
	})
}

func TestMessageSizeLimit(t *testing.T) {
	forEachConn(t, func(t *testing.T, ct connType) {
		ca, cb := testConfig(1), testConfig(2)
		ca.Codecs, cb.Codecs = nil, nil // exercise the uncompressed path at the limit
		_, _, sa, _ := connect(t, ct, ca, cb, func(a, b *Node) {
			b.HandleRequests(LaneMessage, func(ctx context.Context, s *Session, p []byte) ([]byte, error) {
				return []byte{byte(len(p) >> 20)}, nil
			})
		})
		max := sa.node.cfg.MaxMessage
		if _, err := sa.Request(context.Background(), LaneMessage, make([]byte, max+1)); !errors.Is(err, ErrMessageTooLarge) {
			t.Fatalf("over the limit: %v", err)
		}
		if err := sa.Send(context.Background(), LaneMessage, make([]byte, max+1)); !errors.Is(err, ErrMessageTooLarge) {
			t.Fatalf("send over the limit: %v", err)
		}
		got, err := sa.Request(context.Background(), LaneMessage, make([]byte, max))
		if err != nil || got[0] != 4 {
			t.Fatalf("at the limit: %v %v", got, err)
		}
	})
}

// countingConn counts bytes written through it.
type countingConn struct {
	net.Conn
	n atomic.Int64
}

func (c *countingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.n.Add(int64(n))
	return n, err
}

func TestCompressionOnlyAboveThresholdAndWhenSmaller(t *testing.T) {
	for _, codecs := range [][]string{{CodecZstd}, {CodecZlib}, nil} {
		t.Run(fmt.Sprint(codecs), func(t *testing.T) {
			ca, cb := testConfig(1), testConfig(2)
			ca.Codecs, cb.Codecs = codecs, codecs
			a, b := newNode(t, ca), newNode(t, cb)
			var got atomic.Int64
			b.HandleMessages(LaneMessage, func(s *Session, p []byte) { got.Add(int64(len(p))) })
			c1, c2 := net.Pipe()
			cc := &countingConn{Conn: c1}
			go b.Accept(context.Background(), c2)
			sa, err := a.DialConn(context.Background(), cc)
			if err != nil {
				t.Fatal(err)
			}
			measure := func(p []byte) int64 {
				before, want := cc.n.Load(), got.Load()+int64(len(p))
				if err := sa.Send(context.Background(), LaneMessage, p); err != nil {
					t.Fatal(err)
				}
				waitFor(t, 5*time.Second, "delivery", func() bool { return got.Load() == want })
				return cc.n.Load() - before
			}
			compressible := bytes.Repeat([]byte("a"), 1<<20)
			small := bytes.Repeat([]byte("a"), 4095)
			random := make([]byte, 64<<10)
			rand.NewChaCha8([32]byte{1}).Read(random)
			wBig, wSmall, wRandom := measure(compressible), measure(small), measure(random)
			wAt := measure(bytes.Repeat([]byte("a"), 4096)) // exactly the threshold
			if codecs == nil {
				if wBig < 1<<20 {
					t.Fatalf("no codec but %d bytes on the wire for 1 MiB", wBig)
				}
				return
			}
			if wBig > 64<<10 {
				t.Fatalf("1 MiB of 'a' took %d bytes", wBig)
			}
			if wSmall < 4095 {
				t.Fatalf("payload below the threshold was compressed (%d bytes)", wSmall)
			}
			if wAt >= 4096 {
				t.Fatalf("a compressible payload at the threshold was not compressed (%d bytes)", wAt)
			}
			if wRandom < 64<<10 {
				t.Fatalf("incompressible payload shrank to %d?", wRandom)
			}
		})
	}
}

func TestCompressionNegotiation(t *testing.T) {
	cases := []struct {
		a, b []string
		want string
	}{
		{[]string{CodecZstd, CodecZlib}, []string{CodecZstd, CodecZlib}, CodecZstd},
		{[]string{CodecZstd, CodecZlib}, []string{CodecZlib}, CodecZlib},
		{[]string{CodecZlib, CodecZstd}, []string{CodecZstd, CodecZlib}, CodecZlib},
		{[]string{CodecZstd}, []string{CodecZlib}, ""},
		{nil, []string{CodecZstd}, ""},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.a, c.b), func(t *testing.T) {
			ca, cb := testConfig(1), testConfig(2)
			ca.Codecs, cb.Codecs = c.a, c.b
			_, _, sa, sb := connect(t, viaPipe, ca, cb, func(a, b *Node) {
				b.HandleRequests(LaneMessage, echo)
			})
			if sa.Codec() != c.want || sb.Codec() != c.want {
				t.Fatalf("codec %q/%q want %q", sa.Codec(), sb.Codec(), c.want)
			}
			big := bytes.Repeat([]byte("casty compresses this "), 20000)
			got, err := sa.Request(context.Background(), LaneMessage, big)
			if err != nil || !bytes.Equal(got, big) {
				t.Fatalf("round trip: %v", err)
			}
		})
	}
}

func TestNodeCloseFailsPendingAndStopsEverything(t *testing.T) {
	forEachConn(t, func(t *testing.T, ct connType) {
		entered := make(chan struct{}, 1)
		a, b, sa, _ := connect(t, ct, testConfig(1), testConfig(2), func(a, b *Node) {
			b.HandleRequests(LaneMessage, func(ctx context.Context, s *Session, p []byte) ([]byte, error) {
				entered <- struct{}{}
				<-ctx.Done() // handlers must return once cancelled; Close waits for them
				return nil, ctx.Err()
			})
		})
		errc := make(chan error, 1)
		go func() {
			_, err := sa.Request(context.Background(), LaneMessage, nil)
			errc <- err
		}()
		<-entered
		a.Close()
		if err := <-errc; !errors.Is(err, ErrConnectionLost) || !errors.Is(err, ErrClosed) {
			t.Fatalf("pending request after Close: %v", err)
		}
		if _, err := a.Dial(context.Background(), "127.0.0.1:1"); !errors.Is(err, ErrClosed) {
			t.Fatalf("dial after close: %v", err)
		}
		if len(a.Sessions()) != 0 {
			t.Fatal("sessions survive Close")
		}
		waitFor(t, 5*time.Second, "the peer to notice", func() bool { return len(b.Sessions()) == 0 })
	})
}

// A peer that stops reading must not make the sender buffer without
// bound: past MaxMessage bytes queued on a lane, Send waits (and gives up
// with its ctx); the send that was writing when the peer stopped is freed
// by the write timeout, which closes the connection.
func TestSlowPeerBoundsTheSendQueue(t *testing.T) {
	hold := make(chan struct{})
	ca, cb := testConfig(1), testConfig(2)
	ca.MaxMessage, cb.MaxMessage = 16<<10, 16<<10
	ca.KeepAliveTimeout = time.Second
	_, _, sa, _ := connect(t, viaPipe, ca, cb, func(a, b *Node) {
		b.HandleMessages(LaneMessage, func(*Session, []byte) { <-hold }) // b's reader stops
	})
	defer close(hold)
	msg := make([]byte, 512)
	sent, stuck := 0, 0
	for {
		done := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			done <- sa.Send(ctx, LaneMessage, msg)
		}()
		var err error
		select {
		case err = <-done:
		case <-time.After(300 * time.Millisecond):
			stuck++ // this send is the one writing into the stalled pipe
			if stuck > 1 {
				t.Fatal("more than one send stuck past its ctx")
			}
			continue
		}
		if err != nil {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("send: %v", err)
			}
			break
		}
		if sent++; sent > 1000 {
			t.Fatal("1000 sends queued to a peer that reads nothing")
		}
	}
	sa.w.mu.Lock()
	queued := len(sa.w.q[LaneMessage]) - sa.w.off[LaneMessage]
	sa.w.mu.Unlock()
	if limit := ca.MaxMessage + len(msg) + envelopeHeaderSize; queued > limit {
		t.Fatalf("%d bytes queued, limit %d", queued, limit)
	}
	// The write timeout ends the stalled connection.
	select {
	case <-sa.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("a write stalled past KeepAliveTimeout did not close the connection")
	}
}

// A lone request runs on the connection's reader; a slow one must not hold
// up the connection: after inlineGrace the reading moves to another
// goroutine, later requests and answers flow, and when the slow handler
// returns its goroutine does not read again (two readers would interleave
// records; the race detector and the echo check below would see it).
func TestSlowRequestDoesNotHoldUpTheConnection(t *testing.T) {
	forEachConn(t, func(t *testing.T, ct connType) {
		started := make(chan struct{}, 1)
		release := make(chan struct{})
		_, _, sa, _ := connect(t, ct, testConfig(1), testConfig(2), func(a, b *Node) {
			b.HandleRequests(LaneMessage, func(_ context.Context, _ *Session, p []byte) ([]byte, error) {
				if string(p) == "slow" {
					started <- struct{}{}
					<-release
				}
				return p, nil
			})
		})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		slow := make(chan error, 1)
		go func() {
			out, err := sa.Request(ctx, LaneMessage, []byte("slow"))
			if err == nil && string(out) != "slow" {
				err = fmt.Errorf("slow answered %q", out)
			}
			slow <- err
		}()
		// Requests sent with the slow one may share its read, and so its
		// batch: they must not wait for it either.
		var wave sync.WaitGroup
		for i := range 9 {
			wave.Add(1)
			go func() {
				defer wave.Done()
				msg := []byte(fmt.Sprint("wave", i))
				if out, err := sa.Request(ctx, LaneMessage, msg); err != nil || !bytes.Equal(out, msg) {
					t.Errorf("request %d sent with the stuck one: %q %v", i, out, err)
				}
			}()
		}
		<-started
		wave.Wait()
		begin := time.Now()
		for i := range 20 {
			msg := []byte(fmt.Sprint("fast", i))
			if out, err := sa.Request(ctx, LaneMessage, msg); err != nil || !bytes.Equal(out, msg) {
				t.Fatalf("request %d while a handler is stuck: %q %v", i, out, err)
			}
		}
		if took := time.Since(begin); took > time.Second {
			t.Fatalf("20 requests behind a stuck handler took %v", took)
		}
		close(release)
		if err := <-slow; err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for i := range 50 { // the connection reads as it should afterwards
			wg.Add(1)
			go func() {
				defer wg.Done()
				msg := []byte(fmt.Sprint("after", i))
				if out, err := sa.Request(ctx, LaneMessage, msg); err != nil || !bytes.Equal(out, msg) {
					t.Errorf("request %d after the stuck handler: %q %v", i, out, err)
				}
			}()
		}
		wg.Wait()
	})
}

// A handler running on the reader that calls back over its own session
// hands the reading on at once: its answer arrives on that connection,
// which would otherwise not be read until the watchdog stepped in.
func TestInlineHandlerWaitingOnTheNetworkHandsTheReadingOn(t *testing.T) {
	forEachConn(t, func(t *testing.T, ct connType) {
		_, b, sa, _ := connect(t, ct, testConfig(1), testConfig(2), func(a, b *Node) {
			a.HandleRequests(LaneMessage, func(_ context.Context, _ *Session, p []byte) ([]byte, error) {
				return append([]byte("inner "), p...), nil
			})
			b.HandleRequests(LaneMessage, func(ctx context.Context, s *Session, p []byte) ([]byte, error) {
				return s.Request(ctx, LaneMessage, p) // back to a, over the same connection
			})
		})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for i := range 20 {
			msg := fmt.Sprint(i)
			if out, err := sa.Request(ctx, LaneMessage, []byte(msg)); err != nil || string(out) != "inner "+msg {
				t.Fatalf("nested call %d: %q %v", i, out, err)
			}
		}
		waiting, stuck := b.takeovers[takeoverWaiting].Load(), b.takeovers[takeoverStuck].Load()
		if waiting == 0 {
			t.Fatalf("no reader handed the reading on when its request waited (watchdog took over %d times)", stuck)
		}
	})
}

// HandOff from a handler about to wait moves the reading on at once.
func TestHandOffMovesTheReadingOn(t *testing.T) {
	forEachConn(t, func(t *testing.T, ct connType) {
		started := make(chan struct{}, 1)
		release := make(chan struct{})
		_, b, sa, _ := connect(t, ct, testConfig(1), testConfig(2), func(a, b *Node) {
			b.HandleRequests(LaneMessage, func(ctx context.Context, _ *Session, p []byte) ([]byte, error) {
				if string(p) == "wait" {
					HandOff(ctx)
					started <- struct{}{}
					<-release
				}
				return p, nil
			})
		})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		done := make(chan error, 1)
		go func() {
			_, err := sa.Request(ctx, LaneMessage, []byte("wait"))
			done <- err
		}()
		<-started
		if out, err := sa.Request(ctx, LaneMessage, []byte("next")); err != nil || string(out) != "next" {
			t.Fatalf("request while a handler waits: %q %v", out, err)
		}
		if b.takeovers[takeoverWaiting].Load() == 0 {
			t.Fatalf("HandOff did not move the reading (the watchdog did %d times)", b.takeovers[takeoverStuck].Load())
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		HandOff(context.Background()) // outside a handler: nothing
	})
}
