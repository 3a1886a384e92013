package casty_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/casty-go/casty/casty"
)

// Spout streams small elements both ways and counts what it produced and
// consumed, to measure how far a producer runs ahead of its consumer.
type Spout struct{}

var (
	spoutProduced atomic.Int64 // elements the handler handed to the stream
	spoutStopped  atomic.Bool  // the handler saw its consumer leave
	sinkFed       atomic.Int64 // elements the caller's sequence handed to Upload
	sinkAhead     atomic.Int64 // the most sinkFed ran ahead of the handler
)

// Count yields n ten-byte elements.
func (*Spout) Count(ctx context.Context, n int) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		for i := range n {
			spoutProduced.Add(1)
			if !yield(fmt.Sprintf("%010d", i), nil) {
				spoutStopped.Store(true)
				return
			}
		}
	}
}

// Sink consumes the caller's elements slowly, noting how far the caller's
// sequence got ahead of it.
func (*Spout) Sink(ctx context.Context, in iter.Seq2[string, error]) (int, error) {
	n := int64(0)
	for _, err := range in {
		if err != nil {
			return int(n), err
		}
		n++
		if ahead := sinkFed.Load() - n; ahead > sinkAhead.Load() {
			sinkAhead.Store(ahead)
		}
		if n < 50 {
			time.Sleep(time.Millisecond) // a paced consumer
		}
	}
	return int(n), nil
}

// SlowSink is Sink with a slower pace.
func (*Spout) SlowSink(ctx context.Context, in iter.Seq2[string, error]) (int, error) {
	n := int64(0)
	for _, err := range in {
		if err != nil {
			return int(n), err
		}
		n++
		if ahead := sinkFed.Load() - n; ahead > sinkAhead.Load() {
			sinkAhead.Store(ahead)
		}
		if n < 20 {
			time.Sleep(5 * time.Millisecond) // a slow consumer
		}
	}
	return int(n), nil
}

// Echo yields each of the caller's elements back, counting them as
// produced; it notes when it stops before its input ends.
func (*Spout) Echo(ctx context.Context, in iter.Seq2[string, error]) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		for v, err := range in {
			if err != nil { // the caller left, or its input failed
				spoutStopped.Store(true)
				yield("", err)
				return
			}
			spoutProduced.Add(1)
			if !yield(v, nil) {
				spoutStopped.Store(true)
				return
			}
		}
	}
}

// Ping answers at once: it gets through only when no stream holds the actor.
func (*Spout) Ping(ctx context.Context) (int, error) { return 1, nil }

var Spouts = casty.Actor[Spout](casty.Name("test.Spout"))

// fed counts the elements of a sequence as Upload takes them.
func fed(n int) iter.Seq[string] {
	return func(yield func(string) bool) {
		for i := range n {
			sinkFed.Add(1)
			if !yield(fmt.Sprintf("%010d", i)) {
				return
			}
		}
	}
}

// A stream's ctx ending ends it with the same error wherever its actor
// runs: the caller gets no element after ctx is done, then ctx's error
// (ErrTimeout, which is context.DeadlineExceeded, for a deadline;
// context.Canceled for a cancel), and the handler, on this member or
// another, sees its consumer leave and frees its actor.
func TestStreamCtxEndsRemoteStreamLikeLocal(t *testing.T) {
	parallel(t)
	nodes := startCluster(t, 2)
	placements := map[string]*casty.System{"local": nodes[0], "remote": nodes[1]}
	streams := map[string]func(context.Context, casty.Ref[Spout]) iter.Seq2[string, error]{
		"Stream": func(ctx context.Context, ref casty.Ref[Spout]) iter.Seq2[string, error] {
			return casty.Stream(ctx, ref, (*Spout).Count, 1000)
		},
		"Duplex": func(ctx context.Context, ref casty.Ref[Spout]) iter.Seq2[string, error] {
			return casty.Duplex(ctx, ref, (*Spout).Echo, fed(1000))
		},
	}
	for _, where := range []string{"local", "remote"} {
		for _, how := range []string{"deadline", "cancel"} {
			for _, shape := range []string{"Stream", "Duplex"} {
				t.Run(where+"/"+how+"/"+shape, func(t *testing.T) {
					ctxEndsStream(t, nodes[0], placements[where], how, streams[shape])
				})
			}
		}
	}
}

// ctxEndsStream opens a stream through via to an actor owner holds, with a
// ctx that ends (how: "deadline" or "cancel") while the consumer holds its
// first element, and checks how the stream ends.
func ctxEndsStream(t *testing.T, via, owner *casty.System, how string, open func(context.Context, casty.Ref[Spout]) iter.Seq2[string, error]) {
	key := keyOn(t, owner, via, Spouts.Name())
	ref := Spouts.Ref(via, key)
	spoutProduced.Store(0)
	spoutStopped.Store(false)
	var ctx context.Context
	var cancel context.CancelFunc
	if how == "deadline" {
		ctx, cancel = context.WithTimeout(context.Background(), 300*time.Millisecond)
	} else {
		ctx, cancel = context.WithCancel(context.Background())
	}
	defer cancel()
	got, afterDone := 0, 0
	var final error
	for _, err := range open(ctx, ref) {
		if err != nil {
			final = err
			break
		}
		if ctx.Err() != nil {
			afterDone++
		}
		got++
		if got == 1 {
			if how == "cancel" {
				cancel()
			}
			<-ctx.Done() // the consumer outlives its ctx
		}
	}
	if afterDone > 0 {
		t.Errorf("%d elements arrived after ctx ended (got %d, final %v, produced %d)", afterDone, got, final, spoutProduced.Load())
	}
	switch how {
	case "deadline":
		if !errors.Is(final, context.DeadlineExceeded) || !errors.Is(final, casty.ErrTimeout) {
			t.Fatalf("after %d elements the stream ended with %v, want ErrTimeout (context.DeadlineExceeded)", got, final)
		}
		var te *casty.TimeoutError
		if !errors.As(final, &te) || te.Key != key || (te.Method != "Count" && te.Method != "Echo") {
			t.Fatalf("the timeout does not name the stream: %#v", final)
		}
	case "cancel":
		if !errors.Is(final, context.Canceled) {
			t.Fatalf("after %d elements the stream ended with %v, want context.Canceled", got, final)
		}
	}
	if got > 0 {
		waitFor(t, 5*time.Second, "the handler to see its consumer leave", spoutStopped.Load)
	}
	if p := spoutProduced.Load(); p >= 1000 {
		t.Fatalf("the handler produced all %d elements for a consumer that left", p)
	}
	cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer ccancel()
	if _, err := casty.Call0(cctx, ref, (*Spout).Ping); err != nil {
		t.Fatalf("the actor is still held after its stream ended: %v", err)
	}
}

// Across members a stream is bounded in elements, not just in bytes: a
// producer of small elements is at most StreamBuffer elements ahead of
// what its slow consumer has received, plus the one it is handing over —
// the local bound — in both directions.
func TestStreamRemoteBackpressureCountsElements(t *testing.T) {
	nodes := startCluster(t, 2)
	const bound = casty.StreamBuffer + 1
	for _, where := range []string{"local", "remote"} {
		owner := nodes[0]
		if where == "remote" {
			owner = nodes[1]
		}
		ref := Spouts.Ref(nodes[0], keyOn(t, owner, nodes[0], Spouts.Name()))
		t.Run(where+"/Stream", func(t *testing.T) {
			spoutProduced.Store(0)
			consumed, maxAhead := int64(0), int64(0)
			for _, err := range casty.Stream(context.Background(), ref, (*Spout).Count, 1000) {
				if err != nil {
					t.Fatal(err)
				}
				consumed++
				if ahead := spoutProduced.Load() - consumed; ahead > maxAhead {
					maxAhead = ahead
				}
				if consumed < 50 {
					time.Sleep(time.Millisecond) // a paced consumer
				}
			}
			if consumed != 1000 {
				t.Fatalf("%d elements, want 1000", consumed)
			}
			if maxAhead > bound {
				t.Fatalf("the producer ran %d elements ahead of its consumer; the bound is %d", maxAhead, bound)
			}
		})
		t.Run(where+"/Duplex", func(t *testing.T) {
			spoutProduced.Store(0)
			sinkFed.Store(0)
			consumed, maxAhead, maxFedAhead := int64(0), int64(0), int64(0)
			for _, err := range casty.Duplex(context.Background(), ref, (*Spout).Echo, fed(1000)) {
				if err != nil {
					t.Fatal(err)
				}
				consumed++
				if ahead := spoutProduced.Load() - consumed; ahead > maxAhead {
					maxAhead = ahead
				}
				if ahead := sinkFed.Load() - consumed; ahead > maxFedAhead {
					maxFedAhead = ahead
				}
				if consumed < 50 {
					time.Sleep(time.Millisecond) // a paced consumer
				}
			}
			if consumed != 1000 {
				t.Fatalf("%d elements, want 1000", consumed)
			}
			if maxAhead > bound {
				t.Fatalf("the handler ran %d elements ahead of its consumer; the bound is %d", maxAhead, bound)
			}
			// The caller's input is at most a bound ahead of the handler, which
			// is at most a bound ahead of the consumer.
			if maxFedAhead > 2*bound {
				t.Fatalf("the caller's input ran %d elements ahead of the results consumed; the bound is %d", maxFedAhead, 2*bound)
			}
		})
		t.Run(where+"/Upload", func(t *testing.T) {
			sinkFed.Store(0)
			sinkAhead.Store(0)
			n, err := casty.Upload(context.Background(), ref, (*Spout).Sink, fed(1000))
			if err != nil || n != 1000 {
				t.Fatalf("upload: %d, %v", n, err)
			}
			if a := sinkAhead.Load(); a > bound {
				t.Fatalf("the caller's sequence ran %d elements ahead of the handler; the bound is %d", a, bound)
			}
		})
	}
}

// A member still serves an opener that does not count elements (a node
// that predates credit frames): its streams run whole, bounded by the mux
// stream's window alone.
func TestStreamFromAnUncountedOpener(t *testing.T) {
	nodes := startCluster(t, 2)
	casty.OpenStreamsUncounted(nodes[0])
	ctx := context.Background()
	ref := Spouts.Ref(nodes[0], keyOn(t, nodes[1], nodes[0], Spouts.Name()))
	n := 0
	for _, err := range casty.Stream(ctx, ref, (*Spout).Count, 1000) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 1000 {
		t.Fatalf("stream: %d elements, want 1000", n)
	}
	if got, err := casty.Upload(ctx, ref, (*Spout).Sink, fed(1000)); err != nil || got != 1000 {
		t.Fatalf("upload: %d, %v", got, err)
	}
	logRef := Logs.Ref(nodes[0], keyOn(t, nodes[1], nodes[0], Logs.Name()))
	want := lines(500)
	i := 0
	for l, err := range casty.Duplex(ctx, logRef, (*Log).Lengths, slices.Values(want)) {
		if err != nil {
			t.Fatal(err)
		}
		if l != len(want[i]) {
			t.Fatalf("duplex element %d: %d", i, l)
		}
		i++
	}
	if i != len(want) {
		t.Fatalf("duplex: %d results, want %d", i, len(want))
	}
}

// An upload's ctx ending ends it with the same error wherever its actor
// runs, and frees the actor.
func TestStreamCtxEndsRemoteUploadLikeLocal(t *testing.T) {
	parallel(t)
	nodes := startCluster(t, 2)
	placements := map[string]*casty.System{"local": nodes[0], "remote": nodes[1]}
	for _, where := range []string{"local", "remote"} {
		for _, how := range []string{"deadline", "cancel"} {
			t.Run(where+"/"+how, func(t *testing.T) {
				key := keyOn(t, placements[where], nodes[0], Spouts.Name())
				ref := Spouts.Ref(nodes[0], key)
				var ctx context.Context
				var cancel context.CancelFunc
				if how == "deadline" {
					ctx, cancel = context.WithTimeout(context.Background(), 300*time.Millisecond)
				} else {
					ctx, cancel = context.WithCancel(context.Background())
				}
				defer cancel()
				elems := func(yield func(string) bool) {
					for i := range 1000 {
						if !yield(fmt.Sprintf("%010d", i)) {
							return
						}
						if i == 0 {
							if how == "cancel" {
								cancel()
							}
							<-ctx.Done() // the caller's input outlives its ctx
						}
					}
				}
				_, err := casty.Upload(ctx, ref, (*Spout).Sink, iter.Seq[string](elems))
				switch how {
				case "deadline":
					if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, casty.ErrTimeout) {
						t.Fatalf("the upload ended with %v, want ErrTimeout (context.DeadlineExceeded)", err)
					}
				case "cancel":
					if !errors.Is(err, context.Canceled) {
						t.Fatalf("the upload ended with %v, want context.Canceled", err)
					}
				}
				cctx, ccancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer ccancel()
				if _, err := casty.Call0(cctx, ref, (*Spout).Ping); err != nil {
					t.Fatalf("the actor is still held after its upload ended: %v", err)
				}
			})
		}
	}
}

// Large elements are bounded in bytes as well: a member holds at most
// Config.Transport.StreamWindow bytes of the caller's elements for a handler that
// has not taken them (plus the one that crossed it), with the mux
// stream's window in flight besides — fewer than StreamBuffer of them here.
func TestStreamRemoteUploadHoldsAWindowOfBigElements(t *testing.T) {
	nodes := startCluster(t, 2)
	ref := Spouts.Ref(nodes[0], keyOn(t, nodes[1], nodes[0], Spouts.Name()))
	const size = 128 << 10
	window := casty.DefaultConfig().Transport.StreamWindow
	big := func(yield func(string) bool) {
		chunk := strings.Repeat("x", size)
		for range 100 {
			sinkFed.Add(1)
			if !yield(chunk) {
				return
			}
		}
	}
	sinkFed.Store(0)
	sinkAhead.Store(0)
	n, err := casty.Upload(context.Background(), ref, (*Spout).SlowSink, iter.Seq[string](big))
	if err != nil || n != 100 {
		t.Fatalf("upload: %d, %v", n, err)
	}
	// Held by the handler's member, in flight, and one in the caller's
	// hand, one being written, one the handler is taking.
	bound := int64(2*window/size + 3)
	if a := sinkAhead.Load(); a > bound {
		t.Fatalf("the caller's sequence ran %d elements of %d KiB ahead of the handler; the bound is %d", a, size>>10, bound)
	}
}
