package wire

import (
	"bytes"
	"errors"
	"reflect"
	"runtime"
	"testing"
	"time"
)

func TestRoundTrip(t *testing.T) {
	in := Order{
		ID:     "o-1",
		Lines:  []Line{{"a", 1}, {"b", 2}},
		Placed: time.Date(2026, 11, 30, 1, 2, 3, 4, time.UTC),
		Blob:   []byte{0, 1, 2},
		Tags:   map[string]int{"x": 1, "y": 2},
		ByCode: map[int64]string{7: "seven"},
		Parent: &Order{ID: "root"},
		Window: [3]float64{1.5, 2.5, 3.5},
	}
	b, err := Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out Order
	if err := Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if !out.Placed.Equal(in.Placed) {
		t.Fatalf("time: %v != %v", out.Placed, in.Placed)
	}
	out.Placed = in.Placed
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip:\n in  %+v\n out %+v", in, out)
	}
}

// Schema evolution, both directions.
type ReservationV1 struct {
	OrderID string
	Qty     int
}

type ReservationV2 struct {
	OrderID string
	Qty     int
	Note    string
	Expires time.Time
}

func TestSchemaEvolution(t *testing.T) {
	// New sender, old receiver: unknown fields are ignored.
	b, _ := Marshal(ReservationV2{OrderID: "o", Qty: 3, Note: "gift", Expires: time.Unix(10, 0)})
	var old ReservationV1
	if err := Unmarshal(b, &old); err != nil {
		t.Fatal(err)
	}
	if old != (ReservationV1{OrderID: "o", Qty: 3}) {
		t.Fatalf("old receiver got %+v", old)
	}
	// Old sender, new receiver: missing fields are zero.
	b, _ = Marshal(ReservationV1{OrderID: "p", Qty: 4})
	var nu ReservationV2
	if err := Unmarshal(b, &nu); err != nil {
		t.Fatal(err)
	}
	if nu.OrderID != "p" || nu.Qty != 4 || nu.Note != "" || !nu.Expires.IsZero() {
		t.Fatalf("new receiver got %+v", nu)
	}
}

func TestCheckRejectsHostileLengths(t *testing.T) {
	cases := map[string][]byte{
		"array32 claims 4G":  {0xdd, 0xff, 0xff, 0xff, 0xff, 0x01},
		"map32 claims 4G":    {0xdf, 0xff, 0xff, 0xff, 0xff},
		"str32 claims 4G":    {0xdb, 0xff, 0xff, 0xff, 0xff, 'a'},
		"bin32 claims 4G":    {0xc6, 0xff, 0xff, 0xff, 0xff},
		"ext32 claims 4G":    {0xc9, 0xff, 0xff, 0xff, 0xff, 0x01},
		"truncated uint64":   {0xcf, 0x01},
		"unused code":        {0xc1},
		"trailing":           {0x01, 0x02},
		"empty":              {},
		"fixarray truncated": {0x93, 0x01},
	}
	for name, b := range cases {
		if err := Check(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: Check = %v", name, err)
		}
		var o Order
		if err := Unmarshal(b, &o); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: Unmarshal = %v", name, err)
		}
	}
	deep := bytes.Repeat([]byte{0x91}, MaxDepth+1)
	deep = append(deep, 0x00)
	if err := Check(deep); !errors.Is(err, ErrMalformed) {
		t.Errorf("deep nesting: %v", err)
	}
}

func TestUnmarshalHostileDoesNotAllocate(t *testing.T) {
	// A map holding a "Lines" array that claims 2^31 elements in 12 bytes.
	b := []byte{0x81, 0xa5, 'L', 'i', 'n', 'e', 's', 0xdd, 0x7f, 0xff, 0xff, 0xff}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range 10 {
		var o Order
		if err := Unmarshal(b, &o); !errors.Is(err, ErrMalformed) {
			t.Fatalf("hostile input: %v", err)
		}
	}
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Fatalf("10 hostile decodes allocated %d bytes", n)
	}
}

func BenchmarkMarshalOrder(b *testing.B) {
	o := Order{ID: "o-1", Lines: []Line{{"a", 1}}, Tags: map[string]int{"x": 1}}
	for b.Loop() {
		if _, err := Marshal(o); err != nil {
			b.Fatal(err)
		}
	}
}
