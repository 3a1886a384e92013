package casty

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"iter"
	"reflect"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/casty-go/casty/actor"
	"github.com/casty-go/casty/mux"
	"github.com/casty-go/casty/wire"
)

// Across nodes, each actor stream is a mux stream of its own: yamux's
// per-stream window bounds its bytes in flight, and credit frames its
// elements (stream_credit.go), so backpressure is end to end. The opener's
// header is a callReq (opStream, envelope.go); then both sides exchange
// frames (SPEC.md):
//
//	kind byte | uvarint length | payload
//
// The server's first frame is a status (an empty one means "accepted";
// otherwise a wireError, after which nothing else comes). Elements travel
// as frameElem (msgpack); an in-band error as frameErr (a wireError); the
// caller's side of an upload ends with frameEnd; a client stream's result
// comes back as frameResult (msgpack), a failure as frameErr; frameCredit
// grants elements. Either side closing the stream ends it: the server's
// handler sees its consumer leave, the caller sees the owner die.

const (
	frameStatus byte = 'S'
	frameElem   byte = 'E'
	frameErr    byte = 'X'
	frameEnd    byte = 'D'
	frameResult byte = 'R'
)

type frameConn struct {
	st  *mux.Stream
	r   *bufio.Reader
	max int
	wmu sync.Mutex
	buf []byte
}

func newFrameConn(st *mux.Stream, max int) *frameConn {
	return &frameConn{st: st, r: bufio.NewReader(st), max: max}
}

func (f *frameConn) write(kind byte, payload []byte) error {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	f.buf = append(f.buf[:0], kind)
	f.buf = binary.AppendUvarint(f.buf, uint64(len(payload)))
	f.buf = append(f.buf, payload...)
	_, err := f.st.Write(f.buf)
	return err
}

func (f *frameConn) writeValue(kind byte, v any) error {
	b, err := wire.Marshal(v)
	if err != nil {
		return err
	}
	return f.write(kind, b)
}

// writeError writes we as a frame of kind (frameStatus or frameErr).
func (f *frameConn) writeError(kind byte, we *wireError) error {
	return f.write(kind, appendWireError(nil, we))
}

// errFrameTooLarge marks a stream frame over the message cap: the peer
// broke the framing, the connection did not. It matches ErrMessageTooLarge.
var errFrameTooLarge = fmt.Errorf("%w: a stream frame over the message cap", ErrMessageTooLarge)

func (f *frameConn) read() (byte, []byte, error) {
	kind, err := f.r.ReadByte()
	if err != nil {
		return 0, nil, err
	}
	n, err := binary.ReadUvarint(f.r)
	if err != nil {
		return 0, nil, err
	}
	if n > uint64(f.max) {
		return 0, nil, fmt.Errorf("%w: %d bytes, the cap is %d", errFrameTooLarge, n, f.max)
	}
	b, err := readN(f.r, int(n))
	return kind, b, err
}

// readN reads exactly n bytes, growing its buffer as they arrive instead
// of trusting the length up front: a peer that announces a large frame and
// sends little costs what it sent, not what it announced.
func readN(r io.Reader, n int) ([]byte, error) {
	const chunk = 64 << 10
	b := make([]byte, 0, min(n, chunk))
	for len(b) < n {
		k := min(n-len(b), chunk)
		b = slices.Grow(b, k)
		m, err := io.ReadFull(r, b[len(b):len(b)+k])
		b = b[:len(b)+m]
		if err != nil {
			return b, err
		}
	}
	return b, nil
}

// ---- server side ----

func (cl *cluster) handleStream(from *mux.Session, st *mux.Stream) {
	defer st.Close()
	fc := newFrameConn(st, cl.sys.cfg.Transport.MaxMessage)
	var req callReq
	err := decodeCallReq(st.Header(), &req)
	if err == nil && req.Op == opSpy {
		if !operatorAllowed(from) {
			fc.writeError(frameStatus, forbidden("spying").Err)
			return
		}
		cl.serveSpy(st, fc, &req)
		return
	}
	if errors.Is(err, ErrCallChainTooLong) {
		fc.writeError(frameStatus, encodeError(err))
		return
	}
	if err != nil || req.Op != opStream {
		fc.writeError(frameStatus, &wireError{Code: codeUnknown, Message: "casty: malformed stream header"})
		return
	}
	refuse := func(r callResp) { fc.writeError(frameStatus, r.Err) }
	k, refused := cl.admit(&req)
	if refused != nil {
		refuse(*refused)
		return
	}
	meth := k.MethodByName(req.Method)
	if meth == nil || meth.Shape == actor.Unary {
		refuse(errResp(codeUnknown, fmt.Sprintf("casty: %s has no streaming handler %q on node %s", req.Kind, req.Method, cl.addr)))
		return
	}
	if err := fc.write(frameStatus, nil); err != nil {
		return
	}
	ctx, cancelCtx := context.WithCancel(actor.WithChain(context.Background(), req.Chain))
	defer cancelCtx()
	if t := cl.sys.tel; t != nil && t.tracer != nil {
		var span trace.Span
		ctx, span = t.serverSpan(ctx, &req)
		defer func() { endSpan(span, err, outcomeOf(err)) }()
	}
	// The caller gone: cancel the handler and unblock a write waiting for
	// window credit that will never come.
	cancel := func() {
		cancelCtx()
		st.SetWriteDeadline(time.Unix(1, 0))
	}
	inv := &remoteStream{meth: meth, fc: fc, cancel: cancel}
	if req.credit {
		inv.fl = newFlow(fc, cl.sys.cfg.Transport.StreamWindow)
	}
	if meth.Shape == actor.ServerStream && meth.Arg != nil {
		p := reflect.New(meth.Arg)
		if len(req.Arg) > 0 {
			if err := wire.Unmarshal(req.Arg, p.Interface()); err != nil {
				fc.writeError(frameErr, &wireError{Code: codeUnknown, Message: err.Error()})
				return
			}
		}
		inv.arg = p.Elem()
	}
	inv.Init(inv, meth)
	inv.Streaming()
	// The caller closing its end cancels the handler: watch for it. A
	// stream counted in credit frames reads everything on its flow's
	// goroutine (stream_credit.go), which does; otherwise uploads read the
	// stream themselves, so only pure server streams watch here.
	switch {
	case inv.fl != nil:
		go inv.fl.run(cancel)
		defer inv.fl.stop()
		if meth.Shape != actor.ServerStream && inv.fl.grant(streamCredit) != nil {
			return
		}
	case meth.Shape == actor.ServerStream:
		go func() {
			io.Copy(io.Discard, fc.r)
			cancel()
		}()
	}
	err = cl.sys.host.Ask(ctx, k, req.Key, &inv.Envelope)
	if err != nil {
		cl.noteLost(k, meth.Name, err)
	}
	switch {
	case err != nil && !inv.sentErr:
		fc.writeError(frameErr, encodeError(err))
	case err == nil && meth.Shape == actor.ClientStream:
		if meth.Result != nil && inv.result.IsValid() {
			fc.writeValue(frameResult, inv.result.Interface())
		} else {
			fc.write(frameResult, nil)
		}
	case err == nil:
		fc.write(frameEnd, nil)
	}
}

// remoteStream runs a streaming handler for a caller on another node.
type remoteStream struct {
	actor.Envelope
	meth    *actor.Method
	fc      *frameConn
	cancel  context.CancelFunc
	fl      *flow // nil unless the caller counts elements in credit frames
	arg     reflect.Value
	result  reflect.Value
	sentErr bool
}

func (r *remoteStream) Invoke(ctx context.Context, state any) error {
	in := []reflect.Value{reflect.ValueOf(state), reflect.ValueOf(ctx)}
	switch r.meth.Shape {
	case actor.ServerStream:
		if r.meth.Arg != nil {
			in = append(in, r.arg)
		}
	case actor.ClientStream, actor.DuplexStream:
		in = append(in, r.incoming(ctx))
	}
	out := r.meth.Func.Call(in)
	if r.meth.Shape == actor.ClientStream {
		if r.meth.Result != nil {
			r.result = out[0]
		}
		if e := out[len(out)-1]; !e.IsNil() {
			return e.Interface().(error)
		}
		return nil
	}
	return r.produce(ctx, out[0])
}

// produce iterates the handler's iter.Seq2 and writes each element.
func (r *remoteStream) produce(ctx context.Context, seq reflect.Value) error {
	if seq.IsNil() {
		return nil
	}
	var failed error
	yieldT := seq.Type().In(0)
	yield := reflect.MakeFunc(yieldT, func(args []reflect.Value) []reflect.Value {
		if ctx.Err() != nil {
			return []reflect.Value{reflect.ValueOf(false)}
		}
		if e := args[1]; !e.IsNil() {
			failed = e.Interface().(error)
			r.sentErr = true
			r.fc.writeError(frameErr, encodeError(&actor.FailedError{Kind: "", Message: failed.Error(), Err: failed}))
			return []reflect.Value{reflect.ValueOf(false)}
		}
		if r.fl != nil && r.fl.acquire(ctx) != nil {
			return []reflect.Value{reflect.ValueOf(false)} // the caller left
		}
		if err := r.fc.writeValue(frameElem, args[0].Interface()); err != nil {
			r.cancel() // the caller is gone
			return []reflect.Value{reflect.ValueOf(false)}
		}
		return []reflect.Value{reflect.ValueOf(true)}
	})
	seq.Call([]reflect.Value{yield})
	return failed
}

// incoming builds the iter.Seq2[E, error] a handler reads the caller's
// elements from.
func (r *remoteStream) incoming(ctx context.Context) reflect.Value {
	seqT := r.meth.Func.Type().In(2)
	elemT := r.meth.Arg
	return reflect.MakeFunc(seqT, func(args []reflect.Value) []reflect.Value {
		yield := args[0]
		for {
			kind, b, err := r.next(ctx)
			if err != nil {
				yield.Call([]reflect.Value{reflect.Zero(elemT), reflect.ValueOf(fmt.Errorf("%w: the caller went away: %w", ErrActorUnavailable, err))})
				r.cancel()
				return nil
			}
			switch kind {
			case frameEnd:
				return nil
			case frameElem:
				if r.fl != nil {
					r.fl.took()
				}
				p := reflect.New(elemT)
				if err := wire.Unmarshal(b, p.Interface()); err != nil {
					yield.Call([]reflect.Value{reflect.Zero(elemT), reflect.ValueOf(err)})
					return nil
				}
				if !yield.Call([]reflect.Value{p.Elem(), reflect.Zero(reflect.TypeFor[error]())})[0].Bool() {
					return nil
				}
			case frameErr:
				var inBand error = &remoteError{msg: "casty: malformed error frame from the caller"}
				if we, err := decodeWireError(b); err == nil {
					inBand = we.inBand()
				}
				yield.Call([]reflect.Value{reflect.Zero(elemT), reflect.ValueOf(&inBand).Elem()})
				return nil
			}
		}
	})
}

// next returns the caller's next frame for the handler's input.
func (r *remoteStream) next(ctx context.Context) (byte, []byte, error) {
	if r.fl == nil {
		return r.fc.read()
	}
	f, err := r.fl.next(ctx)
	return f.kind, f.b, err
}

// ---- caller side ----

// openStream opens a stream to the key's owner, retrying once if the ring
// moved (nothing has run yet), counted in credit frames (stream_credit.go).
// For a handler of shape that sends elements (Stream, Duplex) it grants
// streamCredit of them. The flow it returns is running: its caller must
// stop it. It returns nil when this node owns the key.
func (cl *cluster) openStream(ctx context.Context, k *actor.Kind, key, method string, arg []byte, shape actor.Shape) (_ *flow, err error) {
	if t := cl.sys.tel; t != nil && t.tracer != nil {
		var span trace.Span
		ctx, span = t.tracer.Start(ctx, k.Name+"."+method, trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(attrKind.String(k.Name), attrMethod.String(method), attrKey.String(key), spanOK))
		defer func() { endSpan(span, err, outcomeOf(err)) }()
	}
	req := callReq{Op: opStream, Kind: k.Name, Key: key, Method: method, Arg: arg, Chain: actor.ChainOf(ctx), credit: !cl.uncounted}
	req.trace = cl.sys.tel.outgoing(ctx)
	header := appendCallReq(nil, &req)
	var fc *frameConn
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(cl.sys.cfg.Actors.CallTimeout)
	}
	_, err = cl.route(ctx, deadline, k, key, method, placement{}, func(sess *mux.Session, d dest) (*wireError, error) {
		st, err := sess.OpenStream(ctx, header)
		if err != nil {
			return nil, fmt.Errorf("%w: %s/%s.%s: opening a stream to %s: %w", ErrActorUnavailable, k.Name, key, method, d.addr, err)
		}
		c := newFrameConn(st, cl.sys.cfg.Transport.MaxMessage)
		kind, b, err := c.read()
		if err != nil || kind != frameStatus {
			st.Close()
			if ctx.Err() != nil {
				return nil, ctxError(ctx, k, key, method)
			}
			if err != nil && !errors.Is(err, errFrameTooLarge) {
				// The stream was open: its member may have written the
				// status and started the handler before the stream broke.
				return nil, fmt.Errorf("%w: %s/%s.%s: no answer from %s, the handler may have started: %w (%v)", ErrActorUnavailable, k.Name, key, method, d.addr, ErrConnectionLost, err)
			}
			return nil, fmt.Errorf("%w: %s/%s.%s: no answer from %s: %v", ErrActorUnavailable, k.Name, key, method, d.addr, err)
		}
		if len(b) == 0 {
			fc = c
			return nil, nil
		}
		st.Close()
		we, err := decodeWireError(b)
		if err != nil {
			return nil, fmt.Errorf("%w: malformed stream status from %s", ErrActorUnavailable, d.addr)
		}
		if we.Code == codeWrongOwner || we.Code == codeMoving || we.Code == codeLeaving || we.Code == codeNotApplied || we.Code == codeUnactivated {
			return we, nil
		}
		return nil, we.decode()
	})
	if err != nil || fc == nil {
		return nil, err
	}
	fl := newFlow(fc, cl.sys.cfg.Transport.StreamWindow)
	fl.kind, fl.key, fl.method = k, key, method
	fl.uncounted = cl.uncounted
	if shape != actor.ClientStream && !fl.uncounted {
		fl.grant(streamCredit) // a failed write shows as the stream breaking
	}
	if fl.direct = shape == actor.ServerStream; fl.direct {
		fl.unhook = context.AfterFunc(ctx, func() { fc.st.SetReadDeadline(time.Unix(1, 0)) })
	} else {
		go fl.run(nil)
	}
	return fl, nil
}

// readElems yields the owner's elements until the stream ends. Once ctx
// is done it yields no other element: the stream ends with ctx's error, as
// a local one does (ctxError).
func readElems[E any](ctx context.Context, fl *flow, yield func(E, error) bool) {
	var zero E
	for {
		f, err := fl.next(ctx)
		if ctx.Err() != nil {
			yield(zero, fl.ctxErr(ctx))
			return
		}
		if err != nil {
			yield(zero, fmt.Errorf("%w: stream from the owner broke: %w", ErrActorUnavailable, err))
			return
		}
		switch f.kind {
		case frameElem:
			fl.took()
			var v E
			if err := wire.Unmarshal(f.b, &v); err != nil {
				yield(zero, err)
				return
			}
			if !yield(v, nil) {
				return
			}
		case frameErr:
			we, err := decodeWireError(f.b)
			if err != nil {
				yield(zero, err)
				return
			}
			if we.Code == codeFailed && we.Kind == "" {
				yield(zero, we.inBand()) // the handler's in-band error
			} else {
				yield(zero, we.decode())
			}
			return
		case frameEnd:
			return
		default:
			yield(zero, fmt.Errorf("%w: unexpected frame %q from the owner", ErrActorUnavailable, f.kind))
			return
		}
	}
}

// writeElems sends the caller's elements, each once the owner granted
// credit for it, then the end frame.
func writeElems[E any](ctx context.Context, fl *flow, elems iter.Seq2[E, error]) error {
	if elems != nil {
		for v, err := range elems {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err != nil {
				fl.fc.writeError(frameErr, encodeError(&actor.FailedError{Message: err.Error(), Err: err}))
				return err
			}
			if err := fl.acquire(ctx); err != nil {
				return err
			}
			if err := fl.fc.writeValue(frameElem, v); err != nil {
				return err
			}
		}
	}
	return fl.fc.write(frameEnd, nil)
}

func remoteStreamSeq[E any](ctx context.Context, fl *flow) iter.Seq2[E, error] {
	return func(yield func(E, error) bool) {
		defer fl.stop() // the owner's handler sees its consumer leave
		readElems(ctx, fl, yield)
	}
}

func remoteUpload[E, R any](ctx context.Context, fl *flow, elems iter.Seq2[E, error]) (R, error) {
	var r R
	wctx, cancel := context.WithCancel(ctx)
	werr := make(chan error, 1)
	go func() { werr <- writeElems(wctx, fl, guarded(elems)) }()
	var f frame
	got := false
	select {
	case f, got = <-fl.frames:
	case <-ctx.Done():
		select { // an answer already here still counts: the handler ran
		case f, got = <-fl.frames:
		default:
		}
	}
	cancel()
	fl.stop()
	<-werr
	if !got || f.kind != frameResult && ctx.Err() != nil {
		// No answer, or a failure once ctx ended: ctx's error, as locally.
		if ctx.Err() != nil {
			return r, fl.ctxErr(ctx)
		}
		return r, fmt.Errorf("%w: upload to the owner broke: %w", ErrActorUnavailable, fl.readErr())
	}
	switch f.kind {
	case frameResult:
		var err error
		if len(f.b) > 0 {
			err = wire.Unmarshal(f.b, &r)
		}
		return r, err
	case frameErr:
		we, err := decodeWireError(f.b)
		if err != nil {
			return r, err
		}
		return r, we.decode()
	}
	return r, fmt.Errorf("%w: unexpected frame %q", ErrActorUnavailable, f.kind)
}

func remoteDuplex[E, F any](ctx context.Context, fl *flow, elems iter.Seq2[E, error]) iter.Seq2[F, error] {
	return func(yield func(F, error) bool) {
		wctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			writeElems(wctx, fl, guarded(elems))
		}()
		defer func() { // also when the caller's loop body panics
			cancel()
			fl.stop()
			<-done
		}()
		readElems(ctx, fl, yield)
	}
}
