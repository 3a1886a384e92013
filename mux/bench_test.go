package mux_test

import (
	"testing"

	"github.com/casty-go/casty/mux/internal/muxbench"
)

// Floors and figures measured side by side; see the repository's BENCHMARKS.md and
// cmd/muxbench for the table with ratios.

func BenchmarkRawTCPPingPong(b *testing.B)   { muxbench.RawTCPPingPong(b) }
func BenchmarkRawYamuxPingPong(b *testing.B) { muxbench.RawYamuxPingPong(b) }
func BenchmarkRequest(b *testing.B)          { muxbench.MuxRequest(b) }
func BenchmarkRawYamuxPipelined(b *testing.B) {
	muxbench.RawYamuxPipelined(b)
}
func BenchmarkConcurrent64(b *testing.B) { muxbench.MuxConcurrent(b, 64) }
func BenchmarkRawTCPBulk(b *testing.B)   { muxbench.RawTCPBulk(b) }
func BenchmarkStreamBulk(b *testing.B)   { muxbench.MuxStreamBulk(b) }
