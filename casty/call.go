package casty

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"github.com/casty-go/casty/actor"
	"github.com/casty-go/casty/wire"
)

// errZeroRef is the error of a call through a zero Ref.
var errZeroRef = fmt.Errorf("%w: the Ref addresses nothing (it is a zero Ref[T] value, or its System is nil): "+
	"get one from Kind.Ref(sys, key) or ServiceKind.Ref(sys)", ErrZeroRef)

// check refuses a Ref that cannot address an actor: a zero Ref, or an
// actor's Ref with an empty key (a service's Ref has none).
func (r Ref[T]) check() error {
	if r.sys == nil || r.kind == nil {
		return errZeroRef
	}
	if r.key == "" && !r.kind.Service {
		return fmt.Errorf("%w: the empty string is not the key of any %s actor: pass a non-empty key to Kind.Ref", ErrInvalidKey, r.kind.Name)
	}
	return nil
}

// resolve finds the handler fn (a method expression like (*T).Greet)
// names, and what keeps a call through ref from reaching it: meth is the
// handler whenever fn is one of the kind's, even when err refuses the call
// (the telemetry counts such a call under its handler), and err is nil
// when the call can be made.
func resolve[T any](ref Ref[T], fn any) (meth *actor.Method, err error) {
	err = ref.check()
	if ref.sys == nil || ref.kind == nil {
		return nil, err
	}
	m := ref.kind.MethodFor(reflect.ValueOf(fn).Pointer())
	if err != nil {
		return m, err
	}
	if m == nil {
		return nil, ref.kind.ErrNotHandler(fn)
	}
	if m.Shape != actor.Unary {
		return m, fmt.Errorf("%w: (*%v).%s is a streaming handler: call it with Stream, Upload or Duplex, not Call, Call0, Do or Do0",
			ErrNotAHandler, ref.kind.Type, m.Name)
	}
	return m, nil
}

// decodeResult turns a remote reply into the typed result.
func decodeResult[R any](resp callResp, err error) (R, error) {
	var r R
	if err != nil {
		return r, err
	}
	if len(resp.Result) > 0 {
		if err := wire.UnmarshalValue(resp.Result, &r); err != nil {
			return r, fmt.Errorf("%w: decoding the result: %v", ErrActorUnavailable, err)
		}
	}
	return r, nil
}

// ask runs e on the local host; an answer (Answer) comes back as the error
// the handler gave it.
func ask(ctx context.Context, sys *System, k *actor.Kind, key string, e *actor.Envelope) error {
	return answered(askMarked(ctx, sys, k, key, e))
}

// askMarked is ask with an answer still marked as an *actor.AnswerError,
// for the telemetry of Call, Call0, Do and Do0 (answered takes it off).
func askMarked(ctx context.Context, sys *System, k *actor.Kind, key string, e *actor.Envelope) error {
	if ctx == nil {
		ctx = context.Background()
	}
	return sys.host.Ask(ctx, k, key, e)
}

type callQR[T, Q, R any] struct {
	actor.Envelope
	m func(*T, context.Context, Q) (R, error)
	q Q
	r R
}

func (e *callQR[T, Q, R]) Invoke(ctx context.Context, state any) (err error) {
	e.r, err = e.m(state.(*T), ctx, e.q)
	return err
}

func (e *callQR[T, Q, R]) Arg() any    { return e.q }
func (e *callQR[T, Q, R]) Result() any { return e.r }
func (e *callR[T, R]) Arg() any        { return nil }
func (e *callR[T, R]) Result() any     { return e.r }
func (e *doQ[T, Q]) Arg() any          { return e.q }
func (e *doQ[T, Q]) Result() any       { return nil }

// againUntilApplied runs call again, after a first try failed with err,
// an errNotApplied: the owner was fenced (a newer owner, or a newer
// placement it had not heard of yet) before any replica took the commit,
// or at a read's confirm (a read changes nothing), so running the call again — on the rightful owner, once the placement
// has spread — is safe. It tries until the call no longer fails that way,
// at most notAppliedTries times in all, pausing 10 ms, doubling, between
// tries, and stops when ctx ends. Callers reach it only on that failure,
// so a call that succeeds allocates no closure.
func againUntilApplied[R any](ctx context.Context, err error, call func() (R, error)) (R, error) {
	var r R
	pause := 10 * time.Millisecond
	for try := 1; try < notAppliedTries && notApplied(err); try++ {
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return r, err
		}
		pause *= 2
		r, err = call()
	}
	return r, err
}

// notAppliedTries bounds againUntilApplied: 6 tries span about 300 ms of
// pauses, longer than a placement change takes to spread.
const notAppliedTries = 6

// Call invokes the handler m — a method expression such as (*Greeter).Greet
// — with argument q on the actor ref points to, and returns its result. The
// compiler checks the actor type, argument and result. Call honours ctx's
// deadline and cancellation (Config.Actors.CallTimeout when ctx has none). A
// handler's error arrives as *ActorFailedError, unless the handler marked
// it with Answer: then as itself; infrastructure failures as the sentinels
// of this package. A zero Ref fails with ErrZeroRef, an actor's Ref with an
// empty key with ErrInvalidKey, and m when it is not a handler of T with
// ErrNotAHandler, each before anything is sent.
func Call[T, Q, R any](ctx context.Context, ref Ref[T], m func(*T, context.Context, Q) (R, error), q Q) (R, error) {
	meth, err := resolve(ref, m)
	var obs callObs
	if t := ref.sys.telemetry(); t != nil && meth != nil {
		ctx, obs = t.startCall(ctx, ref.kind, meth, ref.key)
	}
	var r R
	if err == nil {
		r, err = callOnce(ctx, ref, meth, m, q)
		if notApplied(err) {
			r, err = againUntilApplied(ctx, err, func() (R, error) { return callOnce(ctx, ref, meth, m, q) })
		}
	}
	obs.end(err)
	return r, answered(err)
}

// callOnce makes a call of Call that resolve let through.
func callOnce[T, Q, R any](ctx context.Context, ref Ref[T], meth *actor.Method, m func(*T, context.Context, Q) (R, error), q Q) (R, error) {
	var zero R
	if cl := ref.sys.cl; cl != nil {
		typedInvokers.attach(meth, func() typedUnary { return servQR[T, Q, R]{m} })
		if resp, local, err := cl.dispatch(ctx, ref.kind, ref.key, ref.at, callReq{Op: opCall, Method: meth.Name}, func(dst []byte) ([]byte, error) { return wire.AppendValue(dst, q) }); !local {
			return decodeResult[R](resp, err)
		}
	}
	e := &callQR[T, Q, R]{m: m, q: q}
	e.Init(e, meth)
	if err := askMarked(ctx, ref.sys, ref.kind, ref.key, &e.Envelope); err != nil {
		return zero, err
	}
	return e.r, nil
}

type callR[T, R any] struct {
	actor.Envelope
	m func(*T, context.Context) (R, error)
	r R
}

func (e *callR[T, R]) Invoke(ctx context.Context, state any) (err error) {
	e.r, err = e.m(state.(*T), ctx)
	return err
}

// Call0 is Call for handlers without an argument: M(ctx) (R, error).
func Call0[T, R any](ctx context.Context, ref Ref[T], m func(*T, context.Context) (R, error)) (R, error) {
	meth, err := resolve(ref, m)
	var obs callObs
	if t := ref.sys.telemetry(); t != nil && meth != nil {
		ctx, obs = t.startCall(ctx, ref.kind, meth, ref.key)
	}
	var r R
	if err == nil {
		r, err = call0Once(ctx, ref, meth, m)
		if notApplied(err) {
			r, err = againUntilApplied(ctx, err, func() (R, error) { return call0Once(ctx, ref, meth, m) })
		}
	}
	obs.end(err)
	return r, answered(err)
}

// call0Once makes a call of Call0 that resolve let through.
func call0Once[T, R any](ctx context.Context, ref Ref[T], meth *actor.Method, m func(*T, context.Context) (R, error)) (R, error) {
	var zero R
	if cl := ref.sys.cl; cl != nil {
		typedInvokers.attach(meth, func() typedUnary { return servR[T, R]{m} })
		if resp, local, err := cl.dispatch(ctx, ref.kind, ref.key, ref.at, callReq{Op: opCall, Method: meth.Name}, nil); !local {
			return decodeResult[R](resp, err)
		}
	}
	e := &callR[T, R]{m: m}
	e.Init(e, meth)
	if err := askMarked(ctx, ref.sys, ref.kind, ref.key, &e.Envelope); err != nil {
		return zero, err
	}
	return e.r, nil
}

type doQ[T, Q any] struct {
	actor.Envelope
	m func(*T, context.Context, Q) error
	q Q
}

func (e *doQ[T, Q]) Invoke(ctx context.Context, state any) error {
	return e.m(state.(*T), ctx, e.q)
}

// Do is Call for handlers without a result: M(ctx, Q) error.
func Do[T, Q any](ctx context.Context, ref Ref[T], m func(*T, context.Context, Q) error, q Q) error {
	meth, err := resolve(ref, m)
	var obs callObs
	if t := ref.sys.telemetry(); t != nil && meth != nil {
		ctx, obs = t.startCall(ctx, ref.kind, meth, ref.key)
	}
	if err == nil {
		err = doOnce(ctx, ref, meth, m, q)
		if notApplied(err) {
			_, err = againUntilApplied(ctx, err, func() (struct{}, error) { return struct{}{}, doOnce(ctx, ref, meth, m, q) })
		}
	}
	obs.end(err)
	return answered(err)
}

// doOnce makes a call of Do that resolve let through.
func doOnce[T, Q any](ctx context.Context, ref Ref[T], meth *actor.Method, m func(*T, context.Context, Q) error, q Q) error {
	if cl := ref.sys.cl; cl != nil {
		typedInvokers.attach(meth, func() typedUnary { return servQ[T, Q]{m} })
		if _, local, err := cl.dispatch(ctx, ref.kind, ref.key, ref.at, callReq{Op: opCall, Method: meth.Name}, func(dst []byte) ([]byte, error) { return wire.AppendValue(dst, q) }); !local {
			return err
		}
	}
	e := &doQ[T, Q]{m: m, q: q}
	e.Init(e, meth)
	return askMarked(ctx, ref.sys, ref.kind, ref.key, &e.Envelope)
}

type do0[T any] struct {
	actor.Envelope
	m func(*T, context.Context) error
}

func (e *do0[T]) Invoke(ctx context.Context, state any) error { return e.m(state.(*T), ctx) }

// Do0 is Call for handlers with neither argument nor result: M(ctx) error.
func Do0[T any](ctx context.Context, ref Ref[T], m func(*T, context.Context) error) error {
	meth, err := resolve(ref, m)
	var obs callObs
	if t := ref.sys.telemetry(); t != nil && meth != nil {
		ctx, obs = t.startCall(ctx, ref.kind, meth, ref.key)
	}
	if err == nil {
		err = do0Once(ctx, ref, meth, m)
		if notApplied(err) {
			_, err = againUntilApplied(ctx, err, func() (struct{}, error) { return struct{}{}, do0Once(ctx, ref, meth, m) })
		}
	}
	obs.end(err)
	return answered(err)
}

// do0Once makes a call of Do0 that resolve let through.
func do0Once[T any](ctx context.Context, ref Ref[T], meth *actor.Method, m func(*T, context.Context) error) error {
	if cl := ref.sys.cl; cl != nil {
		typedInvokers.attach(meth, func() typedUnary { return serv0[T]{m} })
		if _, local, err := cl.dispatch(ctx, ref.kind, ref.key, ref.at, callReq{Op: opCall, Method: meth.Name}, nil); !local {
			return err
		}
	}
	e := &do0[T]{m: m}
	e.Init(e, meth)
	return askMarked(ctx, ref.sys, ref.kind, ref.key, &e.Envelope)
}

// ---- typed invokers for calls from other nodes (serve.go: typedUnary) ----

// The envelopes of calls from other nodes: each holds the invoker, the
// call's context (servedCtx) and encodes its reply (replier), so that
// serving a call allocates them once.

type servedQR[T, Q, R any] struct {
	callQR[T, Q, R]
	x servedCtx
}

func (e *servedQR[T, Q, R]) appendReply(dst []byte) callResp {
	return appendResult(dst, e.x.k, e.x.m, e.r)
}

type servedR[T, R any] struct {
	callR[T, R]
	x servedCtx
}

func (e *servedR[T, R]) appendReply(dst []byte) callResp {
	return appendResult(dst, e.x.k, e.x.m, e.r)
}

// noReply is the reply of a handler that returns only an error.
type noReply struct{}

func (noReply) appendReply(dst []byte) callResp {
	return callResp{enc: appendCallRespHead(dst, &callResp{})}
}

type servQR[T, Q, R any] struct {
	m func(*T, context.Context, Q) (R, error)
}

func (s servQR[T, Q, R]) serve(ctx context.Context, rc remoteCall) callResp {
	e := &servedQR[T, Q, R]{callQR: callQR[T, Q, R]{m: s.m}}
	if len(rc.arg) > 0 {
		if err := wire.UnmarshalValue(rc.arg, &e.q); err != nil {
			return argResp(rc.k, rc.m, err)
		}
	}
	e.Init(e, rc.m)
	if resp, ok := rc.ask(ctx, &e.Envelope, &e.x, e); !ok {
		return resp
	}
	return e.x.answer(e)
}

type servR[T, R any] struct {
	m func(*T, context.Context) (R, error)
}

func (s servR[T, R]) serve(ctx context.Context, rc remoteCall) callResp {
	e := &servedR[T, R]{callR: callR[T, R]{m: s.m}}
	e.Init(e, rc.m)
	if resp, ok := rc.ask(ctx, &e.Envelope, &e.x, e); !ok {
		return resp
	}
	return e.x.answer(e)
}

type servQ[T, Q any] struct {
	m func(*T, context.Context, Q) error
}

func (s servQ[T, Q]) serve(ctx context.Context, rc remoteCall) callResp {
	e := &struct {
		doQ[T, Q]
		x servedCtx
	}{doQ: doQ[T, Q]{m: s.m}}
	if len(rc.arg) > 0 {
		if err := wire.UnmarshalValue(rc.arg, &e.q); err != nil {
			return argResp(rc.k, rc.m, err)
		}
	}
	e.Init(e, rc.m)
	resp, _ := rc.ask(ctx, &e.Envelope, &e.x, noReply{})
	return resp
}

type serv0[T any] struct {
	m func(*T, context.Context) error
}

func (s serv0[T]) serve(ctx context.Context, rc remoteCall) callResp {
	e := &struct {
		do0[T]
		x servedCtx
	}{do0: do0[T]{m: s.m}}
	e.Init(e, rc.m)
	resp, _ := rc.ask(ctx, &e.Envelope, &e.x, noReply{})
	return resp
}
