package casty

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"iter"
	"reflect"

	"github.com/casty-go/casty/actor"
	"github.com/casty-go/casty/wire"
)

// StreamBuffer is how many elements a stream may run ahead of its
// consumer, in either direction, whether the actor runs on this member or
// another. Past it the producer waits: backpressure is end to end, never an
// unbounded buffer. Counted as a handler's yields (Stream, Duplex) or a
// caller's sequence's elements (Upload, Duplex) against the elements the
// other side's loop has received, a producer is at most StreamBuffer + 1
// ahead: StreamBuffer handed over and not yet received, and the one it is
// handing over. Locally they wait in a channel; across members the
// sender sends an element only once the receiving member granted it
// credit (casty/SPEC.md, "Streams"), as its consumer takes them, and
// Config.Transport.StreamWindow bounds the bytes besides: at most that many in
// flight, and at most that many (plus one element) held by the receiving
// member — all StreamBuffer only while its own side of a Duplex waits for
// credit.
const StreamBuffer = 16

// Elems is what Upload and Duplex accept as the caller's elements: a plain
// sequence — slices.Values(lines), maps.Keys(m) — or one that can fail
// midway, iter.Seq2[E, error], whose first error ends the upload and
// reaches the handler in-band (Lines adapts an io.Reader that way).
// Named types over either function type are accepted too.
type Elems[E any] interface {
	~func(yield func(E) bool) | ~func(yield func(E, error) bool)
}

// seqOf returns elems as the iter.Seq2[E, error] a stream carries; a nil
// sequence is empty.
func seqOf[E any, S Elems[E]](elems S) iter.Seq2[E, error] {
	switch s := any(elems).(type) {
	case iter.Seq2[E, error]:
		return s
	case func(func(E, error) bool):
		return s
	case iter.Seq[E]:
		return withNilErr(s)
	case func(func(E) bool):
		return withNilErr(s)
	}
	// A named type of the caller's: convert it to the function type it is.
	v := reflect.ValueOf(elems)
	if v.IsNil() {
		return nil
	}
	if t := reflect.TypeFor[iter.Seq2[E, error]](); v.Type().ConvertibleTo(t) {
		return v.Convert(t).Interface().(iter.Seq2[E, error])
	}
	return withNilErr(v.Convert(reflect.TypeFor[iter.Seq[E]]()).Interface().(iter.Seq[E]))
}

// withNilErr adapts a plain sequence to a stream's: no element is an error.
func withNilErr[E any](s iter.Seq[E]) iter.Seq2[E, error] {
	if s == nil {
		return nil
	}
	return func(yield func(E, error) bool) {
		for v := range s {
			if !yield(v, nil) {
				return
			}
		}
	}
}

// Lines returns the lines of r, without their line endings (bufio.Scanner's
// ScanLines), as a sequence Upload and Duplex accept:
//
//	n, err := casty.Upload(ctx, log, (*Log).Ingest, casty.Lines(file))
//
// A read error, or a line longer than bufio.MaxScanTokenSize (64 KiB), ends
// the sequence as its last element, so the handler sees it in-band and the
// upload fails with it. Lines does not close r. For other framings, wrap a
// bufio.Scanner with the split function you need the same way.
func Lines(r io.Reader) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			if !yield(sc.Text(), nil) {
				return
			}
		}
		if err := sc.Err(); err != nil {
			yield("", fmt.Errorf("casty: reading lines: %w", err))
		}
	}
}

type item[E any] struct {
	v   E
	err error
}

func resolveShape[T any](ref Ref[T], fn any, shape actor.Shape) (*actor.Method, error) {
	if err := ref.check(); err != nil {
		return nil, err
	}
	m := ref.kind.MethodFor(reflect.ValueOf(fn).Pointer())
	if m == nil {
		return nil, ref.kind.ErrNotHandler(fn)
	}
	if m.Shape != shape {
		return nil, fmt.Errorf("%w: (*%v).%s does not have the shape this helper calls (Stream: M(ctx, Q) iter.Seq2[E, error]; "+
			"Upload: M(ctx, iter.Seq2[E, error]) (R, error); Duplex: M(ctx, iter.Seq2[E, error]) iter.Seq2[F, error]; unary handlers: Call, Call0, Do, Do0)",
			ErrNotAHandler, ref.kind.Type, m.Name)
	}
	return m, nil
}

// produce runs seq on the actor's goroutine, handing each element to out;
// it stops when the consumer goes away (ctx) or seq reports an error.
func produce[E any](ctx context.Context, seq iter.Seq2[E, error], out chan<- item[E]) error {
	if seq == nil {
		return nil
	}
	for v, err := range seq {
		select {
		case out <- item[E]{v, err}:
		case <-ctx.Done():
			return nil // the consumer left: not the actor's failure
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// consume reads the actor's elements for the caller until the stream ends.
// done carries the call's outcome; an error not already delivered in-band
// is delivered last. Once the caller's ctx is done, no other element is
// delivered: the stream ends with ctxErr(), whether the handler saw it
// first or not — as a stream from another member does. ctx is the
// caller's own, not the handler's (derived from it, and cancelled with
// cancel): a derived context is cancelled just after its parent, by the
// goroutine that ended the parent, and the consumer may take many elements
// meanwhile when that goroutine is descheduled.
func consume[E any](ctx context.Context, yield func(E, error) bool, out <-chan item[E], done <-chan error, cancel func(), ctxErr func() error) {
	var zero E
	for {
		select {
		case it := <-out:
			if ctx.Err() != nil {
				cancel()
				<-done
				yield(zero, ctxErr())
				return
			}
			if !yield(it.v, it.err) || it.err != nil {
				cancel()
				<-done
				return
			}
		case err := <-done:
		drain:
			for ctx.Err() == nil {
				select {
				case it := <-out:
					if !yield(it.v, it.err) || it.err != nil {
						return
					}
				default:
					break drain
				}
			}
			if ctx.Err() != nil {
				err = ctxErr()
			}
			if err != nil {
				yield(zero, err)
			}
			return
		}
	}
}

// feed sends the caller's elements to in until seq ends, the handler is
// done, or ctx ends; then closes in.
func feed[E any](ctx context.Context, seq iter.Seq2[E, error], in chan<- item[E], handlerDone <-chan struct{}) {
	defer close(in)
	if seq == nil {
		return
	}
	for v, err := range seq {
		select {
		case in <- item[E]{v, err}:
		case <-handlerDone:
			return
		case <-ctx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}

// guarded wraps a caller's input sequence (Upload, Duplex), which casty
// iterates on a goroutine of its own for a Duplex or an upload to another
// node: a panic in the caller's code there would crash the process, so it
// ends the sequence with an error instead, which the handler sees and the
// caller gets back — the same for every stream shape and placement.
// A panic in the loop body — casty's own code — is not the caller's: it
// goes on.
func guarded[E any](seq iter.Seq2[E, error]) iter.Seq2[E, error] {
	if seq == nil {
		return nil
	}
	return func(yield func(E, error) bool) {
		inBody, stopped := false, false
		defer func() {
			if r := recover(); r != nil {
				if inBody {
					panic(r)
				}
				if !stopped {
					var zero E
					yield(zero, fmt.Errorf("casty: the caller's input sequence panicked: %v", r))
				}
			}
		}()
		for v, err := range seq {
			inBody = true
			stopped = !yield(v, err)
			inBody = false
			if stopped {
				return
			}
		}
	}
}

// drainSeq is the iterator a handler sees for the caller's elements.
func drainSeq[E any](ctx context.Context, in <-chan item[E]) iter.Seq2[E, error] {
	return func(yield func(E, error) bool) {
		var zero E
		for {
			select {
			case it, ok := <-in:
				if !ok || !yield(it.v, it.err) {
					return
				}
			case <-ctx.Done():
				yield(zero, ctx.Err())
				return
			}
		}
	}
}

type serverStream[T, Q, E any] struct {
	actor.Envelope
	m   func(*T, context.Context, Q) iter.Seq2[E, error]
	q   Q
	out chan item[E]
}

func (s *serverStream[T, Q, E]) Invoke(ctx context.Context, state any) error {
	return produce(ctx, s.m(state.(*T), ctx, s.q), s.out)
}

func (s *serverStream[T, Q, E]) Arg() any    { return s.q }
func (s *serverStream[T, Q, E]) Result() any { return nil }

// Stream calls a server-streaming handler — M(ctx, Q) iter.Seq2[E, error]
// — and returns its elements as they come. Nothing is sent until the
// sequence is ranged over. The handler holds its actor for the stream's
// lifetime; a consumer slower than the producer throttles it (at most
// StreamBuffer elements ahead, on this member or another); breaking the
// loop cancels the handler and frees the actor; an error arrives in-band
// after the elements before it.
//
// Config.Actors.CallTimeout does not apply: bound a stream with ctx. Once ctx is
// done the loop gets no other element: the stream ends with an error that
// matches ErrTimeout and context.DeadlineExceeded (a *TimeoutError naming
// the call) when ctx's deadline passed, context.Canceled when ctx was
// cancelled — the same wherever the actor runs — and the handler's ctx is
// cancelled, on another member too.
func Stream[T, Q, E any](ctx context.Context, ref Ref[T], m func(*T, context.Context, Q) iter.Seq2[E, error], q Q) iter.Seq2[E, error] {
	return func(yield func(E, error) bool) {
		so := startStream(ref.sys, ref.kind, m) // nil without metrics (streamtel.go)
		defer so.end(nil)
		yield = received(so, yield)
		var zero E
		meth, err := resolveShape(ref, m, actor.ServerStream)
		if err != nil {
			yield(zero, err)
			return
		}
		if ctx == nil {
			ctx = context.Background()
		}
		if cl := ref.sys.cl; cl != nil {
			arg, err := wire.Marshal(q)
			if err != nil {
				yield(zero, err)
				return
			}
			fl, err := cl.openStream(ctx, ref.kind, ref.key, meth.Name, arg, actor.ServerStream)
			if err != nil {
				yield(zero, err)
				return
			}
			if fl != nil {
				remoteStreamSeq[E](ctx, fl)(yield)
				return
			}
		}
		hctx, cancel := context.WithCancel(ctx)
		defer cancel()
		e := &serverStream[T, Q, E]{m: m, q: q, out: make(chan item[E], StreamBuffer)}
		e.Init(e, meth)
		e.Streaming()
		done := make(chan error, 1)
		go func() { done <- ask(hctx, ref.sys, ref.kind, ref.key, &e.Envelope) }()
		consume(ctx, yield, e.out, done, cancel, func() error { return ctxError(ctx, ref.kind, ref.key, meth.Name) })
	}
}

type clientStream[T, E, R any] struct {
	actor.Envelope
	m  func(*T, context.Context, iter.Seq2[E, error]) (R, error)
	in chan item[E]
	r  R
}

func (s *clientStream[T, E, R]) Invoke(ctx context.Context, state any) (err error) {
	s.r, err = s.m(state.(*T), ctx, drainSeq(ctx, s.in))
	return err
}

func (s *clientStream[T, E, R]) Arg() any    { return nil }
func (s *clientStream[T, E, R]) Result() any { return s.r }

// Upload calls a client-streaming handler — M(ctx, iter.Seq2[E, error])
// (R, error) — feeding it the caller's elements, and returns its result:
//
//	n, err := casty.Upload(ctx, log, (*Log).Ingest, slices.Values(lines))
//
// elems is a plain iter.Seq[E] or an iter.Seq2[E, error] (Elems); an error
// element ends it and reaches the handler in-band. The caller's sequence
// runs on the caller's goroutine, at most StreamBuffer elements ahead of
// the handler, on this member or another. An upload that fails once ctx
// has ended returns the error Stream ends with (ErrTimeout or
// context.Canceled); one whose handler returned keeps its result.
//
// The whole upload is one message to the actor: its state is committed
// once, when the handler returns — not per element. An upload that fails
// midway (the caller's sequence yields an error or panics, ctx ends, the
// connection to the owner breaks) shows the handler an error element; what
// it did before that is handled like any failed handler's changes: kept
// and committed under the supervisor's Keep (the default), discarded under
// Reset or Stop (docs/guide.md, "Supervision"). A handler that must apply
// all or nothing collects the elements and applies them only once the
// sequence ended without error.
func Upload[T, E, R any, S Elems[E]](ctx context.Context, ref Ref[T], m func(*T, context.Context, iter.Seq2[E, error]) (R, error), elems S) (R, error) {
	return upload(ctx, ref, m, seqOf[E](elems))
}

func upload[T, E, R any](ctx context.Context, ref Ref[T], m func(*T, context.Context, iter.Seq2[E, error]) (R, error), elems iter.Seq2[E, error]) (_ R, err error) {
	so := startStream(ref.sys, ref.kind, m) // nil without metrics (streamtel.go)
	defer func() { so.end(err) }()
	elems = sent(so, elems)
	var zero R
	meth, err := resolveShape(ref, m, actor.ClientStream)
	if err != nil {
		return zero, err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if cl := ref.sys.cl; cl != nil {
		fl, err := cl.openStream(ctx, ref.kind, ref.key, meth.Name, nil, actor.ClientStream)
		if err != nil {
			return zero, err
		}
		if fl != nil {
			return remoteUpload[E, R](ctx, fl, elems)
		}
	}
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	e := &clientStream[T, E, R]{m: m, in: make(chan item[E], StreamBuffer)}
	e.Init(e, meth)
	e.Streaming()
	done := make(chan error, 1)
	handlerDone := make(chan struct{})
	go func() {
		done <- ask(hctx, ref.sys, ref.kind, ref.key, &e.Envelope)
		close(handlerDone)
	}()
	feed(hctx, guarded(elems), e.in, handlerDone)
	if err := <-done; err != nil {
		if ctx.Err() != nil {
			// The handler failed once ctx ended (most likely on the error
			// element ctx's end gave it): the caller gets ctx's error, as
			// from another member.
			return zero, ctxError(ctx, ref.kind, ref.key, meth.Name)
		}
		return zero, err
	}
	return e.r, nil
}

type duplexStream[T, E, F any] struct {
	actor.Envelope
	m   func(*T, context.Context, iter.Seq2[E, error]) iter.Seq2[F, error]
	in  chan item[E]
	out chan item[F]
}

func (s *duplexStream[T, E, F]) Invoke(ctx context.Context, state any) error {
	return produce(ctx, s.m(state.(*T), ctx, drainSeq(ctx, s.in)), s.out)
}

func (s *duplexStream[T, E, F]) Arg() any    { return nil }
func (s *duplexStream[T, E, F]) Result() any { return nil }

// Duplex calls a duplex handler — M(ctx, iter.Seq2[E, error])
// iter.Seq2[F, error] — feeding it the caller's elements (from a goroutine
// of its own, so the caller can range over the results meanwhile) and
// returning its elements as they come:
//
//	for n, err := range casty.Duplex(ctx, log, (*Log).Lengths, slices.Values(lines)) {
//
// elems is a plain iter.Seq[E] or an iter.Seq2[E, error], as in Upload.
// Backpressure, cancellation, ctx and in-band errors behave as in Stream; the
// state is committed once, when the handler returns, as in Upload.
func Duplex[T, E, F any, S Elems[E]](ctx context.Context, ref Ref[T], m func(*T, context.Context, iter.Seq2[E, error]) iter.Seq2[F, error], elems S) iter.Seq2[F, error] {
	return duplex(ctx, ref, m, seqOf[E](elems))
}

func duplex[T, E, F any](ctx context.Context, ref Ref[T], m func(*T, context.Context, iter.Seq2[E, error]) iter.Seq2[F, error], elems iter.Seq2[E, error]) iter.Seq2[F, error] {
	return func(yield func(F, error) bool) {
		so := startStream(ref.sys, ref.kind, m) // nil without metrics (streamtel.go)
		defer so.end(nil)
		yield = received(so, yield)
		elems := sent(so, elems) // a copy: the sequence may be ranged over again
		var zero F
		meth, err := resolveShape(ref, m, actor.DuplexStream)
		if err != nil {
			yield(zero, err)
			return
		}
		if ctx == nil {
			ctx = context.Background()
		}
		if cl := ref.sys.cl; cl != nil {
			fl, err := cl.openStream(ctx, ref.kind, ref.key, meth.Name, nil, actor.DuplexStream)
			if err != nil {
				yield(zero, err)
				return
			}
			if fl != nil {
				remoteDuplex[E, F](ctx, fl, elems)(yield)
				return
			}
		}
		hctx, cancel := context.WithCancel(ctx)
		defer cancel()
		e := &duplexStream[T, E, F]{m: m, in: make(chan item[E], StreamBuffer), out: make(chan item[F], StreamBuffer)}
		e.Init(e, meth)
		e.Streaming()
		done := make(chan error, 1)
		handlerDone := make(chan struct{})
		fed := make(chan struct{})
		go func() {
			done <- ask(hctx, ref.sys, ref.kind, ref.key, &e.Envelope)
			close(handlerDone)
		}()
		go func() {
			defer close(fed)
			feed(hctx, guarded(elems), e.in, handlerDone)
		}()
		consume(ctx, yield, e.out, done, cancel, func() error { return ctxError(ctx, ref.kind, ref.key, meth.Name) })
		cancel()
		<-fed
	}
}
