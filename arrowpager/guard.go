package arrowpager

import (
	"encoding/binary"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Arrow's IPC reader trusts the lengths it reads: a corrupt stream may ask
// for gigabytes (a failed allocation kills the process, which no recover
// can catch) or index out of range (a panic, which decodeBlock recovers).
// Before a page reaches the reader, checkFraming walks its messages and
// checks every declared metadata and body length against the bytes really
// there, and the reader allocates through a limitAlloc that refuses any
// buffer larger than the input could justify.

// limitAlloc is a memory.Allocator that panics (recovered by the decoders)
// on an allocation over limit bytes.
type limitAlloc struct{ limit int }

func (a limitAlloc) check(n int) {
	if n < 0 || n > a.limit {
		panic(fmt.Sprintf("allocation of %d bytes over the %d-byte limit", n, a.limit))
	}
}

// Allocate allocates n bytes or panics over the limit.
func (a limitAlloc) Allocate(n int) []byte {
	a.check(n)
	return memory.DefaultAllocator.Allocate(n)
}

// Reallocate resizes b to n bytes or panics over the limit.
func (a limitAlloc) Reallocate(n int, b []byte) []byte {
	a.check(n)
	return memory.DefaultAllocator.Reallocate(n, b)
}

// Free returns b to the default allocator.
func (a limitAlloc) Free(b []byte) { memory.DefaultAllocator.Free(b) }

func allocFor(stream []byte) limitAlloc { return limitAlloc{limit: 2*len(stream) + 4096} }

// checkFraming validates the message framing of an IPC stream: each
// message is [0xFFFFFFFF] int32 metadata length, the flatbuffer metadata,
// then the body whose length the metadata declares; a zero length ends the
// stream.
func checkFraming(b []byte) error {
	total := len(b)
	for len(b) > 0 {
		if len(b) < 4 {
			return fmt.Errorf("%w: truncated message prefix", ErrCorrupt)
		}
		n := binary.LittleEndian.Uint32(b)
		b = b[4:]
		if n == 0xffffffff {
			if len(b) < 4 {
				return fmt.Errorf("%w: truncated message length", ErrCorrupt)
			}
			n = binary.LittleEndian.Uint32(b)
			b = b[4:]
		}
		if n == 0 {
			return nil // end of stream
		}
		if uint64(n) > uint64(len(b)) || n < 8 {
			return fmt.Errorf("%w: message metadata of %d bytes, %d left", ErrCorrupt, n, len(b))
		}
		body, err := bodyLength(b[:n])
		if err != nil {
			return err
		}
		meta := b[:n]
		b = b[n:]
		if body < 0 || body > int64(len(b)) {
			return fmt.Errorf("%w: message body of %d bytes, %d left", ErrCorrupt, body, len(b))
		}
		if err := verifyMessage(meta, body, total); err != nil {
			return err
		}
		b = b[body:]
	}
	return nil
}

// bodyLength reads field 3 (bodyLength, int64) of the flatbuffer Message
// table in meta, with bounds checks at every step.
func bodyLength(meta []byte) (int64, error) {
	bad := func(what string) (int64, error) {
		return 0, fmt.Errorf("%w: message metadata: %s", ErrCorrupt, what)
	}
	if len(meta) < 4 {
		return bad("short")
	}
	table := int64(binary.LittleEndian.Uint32(meta))
	if table+4 > int64(len(meta)) {
		return bad("root out of range")
	}
	vtable := table - int64(int32(binary.LittleEndian.Uint32(meta[table:])))
	if vtable < 0 || vtable+4 > int64(len(meta)) {
		return bad("vtable out of range")
	}
	vsize := int64(binary.LittleEndian.Uint16(meta[vtable:]))
	const field = 3
	slot := 4 + 2*field
	if vsize < int64(slot+2) || vtable+vsize > int64(len(meta)) {
		return 0, nil // field absent: no body
	}
	off := int64(binary.LittleEndian.Uint16(meta[vtable+int64(slot):]))
	if off == 0 {
		return 0, nil
	}
	if table+off+8 > int64(len(meta)) {
		return bad("body length out of range")
	}
	return int64(binary.LittleEndian.Uint64(meta[table+off:])), nil
}
