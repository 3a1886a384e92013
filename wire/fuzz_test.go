package wire

import (
	"testing"
	"time"
)

type fuzzNode struct {
	Name     string
	Children []*fuzzNode
	Weights  map[string]float64
}

// FuzzUnmarshal decodes arbitrary bytes against several types: it must never
// panic and never allocate in proportion to a claimed (rather than actual)
// length.
func FuzzUnmarshal(f *testing.F) {
	seeds := []any{
		Order{ID: "o", Lines: []Line{{"a", 1}}, Placed: time.Unix(1, 0), Tags: map[string]int{"t": 1}},
		fuzzNode{Name: "root", Children: []*fuzzNode{{Name: "leaf"}}},
		ReservationV2{OrderID: "x", Qty: 1},
		[]int{1, 2, 3},
		map[int64]string{1: "a"},
	}
	for _, s := range seeds {
		b, err := Marshal(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{0xdd, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0xc7, 0x08, 0xff, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		var o Order
		_ = Unmarshal(b, &o)
		var n fuzzNode
		_ = Unmarshal(b, &n)
		var r ReservationV2
		_ = Unmarshal(b, &r)
		var s []string
		_ = Unmarshal(b, &s)
		var m map[int64]*Line
		_ = Unmarshal(b, &m)
	})
}
