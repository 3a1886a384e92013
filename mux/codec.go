package mux

import (
	"bytes"
	"compress/zlib"
	"errors"
	"io"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// Codec names negotiated in the handshake.
const (
	// CodecZstd is Zstandard (github.com/klauspost/compress/zstd, fastest level).
	CodecZstd = "zstd"
	// CodecZlib is zlib at level 1 (compress/zlib).
	CodecZlib = "zlib"
)

// codec compresses payloads on one connection. Implementations are safe
// for concurrent use.
type codec interface {
	name() string
	// compress appends the compressed form of src to dst[:0].
	compress(dst, src []byte) []byte
	// decompress returns src decompressed; more than max bytes of output
	// is an error (a compression bomb).
	decompress(src []byte, max int) ([]byte, error)
	// declaredSize is the size src says it decompresses to, if it says
	// (a zstd frame's content size; decompress holds it to that), read
	// without decoding.
	declaredSize(src []byte) (int, bool)
}

var errDecompressedTooLarge = errors.New("decompressed payload exceeds the message limit")

// codecByName returns the codec called name, nil if none is; a zstd codec
// uses z's coders.
func codecByName(name string, z *zstdCoders) codec {
	switch name {
	case CodecZstd:
		return zstdCodec{z}
	case CodecZlib:
		return zlibCodec{}
	}
	return nil
}

type zlibCodec struct{}

var zlibWriters = sync.Pool{New: func() any {
	w, _ := zlib.NewWriterLevel(nil, zlib.BestSpeed)
	return w
}}

func (zlibCodec) name() string { return CodecZlib }

func (zlibCodec) compress(dst, src []byte) []byte {
	buf := bytes.NewBuffer(dst[:0])
	w := zlibWriters.Get().(*zlib.Writer)
	w.Reset(buf)
	_, _ = w.Write(src) // writes to a bytes.Buffer cannot fail
	_ = w.Close()
	zlibWriters.Put(w)
	return buf.Bytes()
}

// zlibReaders holds zlib readers for reuse: each holds a 32 KiB window
// and its Huffman tables, allocated again for every message otherwise.
var zlibReaders sync.Pool

func (zlibCodec) decompress(src []byte, max int) ([]byte, error) {
	var r io.ReadCloser
	var err error
	if pooled, ok := zlibReaders.Get().(io.ReadCloser); ok {
		r, err = pooled, pooled.(zlib.Resetter).Reset(bytes.NewReader(src), nil)
	} else {
		r, err = zlib.NewReader(bytes.NewReader(src))
	}
	if err != nil {
		return nil, err
	}
	// zlib declares no size: grow by doubling from a guess, never past
	// max+1 bytes (one byte more tells a bomb).
	out, err := readBounded(r, initialGuess(len(src), max), max+1)
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	zlibReaders.Put(r)
	if err != nil {
		return nil, err
	}
	if len(out) > max {
		return nil, errDecompressedTooLarge
	}
	return out, nil
}

func (zlibCodec) declaredSize([]byte) (int, bool) { return 0, false }

// initialGuess is the first buffer for a decompressed size nobody
// declared: four times the compressed size, at least 4 KiB, at most limit.
func initialGuess(compressed, limit int) int {
	return min(limit, max(4<<10, 4*compressed))
}

// readBounded reads r to its end into a buffer of capacity guess, doubled
// as it fills but never past limit: the buffer is what is returned, and a
// reader producing more than limit bytes stops at limit.
func readBounded(r io.Reader, guess, limit int) ([]byte, error) {
	buf := make([]byte, 0, min(guess, limit))
	for {
		if len(buf) == cap(buf) {
			if len(buf) >= limit {
				return buf, nil
			}
			next := make([]byte, len(buf), min(2*cap(buf), limit))
			copy(next, buf)
			buf = next
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// zstdCodec is zstd with a node's coders.
type zstdCodec struct{ z *zstdCoders }

// zstdCoders are a node's zstd encoder and decoder, each created on its
// first use. Created with a nil writer the encoder starts no goroutines;
// EncodeAll is safe for concurrent use. Each node has its own rather than
// the process sharing one because a coder pools its block coders in a
// channel, and a channel made inside a testing/synctest bubble must never
// be used outside it (nor one made outside block a goroutine inside it):
// a node's coders live and die with the node.
type zstdCoders struct {
	encOnce sync.Once
	enc     *zstd.Encoder
	decOnce sync.Once
	dec     *zstd.Decoder
}

func (z *zstdCoders) encoder() *zstd.Encoder {
	z.encOnce.Do(func() {
		z.enc, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest),
			zstd.WithEncoderConcurrency(2), zstd.WithLowerEncoderMem(true))
	})
	return z.enc
}

func (zstdCodec) name() string { return CodecZstd }

func (c zstdCodec) compress(dst, src []byte) []byte {
	return c.z.encoder().EncodeAll(src, dst[:0])
}

// decoder returns the node's zstd decoder, created on first use. Created
// without a reader it starts no goroutines; DecodeAll is safe for
// concurrent use (up to GOMAXPROCS at a time, the rest wait for a block
// decoder). It decodes into the buffer it is given and never past that
// buffer's capacity (WithDecodeAllCapLimit), which is how decompress
// bounds the output; the window is the output itself, so no window is
// allocated.
func (z *zstdCoders) decoder() *zstd.Decoder {
	z.decOnce.Do(func() {
		z.dec, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0),
			zstd.WithDecoderLowmem(true), zstd.WithDecodeAllCapLimit(true))
	})
	return z.dec
}

// zstdMaxRatio is the most a zstd frame can decode to per input byte: a
// block of at most 128 KiB output costs at least 4 bytes (an RLE block's
// 3-byte header and its byte).
const zstdMaxRatio = (128 << 10) / 4

// zstdSlack is room past the content size that the decoder's 16-byte
// copies may touch without reallocating the buffer (its
// compressedBlockOverAlloc).
const zstdSlack = 32

func (zstdCodec) declaredSize(src []byte) (int, bool) {
	var h zstd.Header
	if h.Decode(src) != nil || !h.HasFCS || h.FrameContentSize > maxWireLength {
		return 0, false // decompress judges it
	}
	return int(h.FrameContentSize), true
}

func (c zstdCodec) decompress(src []byte, max int) ([]byte, error) {
	var h zstd.Header
	if err := h.Decode(src); err != nil {
		return nil, err
	}
	dec := c.z.decoder()
	// Our encoder (EncodeAll) declares the content size: decode into a
	// buffer of exactly that size. Refuse a frame declaring more than the
	// limit, or more than its input can decode to, before allocating.
	if h.HasFCS {
		if h.FrameContentSize > uint64(max) {
			return nil, errDecompressedTooLarge
		}
		if h.FrameContentSize > uint64(len(src))*zstdMaxRatio {
			return nil, errors.New("zstd frame declares more than it can hold")
		}
		return zstdDecodeWithin(dec, src, int(h.FrameContentSize)+zstdSlack, max)
	}
	// No declared size: start from a guess and double, never past the
	// limit. Each attempt decodes again; senders that declare the size
	// (ours always do) never take this path.
	limit := min(max, len(src)*zstdMaxRatio)
	for c := initialGuess(len(src), limit); ; c = min(2*c, limit) {
		out, err := zstdDecodeWithin(dec, src, c+zstdSlack, max)
		if !errors.Is(err, zstd.ErrDecoderSizeExceeded) || c >= limit {
			return out, err
		}
	}
}

// zstdDecodeWithin decodes src with dec into a new buffer of capacity c; output
// past c is ErrDecoderSizeExceeded, past max errDecompressedTooLarge.
func zstdDecodeWithin(dec *zstd.Decoder, src []byte, c, max int) ([]byte, error) {
	out, err := dec.DecodeAll(src, make([]byte, 0, c))
	if errors.Is(err, zstd.ErrDecoderSizeExceeded) && c > max {
		return nil, errDecompressedTooLarge
	}
	if err != nil {
		return nil, err
	}
	if len(out) > max {
		return nil, errDecompressedTooLarge
	}
	return out, nil
}
