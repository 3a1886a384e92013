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

// Log is a streaming actor: an append-only log that can be uploaded to,
// tailed and streamed both ways.
type Log struct {
	Entries []string
}

var produced atomic.Int64

func (l *Log) Tail(ctx context.Context, since int) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		for _, e := range l.Entries[min(since, len(l.Entries)):] {
			produced.Add(1)
			if !yield(e, nil) {
				return
			}
		}
	}
}

func (l *Log) Ingest(ctx context.Context, lines iter.Seq2[string, error]) (int, error) {
	n := 0
	for line, err := range lines {
		if err != nil {
			return n, err
		}
		l.Entries = append(l.Entries, line)
		n++
	}
	return n, nil
}

func (l *Log) Lengths(ctx context.Context, lines iter.Seq2[string, error]) iter.Seq2[int, error] {
	return func(yield func(int, error) bool) {
		for line, err := range lines {
			if err != nil {
				yield(0, err)
				return
			}
			if !yield(len(line), nil) {
				return
			}
		}
	}
}

// Forever produces until its consumer leaves.
func (l *Log) Forever(ctx context.Context, _ int) iter.Seq2[int, error] {
	return func(yield func(int, error) bool) {
		for i := 0; ; i++ {
			produced.Add(1)
			if !yield(i, nil) {
				l.Entries = append(l.Entries, "stopped")
				return
			}
		}
	}
}

// Broken fails after three elements.
func (l *Log) Broken(ctx context.Context, _ int) iter.Seq2[int, error] {
	return func(yield func(int, error) bool) {
		for i := range 3 {
			if !yield(i, nil) {
				return
			}
		}
		yield(0, errors.New("disk on fire"))
	}
}

func (l *Log) Len(ctx context.Context) (int, error) { return len(l.Entries), nil }

var Logs = casty.Actor[Log]()

func lines(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("line %d %s", i, strings.Repeat("x", i%7))
	}
	return out
}

func TestUploadAndDownloadIntactInOrder(t *testing.T) {
	ctx := context.Background()
	sys := newSys(t)
	ref := Logs.Ref(sys, "big")
	want := lines(2000)
	n, err := casty.Upload(ctx, ref, (*Log).Ingest, slices.Values(want))
	if err != nil || n != 2000 {
		t.Fatalf("upload: %d, %v", n, err)
	}
	var got []string
	for e, err := range casty.Stream(ctx, ref, (*Log).Tail, 0) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, e)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("download: %d elements, first mismatch somewhere", len(got))
	}
	var lens []int
	for n, err := range casty.Duplex(ctx, ref, (*Log).Lengths, slices.Values(want)) {
		if err != nil {
			t.Fatal(err)
		}
		lens = append(lens, n)
	}
	if len(lens) != 2000 {
		t.Fatalf("duplex: %d results", len(lens))
	}
	for i, l := range lens {
		if l != len(want[i]) {
			t.Fatalf("duplex element %d: %d, want %d", i, l, len(want[i]))
		}
	}
}

func TestSlowConsumerThrottlesProducer(t *testing.T) {
	ctx := context.Background()
	sys := newSys(t)
	ref := Logs.Ref(sys, "paced")
	casty.Upload(ctx, ref, (*Log).Ingest, slices.Values(lines(200)))
	produced.Store(0)
	consumed := int64(0)
	maxAhead := int64(0)
	for _, err := range casty.Stream(ctx, ref, (*Log).Tail, 0) {
		if err != nil {
			t.Fatal(err)
		}
		consumed++
		if ahead := produced.Load() - consumed; ahead > maxAhead {
			maxAhead = ahead
		}
		if consumed%20 == 0 {
			time.Sleep(time.Millisecond) // a slow consumer
		}
	}
	// The channel holds StreamBuffer; one more may be in the producer's hand.
	if maxAhead > casty.StreamBuffer+1 {
		t.Fatalf("producer ran %d elements ahead, bound is %d", maxAhead, casty.StreamBuffer+1)
	}
}

func TestBreakCancelsHandlerAndFreesActor(t *testing.T) {
	ctx := context.Background()
	sys := newSys(t)
	ref := Logs.Ref(sys, "forever")
	n := 0
	for v, err := range casty.Stream(ctx, ref, (*Log).Forever, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if v != n {
			t.Fatalf("element %d is %d", n, v)
		}
		n++
		if n == 100 {
			break
		}
	}
	// The actor is free again: a call gets through promptly, and the
	// producer saw its consumer leave.
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	l, err := casty.Call0(cctx, ref, (*Log).Len)
	if err != nil || l != 1 {
		t.Fatalf("after break: len %d, %v (want the 'stopped' entry)", l, err)
	}
}

func TestStreamErrorArrivesAfterElements(t *testing.T) {
	ctx := context.Background()
	sys := newSys(t)
	var got []int
	var final error
	for v, err := range casty.Stream(ctx, Logs.Ref(sys, "broken"), (*Log).Broken, 0) {
		if err != nil {
			final = err
			break
		}
		got = append(got, v)
	}
	if !slices.Equal(got, []int{0, 1, 2}) || final == nil || final.Error() != "disk on fire" {
		t.Fatalf("got %v then %v", got, final)
	}
}

func TestStreamHoldsItsActor(t *testing.T) {
	ctx := context.Background()
	sys := newSys(t)
	ref := Logs.Ref(sys, "held")
	casty.Upload(ctx, ref, (*Log).Ingest, slices.Values(lines(5*casty.StreamBuffer)))
	next, stop := iter.Pull2(casty.Stream(ctx, ref, (*Log).Tail, 0))
	defer stop()
	if _, _, ok := next(); !ok {
		t.Fatal("no first element")
	}
	// While the stream is open, a call waits.
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := casty.Call0(cctx, ref, (*Log).Len); !errors.Is(err, casty.ErrTimeout) {
		t.Fatalf("call during the stream: %v", err)
	}
	stop()
	if n, err := casty.Call0(ctx, ref, (*Log).Len); err != nil || n != 5*casty.StreamBuffer {
		t.Fatalf("after the stream: %d %v", n, err)
	}
}

func TestStreamingShapesAreChecked(t *testing.T) {
	ctx := context.Background()
	sys := newSys(t)
	ref := Logs.Ref(sys, "shape")
	if _, err := casty.Call(ctx, ref, (*Log).Ingest, casty.Lines(strings.NewReader("x"))); err == nil || !strings.Contains(err.Error(), "streaming handler") {
		t.Fatalf("Call on a streaming handler: %v", err)
	}
	for _, err := range casty.Stream(ctx, casty.Ref[Log]{}, (*Log).Tail, 0) {
		if err == nil {
			t.Fatal("zero Ref streamed")
		}
	}
}

func iterPull[E any](s iter.Seq2[E, error]) (func() (E, error, bool), func()) {
	return iter.Pull2(s)
}

// panicky yields n elements, then panics: a bug in the caller's code.
func panicky(n int) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		for range n {
			if !yield("line", nil) {
				return
			}
		}
		panic("caller bug")
	}
}

// A Duplex runs the caller's input on a goroutine of casty's: a panic there
// must come back as an error, not crash the process.
func TestDuplexInputPanicIsAnError(t *testing.T) {
	sys := newSys(t)
	var got []int
	var final error
	for n, err := range casty.Duplex(context.Background(), Logs.Ref(sys, "panicky"), (*Log).Lengths, panicky(3)) {
		if err != nil {
			final = err
			break
		}
		got = append(got, n)
	}
	if len(got) != 3 || final == nil || !strings.Contains(final.Error(), "caller's input sequence panicked: caller bug") {
		t.Fatalf("got %v, then %v", got, final)
	}
}

// Trickler yields one element, then waits for its ctx before the next.
type Trickler struct{}

var tricklerCancelled atomic.Int32

func (*Trickler) Trickle(ctx context.Context, _ int) iter.Seq2[int, error] {
	return func(yield func(int, error) bool) {
		if !yield(1, nil) {
			return
		}
		<-ctx.Done() // between two yields: only the ctx can end this
		tricklerCancelled.Add(1)
	}
}

var Tricklers = casty.Actor[Trickler](casty.Name("test.Trickler"))

// Breaking out of a stream's loop cancels the handler's ctx, so a handler
// waiting between two elements ends too, and the actor is free again.
func TestBreakCancelsAHandlerWaitingBetweenElements(t *testing.T) {
	before := tricklerCancelled.Load() // the counter outlives a run (-count)
	sys := newSys(t)
	ctx := context.Background()
	ref := Tricklers.Ref(sys, "t")
	for v, err := range casty.Stream(ctx, ref, (*Trickler).Trickle, 0) {
		if err != nil || v != 1 {
			t.Fatalf("first element: %d %v", v, err)
		}
		break
	}
	waitFor(t, 5*time.Second, "the handler's ctx to be cancelled", func() bool { return tricklerCancelled.Load() == before+1 })
	for v, err := range casty.Stream(ctx, ref, (*Trickler).Trickle, 0) {
		if err != nil || v != 1 {
			t.Fatalf("the actor after the break: %d %v", v, err)
		}
		break
	}
}

// A streaming handler is one message: one Received, one Completed after
// its last element (a single commit, whatever the stream's length), and a
// Completed whose Duration covers the handler.
func TestStreamingHandlerCommitsOnce(t *testing.T) {
	rec := &recorder{}
	sys := newSys(t, casty.WithInterceptor(rec.add))
	ctx := context.Background()
	ref := Logs.Ref(sys, "commit-once")
	if n, err := casty.Upload(ctx, ref, (*Log).Ingest, slices.Values([]string{"a", "b", "c"})); err != nil || n != 3 {
		t.Fatalf("upload: %d %v", n, err)
	}
	for _, err := range casty.Stream(ctx, ref, (*Log).Tail, 0) {
		if err != nil {
			t.Fatal(err)
		}
	}
	var seen []string
	for _, ev := range rec.snapshot() {
		switch e := ev.(type) {
		case casty.Received:
			seen = append(seen, "received "+e.Method)
		case casty.Completed:
			seen = append(seen, fmt.Sprintf("completed %s changed=%v", e.Method, e.Changed))
			if e.Duration <= 0 {
				t.Errorf("%s completed with duration %v", e.Method, e.Duration)
			}
		}
	}
	want := []string{"received Ingest", "completed Ingest changed=true", "received Tail", "completed Tail changed=false"}
	if !slices.Equal(seen, want) {
		t.Fatalf("events %q, want %q", seen, want)
	}
}
