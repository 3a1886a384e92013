package hlc

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

// TestMsgpackVectors pins the byte layout.
func TestMsgpackVectors(t *testing.T) {
	node := "00112233445566778899aabbccddeeff"
	var n [16]byte
	copy(n[:], mustHex(node))
	for _, tc := range []struct {
		ts  Timestamp
		hex string
	}{
		{Timestamp{}, "c0"},
		{Timestamp{Wall: 1, Counter: 2, Node: n}, "930102c410" + node},
		{Timestamp{Wall: 1_700_000_000_000, Counter: 0, Node: n}, "93cf0000018bcfe5680000c410" + node},
		{Timestamp{Wall: 200, Counter: 300, Node: n}, "93ccc8" + "cd012c" + "c410" + node},
		{Timestamp{Wall: 70000, Counter: math.MaxUint32, Node: n}, "93ce00011170" + "ceffffffff" + "c410" + node},
		{Timestamp{Wall: -1, Node: n}, "93ff00c410" + node},
		{Timestamp{Wall: -200, Node: n}, "93d1ff3800c410" + node},
		{Timestamp{Wall: math.MinInt64, Node: n}, "93d3800000000000000000c410" + node},
		{Timestamp{Wall: math.MaxInt64, Counter: 1}, "93cf7fffffffffffffff01c410" + "00000000000000000000000000000000"},
	} {
		got := tc.ts.AppendMsgpack(nil)
		if hex.EncodeToString(got) != tc.hex {
			t.Errorf("%v encodes as %x, want %s", tc.ts, got, tc.hex)
		}
		back, used, err := DecodeMsgpack(append(got, 0xaa)) // trailing byte left alone
		if err != nil || back != tc.ts || used != len(got) {
			t.Errorf("decode %x = %v, %d, %v", got, back, used, err)
		}
	}
	if got := len(Timestamp{Wall: 1_764_000_000_000, Counter: 5, Node: n}.AppendMsgpack(nil)); got != 29 {
		t.Errorf("typical stamp is %d bytes, want 29", got)
	}
}

// TestMsgpackDecodeLenient: other encoders may use wider integer forms or
// bin 16/32; the value is the same.
func TestMsgpackDecodeLenient(t *testing.T) {
	node := "00112233445566778899aabbccddeeff"
	var n [16]byte
	copy(n[:], mustHex(node))
	want := Timestamp{Wall: 5, Counter: 7, Node: n}
	for _, h := range []string{
		"930507c410" + node,
		"93cf0000000000000005ce00000007c410" + node,
		"93d300000000000000050" + "7c410" + node,
		"93d00507c50010" + node,
		"930507c600000010" + node,
	} {
		got, _, err := DecodeMsgpack(mustHex(h))
		if err != nil || got != want {
			t.Errorf("decode %s = %v, %v; want %v", h, got, err, want)
		}
	}
	// A non-canonical zero (an array of zeros) decodes to the zero stamp.
	if got, _, err := DecodeMsgpack(mustHex("930000c41000000000000000000000000000000000")); err != nil || !got.IsZero() {
		t.Errorf("array zero = %v, %v", got, err)
	}
}

func TestMsgpackMalformed(t *testing.T) {
	node := "00112233445566778899aabbccddeeff"
	for name, h := range map[string]string{
		"empty":            "",
		"map":              "80",
		"array of 2":       "920102",
		"array of 4":       "9401020304",
		"wall string":      "93a10102c410" + node,
		"wall truncated":   "93cd01",
		"wall > int64":     "93cf800000000000000000c410" + node,
		"counter negative": "9301ffc410" + node,
		"counter > uint32": "9301cf0000000100000000c410" + node,
		"counter float":    "9301ca00000000c410" + node,
		"node str":         "930102b0" + node,
		"node 15 bytes":    "930102c40f" + node[:30],
		"node 17 bytes":    "930102c411" + node + "00",
		"node truncated":   "930102c410" + node[:20],
		"node missing":     "930102",
		"bin16 truncated":  "930102c500",
	} {
		if _, _, err := DecodeMsgpack(mustHex(h)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", name, err)
		}
	}
	var ts Timestamp
	if err := ts.UnmarshalMsgpack(mustHex("c0c0")); !errors.Is(err, ErrMalformed) {
		t.Errorf("trailing bytes: %v", err)
	}
}

// TestMsgpackInterop: Timestamp works as a field of a message encoded by
// github.com/vmihailenco/msgpack/v5, the codec of package wire.
func TestMsgpackInterop(t *testing.T) {
	type commit struct {
		Version  Timestamp
		Previous Timestamp
		Basis    *Timestamp
		Name     string
	}
	in := commit{
		Version:  Timestamp{Wall: 1_764_000_000_123, Counter: 9, Node: nodeA},
		Previous: Timestamp{},
		Basis:    &Timestamp{Wall: 3, Counter: 1, Node: nodeB},
		Name:     "x",
	}
	b, err := msgpack.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, in.Version.AppendMsgpack(nil)) {
		t.Fatalf("encoded message %x does not embed the Timestamp encoding", b)
	}
	var out commit
	if err := msgpack.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if out.Version != in.Version || !out.Previous.IsZero() || out.Basis == nil || *out.Basis != *in.Basis || out.Name != "x" {
		t.Fatalf("round trip: %+v -> %+v", in, out)
	}
	// And the library decodes what we encode as a plain value.
	var arr []any
	if err := msgpack.Unmarshal(in.Version.AppendMsgpack(nil), &arr); err != nil || len(arr) != 3 {
		t.Fatalf("generic decode: %v, %v", arr, err)
	}
}

func TestDecodeAllocs(t *testing.T) {
	b := Timestamp{Wall: 1_764_000_000_000, Counter: 1, Node: nodeA}.AppendMsgpack(nil)
	buf := make([]byte, 0, 32)
	if a := testing.AllocsPerRun(100, func() {
		ts, _, _ := DecodeMsgpack(b)
		buf = ts.AppendMsgpack(buf[:0])
	}); a != 0 {
		t.Fatalf("decode+append allocates %v", a)
	}
}
