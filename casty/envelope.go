package casty

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/casty-go/casty/actor"
	"github.com/casty-go/casty/ring"
)

// Envelopes between nodes (SPEC.md). Every request a node sends another —
// a call, a StateOf, a stream open, a spy subscription — is one callReq,
// hand-encoded (below), whose op says what it asks; calls and StateOf
// travel as one request on the mux message lane and are answered by one
// callResp; streams and spies send the callReq as their mux stream's
// header and then exchange frames (cluster_stream.go). The argument,
// result and element payloads inside stay msgpack (wire/SPEC.md).

// Operations: what a callReq asks. They are numbered here and only here.
const (
	opCall    uint8 = 1 // run a unary handler; answered by a callResp
	opStateOf uint8 = 2 // read the live state; answered by a callResp
	opStream  uint8 = 3 // open a streaming handler; the header of a mux stream
	opSpy     uint8 = 4 // subscribe to the node's events; the header of a mux stream
	// The operator's requests to a full member (ops_loss.go), answered by
	// a callResp; no kind or key.
	opAcceptLoss      uint8 = 5 // run AcceptLoss for the member ids in the argument
	opPlacementStatus uint8 = 6 // report this member's placement and waiting syncs
	// A full member's member table (ops.go, MemberTableVia), answered by
	// a callResp to any peer; no kind or key.
	opMemberTable uint8 = 7
)

// callReq is a request from another node.
type callReq struct {
	Op       uint8
	Kind     string // the kind's wire name
	Key      string
	Method   string      // the handler (opCall, opStream)
	Arg      []byte      // the argument, msgpack; a view into the received envelope
	Chain    []string    // the call chain, "kind/key" innermost first (reentrancy)
	Deadline int64       // unix ns; 0 for none
	at       placement   // the key's ring point, when the caller knows it (points.go)
	trace    traceCtx    // the caller's span, when it traces (telemetry.go)
	early    uint64      // the caller's tag for an early answer (early.go); 0: none
	credit   bool        // opStream: both sides count elements in credit frames (cluster_stream.go)
	from     ring.NodeID // the member the request came from (serving side, for early)

	// What decoding resolved the names to: set for declared kinds.
	kind *actor.Kind
	meth *actor.Method
}

// callResp is the answer to an opCall or opStateOf.
type callResp struct {
	Result []byte     // the result (or the state), msgpack
	Ok     bool       // opStateOf: the actor was active
	Err    *wireError // the failure, when the request failed

	enc []byte // the whole envelope, when already encoded (resultResp)
}

// The binary form: these envelopes cross the wire on every remote call,
// and reflection-driven msgpack for them cost more than the rest of the
// call's own work.
//
//	request:  op u8 | flags u8 (1: ring point present; 8: a stream counted
//	          in credit frames) | kind str | key str
//	          | [point u64, big endian] | method str | deadline varint
//	          | chain uvarint n (at most MaxCallChain), n × str
//	          | [trace id 16 bytes | span id 8 bytes | trace flags u8
//	          |  | tracestate str]  (when flags bit 1 is set)
//	          | [early tag uvarint, not 0]  (when flags bit 2 is set)
//	          | arg (the rest of the envelope)
//	response: flags u8 (1 ok, 2 error) | [error] | result (the rest)
//	error:    code str | message str | kind str | key str | method str
//	          | directive varint | cause str | type str | data bytes
//
// str and bytes are a uvarint length then the bytes. Every length is
// checked against what remains; anything else is refused with
// errMalformedEnvelope, never a panic. A chain longer than MaxCallChain is
// refused with ErrCallChainTooLong, which the serving side answers as a
// wire error (code chain-too-long). The argument and the result come
// last so that they are encoded straight into the envelope.

var errMalformedEnvelope = errors.New("casty: malformed call envelope")

type encoder struct{ b []byte }

func (e *encoder) str(s string) {
	e.b = binary.AppendUvarint(e.b, uint64(len(s)))
	e.b = append(e.b, s...)
}

func (e *encoder) bytes(p []byte) {
	e.b = binary.AppendUvarint(e.b, uint64(len(p)))
	e.b = append(e.b, p...)
}

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", errMalformedEnvelope, what)
	}
}

func (d *decoder) u8() byte {
	if d.err != nil || len(d.b) < 1 {
		d.fail("truncated")
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad length")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("bad integer")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) raw() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail("length past the end")
		return nil
	}
	p := d.b[:n:n]
	d.b = d.b[n:]
	return p
}

func (d *decoder) str() string { return string(d.raw()) }

func (d *decoder) bytes() []byte {
	p := d.raw()
	if len(p) == 0 {
		return nil
	}
	return append([]byte(nil), p...)
}

func (d *decoder) u64() uint64 {
	if d.err != nil || len(d.b) < 8 {
		d.fail("truncated")
		return 0
	}
	v := binary.BigEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

// rest returns what remains of the envelope (nil when nothing).
func (d *decoder) rest() []byte {
	if d.err != nil || len(d.b) == 0 {
		return nil
	}
	p := d.b
	d.b = nil
	return p
}

const (
	reqPlaced byte = 1 // a ring point follows the key
	reqTraced byte = 2 // a trace context follows the chain
	reqEarly  byte = 4 // an early-answer tag follows the trace context (early.go)
	reqCredit byte = 8 // a stream whose both sides count elements in credit frames (cluster_stream.go)
)

// traceCtx is a W3C trace context (traceparent's ids and flags, and the
// tracestate header's value) as a request carries it; the zero value is
// none, and costs nothing on the wire.
type traceCtx struct {
	TraceID [16]byte
	SpanID  [8]byte
	Flags   byte
	State   string
}

func (t *traceCtx) present() bool { return t.TraceID != [16]byte{} }

// appendCallReqHead appends everything of r but its argument, which
// follows as the rest of the envelope.
func appendCallReqHead(dst []byte, r *callReq) []byte {
	e := encoder{b: dst}
	var flags byte
	if r.at.known {
		flags |= reqPlaced
	}
	if r.trace.present() {
		flags |= reqTraced
	}
	if r.early != 0 {
		flags |= reqEarly
	}
	if r.credit {
		flags |= reqCredit
	}
	e.b = append(e.b, r.Op, flags)
	e.str(r.Kind)
	e.str(r.Key)
	if r.at.known {
		e.b = binary.BigEndian.AppendUint64(e.b, r.at.point)
	}
	e.str(r.Method)
	e.b = binary.AppendVarint(e.b, r.Deadline)
	e.b = binary.AppendUvarint(e.b, uint64(len(r.Chain)))
	for _, c := range r.Chain {
		e.str(c)
	}
	if r.trace.present() {
		e.b = append(e.b, r.trace.TraceID[:]...)
		e.b = append(e.b, r.trace.SpanID[:]...)
		e.b = append(e.b, r.trace.Flags)
		e.str(r.trace.State)
	}
	if r.early != 0 {
		e.b = binary.AppendUvarint(e.b, r.early)
	}
	return e.b
}

// callReqSize is a good capacity for r's envelope with an argument of
// about argSize bytes.
func callReqSize(r *callReq, argSize int) int {
	n := 40 + len(r.Kind) + len(r.Key) + len(r.Method) + argSize
	for _, c := range r.Chain {
		n += 4 + len(c)
	}
	if r.trace.present() {
		n += 28 + len(r.trace.State)
	}
	return n
}

func appendCallReq(dst []byte, r *callReq) []byte {
	if dst == nil {
		dst = make([]byte, 0, callReqSize(r, len(r.Arg)))
	}
	return append(appendCallReqHead(dst, r), r.Arg...)
}

// decodeCallReq decodes a request envelope. Its Arg is a view into b. The
// kind and method names of declared kinds are the declared strings (and
// r.kind, r.meth are set), so a call to a known handler allocates only its
// key.
func decodeCallReq(b []byte, r *callReq) error {
	d := decoder{b: b}
	r.Op = d.u8()
	flags := d.u8()
	if kb := d.raw(); d.err == nil {
		if r.kind = kinds.getBytes(kb); r.kind != nil {
			r.Kind = r.kind.Name
		} else {
			r.Kind = string(kb)
		}
	}
	r.Key = d.str()
	if r.at.known = flags&reqPlaced != 0; r.at.known {
		r.at.point = d.u64()
	}
	if mb := d.raw(); d.err == nil {
		if r.kind != nil {
			r.meth = r.kind.MethodByNameBytes(mb)
		}
		if r.meth != nil {
			r.Method = r.meth.Name
		} else {
			r.Method = string(mb)
		}
	}
	r.Deadline = d.varint()
	n := d.uvarint()
	switch {
	case d.err != nil:
	case n > actor.MaxCallChain:
		// Refused before anything is allocated for it: a hostile count
		// must cost nothing.
		d.err = fmt.Errorf("%w: a call from another node names %d activations in its chain (at most %d)", ErrCallChainTooLong, n, actor.MaxCallChain)
	case n > uint64(len(d.b)): // every entry takes at least a byte
		d.fail("chain longer than the envelope")
	}
	if d.err == nil && n > 0 {
		r.Chain = make([]string, n)
		for i := range r.Chain {
			r.Chain[i] = d.str()
		}
	}
	if d.err == nil && flags&reqTraced != 0 {
		d.traceCtx(&r.trace)
	}
	if d.err == nil && flags&reqEarly != 0 {
		if r.early = d.uvarint(); r.early == 0 && d.err == nil {
			d.fail("early tag 0") // it would re-encode as none
		}
	}
	r.credit = flags&reqCredit != 0
	if d.err == nil && flags&^(reqPlaced|reqTraced|reqEarly|reqCredit) != 0 {
		d.fail("unknown flags")
	}
	r.Arg = d.rest()
	return d.err
}

// traceCtx reads a request's trace context; an all-zero trace id is
// refused (it would re-encode as no context at all).
func (d *decoder) traceCtx(t *traceCtx) {
	if d.err != nil || len(d.b) < 25 {
		d.fail("truncated")
		return
	}
	copy(t.TraceID[:], d.b[:16])
	copy(t.SpanID[:], d.b[16:24])
	t.Flags = d.b[24]
	d.b = d.b[25:]
	t.State = d.str()
	if !t.present() {
		d.fail("empty trace id")
	}
}

const (
	respOk  byte = 1
	respErr byte = 2
)

// appendCallRespHead appends everything of r but its result, which
// follows as the rest of the envelope.
func appendCallRespHead(dst []byte, r *callResp) []byte {
	e := encoder{b: dst}
	var flags byte
	if r.Ok {
		flags |= respOk
	}
	if r.Err != nil {
		flags |= respErr
	}
	e.b = append(e.b, flags)
	if r.Err != nil {
		e.wireError(r.Err)
	}
	return e.b
}

func (e *encoder) wireError(we *wireError) {
	e.str(we.Code)
	e.str(we.Message)
	e.str(we.Kind)
	e.str(we.Key)
	e.str(we.Method)
	e.b = binary.AppendVarint(e.b, int64(we.Directive))
	e.str(we.Cause)
	e.str(we.ErrType)
	e.bytes(we.ErrData)
}

// appendWireError appends we alone: the payload of a stream's error frame.
func appendWireError(dst []byte, we *wireError) []byte {
	e := encoder{b: dst}
	e.wireError(we)
	return e.b
}

func appendCallResp(dst []byte, r *callResp) []byte {
	if dst == nil {
		n := 8 + len(r.Result)
		if r.Err != nil {
			n += 64 + len(r.Err.Message) + len(r.Err.ErrData)
		}
		dst = make([]byte, 0, n)
	}
	return append(appendCallRespHead(dst, r), r.Result...)
}

func (d *decoder) wireError() *wireError {
	we := &wireError{}
	we.Code = d.str()
	we.Message = d.str()
	we.Kind = d.str()
	we.Key = d.str()
	we.Method = d.str()
	we.Directive = int(d.varint())
	we.Cause = d.str()
	we.ErrType = d.str()
	we.ErrData = d.bytes()
	return we
}

// decodeWireError decodes a wire error alone (a stream's error frame);
// nothing may follow it.
func decodeWireError(b []byte) (*wireError, error) {
	d := decoder{b: b}
	we := d.wireError()
	if d.err == nil && len(d.b) != 0 {
		d.fail("trailing bytes")
	}
	return we, d.err
}

// decodeCallResp decodes a response envelope; its Result is a view into b.
func decodeCallResp(b []byte, r *callResp) error {
	d := decoder{b: b}
	flags := d.u8()
	r.Ok = flags&respOk != 0
	if flags&respErr != 0 {
		r.Err = d.wireError()
	}
	if d.err == nil && flags&^(respOk|respErr) != 0 {
		d.fail("unknown flags")
	}
	r.Result = d.rest()
	return d.err
}
