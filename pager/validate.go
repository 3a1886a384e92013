package pager

import (
	"encoding/binary"
	"fmt"
)

// maxMsgpackDepth bounds the nesting of containers in untrusted msgpack.
const maxMsgpackDepth = 512

// ValidateMsgpack reports an error wrapping ErrCorrupt unless b holds
// exactly one well-formed msgpack value whose every declared length (bin,
// str, ext, array and map counts) fits in the bytes present, nested at most
// 512 deep. Run it before decoding untrusted bytes: msgpack/v5 allocates a
// bin value's declared length up front, so a 6-byte input could otherwise
// request 4 GiB. DecodeDelta and Tracker.Restore call it; a Pager decoding
// msgpack from its pages should too.
func ValidateMsgpack(b []byte) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: msgpack: %s", ErrCorrupt, fmt.Sprintf(format, args...))
	}
	// stack holds, per open container, how many values it still expects.
	stack := []uint64{1}
	pos := 0
	need := func(n uint64) bool { return n <= uint64(len(b)-pos) }
	uintN := func(size int) (uint64, bool) {
		if !need(uint64(size)) {
			return 0, false
		}
		var v uint64
		switch size {
		case 1:
			v = uint64(b[pos])
		case 2:
			v = uint64(binary.BigEndian.Uint16(b[pos:]))
		case 4:
			v = uint64(binary.BigEndian.Uint32(b[pos:]))
		}
		pos += size
		return v, true
	}
	for len(stack) > 0 {
		if stack[len(stack)-1] == 0 {
			stack = stack[:len(stack)-1]
			continue
		}
		stack[len(stack)-1]--
		if pos >= len(b) {
			return bad("truncated at byte %d", pos)
		}
		c := b[pos]
		pos++
		var skip, items uint64 // payload bytes to skip; values a container holds
		container := false
		switch {
		case c <= 0x7f || c >= 0xe0, c == 0xc0, c == 0xc2, c == 0xc3:
		case c >= 0x80 && c <= 0x8f:
			items, container = 2*uint64(c&0x0f), true
		case c >= 0x90 && c <= 0x9f:
			items, container = uint64(c&0x0f), true
		case c >= 0xa0 && c <= 0xbf:
			skip = uint64(c & 0x1f)
		case c == 0xc4 || c == 0xd9:
			n, ok := uintN(1)
			if !ok {
				return bad("truncated length")
			}
			skip = n
		case c == 0xc5 || c == 0xda:
			n, ok := uintN(2)
			if !ok {
				return bad("truncated length")
			}
			skip = n
		case c == 0xc6 || c == 0xdb:
			n, ok := uintN(4)
			if !ok {
				return bad("truncated length")
			}
			skip = n
		case c == 0xc7 || c == 0xc8 || c == 0xc9:
			size := map[byte]int{0xc7: 1, 0xc8: 2, 0xc9: 4}[c]
			n, ok := uintN(size)
			if !ok {
				return bad("truncated ext length")
			}
			skip = n + 1
		case c == 0xca, c == 0xce, c == 0xd2:
			skip = 4
		case c == 0xcb, c == 0xcf, c == 0xd3:
			skip = 8
		case c == 0xcc, c == 0xd0:
			skip = 1
		case c == 0xcd, c == 0xd1:
			skip = 2
		case c >= 0xd4 && c <= 0xd8:
			skip = 1 + 1<<(c-0xd4)
		case c == 0xdc || c == 0xde:
			n, ok := uintN(2)
			if !ok {
				return bad("truncated count")
			}
			items, container = n, true
			if c == 0xde {
				items *= 2
			}
		case c == 0xdd || c == 0xdf:
			n, ok := uintN(4)
			if !ok {
				return bad("truncated count")
			}
			items, container = n, true
			if c == 0xdf {
				items *= 2
			}
		default:
			return bad("invalid code 0x%02x at byte %d", c, pos-1)
		}
		if !need(skip) {
			return bad("%d bytes declared at byte %d, %d left", skip, pos, len(b)-pos)
		}
		pos += int(skip)
		if container {
			if !need(items) { // every value takes at least one byte
				return bad("%d values declared at byte %d, %d bytes left", items, pos, len(b)-pos)
			}
			if len(stack) >= maxMsgpackDepth {
				return bad("nested deeper than %d", maxMsgpackDepth)
			}
			stack = append(stack, items)
		}
	}
	if pos != len(b) {
		return bad("%d trailing bytes", len(b)-pos)
	}
	return nil
}
