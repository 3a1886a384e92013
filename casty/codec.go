package casty

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Call envelopes have a hand-written binary form: they cross the wire on
// every remote call, and reflection-driven msgpack for them cost more than
// the rest of the call's own work. The argument, result and error payloads
// inside stay msgpack (wire/SPEC.md).
//
//	request:  op u8 | kind str | key str | method str | deadline varint
//	          | chain uvarint n, n × str | arg bytes
//	response: flags u8 (1 ok, 2 error) | result bytes
//	          | [error: code str | message str | kind str | key str
//	             | method str | directive varint | cause str | type str | data bytes]
//
// str and bytes are a uvarint length then the bytes. Every length is
// checked against what remains; anything else is refused with
// errMalformedEnvelope, never a panic.

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

func appendCallReq(dst []byte, r *callReq) []byte {
	if dst == nil {
		n := 32 + len(r.Kind) + len(r.Key) + len(r.Method) + len(r.Arg)
		for _, c := range r.Chain {
			n += 4 + len(c)
		}
		dst = make([]byte, 0, n)
	}
	e := encoder{b: dst}
	e.b = append(e.b, r.Op)
	e.str(r.Kind)
	e.str(r.Key)
	e.str(r.Method)
	e.b = binary.AppendVarint(e.b, r.Deadline)
	e.b = binary.AppendUvarint(e.b, uint64(len(r.Chain)))
	for _, c := range r.Chain {
		e.str(c)
	}
	e.bytes(r.Arg)
	return e.b
}

func decodeCallReq(b []byte, r *callReq) error {
	d := decoder{b: b}
	r.Op = d.u8()
	r.Kind = d.str()
	r.Key = d.str()
	r.Method = d.str()
	r.Deadline = d.varint()
	n := d.uvarint()
	if n > uint64(len(d.b)) { // every entry takes at least a byte
		d.fail("chain longer than the envelope")
	}
	if d.err == nil && n > 0 {
		r.Chain = make([]string, n)
		for i := range r.Chain {
			r.Chain[i] = d.str()
		}
	}
	r.Arg = d.bytes()
	if d.err == nil && len(d.b) != 0 {
		d.fail("trailing bytes")
	}
	return d.err
}

const (
	respOk  byte = 1
	respErr byte = 2
)

func appendCallResp(dst []byte, r *callResp) []byte {
	if dst == nil {
		n := 8 + len(r.Result)
		if r.Err != nil {
			n += 64 + len(r.Err.Message) + len(r.Err.ErrData)
		}
		dst = make([]byte, 0, n)
	}
	e := encoder{b: dst}
	var flags byte
	if r.Ok {
		flags |= respOk
	}
	if r.Err != nil {
		flags |= respErr
	}
	e.b = append(e.b, flags)
	e.bytes(r.Result)
	if we := r.Err; we != nil {
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
	return e.b
}

func decodeCallResp(b []byte, r *callResp) error {
	d := decoder{b: b}
	flags := d.u8()
	r.Ok = flags&respOk != 0
	r.Result = d.bytes()
	if flags&respErr != 0 {
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
		r.Err = we
	}
	if d.err == nil && (flags&^(respOk|respErr) != 0 || len(d.b) != 0) {
		d.fail("unknown flags or trailing bytes")
	}
	return d.err
}
