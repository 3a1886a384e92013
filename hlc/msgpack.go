package hlc

import (
	"encoding/binary"
	"fmt"
	"math"
)

// The msgpack encoding of a Timestamp (hand-written: this package has no
// dependencies) is
//
//   - the zero Timestamp: nil (0xc0), one byte;
//   - otherwise a 3-element array (0x93) of
//     Wall as a msgpack integer in its shortest form,
//     Counter as a msgpack integer in its shortest form,
//     Node as bin 8 of length 16 (0xc4 0x10 + 16 bytes).
//
// A current wall clock reading takes 9 bytes, so a typical stamp is 29 bytes.
// The decoder accepts every msgpack integer width for Wall and Counter (as
// other encoders may not use the shortest form) and bin 8/16/32 for Node, but
// nothing else: any other type, a wrong array length, a Wall outside int64, a
// Counter outside uint32 or a Node not exactly 16 bytes is ErrMalformed.
// Timestamp implements the MarshalMsgpack and UnmarshalMsgpack methods that
// github.com/vmihailenco/msgpack/v5 looks for, so it can be a field of any
// message encoded with that library.

// AppendMsgpack appends the msgpack encoding of t to dst and returns the
// extended slice.
func (t Timestamp) AppendMsgpack(dst []byte) []byte {
	if t.IsZero() {
		return append(dst, 0xc0)
	}
	dst = append(dst, 0x93)
	dst = appendInt(dst, t.Wall)
	dst = appendUint(dst, uint64(t.Counter))
	dst = append(dst, 0xc4, 16)
	return append(dst, t.Node[:]...)
}

func appendUint(dst []byte, v uint64) []byte {
	switch {
	case v <= 0x7f:
		return append(dst, byte(v))
	case v <= math.MaxUint8:
		return append(dst, 0xcc, byte(v))
	case v <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(dst, 0xcd), uint16(v))
	case v <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(dst, 0xce), uint32(v))
	}
	return binary.BigEndian.AppendUint64(append(dst, 0xcf), v)
}

func appendInt(dst []byte, v int64) []byte {
	switch {
	case v >= 0:
		return appendUint(dst, uint64(v))
	case v >= -32:
		return append(dst, byte(v)) // negative fixint 0xe0..0xff
	case v >= math.MinInt8:
		return append(dst, 0xd0, byte(v))
	case v >= math.MinInt16:
		return binary.BigEndian.AppendUint16(append(dst, 0xd1), uint16(v))
	case v >= math.MinInt32:
		return binary.BigEndian.AppendUint32(append(dst, 0xd2), uint32(v))
	}
	return binary.BigEndian.AppendUint64(append(dst, 0xd3), uint64(v))
}

// MarshalMsgpack returns the msgpack encoding of t (see AppendMsgpack). The
// error is always nil; it exists to satisfy msgpack/v5's Marshaler.
func (t Timestamp) MarshalMsgpack() ([]byte, error) {
	return t.AppendMsgpack(make([]byte, 0, 29)), nil
}

// UnmarshalMsgpack decodes exactly one encoded Timestamp from b into t;
// trailing bytes are an error. Errors wrap ErrMalformed and leave t
// unchanged.
func (t *Timestamp) UnmarshalMsgpack(b []byte) error {
	v, n, err := DecodeMsgpack(b)
	if err != nil {
		return err
	}
	if n != len(b) {
		return fmt.Errorf("%w: %d trailing bytes", ErrMalformed, len(b)-n)
	}
	*t = v
	return nil
}

// DecodeMsgpack decodes one encoded Timestamp from the start of b and
// returns it with the number of bytes it occupied. Errors wrap ErrMalformed.
// It never panics and never allocates on success.
func DecodeMsgpack(b []byte) (Timestamp, int, error) {
	// Fast path for the shape AppendMsgpack produces for a current clock:
	// uint 64 wall, fixint counter, bin 8 node.
	if len(b) >= 29 && b[0] == 0x93 && b[1] == 0xcf && b[10] <= 0x7f && b[11] == 0xc4 && b[12] == 16 {
		if w := binary.BigEndian.Uint64(b[2:10]); w <= math.MaxInt64 {
			t := Timestamp{Wall: int64(w), Counter: uint32(b[10])}
			copy(t.Node[:], b[13:29])
			return t, 29, nil
		}
	}
	return decodeGeneral(b)
}

// decodeGeneral is DecodeMsgpack without the fast path.
func decodeGeneral(b []byte) (Timestamp, int, error) {
	if len(b) == 0 {
		return Timestamp{}, 0, fmt.Errorf("%w: empty input", ErrMalformed)
	}
	if b[0] == 0xc0 {
		return Timestamp{}, 1, nil
	}
	if b[0] != 0x93 {
		return Timestamp{}, 0, fmt.Errorf("%w: want nil or a 3-element array, got type byte 0x%02x", ErrMalformed, b[0])
	}
	off := 1
	wall, n, err := decodeInt(b[off:])
	if err != nil {
		return Timestamp{}, 0, fmt.Errorf("%w: wall: %s", ErrMalformed, err.msg)
	}
	off += n
	ctr, n, err := decodeInt(b[off:])
	if err != nil {
		return Timestamp{}, 0, fmt.Errorf("%w: counter: %s", ErrMalformed, err.msg)
	}
	if ctr.neg || ctr.abs > math.MaxUint32 {
		return Timestamp{}, 0, fmt.Errorf("%w: counter out of uint32 range", ErrMalformed)
	}
	off += n
	if !wall.neg && wall.abs > math.MaxInt64 {
		return Timestamp{}, 0, fmt.Errorf("%w: wall out of int64 range", ErrMalformed)
	}
	rest := b[off:]
	var size, hdr int
	switch {
	case len(rest) >= 2 && rest[0] == 0xc4:
		size, hdr = int(rest[1]), 2
	case len(rest) >= 3 && rest[0] == 0xc5:
		size, hdr = int(binary.BigEndian.Uint16(rest[1:])), 3
	case len(rest) >= 5 && rest[0] == 0xc6:
		size, hdr = int(binary.BigEndian.Uint32(rest[1:])), 5
	default:
		return Timestamp{}, 0, fmt.Errorf("%w: node: want bin of 16 bytes", ErrMalformed)
	}
	if size != 16 {
		return Timestamp{}, 0, fmt.Errorf("%w: node: bin of %d bytes, want 16", ErrMalformed, size)
	}
	if len(rest) < hdr+16 {
		return Timestamp{}, 0, fmt.Errorf("%w: node: truncated", ErrMalformed)
	}
	t := Timestamp{Counter: uint32(ctr.abs)}
	if wall.neg {
		t.Wall = int64(-wall.abs) // two's complement; abs <= 2^63 checked in decodeInt
	} else {
		t.Wall = int64(wall.abs)
	}
	copy(t.Node[:], rest[hdr:hdr+16])
	return t, off + hdr + 16, nil
}

// integer is a decoded msgpack integer: its sign and magnitude.
type integer struct {
	neg bool
	abs uint64
}

// decodeErr is a static, allocation-free error description.
type decodeErr struct{ msg string }

var (
	errTruncated = &decodeErr{"truncated"}
	errNotInt    = &decodeErr{"not an integer"}
)

// decodeInt decodes any msgpack integer (fixint, uint 8–64, int 8–64).
func decodeInt(b []byte) (integer, int, *decodeErr) {
	if len(b) == 0 {
		return integer{}, 0, errTruncated
	}
	c := b[0]
	switch {
	case c <= 0x7f:
		return integer{abs: uint64(c)}, 1, nil
	case c >= 0xe0:
		return signed(int64(int8(c))), 1, nil
	}
	var size int
	switch c {
	case 0xcc, 0xd0:
		size = 1
	case 0xcd, 0xd1:
		size = 2
	case 0xce, 0xd2:
		size = 4
	case 0xcf, 0xd3:
		size = 8
	default:
		return integer{}, 0, errNotInt
	}
	if len(b) < 1+size {
		return integer{}, 0, errTruncated
	}
	p := b[1 : 1+size]
	var u uint64
	switch size {
	case 1:
		u = uint64(p[0])
	case 2:
		u = uint64(binary.BigEndian.Uint16(p))
	case 4:
		u = uint64(binary.BigEndian.Uint32(p))
	case 8:
		u = binary.BigEndian.Uint64(p)
	}
	if c <= 0xcf { // unsigned family
		return integer{abs: u}, 1 + size, nil
	}
	// signed family: sign-extend from size bytes
	shift := 64 - 8*uint(size)
	return signed(int64(u<<shift) >> shift), 1 + size, nil
}

func signed(v int64) integer {
	if v < 0 {
		return integer{neg: true, abs: uint64(-v)} // -MinInt64 wraps to 2^63, as wanted
	}
	return integer{abs: uint64(v)}
}
