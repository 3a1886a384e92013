package collections

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"slices"
)

// msgpack writes a Go map's entries in iteration order (its encoder sorts
// only a few map types), so two equal maps may encode differently. A type
// that holds a map is made canonical after encoding: every map's entries
// sorted by their keys' encodings, recursively. The result decodes to the
// same value.

// holdsMap reports whether values of t can hold a map.
func holdsMap(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return false
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Map:
		return true
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return holdsMap(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && holdsMap(f.Type, seen) {
				return true
			}
		}
	}
	return false
}

// canonical returns b with every map's entries sorted by key encoding; b
// itself when it holds no map or does not parse.
func canonical(b []byte) []byte {
	out, end, ok := canon(nil, b, 0, 0)
	if !ok || end != len(b) {
		return b
	}
	return out
}

// canon appends the canonical form of the value at b[i:] to dst and
// returns where that value ends.
func canon(dst, b []byte, i, depth int) ([]byte, int, bool) {
	if i >= len(b) || depth > 256 {
		return dst, 0, false
	}
	c := b[i]
	var n, hdr int
	isMap := false
	switch {
	case c >= 0x80 && c <= 0x8f:
		n, hdr, isMap = int(c&0x0f), 1, true
	case c >= 0x90 && c <= 0x9f:
		n, hdr = int(c&0x0f), 1
	case c == 0xdc || c == 0xde:
		if i+3 > len(b) {
			return dst, 0, false
		}
		n, hdr, isMap = int(binary.BigEndian.Uint16(b[i+1:])), 3, c == 0xde
	case c == 0xdd || c == 0xdf:
		if i+5 > len(b) {
			return dst, 0, false
		}
		n, hdr, isMap = int(binary.BigEndian.Uint32(b[i+1:])), 5, c == 0xdf
	default:
		end, ok := skip(b, i)
		if !ok {
			return dst, 0, false
		}
		return append(dst, b[i:end]...), end, true
	}
	dst = append(dst, b[i:i+hdr]...)
	j := i + hdr
	if !isMap {
		for range n {
			var ok bool
			if dst, j, ok = canon(dst, b, j, depth+1); !ok {
				return dst, 0, false
			}
		}
		return dst, j, true
	}
	type entry struct{ k, kv []byte }
	entries := make([]entry, 0, n)
	for range n {
		var e []byte
		var ok bool
		if e, j, ok = canon(nil, b, j, depth+1); !ok {
			return dst, 0, false
		}
		kl := len(e)
		if e, j, ok = canon(e, b, j, depth+1); !ok {
			return dst, 0, false
		}
		entries = append(entries, entry{k: e[:kl], kv: e})
	}
	slices.SortFunc(entries, func(a, b entry) int { return bytes.Compare(a.k, b.k) })
	for _, e := range entries {
		dst = append(dst, e.kv...)
	}
	return dst, j, true
}

// skip returns where the scalar (not array or map) at b[i] ends.
func skip(b []byte, i int) (int, bool) {
	c := b[i]
	size := func(hdr, lenBytes, extra int) (int, bool) {
		if i+hdr > len(b) {
			return 0, false
		}
		var n int
		switch lenBytes {
		case 1:
			n = int(b[i+1])
		case 2:
			n = int(binary.BigEndian.Uint16(b[i+1:]))
		case 4:
			n = int(binary.BigEndian.Uint32(b[i+1:]))
		}
		end := i + hdr + extra + n
		return end, end <= len(b)
	}
	fixed := func(n int) (int, bool) { return i + n, i+n <= len(b) }
	switch {
	case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3:
		return i + 1, true
	case c >= 0xa0 && c <= 0xbf:
		return fixed(1 + int(c&0x1f))
	}
	switch c {
	case 0xc4, 0xd9:
		return size(2, 1, 0)
	case 0xc5, 0xda:
		return size(3, 2, 0)
	case 0xc6, 0xdb:
		return size(5, 4, 0)
	case 0xc7:
		return size(2, 1, 1)
	case 0xc8:
		return size(3, 2, 1)
	case 0xc9:
		return size(5, 4, 1)
	case 0xca, 0xce, 0xd2:
		return fixed(5)
	case 0xcb, 0xcf, 0xd3:
		return fixed(9)
	case 0xcc, 0xd0:
		return fixed(2)
	case 0xcd, 0xd1:
		return fixed(3)
	case 0xd4:
		return fixed(3)
	case 0xd5:
		return fixed(4)
	case 0xd6:
		return fixed(6)
	case 0xd7:
		return fixed(10)
	case 0xd8:
		return fixed(18)
	}
	return 0, false
}
