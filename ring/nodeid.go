package ring

import (
	"bytes"
	"encoding/hex"
	"fmt"
)

// NodeID identifies a cluster member: 16 bytes, conventionally a random
// (version 4) UUID. The zero value is the nil UUID, which means "no node": it
// is never a ring member, and Diff reports it as the previous or next owner
// of ranges when one of the two rings is empty.
type NodeID [16]byte

// ParseNodeID parses the canonical UUID text form
// "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (36 characters, hexadecimal digits of
// either case). Any other form fails with an error wrapping ErrBadNodeID.
func ParseNodeID(s string) (NodeID, error) {
	var id NodeID
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return NodeID{}, fmt.Errorf("%w: %q", ErrBadNodeID, s)
	}
	j := 0
	for i := 0; i < 36; {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			i++
			continue
		}
		hi, ok1 := unhex(s[i])
		lo, ok2 := unhex(s[i+1])
		if !ok1 || !ok2 {
			return NodeID{}, fmt.Errorf("%w: %q", ErrBadNodeID, s)
		}
		id[j] = hi<<4 | lo
		j++
		i += 2
	}
	return id, nil
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// String returns the canonical lower-case UUID form,
// e.g. "00000000-0000-0000-0000-000000000001".
func (id NodeID) String() string {
	var b [36]byte
	id.appendText(b[:0])
	return string(b[:])
}

func (id NodeID) appendText(dst []byte) []byte {
	var b [36]byte
	hex.Encode(b[0:8], id[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], id[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], id[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], id[8:10])
	b[23] = '-'
	hex.Encode(b[24:36], id[10:16])
	return append(dst, b[:]...)
}

// MarshalText implements encoding.TextMarshaler with the String form.
func (id NodeID) MarshalText() ([]byte, error) {
	return id.appendText(make([]byte, 0, 36)), nil
}

// UnmarshalText implements encoding.TextUnmarshaler; it accepts what
// ParseNodeID accepts.
func (id *NodeID) UnmarshalText(b []byte) error {
	v, err := ParseNodeID(string(b))
	if err != nil {
		return err
	}
	*id = v
	return nil
}

// IsZero reports whether id is the nil node id ("no node").
func (id NodeID) IsZero() bool { return id == NodeID{} }

// Compare orders node ids by their bytes (unsigned, lexicographic), which is
// also the order of their String forms. It returns -1, 0 or +1.
func (id NodeID) Compare(other NodeID) int { return bytes.Compare(id[:], other[:]) }
