package hlc

import (
	"encoding/binary"
	"sync"
	"testing"
	"time"
)

// Benchmarks, each with a floor measured in the same run:
//   - Now: a bare mutex Lock/Unlock around the same physical clock call;
//   - AppendMsgpack / DecodeMsgpack: a fixed 28-byte big-endian layout
//     (8 wall + 4 counter + 16 node), the cheapest possible binary form.

func BenchmarkNow(b *testing.B) {
	for _, tc := range []struct {
		name string
		phys func() int64
	}{
		{"fake-clock", func() int64 { return 1_764_000_000_000 }},
		{"SystemMillis", SystemMillis},
	} {
		c, err := New(Config{Node: nodeA, Physical: tc.phys})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.Now()
			}
		})
		b.Run("floor=mutex+"+tc.name, func(b *testing.B) {
			var mu sync.Mutex
			var sink int64
			for b.Loop() {
				mu.Lock()
				sink += tc.phys()
				mu.Unlock()
			}
			_ = sink
		})
	}
}

func BenchmarkNowParallel(b *testing.B) {
	c, _ := New(Config{Node: nodeA, Physical: SystemMillis})
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c.Now()
		}
	})
}

func BenchmarkCodec(b *testing.B) {
	ts := Timestamp{Wall: time.Now().UnixMilli(), Counter: 3, Node: nodeA}
	buf := make([]byte, 0, 32)
	enc := ts.AppendMsgpack(nil)
	b.Run("AppendMsgpack", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			buf = ts.AppendMsgpack(buf[:0])
		}
	})
	b.Run("floor=fixed-28-bytes-append", func(b *testing.B) {
		for b.Loop() {
			buf = binary.BigEndian.AppendUint64(buf[:0], uint64(ts.Wall))
			buf = binary.BigEndian.AppendUint32(buf, ts.Counter)
			buf = append(buf, ts.Node[:]...)
		}
	})
	b.Run("DecodeMsgpack", func(b *testing.B) {
		b.ReportAllocs()
		var sink Timestamp
		for b.Loop() {
			sink, _, _ = DecodeMsgpack(enc)
		}
		_ = sink
	})
	fixed := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint64(nil, uint64(ts.Wall)), ts.Counter)
	fixed = append(fixed, ts.Node[:]...)
	b.Run("floor=fixed-28-bytes-decode", func(b *testing.B) {
		var sink Timestamp
		for b.Loop() {
			if len(fixed) < 28 {
				b.Fatal("short")
			}
			sink.Wall = int64(binary.BigEndian.Uint64(fixed))
			sink.Counter = binary.BigEndian.Uint32(fixed[8:])
			copy(sink.Node[:], fixed[12:28])
		}
		_ = sink
	})
}
