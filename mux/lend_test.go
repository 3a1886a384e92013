package mux

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// lendAsk is a handler's wait for one request of its own to the peer it
// serves: it sends p on lane, reads the connection itself while the answer
// comes (WaitReading), and falls back to HandOff and a plain wait. It
// reports the answer and whether WaitReading got it.
func lendAsk(ctx context.Context, s *Session, l Lane, p string) (answer string, lent bool, err error) {
	wake := make(chan struct{}, 1)
	var got []byte
	var gotErr error
	req := s.RequestAsync(ctx, l, []byte(p), 5*time.Second, func(b []byte, err error) {
		got, gotErr = append([]byte(nil), b...), err
		wake <- struct{}{}
	})
	lent = WaitReading(ctx, []AsyncRequest{req}, wake, 5*time.Second)
	if !lent {
		HandOff(ctx)
	}
	<-wake
	return string(got), lent, gotErr
}

// A handler on its connection's reader whose request went to the peer it
// serves reads the answer itself: nobody else is started to read, and the
// connection reads on afterwards.
func TestWaitReadingReadsTheAnswerItself(t *testing.T) {
	forEachConn(t, func(t *testing.T, ct connType) {
		var lentCount, asked atomic.Int32
		_, b, sa, _ := connect(t, ct, testConfig(1), testConfig(2), func(a, b *Node) {
			a.HandleRequests(LaneReplication, echo)
			b.HandleRequests(LaneMessage, func(ctx context.Context, from *Session, p []byte) ([]byte, error) {
				asked.Add(1)
				out, lent, err := lendAsk(ctx, from, LaneReplication, string(p))
				if lent {
					lentCount.Add(1)
				}
				return []byte("got " + out), err
			})
		})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for i := range 20 {
			out, err := sa.Request(ctx, LaneMessage, []byte{'a' + byte(i)})
			if err != nil || string(out) != "got "+string(rune('a'+i)) {
				t.Fatalf("request %d: %q %v", i, out, err)
			}
		}
		// A request runs on the reader when nothing else was buffered
		// behind it; one at a time, that is every one but a rare few.
		if n := lentCount.Load(); n < asked.Load()/2 {
			t.Fatalf("%d of %d handlers read their answers themselves", n, asked.Load())
		}
		if w := b.takeovers[takeoverWaiting].Load(); w > int64(asked.Load()-lentCount.Load()) {
			t.Fatalf("%d hand-offs for %d handlers that could not read themselves", w, asked.Load()-lentCount.Load())
		}
	})
}

// A request that arrives while a handler reads in its reader's place ends
// the lending: the connection has other work, which must not wait for
// that handler. Here the answer the handler waits for comes only once that
// request has run, so a lending that went on reading would hold both
// until its bound.
func TestARequestArrivingEndsTheLending(t *testing.T) {
	defer func(l time.Duration) { lendLimit = l }(lendLimit)
	lendLimit = 10 * time.Second
	forEachConn(t, func(t *testing.T, ct connType) {
		ran := make(chan struct{}, 1)
		var lent atomic.Bool
		_, _, sa, _ := connect(t, ct, testConfig(1), testConfig(2), func(a, b *Node) {
			a.HandleRequests(LaneMessage, func(ctx context.Context, from *Session, p []byte) ([]byte, error) {
				from.RequestAsync(context.Background(), LaneMessage, []byte("second"), 5*time.Second, func([]byte, error) {})
				select {
				case <-ran: // answered only once "second" ran on b
				case <-ctx.Done():
				}
				return p, nil
			})
			b.HandleRequests(LaneMessage, func(ctx context.Context, from *Session, p []byte) ([]byte, error) {
				if string(p) == "second" {
					ran <- struct{}{}
					return p, nil
				}
				out, l, err := lendAsk(ctx, from, LaneMessage, "ping")
				lent.Store(l)
				return []byte(out), err
			})
		})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		if out, err := sa.Request(ctx, LaneMessage, []byte("first")); err != nil || string(out) != "ping" {
			t.Fatalf("first: %q %v", out, err)
		}
		if lent.Load() {
			t.Fatal("the lending reported an answer that came only after it handed off")
		}
		// Without the rule the lending would hold on until its bound, or the
		// session's next keepalive (a yamux record, which also ends it): a
		// second here.
		if d := time.Since(start); d > 500*time.Millisecond {
			t.Fatalf("the call took %v: the request read while lending waited for the lending's bound", d)
		}
	})
}

// WaitReading reads nothing for a handler that is not on its reader, nor
// for requests on another connection; and an answer slower than max
// leaves the connection as it was: the handler hands off and waits, and
// the connection serves on (the read deadline it used is gone).
func TestWaitReadingDeclinesAndGivesUpCleanly(t *testing.T) {
	forEachConn(t, func(t *testing.T, ct connType) {
		release := make(chan struct{})
		_, _, sa, _ := connect(t, ct, testConfig(1), testConfig(2), func(a, b *Node) {
			a.HandleRequests(LaneReplication, func(ctx context.Context, _ *Session, p []byte) ([]byte, error) {
				if string(p) == "slow" {
					<-release
				}
				return p, nil
			})
			b.HandleRequests(LaneMessage, func(ctx context.Context, from *Session, p []byte) ([]byte, error) {
				wake := make(chan struct{}, 1)
				req := from.RequestAsync(ctx, LaneReplication, p, 5*time.Second, func([]byte, error) { wake <- struct{}{} })
				switch string(p) {
				case "elsewhere":
					if WaitReading(context.Background(), []AsyncRequest{req}, wake, time.Second) {
						t.Error("read with a context of no request")
					}
					if WaitReading(ctx, []AsyncRequest{req, {}}, wake, time.Second) {
						t.Error("read for a request that went nowhere")
					}
				case "slow":
					start := time.Now()
					if WaitReading(ctx, []AsyncRequest{req}, wake, 20*time.Millisecond) {
						t.Error("an answer that has not been sent was read")
					}
					if d := time.Since(start); d > 500*time.Millisecond {
						t.Errorf("WaitReading held on %v past its bound", d)
					}
					HandOff(ctx)
					close(release)
				}
				<-wake
				return p, nil
			})
		})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, p := range []string{"elsewhere", "slow", "after"} {
			if out, err := sa.Request(ctx, LaneMessage, []byte(p)); err != nil || string(out) != p {
				t.Fatalf("%s: %q %v", p, out, err)
			}
		}
	})
}

// A request whose handler queued its work for another goroutine may end
// (its caller gave up) while that goroutine reads in its reader's place:
// the reader waits for the lending to end and reads on, without the
// watchdog having to replace it.
func TestAReaderWhoseRequestEndsWhileLentReadsOn(t *testing.T) {
	defer func(l time.Duration) { lendLimit = l }(lendLimit)
	lendLimit = 5 * time.Second
	forEachConn(t, func(t *testing.T, ct connType) {
		lending := make(chan bool, 1)
		release := make(chan struct{})
		_, b, sa, _ := connect(t, ct, testConfig(1), testConfig(2), func(a, b *Node) {
			a.HandleRequests(LaneReplication, func(ctx context.Context, _ *Session, p []byte) ([]byte, error) {
				<-release // answered once the request that started the wait has ended
				return p, nil
			})
			b.HandleRequests(LaneMessage, func(ctx context.Context, from *Session, p []byte) ([]byte, error) {
				if string(p) != "go" {
					return p, nil
				}
				go func() {
					wake := make(chan struct{}, 1)
					req := from.RequestAsync(ctx, LaneReplication, []byte("x"), 5*time.Second, func([]byte, error) { wake <- struct{}{} })
					lending <- WaitReading(ctx, []AsyncRequest{req}, wake, 5*time.Second)
				}()
				// Return while the other goroutine reads in the reader's place.
				waitFor(t, 5*time.Second, "the goroutine to read in the reader's place", func() bool {
					return from.rd.watch.word.Load()&stateMask == readerLent
				})
				return []byte("early"), nil
			})
		})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if out, err := sa.Request(ctx, LaneMessage, []byte("go")); err != nil || string(out) != "early" {
			t.Fatalf("go: %q %v", out, err)
		}
		close(release) // the answer comes, and the lending ends
		if !<-lending {
			t.Fatal("WaitReading did not see its wake")
		}
		if out, err := sa.Request(ctx, LaneMessage, []byte("next")); err != nil || string(out) != "next" {
			t.Fatalf("next: %q %v", out, err)
		}
		if n := b.takeovers[takeoverStuck].Load(); n != 0 {
			t.Fatalf("the watchdog replaced %d readers", n)
		}
	})
}
