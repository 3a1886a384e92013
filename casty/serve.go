package casty

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/trace"

	"github.com/casty-go/casty/actor"
	"github.com/casty-go/casty/mux"
	"github.com/casty-go/casty/ring"
	"github.com/casty-go/casty/wire"
)

// The serving side: a request from another node (envelope.go) is admitted
// (admit: the node is not leaving, knows the kind and owns the key on its
// ring), then run on this node's host — a unary call through its typed
// invoker when this process has one, else by reflection — and answered
// with a callResp. A node serves only the keys it owns: a caller whose
// ring disagrees is told "wrong owner" and retries (route.go), which is
// safe because the call ran nowhere.

// remoteInvoke runs a call that arrived from another node, by reflection.
type remoteInvoke struct {
	actor.Envelope
	x      servedCtx
	meth   *actor.Method
	arg    reflect.Value
	result reflect.Value
}

// appendReply encodes the reply to the call r ran (replier).
func (r *remoteInvoke) appendReply(dst []byte) callResp {
	if r.meth.Result == nil {
		return callResp{enc: appendCallRespHead(dst, &callResp{})}
	}
	return appendResult(dst, r.x.k, r.meth, r.result.Interface())
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
func (cl *cluster) handle(ctx context.Context, from *mux.Session, payload []byte) ([]byte, error) {
	var req callReq
	if err := decodeCallReq(payload, &req); err != nil {
		if errors.Is(err, ErrCallChainTooLong) {
			// A well-formed refusal: the caller learns why, as a sentinel.
			return appendCallResp(nil, &callResp{Err: encodeError(err)}), nil
		}
		return nil, err
	}
	if req.early != 0 {
		// Only a member has a copy that can take the answer.
		if from == nil || !from.Member() {
			req.early = 0
		} else {
			req.from = ring.NodeID(from.Peer())
		}
	}
	if req.Op == opStateOf && !operatorAllowed(from) {
		refusal := forbidden("reading an actor's state")
		return refusal.envelope(), nil
	}
	if req.Op == opMemberTable {
		resp := cl.serveMemberTable()
		return resp.envelope(), nil
	}
	if req.Op == opAcceptLoss || req.Op == opPlacementStatus {
		resp := cl.serveOperator(ctx, from, &req)
		return resp.envelope(), nil
	}
	var span trace.Span
	if t := cl.sys.tel; t != nil && t.tracer != nil && req.Op == opCall {
		ctx, span = t.serverSpan(ctx, &req)
	}
	resp := cl.serveReq(ctx, &req)
	if span != nil {
		endServerSpan(span, resp.Err)
	}
	b := resp.envelope()
	if max := cl.sys.cfg.Transport.MaxMessage; len(b) > max {
		// mux would refuse it, and the caller could not tell that the
		// handler ran: say so, as the handler's outcome.
		b = appendCallResp(nil, &callResp{Err: &wireError{Code: codeFailed, Kind: req.Kind, Key: req.Key, Method: req.Method, Cause: codeMessageTooLarge,
			Message: fmt.Sprintf("casty: the result encodes to %d bytes, over Config.Transport.MaxMessage (%d); the handler ran and its effects stand: return large data through Stream", len(b), max)}})
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
	return appendResult(make([]byte, 0, 32), k, m, result)
}

// appendResult is resultResp encoding at the end of dst.
func appendResult[R any](dst []byte, k *actor.Kind, m *actor.Method, result R) callResp {
	b, err := wire.AppendValue(appendCallRespHead(dst, &callResp{}), result)
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
	early    earlyAnswer // tag 0: the caller wants no early answer
}

func (cl *cluster) remoteCall(k *actor.Kind, m *actor.Method, req *callReq) remoteCall {
	return remoteCall{cl: cl, k: k, m: m, key: req.Key, arg: req.Arg, at: req.at,
		deadline: req.Deadline, chain: req.Chain, early: earlyAnswer{to: req.from, tag: req.early}}
}

// ask runs e on this node's host, with x — kept in the struct that holds
// e — as its context. It reports false with the answer when the call
// failed. reply, when the caller wants an early answer (rc.early), encodes
// the reply once the handler ran, for the commit to carry (early.go).
func (rc remoteCall) ask(ctx context.Context, e *actor.Envelope, x *servedCtx, reply replier) (callResp, bool) {
	*x = servedCtx{Context: ctx, deadline: rc.deadline, k: rc.k, m: rc.m, key: rc.key, at: rc.at}
	if rc.early.tag != 0 {
		x.early = rc.early
		x.early.reply = reply
	}
	err := rc.cl.sys.host.AskHere(actor.WithChain(x, rc.chain), rc.k, rc.key, e)
	switch {
	case err == nil:
		return callResp{}, true
	case errors.Is(err, errMisplaced):
		return rc.cl.wrongOwner(rc.k.Name, rc.key), false
	case notApplied(err):
		return errResp(codeNotApplied, err.Error()), false
	case errors.Is(err, ErrNoReadQuorum) && !fromHandler(err):
		// The key's activation here reached no read quorum; its handler
		// did not run (a handler that returned another actor's such
		// failure did run).
		return errResp(codeUnactivated, err.Error()), false
	case !rc.k.Service && rc.cl.closed.Load() && unrun(err):
		// Admitted just before this member began to close, then refused
		// or dropped by its closing host before it ran: the caller goes
		// to the next owner, as for any call that arrives while leaving.
		return rc.cl.leaving(), false
	}
	rc.cl.noteLost(rc.k, rc.m.Name, err)
	return callResp{Err: encodeError(err)}, false
}

// unrun reports whether err is the host's own ErrActorUnavailable, which
// it returns for an actor's call only before the call ran (closed, the
// activation shut down with the call queued), not a handler's failure or
// answer that wraps one.
func unrun(err error) bool {
	return errors.Is(err, actor.ErrActorUnavailable) && !fromHandler(err)
}

// fromHandler reports whether err is a handler's failure or answer, which
// may wrap any other error: a restore's error (ErrNoReadQuorum) reaches the
// callers unchanged, so it is one only when no handler returned it.
func fromHandler(err error) bool {
	var fe *actor.FailedError
	var ae *actor.AnswerError
	return errors.As(err, &fe) || errors.As(err, &ae)
}

// leaving is the refusal of a call by a member that is closing: the
// caller goes to the next owner (route.go).
func (cl *cluster) leaving() callResp {
	return errResp(codeLeaving, "casty: node "+cl.addr+" is leaving")
}

func (cl *cluster) wrongOwner(kind, key string) callResp {
	return errResp(codeWrongOwner, fmt.Sprintf("casty: node %s does not own %s/%s on its ring", cl.addr, kind, key))
}

func (cl *cluster) unknownKind(kind string) callResp {
	return errResp(codeUnknown, fmt.Sprintf("casty: unknown actor type: %s is not declared on node %s", kind, cl.addr))
}

func errResp(code, msg string) callResp {
	return callResp{Err: &wireError{Code: code, Message: msg}}
}

// admit decides whether this node takes work for req's kind and key: it
// refuses while leaving, for a kind it does not know, and for a
// key its ring gives to another node (wrong owner). Calls and streams both
// ask.
func (cl *cluster) admit(req *callReq) (*actor.Kind, *callResp) {
	if cl.closed.Load() {
		r := cl.leaving()
		return nil, &r
	}
	k := req.kind
	if k == nil {
		k = kinds.get(req.Kind)
	}
	if k == nil {
		r := cl.unknownKind(req.Kind)
		return nil, &r
	}
	if !k.Service && req.Key == "" {
		r := errResp(codeInvalidKey, fmt.Sprintf("%v: a call for %s from another node has an empty key; node %s serves none", ErrInvalidKey, req.Kind, cl.addr))
		return nil, &r
	}
	if !k.Service && !cl.owns(k, req) {
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
		rc := cl.remoteCall(k, meth, req)
		if resp, ok := rc.ask(ctx, &inv.Envelope, &inv.x, inv); !ok {
			return resp
		}
		return inv.x.answer(inv)
	}
	return errResp(codeUnknown, fmt.Sprintf("casty: unknown operation %d", req.Op))
}

// owns reports whether this node owns req's key on its current ring. The
// ring point the caller sent is taken as is here; admitPlaced checks it
// against the key before the call may create an activation (points.go).
func (cl *cluster) owns(k *actor.Kind, req *callReq) bool {
	if cl.lite {
		return false
	}
	point := req.at.point
	if !req.at.known {
		point = ring.Point(k.Name, req.Key)
	}
	owner, ok := cl.view.Load().ownerOf(k, point)
	return ok && owner == cl.self
}
