package ring

import (
	"encoding/binary"
	"fmt"
	"sort"
	"strconv"
	"testing"

	"golang.org/x/crypto/blake2b"
)

// Benchmarks. Each figure has a floor measured in the same run:
//   - Owner: a plain sort.Search over the same []uint64 of tokens;
//   - Point / Hash: a reused raw blake2b.New(8, nil) digest, without pooling;
//   - New: hashing the N×128 tokens alone (raw digest, no sort);
//   - Diff: a bare merge walk over the two rings' token slices.

func benchRing(b *testing.B, members int) *Ring {
	r, err := New(randomIDs(seeded(uint64(members)), members))
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// xorshift is a tiny inline PRNG so lookups hit fresh points (and fresh
// cache lines) on every iteration, for the ring and the floor alike.
func xorshift(x uint64) uint64 {
	x ^= x << 13
	x ^= x >> 7
	x ^= x << 17
	return x
}

func BenchmarkOwner(b *testing.B) {
	r := benchRing(b, 100)
	b.Run("ring=100x128", func(b *testing.B) {
		b.ReportAllocs()
		var sink NodeID
		p := uint64(88172645463325252)
		for b.Loop() {
			p = xorshift(p)
			sink, _ = r.Owner(p)
		}
		_ = sink
	})
	b.Run("floor=sort.Search", func(b *testing.B) {
		b.ReportAllocs()
		toks := r.tokens
		var sink int
		p := uint64(88172645463325252)
		for b.Loop() {
			p = xorshift(p)
			sink += sort.Search(len(toks), func(j int) bool { return toks[j] >= p })
		}
		_ = sink
	})
	b.Run("floor=xorshift-only", func(b *testing.B) {
		p := uint64(88172645463325252)
		for b.Loop() {
			p = xorshift(p)
		}
		_ = p
	})
}

func BenchmarkReplicas(b *testing.B) {
	r := benchRing(b, 100)
	buf := make([]NodeID, 0, 8)
	b.Run("ring=100x128/n=3", func(b *testing.B) {
		b.ReportAllocs()
		p := uint64(88172645463325252)
		for b.Loop() {
			p = xorshift(p)
			buf = r.AppendReplicas(buf[:0], p, 3)
		}
	})
}

func BenchmarkPoint(b *testing.B) {
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = "key-" + strconv.Itoa(i*7919)
	}
	b.Run("Point", func(b *testing.B) {
		b.ReportAllocs()
		var sink uint64
		i := 0
		for b.Loop() {
			sink += Point("shop.StockItem", keys[i&1023])
			i++
		}
		_ = sink
	})
	r := benchRing(b, 100)
	b.Run("OwnerOf/ring=100x128", func(b *testing.B) {
		b.ReportAllocs()
		var sink NodeID
		i := 0
		for b.Loop() {
			sink, _ = r.OwnerOf("shop.StockItem", keys[i&1023])
			i++
		}
		_ = sink
	})
	b.Run("floor=raw-blake2b", func(b *testing.B) {
		b.ReportAllocs()
		h, _ := blake2b.New(8, nil)
		buf := make([]byte, 0, 64)
		var sum [8]byte
		var sink uint64
		i := 0
		for b.Loop() {
			buf = append(append(buf[:0], "shop.StockItem/"...), keys[i&1023]...)
			h.Reset()
			h.Write(buf)
			sink += binary.BigEndian.Uint64(h.Sum(sum[:0]))
			i++
		}
		_ = sink
	})
}

func BenchmarkNew(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		ids := randomIDs(seeded(uint64(n)), n)
		b.Run(fmt.Sprintf("members=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := New(ids); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("floor=hash-tokens/members=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			h, _ := blake2b.New(8, nil)
			var in [20]byte
			var sum [8]byte
			toks := make([]uint64, 0, n*VNodes)
			for b.Loop() {
				toks = toks[:0]
				for _, id := range ids {
					copy(in[:16], id[:])
					for i := uint32(0); i < VNodes; i++ {
						binary.BigEndian.PutUint32(in[16:], i)
						h.Reset()
						h.Write(in[:])
						toks = append(toks, binary.BigEndian.Uint64(h.Sum(sum[:0])))
					}
				}
			}
		})
	}
}

func BenchmarkDiffJoin(b *testing.B) {
	ids := randomIDs(seeded(7), 1001)
	before, err := New(ids[:1000])
	if err != nil {
		b.Fatal(err)
	}
	after, err := New(ids)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("members=1000+1", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if len(Diff(before, after)) == 0 {
				b.Fatal("no moves")
			}
		}
	})
	b.Run("floor=merge-walk", func(b *testing.B) {
		b.ReportAllocs()
		x, y := before.tokens, after.tokens
		for b.Loop() {
			i, j, n := 0, 0, 0
			for i < len(x) || j < len(y) {
				if j == len(y) || (i < len(x) && x[i] <= y[j]) {
					i++
				} else {
					j++
				}
				n++
			}
			if n == 0 {
				b.Fatal("empty")
			}
		}
	})
}
