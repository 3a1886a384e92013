package wire

import (
	"encoding/binary"
	"math"
)

// Typed entry points. A call's argument and result are usually a number, a
// string or a bool; going through the msgpack encoder for those costs a
// pooled encoder, an interface conversion and, on the decoding side, a
// heap-allocated destination. AppendValue and UnmarshalValue encode and
// decode the common scalar types (int, int64, uint, uint64, float64, bool,
// string — exactly these types, not types defined on them) directly, and
// hand everything else to AppendMarshal and Unmarshal. The bytes and the
// decoded values are the same either way (value_test.go checks it against
// the msgpack encoder).

// msgpack format codes used by the scalar paths (msgpack spec, "formats").
const (
	codeFalse   = 0xc2
	codeTrue    = 0xc3
	codeDouble  = 0xcb
	codeUint8   = 0xcc
	codeUint16  = 0xcd
	codeUint32  = 0xce
	codeUint64  = 0xcf
	codeInt8    = 0xd0
	codeInt16   = 0xd1
	codeInt32   = 0xd2
	codeInt64   = 0xd3
	codeFixStr  = 0xa0
	codeStr8    = 0xd9
	codeStr16   = 0xda
	codeStr32   = 0xdb
	negFixedMin = -32
)

// AppendValue appends the encoding of v to dst: the bytes AppendMarshal
// appends, without an encoder for the scalar types listed above.
func AppendValue[T any](dst []byte, v T) ([]byte, error) {
	switch x := any(v).(type) {
	case int:
		return appendInt(dst, int64(x)), nil
	case int64:
		return binary.BigEndian.AppendUint64(append(dst, codeInt64), uint64(x)), nil
	case uint:
		return appendUint(dst, uint64(x)), nil
	case uint64:
		return binary.BigEndian.AppendUint64(append(dst, codeUint64), x), nil
	case float64:
		return binary.BigEndian.AppendUint64(append(dst, codeDouble), math.Float64bits(x)), nil
	case bool:
		if x {
			return append(dst, codeTrue), nil
		}
		return append(dst, codeFalse), nil
	case string:
		return append(appendStrLen(dst, len(x)), x...), nil
	}
	return AppendMarshal(dst, v)
}

// appendInt is msgpack's compact signed encoding (1, 2, 3, 5 or 9 bytes).
func appendInt(dst []byte, n int64) []byte {
	switch {
	case n >= 0:
		return appendUint(dst, uint64(n))
	case n >= negFixedMin:
		return append(dst, byte(n))
	case n >= math.MinInt8:
		return append(dst, codeInt8, byte(n))
	case n >= math.MinInt16:
		return binary.BigEndian.AppendUint16(append(dst, codeInt16), uint16(n))
	case n >= math.MinInt32:
		return binary.BigEndian.AppendUint32(append(dst, codeInt32), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(dst, codeInt64), uint64(n))
}

// appendUint is msgpack's compact unsigned encoding.
func appendUint(dst []byte, n uint64) []byte {
	switch {
	case n <= math.MaxInt8:
		return append(dst, byte(n))
	case n <= math.MaxUint8:
		return append(dst, codeUint8, byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(dst, codeUint16), uint16(n))
	case n <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(dst, codeUint32), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(dst, codeUint64), n)
}

func appendStrLen(dst []byte, n int) []byte {
	switch {
	case n < 32:
		return append(dst, codeFixStr|byte(n))
	case n <= math.MaxUint8:
		return append(dst, codeStr8, byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(dst, codeStr16), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(dst, codeStr32), uint32(n))
}

// UnmarshalValue decodes b into *p, as Unmarshal does. For the scalar
// types listed above in their usual encodings it decodes directly; any
// other type or encoding (and every malformed input) goes to Unmarshal,
// through a temporary, so that p itself never escapes to the heap.
func UnmarshalValue[T any](b []byte, p *T) error {
	ok := false
	switch x := any(p).(type) {
	case *int:
		var n int64
		if n, ok = scalarInt(b); ok {
			*x = int(n)
		}
	case *int64:
		*x, ok = scalarInt(b)
	case *uint:
		var n uint64
		if n, ok = scalarUint(b); ok {
			*x = uint(n)
		}
	case *uint64:
		*x, ok = scalarUint(b)
	case *float64:
		if ok = len(b) == 9 && b[0] == codeDouble; ok {
			*x = math.Float64frombits(binary.BigEndian.Uint64(b[1:]))
		}
	case *bool:
		if ok = len(b) == 1 && (b[0] == codeTrue || b[0] == codeFalse); ok {
			*x = b[0] == codeTrue
		}
	case *string:
		var s []byte
		if s, ok = scalarStr(b); ok {
			*x = string(s)
		}
	}
	if ok {
		return nil
	}
	tmp := new(T)
	*tmp = *p // Unmarshal leaves what the input does not mention as it was
	if err := Unmarshal(b, tmp); err != nil {
		return err
	}
	*p = *tmp
	return nil
}

// scalarRaw splits b, one msgpack integer exactly, into its code and the
// big-endian bytes after it; ok is false for anything else.
func scalarRaw(b []byte) (code byte, v uint64, ok bool) {
	if len(b) == 0 {
		return 0, 0, false
	}
	code, rest := b[0], b[1:]
	switch {
	case code <= 0x7f || code >= 0xe0: // positive and negative fixnum
		return code, uint64(code), len(rest) == 0
	case (code == codeUint8 || code == codeInt8) && len(rest) == 1:
		return code, uint64(rest[0]), true
	case (code == codeUint16 || code == codeInt16) && len(rest) == 2:
		return code, uint64(binary.BigEndian.Uint16(rest)), true
	case (code == codeUint32 || code == codeInt32) && len(rest) == 4:
		return code, uint64(binary.BigEndian.Uint32(rest)), true
	case (code == codeUint64 || code == codeInt64) && len(rest) == 8:
		return code, binary.BigEndian.Uint64(rest), true
	}
	return 0, 0, false
}

// scalarInt decodes an integer as msgpack does into a signed type: signed
// codes sign-extend, unsigned ones convert (a uint64 above MaxInt64 wraps).
func scalarInt(b []byte) (int64, bool) {
	code, v, ok := scalarRaw(b)
	if !ok {
		return 0, false
	}
	switch code {
	case codeInt8:
		return int64(int8(v)), true
	case codeInt16:
		return int64(int16(v)), true
	case codeInt32:
		return int64(int32(v)), true
	}
	if code >= 0xe0 {
		return int64(int8(code)), true
	}
	return int64(v), true
}

// scalarUint decodes an integer as msgpack does into an unsigned type:
// negative values convert through int64 (and wrap), as there.
func scalarUint(b []byte) (uint64, bool) {
	n, ok := scalarInt(b)
	return uint64(n), ok
}

// scalarStr returns the bytes of b, one msgpack str exactly.
func scalarStr(b []byte) ([]byte, bool) {
	if len(b) == 0 {
		return nil, false
	}
	var n, head int
	switch c := b[0]; {
	case c&0xe0 == codeFixStr:
		n, head = int(c&0x1f), 1
	case c == codeStr8 && len(b) >= 2:
		n, head = int(b[1]), 2
	case c == codeStr16 && len(b) >= 3:
		n, head = int(binary.BigEndian.Uint16(b[1:])), 3
	case c == codeStr32 && len(b) >= 5:
		n, head = int(binary.BigEndian.Uint32(b[1:])), 5
	default:
		return nil, false
	}
	if len(b)-head != n {
		return nil, false
	}
	return b[head:], true
}
