package mux

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"
)

// codecPayload is n bytes of moderately compressible data: little-endian
// counters and a few words drawn from a small vocabulary, the shape of
// encoded call arguments rather than of zeros or noise.
func codecPayload(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	words := []string{"counter", "account", "balance", "key-", "ok", "state", "\x00\x01", "value"}
	b := make([]byte, 0, n+16)
	for len(b) < n {
		b = binary.LittleEndian.AppendUint32(b, uint32(r.IntN(1<<12)))
		b = append(b, words[r.IntN(len(words))]...)
	}
	return b[:n]
}

// BenchmarkDecompress decodes one compressed message as the receiving lane
// does (lane.go: codec.decompress bounded by Config.MaxMessage, 4 MiB by
// default). B/op is what the receiver allocates per message.
func BenchmarkDecompress(b *testing.B) {
	const limit = 4 << 20
	for _, c := range []codec{testZstd, zlibCodec{}} {
		for _, n := range []int{1 << 10, 64 << 10, limit} {
			src := codecPayload(n)
			z := c.compress(nil, src)
			b.Run(fmt.Sprintf("%s/%dKiB", c.name(), n>>10), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(n))
				for b.Loop() {
					out, err := c.decompress(z, limit)
					if err != nil || len(out) != n {
						b.Fatalf("%d bytes, %v", len(out), err)
					}
				}
			})
		}
	}
}

// BenchmarkCompress is the sending side of the same messages.
func BenchmarkCompress(b *testing.B) {
	for _, c := range []codec{testZstd, zlibCodec{}} {
		for _, n := range []int{1 << 10, 64 << 10, 4 << 20} {
			src := codecPayload(n)
			b.Run(fmt.Sprintf("%s/%dKiB", c.name(), n>>10), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(n))
				var dst []byte
				for b.Loop() {
					dst = c.compress(dst, src)
				}
			})
		}
	}
}

// testZstd is a zstd codec with coders of its own, as a node's.
var testZstd = zstdCodec{new(zstdCoders)}
