package hlc

import (
	"cmp"
	"encoding/hex"
	"strconv"
)

// Timestamp is a hybrid logical clock reading. Timestamps are totally
// ordered by (Wall, Counter, Node): Wall first, then Counter, then Node's
// bytes compared lexicographically, so stamps from different nodes never
// tie.
//
// The zero Timestamp means "no version": it is lower than every timestamp a
// Clock issues.
type Timestamp struct {
	// Wall is the physical component, milliseconds since the Unix epoch:
	// the largest physical time this stamp's clock had seen, pushed
	// forward by 1 ms when Counter would overflow.
	Wall int64
	// Counter orders stamps with the same Wall.
	Counter uint32
	// Node is the id of the node whose clock issued the stamp; it breaks
	// ties between nodes.
	Node [16]byte
}

// Compare returns -1, 0 or +1 as t is less than, equal to or greater than u
// in the order (Wall, Counter, Node).
func (t Timestamp) Compare(u Timestamp) int {
	if c := cmp.Compare(t.Wall, u.Wall); c != 0 {
		return c
	}
	if c := cmp.Compare(t.Counter, u.Counter); c != 0 {
		return c
	}
	for i := range t.Node {
		if c := cmp.Compare(t.Node[i], u.Node[i]); c != 0 {
			return c
		}
	}
	return 0
}

// Less reports whether t orders before u.
func (t Timestamp) Less(u Timestamp) bool { return t.Compare(u) < 0 }

// IsZero reports whether t is the zero Timestamp ("no version").
func (t Timestamp) IsZero() bool { return t == Timestamp{} }

// String formats t as "wall.counter@node", node in UUID form, e.g.
// "1700000000000.3@00000000-0000-0000-0000-000000000001". The zero
// Timestamp formats as "0.0@00000000-0000-0000-0000-000000000000".
func (t Timestamp) String() string {
	b := make([]byte, 0, 64)
	b = strconv.AppendInt(b, t.Wall, 10)
	b = append(b, '.')
	b = strconv.AppendUint(b, uint64(t.Counter), 10)
	b = append(b, '@')
	var h [32]byte
	hex.Encode(h[:], t.Node[:])
	b = append(b, h[0:8]...)
	b = append(b, '-')
	b = append(b, h[8:12]...)
	b = append(b, '-')
	b = append(b, h[12:16]...)
	b = append(b, '-')
	b = append(b, h[16:20]...)
	b = append(b, '-')
	b = append(b, h[20:32]...)
	return string(b)
}
