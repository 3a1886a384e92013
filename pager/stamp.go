package pager

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// Stamp names one commit of one actor's state. The pager treats it as an
// opaque, totally ordered value: it only compares stamps (Compare) and copies
// them onto pages; it never reads a clock. Its shape is the one of
// hlc.Timestamp (Wall, Counter, Node [16]byte, compared in that order), so
// the replication layer converts with pager.Stamp(ts) without this package
// depending on hlc. Stamps must be unique per commit (the Node part makes
// stamps of different writers distinct): two pages with one key and one
// stamp are taken to hold the same bytes.
//
// The zero Stamp means "nothing committed yet": it is the stamp of an empty
// Store and the basis of an actor's first delta.
type Stamp struct {
	// Wall is the physical component (hlc: milliseconds); larger is newer.
	Wall int64
	// Counter orders stamps that share a Wall value.
	Counter uint32
	// Node breaks the remaining ties (byte-wise) and makes stamps unique per writer.
	Node [16]byte
}

// stampSize is the length of a Stamp's binary form.
const stampSize = 8 + 4 + 16

// Compare returns -1, 0 or +1 as s is older than, equal to or newer than o.
// The order is (Wall, Counter, Node) lexicographically.
func (s Stamp) Compare(o Stamp) int {
	switch {
	case s.Wall < o.Wall:
		return -1
	case s.Wall > o.Wall:
		return 1
	case s.Counter < o.Counter:
		return -1
	case s.Counter > o.Counter:
		return 1
	}
	for i := range s.Node {
		if s.Node[i] != o.Node[i] {
			if s.Node[i] < o.Node[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}

// IsZero reports whether s is the zero Stamp ("nothing committed").
func (s Stamp) IsZero() bool { return s == Stamp{} }

// String renders s as wall.counter@node (node in hex, shortened).
func (s Stamp) String() string {
	return fmt.Sprintf("%d.%d@%s", s.Wall, s.Counter, hex.EncodeToString(s.Node[:4]))
}

func (s Stamp) appendBinary(b []byte) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(s.Wall))
	b = binary.BigEndian.AppendUint32(b, s.Counter)
	return append(b, s.Node[:]...)
}

// EncodeMsgpack encodes s as a 28-byte msgpack bin (big-endian wall,
// counter, node); the zero Stamp as an empty bin.
func (s Stamp) EncodeMsgpack(enc *msgpack.Encoder) error {
	if s.IsZero() {
		return enc.EncodeBytes(nil)
	}
	var buf [stampSize]byte
	return enc.EncodeBytes(s.appendBinary(buf[:0]))
}

// DecodeMsgpack decodes the form written by EncodeMsgpack.
func (s *Stamp) DecodeMsgpack(dec *msgpack.Decoder) error {
	b, err := dec.DecodeBytes()
	if err != nil {
		return err
	}
	if len(b) == 0 {
		*s = Stamp{}
		return nil
	}
	if len(b) != stampSize {
		return fmt.Errorf("%w: stamp of %d bytes, want %d", ErrCorrupt, len(b), stampSize)
	}
	s.Wall = int64(binary.BigEndian.Uint64(b))
	s.Counter = binary.BigEndian.Uint32(b[8:])
	copy(s.Node[:], b[12:])
	return nil
}
