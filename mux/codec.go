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
}

var errDecompressedTooLarge = errors.New("decompressed payload exceeds the message limit")

func codecByName(name string) codec {
	switch name {
	case CodecZstd:
		return zstdCodec{}
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

func (zlibCodec) decompress(src []byte, max int) ([]byte, error) {
	r, err := zlib.NewReader(bytes.NewReader(src))
	if err != nil {
		return nil, err
	}
	defer r.Close()
	out, err := io.ReadAll(io.LimitReader(r, int64(max)+1))
	if err != nil {
		return nil, err
	}
	if len(out) > max {
		return nil, errDecompressedTooLarge
	}
	return out, nil
}

type zstdCodec struct{}

// The zstd encoder is created on first use. Created with a nil writer it
// starts no goroutines; EncodeAll is safe for concurrent use.
var (
	zstdOnce sync.Once
	zstdEnc  *zstd.Encoder
)

func zstdInit() {
	zstdOnce.Do(func() {
		zstdEnc, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest),
			zstd.WithEncoderConcurrency(2), zstd.WithLowerEncoderMem(true))
	})
}

func (zstdCodec) name() string { return CodecZstd }

func (zstdCodec) compress(dst, src []byte) []byte {
	zstdInit()
	return zstdEnc.EncodeAll(src, dst[:0])
}

func (zstdCodec) decompress(src []byte, max int) ([]byte, error) {
	// Refuse frames that declare a larger content size before decoding,
	// then bound the actual output while decoding.
	var h zstd.Header
	if err := h.Decode(src); err != nil {
		return nil, err
	}
	if h.HasFCS && h.FrameContentSize > uint64(max) {
		return nil, errDecompressedTooLarge
	}
	out, err := boundedZstd(src, max)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// boundedZstd decodes src block by block through a stream reader limited
// to limit+1 bytes, so an undeclared-size bomb cannot allocate past limit.
func boundedZstd(src []byte, limit int) ([]byte, error) {
	d, err := zstd.NewReader(bytes.NewReader(src), zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderMaxMemory(uint64(limit)+1), zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxWindow(uint64(max(limit, 8<<20))))
	if err != nil {
		return nil, err
	}
	defer d.Close()
	out, err := io.ReadAll(io.LimitReader(d, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(out) > limit {
		return nil, errDecompressedTooLarge
	}
	return out, nil
}
