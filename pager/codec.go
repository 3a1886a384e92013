package pager

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/vmihailenco/msgpack/v5"
)

// Page bytes are msgpack with field names as keys (the actor layer's
// encoding), map keys sorted and integers in their compact form, so that
// equal values encode to equal bytes and the byte compare of integral fields
// does not report false positives for maps. Floats keep their full width:
// msgpack's compact floats would turn -0.0 into 0.

type encoderBuf struct {
	buf bytes.Buffer
	enc *msgpack.Encoder
}

var encPool = sync.Pool{New: func() any {
	e := &encoderBuf{}
	e.enc = msgpack.NewEncoder(&e.buf)
	e.enc.SetSortMapKeys(true)
	e.enc.UseCompactInts(true)
	return e
}}

// encodeValue encodes v into a fresh byte slice.
func encodeValue(v any) ([]byte, error) {
	e := encPool.Get().(*encoderBuf)
	defer encPool.Put(e)
	e.buf.Reset()
	if err := e.enc.Encode(v); err != nil {
		return nil, fmt.Errorf("pager: encode: %w", err)
	}
	return bytes.Clone(e.buf.Bytes()), nil
}

// compareEncoded encodes v into a pooled buffer and reports whether the
// encoding equals old; only when it differs is a copy returned.
func compareEncoded(v any, old []byte) (data []byte, same bool, err error) {
	e := encPool.Get().(*encoderBuf)
	defer encPool.Put(e)
	e.buf.Reset()
	if err := e.enc.Encode(v); err != nil {
		return nil, false, fmt.Errorf("pager: encode: %w", err)
	}
	if old != nil && bytes.Equal(e.buf.Bytes(), old) {
		return old, true, nil
	}
	return bytes.Clone(e.buf.Bytes()), false, nil
}

// decodeValue decodes b (untrusted) into ptr, validating it first and
// turning a decoder panic into an error.
func decodeValue(b []byte, ptr any) (err error) {
	if err := ValidateMsgpack(b); err != nil {
		return err
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("decoder panic: %v", r)
		}
	}()
	return msgpack.Unmarshal(b, ptr)
}
