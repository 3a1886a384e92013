package hlc

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"
	"time"
)

// FuzzDecodeMsgpack: the decoder faces the network. It must never panic;
// it either fails with ErrMalformed or returns a stamp whose canonical
// encoding is no longer than the input and decodes back to the same stamp.
func FuzzDecodeMsgpack(f *testing.F) {
	for _, ts := range []Timestamp{
		{},
		{Wall: 1, Counter: 2, Node: nodeA},
		{Wall: 1_764_000_000_000, Counter: 77, Node: nodeB},
		{Wall: -1, Counter: math.MaxUint32, Node: nodeA},
		{Wall: math.MaxInt64, Counter: math.MaxUint32, Node: [16]byte{0: 0xff, 15: 0xff}},
		{Wall: math.MinInt64},
	} {
		f.Add(ts.AppendMsgpack(nil))
	}
	f.Add(mustHex("93d00507c50010" + "00112233445566778899aabbccddeeff"))
	f.Add(mustHex("930507c600000010" + "00112233445566778899aabbccddeeff"))
	f.Add(mustHex("9301cf0000000100000000c410"))
	f.Add([]byte{})
	f.Add([]byte{0x93, 0xcf})
	f.Add(mustHex("93cf8000000000000000" + "05c410" + "00112233445566778899aabbccddeeff"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ts, n, err := DecodeMsgpack(data)
		if ts2, n2, err2 := decodeGeneral(data); ts2 != ts || n2 != n || (err == nil) != (err2 == nil) {
			t.Fatalf("fast path (%v, %d, %v) disagrees with general decoder (%v, %d, %v)", ts, n, err, ts2, n2, err2)
		}
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		if n <= 0 || n > len(data) {
			t.Fatalf("consumed %d of %d bytes", n, len(data))
		}
		enc := ts.AppendMsgpack(nil)
		if len(enc) > n {
			t.Fatalf("canonical encoding %x longer than input %x", enc, data[:n])
		}
		back, m, err := DecodeMsgpack(enc)
		if err != nil || back != ts || m != len(enc) {
			t.Fatalf("re-decode of %x: %v, %d, %v; want %v", enc, back, m, err, ts)
		}
		var u Timestamp
		if err := u.UnmarshalMsgpack(data[:n]); err != nil || u != ts {
			t.Fatalf("UnmarshalMsgpack(%x) = %v, %v", data[:n], u, err)
		}
	})
}

// FuzzClock drives a Clock with a random sequence of Now calls, Observe calls
// and physical clock jumps (backwards by up to 10 minutes, forwards by up to
// 5 s), with remote stamps around the local time and counters near the
// uint32 limit. It checks that
//   - every stamp a clock returns is strictly greater than every stamp it
//     returned or observed before (so a silent counter wrap, which would
//     produce (same wall, 0), is caught);
//   - Observe's result is greater than the remote stamp;
//   - Wall is never behind the physical clock, and never further ahead of
//     the largest wall seen than the number of operations (each counter
//     overflow costs at most 1 ms);
//   - a rejected Observe (drift, exhaustion) leaves the clock unchanged.
func FuzzClock(f *testing.F) {
	f.Add(int64(1_764_000_000_000), false, []byte{0, 0, 1, 0xff, 0xff, 0, 0, 0, 3, 1, 2, 3, 4, 0})
	f.Add(int64(0), true, []byte{3, 0xff, 0xff, 0xff, 0xff, 4, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add(int64(-5000), false, []byte{2, 9, 9, 9, 9, 1, 0xff, 0xff, 0xff, 0xff, 0})
	f.Add(int64(1<<40), false, []byte{4, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, start int64, drift bool, ops []byte) {
		// Keep the physical clock far from the int64 limits: a real clock
		// is, and Now panics at the very end of time by contract.
		phys := start % (1 << 50)
		cfg := Config{Node: nodeA, Physical: func() int64 { return phys }}
		if drift {
			cfg.MaxDrift = time.Second
		}
		c, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var prev Timestamp // greatest (Wall, Counter) returned or observed
		prev.Node = nodeA
		maxWall := max(phys, 0) // a Clock starts at the zero stamp: walls are never negative
		check := func(op string, ts Timestamp) {
			t.Helper()
			if ts.Node != nodeA {
				t.Fatalf("%s: stamp %v carries another node", op, ts)
			}
			if ts.Wall == prev.Wall && ts.Counter < prev.Counter {
				t.Fatalf("%s: counter wrapped silently: %v after %v", op, ts, prev)
			}
			if !prev.Less(ts) {
				t.Fatalf("%s: %v not after %v", op, ts, prev)
			}
			if ts.Wall < phys {
				t.Fatalf("%s: wall %d behind physical %d", op, ts.Wall, phys)
			}
			prev = ts
		}
		for i := 0; i < len(ops); {
			op := ops[i] % 5
			i++
			var arg uint32
			if i+4 <= len(ops) {
				arg = binary.BigEndian.Uint32(ops[i:])
				i += 4
			}
			switch op {
			case 0:
				check("Now", c.Now())
			case 1:
				phys -= int64(arg % 600_000)
			case 2:
				phys += int64(arg % 5_000)
			case 3, 4:
				remote := Timestamp{Node: nodeB}
				if op == 3 {
					remote.Wall = phys + int64(int16(arg)) // ±32 s around the physical clock
				} else {
					remote.Wall = prev.Wall // tie the local clock
				}
				if arg&1 != 0 {
					remote.Counter = math.MaxUint32 - (arg>>1)&7
				} else {
					remote.Counter = arg >> 16
				}
				before := c.Last()
				ts, err := c.Observe(remote)
				if err != nil {
					if !errors.Is(err, ErrDrift) || !drift {
						t.Fatalf("Observe(%v): %v", remote, err)
					}
					if c.Last() != before {
						t.Fatalf("rejected Observe changed the clock")
					}
					continue
				}
				if !remote.Less(ts) || ts.Wall < remote.Wall || (ts.Wall == remote.Wall && ts.Counter <= remote.Counter) {
					t.Fatalf("Observe(%v) = %v, not after the remote", remote, ts)
				}
				check("Observe", ts)
				maxWall = max(maxWall, remote.Wall)
			}
			maxWall = max(maxWall, phys)
			if prev.Wall > maxWall+int64(len(ops)) {
				t.Fatalf("wall %d ran ahead of everything seen (%d) by more than %d ms", prev.Wall, maxWall, len(ops))
			}
		}
	})
}
