package wire

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/vmihailenco/msgpack/v5"
)

// MaxDepth is the deepest container nesting Unmarshal accepts.
const MaxDepth = 256

var encPool = sync.Pool{New: func() any {
	var buf bytes.Buffer
	return &encoder{buf: &buf, enc: msgpack.NewEncoder(&buf)}
}}

type encoder struct {
	buf *bytes.Buffer
	enc *msgpack.Encoder
}

// Marshal encodes v as msgpack, structs as maps keyed by field name. The
// order of a Go map's entries on the wire is unspecified.
func Marshal(v any) ([]byte, error) {
	return AppendMarshal(nil, v)
}

// AppendMarshal appends the encoding of v to dst.
func AppendMarshal(dst []byte, v any) ([]byte, error) {
	e := encPool.Get().(*encoder)
	e.buf.Reset()
	err := e.enc.Encode(v)
	if err == nil {
		dst = append(dst, e.buf.Bytes()...)
	}
	if e.buf.Cap() <= 64<<10 {
		encPool.Put(e)
	}
	if err != nil {
		return nil, fmt.Errorf("wire: encode %T: %w", v, err)
	}
	return dst, nil
}

// Unmarshal decodes one msgpack value from b into v, a non-nil pointer.
// The input is scanned first (see Check), so a length prefix cannot claim
// more elements than b has bytes: decoding allocates at most about len(b)
// times the size of the largest element type reachable from v (SPEC.md
// says more). Unknown map keys are ignored and missing ones leave the
// destination's fields unchanged.
func Unmarshal(b []byte, v any) error {
	if err := Check(b); err != nil {
		return err
	}
	d := decPool.Get().(*decoder)
	d.r.Reset(b)
	d.dec.Reset(&d.r)
	err := d.dec.Decode(v)
	d.r.Reset(nil)
	decPool.Put(d)
	if err != nil {
		return fmt.Errorf("%w: decode into %T: %v", ErrMalformed, v, err)
	}
	return nil
}

// decoder is a msgpack decoder with the reader it reads from, pooled
// together so that Unmarshal allocates nothing of its own.
type decoder struct {
	r   bytes.Reader
	dec *msgpack.Decoder
}

var decPool = sync.Pool{New: func() any { return &decoder{dec: msgpack.NewDecoder(nil)} }}

// Check verifies that b holds exactly one well-formed msgpack value whose
// every length prefix fits in the bytes that remain and whose nesting is at
// most MaxDepth. It allocates nothing.
func Check(b []byte) error {
	// Items still to read at each depth; shallow values (nearly all of them)
	// never leave the small array.
	var small [16]int
	stack := small[:]
	depth := 0
	stack[0] = 1
	i := 0
	for {
		for depth >= 0 && stack[depth] == 0 {
			depth--
		}
		if depth < 0 {
			break
		}
		stack[depth]--
		if i >= len(b) {
			return fmt.Errorf("%w: truncated at byte %d", ErrMalformed, i)
		}
		c := b[i]
		i++
		var n, items int // n: payload bytes to skip; items: children
		var err error
		switch {
		case c <= 0x7f, c >= 0xe0, c == 0xc0, c == 0xc2, c == 0xc3:
		case c >= 0x80 && c <= 0x8f:
			items = 2 * int(c&0x0f)
		case c >= 0x90 && c <= 0x9f:
			items = int(c & 0x0f)
		case c >= 0xa0 && c <= 0xbf:
			n = int(c & 0x1f)
		default:
			switch c {
			case 0xc4, 0xd9: // bin8, str8
				n, i, err = readLen(b, i, 1)
			case 0xc5, 0xda:
				n, i, err = readLen(b, i, 2)
			case 0xc6, 0xdb:
				n, i, err = readLen(b, i, 4)
			case 0xc7: // ext8: len, type, data
				n, i, err = readLen(b, i, 1)
				n++
			case 0xc8:
				n, i, err = readLen(b, i, 2)
				n++
			case 0xc9:
				n, i, err = readLen(b, i, 4)
				n++
			case 0xca, 0xce, 0xd2:
				n = 4
			case 0xcb, 0xcf, 0xd3:
				n = 8
			case 0xcc, 0xd0:
				n = 1
			case 0xcd, 0xd1:
				n = 2
			case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8: // fixext 1,2,4,8,16 + type byte
				n = 1 + 1<<(c-0xd4)
			case 0xdc:
				items, i, err = readLen(b, i, 2)
			case 0xdd:
				items, i, err = readLen(b, i, 4)
			case 0xde:
				items, i, err = readLen(b, i, 2)
				items *= 2
			case 0xdf:
				items, i, err = readLen(b, i, 4)
				items *= 2
			default: // 0xc1: never used
				return fmt.Errorf("%w: unused type code 0x%x at byte %d", ErrMalformed, c, i-1)
			}
			if err != nil {
				return err
			}
		}
		if n > len(b)-i {
			return fmt.Errorf("%w: length %d at byte %d exceeds the %d bytes left", ErrMalformed, n, i, len(b)-i)
		}
		i += n
		if items > 0 {
			if items > len(b)-i {
				return fmt.Errorf("%w: container of %d items at byte %d exceeds the %d bytes left", ErrMalformed, items, i, len(b)-i)
			}
			if depth+1 > MaxDepth {
				return fmt.Errorf("%w: nesting deeper than %d", ErrMalformed, MaxDepth)
			}
			depth++
			if depth == len(stack) {
				stack = append(stack, 0)
			}
			stack[depth] = items
		}
	}
	if i != len(b) {
		return fmt.Errorf("%w: %d trailing bytes", ErrMalformed, len(b)-i)
	}
	return nil
}

func readLen(b []byte, i, size int) (int, int, error) {
	if len(b)-i < size {
		return 0, i, fmt.Errorf("%w: truncated length at byte %d", ErrMalformed, i)
	}
	n := 0
	for _, x := range b[i : i+size] {
		n = n<<8 | int(x)
	}
	return n, i + size, nil
}
