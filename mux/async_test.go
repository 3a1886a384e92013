package mux

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// asyncAnswer collects the one call of a RequestAsync callback and fails
// the test on a second.
type asyncAnswer struct {
	t     *testing.T
	calls atomic.Int32
	got   chan asyncResult
}

type asyncResult struct {
	payload []byte
	err     error
}

func newAsyncAnswer(t *testing.T) *asyncAnswer {
	return &asyncAnswer{t: t, got: make(chan asyncResult, 2)}
}

func (a *asyncAnswer) done(p []byte, err error) {
	if a.calls.Add(1) > 1 {
		a.t.Error("done called twice")
	}
	a.got <- asyncResult{p, err}
}

func (a *asyncAnswer) wait() asyncResult {
	a.t.Helper()
	select {
	case r := <-a.got:
		return r
	case <-time.After(5 * time.Second):
		a.t.Fatal("done was never called")
		return asyncResult{}
	}
}

func TestRequestAsyncAnswers(t *testing.T) {
	forEachConn(t, func(t *testing.T, ct connType) {
		_, _, sa, _ := connect(t, ct, testConfig(1), testConfig(2), func(a, b *Node) {
			b.HandleRequests(LaneReplication, echo)
		})
		const n = 50
		answers := make([]*asyncAnswer, n)
		for i := range answers {
			answers[i] = newAsyncAnswer(t)
			sa.RequestAsync(context.Background(), LaneReplication, []byte{byte(i)}, time.Minute, answers[i].done)
		}
		for i, a := range answers {
			if r := a.wait(); r.err != nil || len(r.payload) != 1 || r.payload[0] != byte(i) {
				t.Fatalf("request %d: got %v, %v", i, r.payload, r.err)
			}
		}
	})
}

// A timeout is enforced by the sweeper and cancels the peer's handler; a
// Cancel abandons the request at once; a lost session fails what is
// pending. Each calls done exactly once, and a Cancel after the answer
// does nothing.
func TestRequestAsyncEnds(t *testing.T) {
	cancelled := make(chan struct{}, 4)
	release := make(chan struct{})
	_, b, sa, _ := connect(t, viaTCP, testConfig(1), testConfig(2), func(a, b *Node) {
		b.HandleRequests(LaneReplication, func(ctx context.Context, _ *Session, p []byte) ([]byte, error) {
			if string(p) == "now" {
				return p, nil
			}
			select {
			case <-ctx.Done():
				cancelled <- struct{}{}
				return nil, ctx.Err()
			case <-release:
				return p, nil
			}
		})
	})
	defer close(release)

	t.Run("timeout", func(t *testing.T) {
		a := newAsyncAnswer(t)
		start := time.Now()
		sa.RequestAsync(context.Background(), LaneReplication, []byte("wait"), 50*time.Millisecond, a.done)
		if r := a.wait(); !errors.Is(r.err, context.DeadlineExceeded) {
			t.Fatalf("got %v", r.err)
		}
		if el := time.Since(start); el > 2*time.Second {
			t.Fatalf("timeout honoured late: %v", el)
		}
		<-cancelled
	})
	t.Run("cancel", func(t *testing.T) {
		a := newAsyncAnswer(t)
		req := sa.RequestAsync(context.Background(), LaneReplication, []byte("wait"), 0, a.done)
		req.Cancel()
		if r := a.wait(); !errors.Is(r.err, context.Canceled) {
			t.Fatalf("got %v", r.err)
		}
		<-cancelled
		req.Cancel() // again: nothing
	})
	t.Run("cancel after the answer", func(t *testing.T) {
		a := newAsyncAnswer(t)
		req := sa.RequestAsync(context.Background(), LaneReplication, []byte("now"), 0, a.done)
		if r := a.wait(); r.err != nil || string(r.payload) != "now" {
			t.Fatalf("got %q, %v", r.payload, r.err)
		}
		req.Cancel()
		if a.calls.Load() != 1 {
			t.Fatal("Cancel after the answer called done again")
		}
	})
	t.Run("already cancelled ctx", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		a := newAsyncAnswer(t)
		sa.RequestAsync(ctx, LaneReplication, []byte("now"), 0, a.done)
		if r := a.wait(); !errors.Is(r.err, context.Canceled) {
			t.Fatalf("got %v", r.err)
		}
	})
	t.Run("session lost", func(t *testing.T) {
		a := newAsyncAnswer(t)
		sa.RequestAsync(context.Background(), LaneReplication, []byte("wait"), 0, a.done)
		b.Close()
		if r := a.wait(); !errors.Is(r.err, ErrConnectionLost) {
			t.Fatalf("got %v", r.err)
		}
	})
}

// A handler that called Answered sends nothing back: its requester, still
// waiting, times out rather than hearing the handler's result; one that got its
// answer another way and called Forget waits for nothing, holds no
// pending request, and is never called back.
func TestNoAnswerAndForget(t *testing.T) {
	release := make(chan struct{}, 2) // one per quiet request
	ran := make(chan struct{}, 2)
	_, _, sa, _ := connect(t, viaTCP, testConfig(1), testConfig(2), func(a, b *Node) {
		b.HandleRequests(LaneReplication, func(ctx context.Context, _ *Session, p []byte) ([]byte, error) {
			if string(p) == "echo" {
				return p, nil
			}
			<-release
			if !Answered(ctx) {
				t.Error("Answered: the handler's context is not a request's")
			}
			ran <- struct{}{}
			return p, nil
		})
	})

	t.Run("no answer", func(t *testing.T) {
		a := newAsyncAnswer(t)
		release <- struct{}{}
		sa.RequestAsync(context.Background(), LaneReplication, []byte("quiet"), 200*time.Millisecond, a.done)
		<-ran
		if r := a.wait(); !errors.Is(r.err, context.DeadlineExceeded) {
			t.Fatalf("a request whose handler called Answered: %q, %v; want its timeout", r.payload, r.err)
		}
	})
	t.Run("forget", func(t *testing.T) {
		a := newAsyncAnswer(t)
		req := sa.RequestAsync(context.Background(), LaneReplication, []byte("quiet"), 0, a.done)
		if n := sa.Pending(); n != 1 {
			t.Fatalf("%d pending before Forget, want 1", n)
		}
		req.Forget()
		if n := sa.Pending(); n != 0 {
			t.Fatalf("%d pending after Forget, want 0", n)
		}
		release <- struct{}{}
		<-ran
		// Whatever may come back for the forgotten request is dropped.
		if p, err := sa.Request(context.Background(), LaneReplication, []byte("echo")); err != nil || string(p) != "echo" {
			t.Fatalf("echo after Forget: %q, %v", p, err)
		}
		req.Forget() // again: nothing
		if Answered(context.Background()) {
			t.Error("Answered outside a handler reported true")
		}
		if n := a.calls.Load(); n != 0 {
			t.Fatalf("a forgotten request was called back %d times", n)
		}
	})
}

// A node that closes cancels the handlers running on its connections; what
// such a handler then returns (its context's error, as a rule) is not its
// answer: the requester learns ErrConnectionLost, indeterminate, never a
// RemoteError it would take for the handler's definite failure. The race
// is between the handler's return and the connection's writer closing, so
// the test runs it many times.
func TestAHandlerCutOffByItsNodeClosingIsNoAnswer(t *testing.T) {
	for i := range 30 {
		started := make(chan struct{})
		_, b, sa, _ := connect(t, viaTCP, testConfig(1), testConfig(2), func(a, b *Node) {
			b.HandleRequests(LaneReplication, func(ctx context.Context, _ *Session, p []byte) ([]byte, error) {
				close(started)
				<-ctx.Done()
				return nil, fmt.Errorf("handler gave up: %w", ctx.Err())
			})
		})
		errc := make(chan error, 1)
		go func() {
			_, err := sa.Request(context.Background(), LaneReplication, []byte("wait"))
			errc <- err
		}()
		<-started
		b.Close()
		err := <-errc
		var re *RemoteError
		if !errors.Is(err, ErrConnectionLost) || errors.As(err, &re) {
			t.Fatalf("run %d: got %v, want ErrConnectionLost and no remote error", i, err)
		}
	}
}
