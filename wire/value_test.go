package wire

import (
	"bytes"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// scalarSamples returns values of every type the scalar paths handle, at
// the edges of each msgpack format and at random.
func scalarSamples() []any {
	ints := []int64{0, 1, -1, 31, 32, -32, -33, 127, 128, -128, -129, 255, 256, math.MaxInt16, math.MaxInt16 + 1,
		math.MinInt16, math.MinInt16 - 1, math.MaxUint16, math.MaxUint16 + 1, math.MaxInt32, math.MaxInt32 + 1,
		math.MinInt32, math.MinInt32 - 1, math.MaxUint32, math.MaxUint32 + 1, math.MaxInt64, math.MinInt64}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		ints = append(ints, rng.Int64()>>rng.IntN(64))
	}
	var out []any
	for _, n := range ints {
		out = append(out, int(n), n, uint(n), uint64(n), float64(n), float64(n)/3)
	}
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), math.SmallestNonzeroFloat64} {
		out = append(out, f)
	}
	for _, n := range []int{0, 1, 31, 32, 255, 256, math.MaxUint16, math.MaxUint16 + 1} {
		out = append(out, strings.Repeat("é", n/2)+strings.Repeat("x", n%2))
	}
	return append(out, true, false, "", "casty")
}

// appendValueAny calls AppendValue with v's dynamic type as T.
func appendValueAny(v any) ([]byte, error) {
	switch x := v.(type) {
	case int:
		return AppendValue(nil, x)
	case int64:
		return AppendValue(nil, x)
	case uint:
		return AppendValue(nil, x)
	case uint64:
		return AppendValue(nil, x)
	case float64:
		return AppendValue(nil, x)
	case bool:
		return AppendValue(nil, x)
	case string:
		return AppendValue(nil, x)
	}
	panic("unexpected type")
}

func TestAppendValueIsMarshal(t *testing.T) {
	for _, v := range scalarSamples() {
		want, err := Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendValueAny(v)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%T %v: AppendValue % x (err %v), Marshal % x", v, v, got, err, want)
		}
	}
	// Types defined on a scalar, and everything else, take the encoder.
	type score int
	got, err := AppendValue([]byte{9}, score(300))
	want, _ := Marshal(score(300))
	if err != nil || !bytes.Equal(got, append([]byte{9}, want...)) {
		t.Errorf("score: % x, want 09 % x", got, want)
	}
	if _, err := AppendValue(nil, make(chan int)); err == nil {
		t.Error("a channel encoded")
	}
}

// decodeBoth decodes b with UnmarshalValue and Unmarshal into a fresh T
// each and fails if they disagree on the value or on success.
func decodeBoth[T any](t *testing.T, b []byte) {
	t.Helper()
	var fast, slow T
	errFast, errSlow := UnmarshalValue(b, &fast), Unmarshal(b, &slow)
	if (errFast == nil) != (errSlow == nil) {
		t.Fatalf("%T from % x: UnmarshalValue err %v, Unmarshal err %v", fast, b, errFast, errSlow)
	}
	if errFast == nil && !sameValue(fast, slow) {
		t.Fatalf("%T from % x: UnmarshalValue %v, Unmarshal %v", fast, b, fast, slow)
	}
}

func sameValue(a, b any) bool {
	if fa, ok := a.(float64); ok {
		return math.Float64bits(fa) == math.Float64bits(b.(float64))
	}
	return reflect.DeepEqual(a, b)
}

func decodeAll(t *testing.T, b []byte) {
	t.Helper()
	decodeBoth[int](t, b)
	decodeBoth[int64](t, b)
	decodeBoth[uint](t, b)
	decodeBoth[uint64](t, b)
	decodeBoth[float64](t, b)
	decodeBoth[bool](t, b)
	decodeBoth[string](t, b)
}

func TestUnmarshalValueIsUnmarshal(t *testing.T) {
	var inputs []any
	for _, v := range scalarSamples() {
		inputs = append(inputs, v)
	}
	// Encodings the scalar paths leave to the decoder: narrow and float32
	// numbers, nil, bin, containers.
	inputs = append(inputs, int8(-5), int16(-300), int32(-70000), uint8(200), uint16(60000), uint32(1<<31),
		float32(1.5), nil, []byte("bin"), []int{1}, map[string]int{"a": 1})
	for _, v := range inputs {
		b, err := Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		decodeAll(t, b)
		decodeAll(t, append(b, 0)) // trailing bytes
		if len(b) > 1 {
			decodeAll(t, b[:len(b)-1]) // truncated
		}
	}
	decodeAll(t, nil)
}

// An existing value is decoded into, as Unmarshal does: fields the input
// does not mention keep theirs.
func TestUnmarshalValueKeepsUnmentionedFields(t *testing.T) {
	type pair struct{ A, B int }
	p := pair{A: 1, B: 2}
	b, _ := Marshal(map[string]int{"B": 5})
	if err := UnmarshalValue(b, &p); err != nil || p != (pair{1, 5}) {
		t.Fatalf("got %+v, %v; want {1 5}", p, err)
	}
}

func TestScalarValuesDoNotAllocate(t *testing.T) {
	buf := make([]byte, 0, 64)
	var n int
	var s string
	sb, _ := Marshal("key")
	allocs := testing.AllocsPerRun(100, func() {
		b, _ := AppendValue(buf[:0], 123456)
		_ = UnmarshalValue(b, &n)
		b, _ = AppendValue(b[:0], true)
		_ = UnmarshalValue(sb, &s) // the string itself is the only allocation
	})
	if allocs > 1 {
		t.Fatalf("%.0f allocations, want at most 1 (the decoded string)", allocs)
	}
}

// FuzzUnmarshalValue: on any input, the scalar paths agree with Unmarshal.
func FuzzUnmarshalValue(f *testing.F) {
	for _, v := range []any{0, -1, 300, int64(-1 << 40), uint64(math.MaxUint64), 1.5, true, "s", strings.Repeat("x", 40), nil, int8(-3)} {
		b, _ := Marshal(v)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		decodeAll(t, b)
	})
}
