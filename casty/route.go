package casty

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/casty-go/casty/actor"
	"github.com/casty-go/casty/mux"
	"github.com/casty-go/casty/ring"
	"github.com/casty-go/casty/wire"
)

// Calls between nodes travel as one request on the mux message lane:
// callReq out, callResp back, both msgpack (wire/SPEC.md). A node serves
// only the keys it owns on its ring; a caller whose ring disagrees is told
// "wrong owner", refreshes its view and retries (twice at most), which is
// safe because the call ran nowhere.

const (
	opCall    uint8 = 1
	opStateOf uint8 = 2
)

type callReq struct {
	Op       uint8    `msgpack:"o"`
	Kind     string   `msgpack:"k"`
	Key      string   `msgpack:"y"`
	Method   string   `msgpack:"m,omitempty"`
	Arg      []byte   `msgpack:"a,omitempty"`
	Chain    []string `msgpack:"c,omitempty"`
	Deadline int64    `msgpack:"d,omitempty"` // unix ns

	// Binary envelopes only (codec.go): the key's ring point when the
	// caller knows it, and what decoding resolved the names to.
	at   placement
	kind *actor.Kind
	meth *actor.Method
}

type callResp struct {
	Result []byte     `msgpack:"r,omitempty"`
	Ok     bool       `msgpack:"ok,omitempty"`
	Err    *wireError `msgpack:"e,omitempty"`

	enc []byte // the whole envelope, when already encoded (resultResp)
}

// Error codes on the wire.
const (
	codeFailed      = "failed"
	codeTimeout     = "timeout"
	codeUnavailable = "unavailable"
	codeReentrancy  = "reentrancy"
	codeUnknown     = "unknown"
	codeQuorum      = "quorum"
	codeMoving      = "moving"
	codeWrongOwner  = "wrong-owner"
)

type wireError struct {
	Code      string `msgpack:"c"`
	Message   string `msgpack:"m"`
	Kind      string `msgpack:"k,omitempty"`
	Key       string `msgpack:"y,omitempty"`
	Method    string `msgpack:"f,omitempty"`
	Directive int    `msgpack:"d,omitempty"`
	Cause     string `msgpack:"s,omitempty"` // the sentinel a failure wraps
	ErrType   string `msgpack:"t,omitempty"` // registered error type
	ErrData   []byte `msgpack:"b,omitempty"`
}

var sentinels = []struct {
	code string
	err  error
}{
	{codeTimeout, ErrTimeout}, {codeReentrancy, ErrReentrancy}, {codeUnknown, ErrUnknownActorType},
	{codeQuorum, ErrQuorumUnavailable}, {codeMoving, ErrRangeMoving}, {codeUnavailable, ErrActorUnavailable},
}

func sentinelCode(err error) string {
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			return s.code
		}
	}
	return ""
}

func sentinelFor(code string) error {
	for _, s := range sentinels {
		if s.code == code {
			return s.err
		}
	}
	return nil
}

// encodeError turns an error from the host into its wire form.
func encodeError(err error) *wireError {
	var fe *actor.FailedError
	if errors.As(err, &fe) {
		we := &wireError{Code: codeFailed, Message: fe.Message, Kind: fe.Kind, Key: fe.Key, Method: fe.Method,
			Directive: int(fe.Directive), Cause: sentinelCode(fe.Err)}
		for e := fe.Err; e != nil; e = errors.Unwrap(e) {
			t := reflect.TypeOf(e)
			if t.Kind() == reflect.Pointer {
				t = t.Elem()
			}
			if name, ok := wire.Default.NameOf(t); ok {
				if b, merr := wire.Marshal(e); merr == nil {
					we.ErrType, we.ErrData = name, b
				}
				break
			}
		}
		return we
	}
	var re *actor.ReentrancyError
	if errors.As(err, &re) {
		return &wireError{Code: codeReentrancy, Message: err.Error(), Kind: re.Kind, Key: re.Key}
	}
	if code := sentinelCode(err); code != "" {
		return &wireError{Code: code, Message: err.Error()}
	}
	return &wireError{Code: codeUnavailable, Message: err.Error()}
}

// remoteError is a failure cause that came from another node: its message,
// and the sentinel it matched there.
type remoteError struct {
	msg      string
	sentinel error
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.sentinel }

// decode turns a wire error back into the error the caller would have got
// locally: the same sentinels, *ActorFailedError with the registered
// original when its type is known here.
func (we *wireError) decode() error {
	switch we.Code {
	case codeFailed:
		fe := &actor.FailedError{Kind: we.Kind, Key: we.Key, Method: we.Method, Message: we.Message, Directive: actor.Directive(we.Directive)}
		if t, ok := wire.Default.TypeOf(we.ErrType); ok && we.ErrType != "" {
			v := reflect.New(t)
			if wire.Unmarshal(we.ErrData, v.Interface()) == nil {
				if e, ok := v.Interface().(error); ok {
					fe.Err = e
				} else if e, ok := v.Elem().Interface().(error); ok {
					fe.Err = e
				}
			}
		}
		if fe.Err == nil && we.Cause != "" {
			fe.Err = &remoteError{msg: we.Message, sentinel: sentinelFor(we.Cause)}
		}
		return fe
	case codeReentrancy:
		return &actor.ReentrancyError{Kind: we.Kind, Key: we.Key}
	case codeTimeout:
		return &remoteError{msg: we.Message, sentinel: ErrTimeout}
	}
	if s := sentinelFor(we.Code); s != nil {
		return &remoteError{msg: we.Message, sentinel: s}
	}
	return &remoteError{msg: we.Message, sentinel: ErrActorUnavailable}
}

// ---- serving ----

// remoteInvoke runs a call that arrived from another node, by reflection.
type remoteInvoke struct {
	actor.Envelope
	x      servedCtx
	meth   *actor.Method
	arg    reflect.Value
	result reflect.Value
}

func (r *remoteInvoke) Invoke(ctx context.Context, state any) error {
	in := []reflect.Value{reflect.ValueOf(state), reflect.ValueOf(ctx)}
	if r.meth.Arg != nil {
		in = append(in, r.arg)
	}
	out := r.meth.Func.Call(in)
	if r.meth.Result != nil {
		r.result = out[0]
	}
	if errV := out[len(out)-1]; !errV.IsNil() {
		return errV.Interface().(error)
	}
	return nil
}

func (r *remoteInvoke) Arg() any {
	if r.meth.Arg == nil {
		return nil
	}
	return r.arg.Interface()
}

func (r *remoteInvoke) Result() any {
	if !r.result.IsValid() {
		return nil
	}
	return r.result.Interface()
}

// handle serves one request from another node.
func (cl *cluster) handle(ctx context.Context, _ *mux.Session, payload []byte) ([]byte, error) {
	var req callReq
	if err := decodeCallReq(payload, &req); err != nil {
		return nil, err
	}
	resp := cl.serveReq(ctx, &req)
	b := resp.envelope()
	if max := cl.sys.cfg.MaxMessage; len(b) > max {
		// mux would refuse it, and the caller could not tell that the
		// handler ran: say so, as the handler's outcome.
		b = appendCallResp(nil, &callResp{Err: &wireError{Code: codeFailed, Kind: req.Kind, Key: req.Key, Method: req.Method,
			Message: fmt.Sprintf("casty: the result encodes to %d bytes, over Config.MaxMessage (%d); the handler ran and its effects stand: return large data through Stream", len(b), max)}})
	}
	return b, nil
}

// envelope returns r's wire form: the result is already encoded into it
// when r came from resultResp.
func (r *callResp) envelope() []byte {
	if r.Err == nil && r.enc != nil {
		return r.enc
	}
	return appendCallResp(nil, r)
}

// resultResp is the answer carrying result, msgpack-encoded straight into
// the response envelope.
func resultResp[R any](k *actor.Kind, m *actor.Method, result R) callResp {
	b, err := wire.AppendValue(appendCallRespHead(make([]byte, 0, 32), &callResp{}), result)
	if err != nil {
		return errResp(codeUnavailable, fmt.Sprintf("casty: %s.%s: encoding the result: %v", k.Name, m.Name, err))
	}
	return callResp{enc: b}
}

func argResp(k *actor.Kind, m *actor.Method, err error) callResp {
	return errResp(codeUnknown, fmt.Sprintf("casty: %s.%s: argument: %v", k.Name, m.Name, err))
}

// typedUnary serves a call from another node without reflection; Call,
// Call0, Do and Do0 attach one to their method the first time this process
// uses them (typedInvokers), the argument and result types being known
// there.
type typedUnary interface {
	serve(ctx context.Context, rc remoteCall) callResp
}

// typedInvokers is the process's typed invokers by handler. Attaching
// happens once per handler and lookups on every call, so lookups read an
// immutable map through one atomic load and attaching copies it.
var typedInvokers typedTable

type typedTable struct {
	mu sync.Mutex // serialises attaching
	m  atomic.Pointer[map[*actor.Method]typedUnary]
}

// get returns m's typed invoker; ok is false when none was attached.
func (t *typedTable) get(m *actor.Method) (inv typedUnary, ok bool) {
	if p := t.m.Load(); p != nil {
		inv, ok = (*p)[m]
	}
	return inv, ok
}

// attach gives m the invoker inv makes, unless it has one (or is set to
// reflection: a nil invoker).
func (t *typedTable) attach(m *actor.Method, inv func() typedUnary) {
	if _, ok := t.get(m); ok {
		return
	}
	t.set(m, inv(), false)
}

// set stores inv as m's invoker: always when force is set, else only if m
// has none.
func (t *typedTable) set(m *actor.Method, inv typedUnary, force bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var cur map[*actor.Method]typedUnary
	if p := t.m.Load(); p != nil {
		cur = *p
	}
	if _, ok := cur[m]; ok && !force {
		return
	}
	next := make(map[*actor.Method]typedUnary, len(cur)+1)
	maps.Copy(next, cur)
	next[m] = inv
	t.m.Store(&next)
}

// remoteCall is a call from another node, admitted for a handler of k.
// It is passed by value: nothing of the request escapes to the heap.
type remoteCall struct {
	cl       *cluster
	k        *actor.Kind
	m        *actor.Method
	key      string
	arg      []byte
	at       placement
	deadline int64 // unix ns; 0 for none
	chain    []string
}

func (cl *cluster) remoteCall(k *actor.Kind, m *actor.Method, req *callReq) remoteCall {
	return remoteCall{cl: cl, k: k, m: m, key: req.Key, arg: req.Arg, at: req.at,
		deadline: req.Deadline, chain: req.Chain}
}

// ask runs e on this node's host, with x — kept in the struct that holds
// e — as its context. It reports false with the answer when the call
// failed.
func (rc remoteCall) ask(ctx context.Context, e *actor.Envelope, x *servedCtx) (callResp, bool) {
	*x = servedCtx{Context: ctx, deadline: rc.deadline, k: rc.k, key: rc.key, at: rc.at}
	err := rc.cl.sys.host.AskHere(actor.WithChain(x, rc.chain), rc.k, rc.key, e)
	switch {
	case err == nil:
		return callResp{}, true
	case errors.Is(err, errMisplaced):
		return rc.cl.wrongOwner(rc.k.Name, rc.key), false
	}
	return callResp{Err: encodeError(err)}, false
}

func (cl *cluster) wrongOwner(kind, key string) callResp {
	return errResp(codeWrongOwner, fmt.Sprintf("casty: node %s does not own %s/%s on its ring", cl.addr, kind, key))
}

func errResp(code, msg string) callResp {
	return callResp{Err: &wireError{Code: code, Message: msg}}
}

// admit decides whether this node takes work for req's kind and key: it
// refuses while leaving (moving), for a kind it does not know, and for a
// key its ring gives to another node (wrong owner). Calls and streams both
// ask.
func (cl *cluster) admit(req *callReq) (*actor.Kind, *callResp) {
	if cl.closed.Load() {
		r := errResp(codeMoving, "casty: node "+cl.addr+" is leaving")
		return nil, &r
	}
	k := req.kind
	if k == nil {
		k = kinds.get(req.Kind)
	}
	if k != nil && cl.hiding.Load() {
		if _, hidden := cl.hidden.Load(req.Kind); hidden {
			k = nil
		}
	}
	if k == nil {
		r := errResp(codeUnknown, fmt.Sprintf("casty: unknown actor type: %s is not declared on node %s", req.Kind, cl.addr))
		return nil, &r
	}
	if !k.Service && (!cl.owns(k, req) || cl.refuse.Load() > 0 && cl.refuse.Add(-1) >= 0) {
		r := cl.wrongOwner(req.Kind, req.Key)
		return nil, &r
	}
	return k, nil
}

func (cl *cluster) serveReq(ctx context.Context, req *callReq) callResp {
	k, refused := cl.admit(req)
	if refused != nil {
		return *refused
	}
	switch req.Op {
	case opStateOf:
		if req.Deadline != 0 {
			ctx = &servedCtx{Context: ctx, deadline: req.Deadline}
		}
		ctx = actor.WithChain(ctx, req.Chain)
		var b []byte
		ok, err := cl.sys.host.Peek(ctx, k, req.Key, func(state any) (err error) {
			b, err = wire.Marshal(state)
			return err
		})
		if err != nil {
			return callResp{Err: encodeError(err)}
		}
		return callResp{Ok: ok, Result: b}
	case opCall:
		meth := req.meth
		if meth == nil || req.kind != k {
			meth = k.MethodByName(req.Method)
		}
		if meth == nil || meth.Shape != actor.Unary {
			return errResp(codeUnknown, fmt.Sprintf("casty: unknown actor type: %s has no handler %q on node %s", req.Kind, req.Method, cl.addr))
		}
		if t, _ := typedInvokers.get(meth); t != nil {
			return t.serve(ctx, cl.remoteCall(k, meth, req))
		}
		inv := &remoteInvoke{meth: meth}
		if meth.Arg != nil {
			p := reflect.New(meth.Arg)
			if len(req.Arg) > 0 {
				if err := wire.Unmarshal(req.Arg, p.Interface()); err != nil {
					return argResp(k, meth, err)
				}
			}
			inv.arg = p.Elem()
		}
		inv.Init(inv, meth)
		if resp, ok := cl.remoteCall(k, meth, req).ask(ctx, &inv.Envelope, &inv.x); !ok {
			return resp
		}
		if meth.Result != nil {
			return resultResp(k, meth, inv.result.Interface())
		}
		return callResp{}
	}
	return errResp(codeUnknown, fmt.Sprintf("casty: unknown operation %d", req.Op))
}

// owns reports whether this node owns req's key on its current ring. A
// call's ring point, sent by the caller, is taken as is here; a call that
// would activate its key checks it against the key first (pointCheck), so
// a wrong point never places an actor on a node that does not own it.
func (cl *cluster) owns(k *actor.Kind, req *callReq) bool {
	if cl.lite {
		return false
	}
	point := req.at.point
	if !req.at.known {
		point = ring.Point(k.Name, req.Key)
	}
	owner, ok := cl.view.Load().ring.Owner(point)
	return ok && owner == cl.self
}

// ---- calling ----

// dest is where a call goes.
type dest struct {
	local bool
	id    ring.NodeID
	addr  string
}

func (cl *cluster) target(k *actor.Kind, key string, at placement) (dest, error) {
	v := cl.view.Load()
	if k.Service {
		if !cl.lite {
			return dest{local: true}, nil
		}
		if len(v.members) == 0 {
			return dest{}, fmt.Errorf("%w: no member to serve %s", ErrActorUnavailable, k.Name)
		}
		m := v.members[cl.rr.Add(1)%uint64(len(v.members))]
		id, err := ringParse(m.ID)
		return dest{id: id, addr: m.Addr}, err
	}
	if !at.known {
		at.point = ring.Point(k.Name, key)
	}
	owner, ok := v.ring.Owner(at.point)
	if !ok {
		return dest{}, fmt.Errorf("%w: %s/%s: no full member in the cluster", ErrActorUnavailable, k.Name, key)
	}
	if owner == cl.self {
		return dest{local: true}, nil
	}
	return dest{id: owner, addr: v.addrs[owner]}, nil
}

// reqBufs holds request envelopes for reuse: mux copies a request into
// the connection's queue before Request returns.
var reqBufs = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

const maxPooledReq = 64 << 10

// routeAttempts is how many owners a call tries when rings disagree.
const routeAttempts = 2

// dispatch sends a call (or a StateOf) to the key's owner when that is
// another node. It returns remote=false, doing nothing, when this node owns
// the key: the caller then runs it locally with no serialization. encode
// produces the argument's bytes, at most once.
func (cl *cluster) dispatch(ctx context.Context, k *actor.Kind, key string, at placement, req callReq, encode func(dst []byte) ([]byte, error)) (remote bool, resp callResp, err error) {
	if ctx == nil {
		ctx = context.Background()
	}
	if !k.Service {
		at = placementOf(k, key, at)
	}
	// The common case first, with nothing allocated: this node owns the
	// key. (Not for a lite member's service call, which is never local:
	// target would take a turn of the round robin that route then skips.)
	if !k.Service || !cl.lite {
		if d, err := cl.target(k, key, at); err != nil || d.local {
			return err != nil, resp, err
		}
	}
	// Without a deadline of the caller's, the call gets CallTimeout: the
	// owner learns it in the request, and the wait for the answer ends
	// there too (mux's RequestTimeout, with no context or timer allocated).
	deadline, hasDeadline := ctx.Deadline()
	var timeout time.Duration
	if !hasDeadline {
		timeout = cl.sys.cfg.CallTimeout
		deadline = time.Now().Add(timeout)
	}
	var payload []byte
	buf := reqBufs.Get().(*[]byte)
	defer func() {
		if cap(payload) <= maxPooledReq {
			*buf = payload[:0]
		}
		reqBufs.Put(buf)
	}()
	local, err := cl.route(ctx, k, key, req.Method, at, func(sess *mux.Session, d dest) (*wireError, error) {
		if payload == nil {
			req.Kind, req.Key, req.Chain = k.Name, key, actor.ChainOf(ctx)
			req.Deadline = deadline.UnixNano()
			req.at = at
			payload = appendCallReqHead((*buf)[:0], &req)
			if encode != nil {
				if payload, err = encode(payload); err != nil {
					return nil, fmt.Errorf("casty: %s/%s.%s: encoding the argument: %w", k.Name, key, req.Method, err)
				}
			}
			if max := cl.sys.cfg.MaxMessage; len(payload) > max {
				return nil, fmt.Errorf("casty: %s/%s.%s: the call encodes to %d bytes, over Config.MaxMessage (%d); nothing was sent: send large data through Upload", k.Name, key, req.Method, len(payload), max)
			}
		}
		if !hasDeadline {
			if timeout = time.Until(deadline); timeout <= 0 {
				return nil, &actor.TimeoutError{Kind: k.Name, Key: key, Method: req.Method}
			}
		}
		remoteWaits.Add(1)
		b, err := sess.RequestTimeout(ctx, mux.LaneMessage, payload, timeout)
		remoteWaits.Add(-1)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctxError(ctx, k, key, req.Method)
			}
			if errors.Is(err, context.DeadlineExceeded) {
				return nil, &actor.TimeoutError{Kind: k.Name, Key: key, Method: req.Method}
			}
			return nil, fmt.Errorf("%w: %s/%s.%s on %s: %v", ErrActorUnavailable, k.Name, key, req.Method, d.addr, err)
		}
		resp = callResp{}
		if err := decodeCallResp(b, &resp); err != nil {
			return nil, fmt.Errorf("%w: malformed reply from %s: %v", ErrActorUnavailable, d.addr, err)
		}
		if resp.Err != nil && (resp.Err.Code == codeWrongOwner || resp.Err.Code == codeMoving) {
			return resp.Err, nil
		}
		if resp.Err != nil {
			return nil, resp.Err.decode()
		}
		return nil, nil
	})
	return !local, resp, err
}

// route runs exchange against the key's owner, as this node's ring has
// it. It retries, at most routeAttempts in all, only where provably
// nothing ran: a dial that failed, or an owner that refused the work as
// not its own (wrong owner, or leaving) — exchange returns that refusal.
// Between attempts it waits a little for the membership view to move. It
// reports local, without calling exchange, when this node owns the key.
// Calls and stream opens both route through here.
func (cl *cluster) route(ctx context.Context, k *actor.Kind, key, method string, at placement,
	exchange func(sess *mux.Session, d dest) (refused *wireError, err error)) (local bool, err error) {
	var why []string
	for range routeAttempts {
		if cl.closed.Load() {
			return false, fmt.Errorf("%w: system is closed", ErrActorUnavailable)
		}
		changed := cl.changes()
		d, err := cl.target(k, key, at)
		if err != nil {
			return false, err
		}
		if d.local {
			return true, nil
		}
		sess, err := cl.node.Connect(ctx, mux.NodeID(d.id), d.addr)
		if err != nil {
			if ctx.Err() != nil {
				return false, ctxError(ctx, k, key, method)
			}
			// Nothing was sent: safe to retry once the view moves.
			why = append(why, fmt.Sprintf("dial %s: %v", d.addr, err))
			cl.awaitChange(ctx, changed)
			continue
		}
		refused, err := exchange(sess, d)
		if refused != nil {
			why = append(why, refused.Message)
			cl.awaitChange(ctx, changed)
			continue
		}
		return false, err
	}
	return false, fmt.Errorf("%w: %s/%s: owners disagree after %d attempts: %v", ErrActorUnavailable, k.Name, key, routeAttempts, why)
}

// awaitChange waits a little for the membership view to move.
func (cl *cluster) awaitChange(ctx context.Context, changed <-chan struct{}) {
	t := time.NewTimer(250 * time.Millisecond)
	defer t.Stop()
	select {
	case <-changed:
	case <-t.C:
	case <-ctx.Done():
	}
}

func ctxError(ctx context.Context, k *actor.Kind, key, method string) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &actor.TimeoutError{Kind: k.Name, Key: key, Method: method}
	}
	return ctx.Err()
}

func ringParse(s string) (ring.NodeID, error) { return ring.ParseNodeID(s) }

// remoteWaits counts this process's callers waiting for another node's
// answer: the host's Config.ExternalWaits.
var remoteWaits atomic.Int32
