package arrowpager

import (
	"fmt"
	"reflect"
	"slices"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"pgregory.net/rapid"

	"github.com/casty-go/casty/pager"
)

// frame is an actor state with a Table field and an integral field.
type frame struct {
	Readings Table
	Revision int
}

// floatColumn returns a float64 array over vals (no copy).
func floatColumn(vals []float64) arrow.Array {
	buf := memory.NewBufferBytes(arrow.Float64Traits.CastToBytes(vals))
	data := array.NewData(arrow.PrimitiveTypes.Float64, len(vals), []*memory.Buffer{nil, buf}, nil, 0, 0)
	defer data.Release()
	return array.NewFloat64Data(data)
}

// floatTable builds rows x cols float64 columns c0..c<cols-1>, value
// col*1e7+row.
func floatTable(t rapid.TB, rows, cols int) Table {
	t.Helper()
	var tbl Table
	for c := range cols {
		vals := make([]float64, rows)
		for r := range vals {
			vals[r] = float64(c)*1e7 + float64(r)
		}
		arr := floatColumn(vals)
		if err := tbl.SetColumn(arrow.Field{Name: fmt.Sprintf("c%d", c), Type: arrow.PrimitiveTypes.Float64}, arr); err != nil {
			t.Fatal(err)
		}
		arr.Release()
	}
	return tbl
}

// harness is an owner (tracker) and two replica stores.
type harness struct {
	tr       *pager.Tracker
	replicas [2]*pager.Store
	clock    int64
}

func newHarness(t rapid.TB) *harness {
	t.Helper()
	tr, err := pager.NewTracker(reflect.TypeFor[frame]())
	if err != nil {
		t.Fatal(err)
	}
	return &harness{tr: tr, replicas: [2]*pager.Store{pager.NewStore(), pager.NewStore()}}
}

// commit ships st's delta to both replicas (encoded, as on the wire) and
// returns the delta and the bytes sent to the two replicas.
func (h *harness) commit(t rapid.TB, st *frame) (pager.Delta, int) {
	t.Helper()
	h.clock++
	p, err := h.tr.Prepare(st, pager.Stamp{Wall: h.clock, Node: [16]byte{3}})
	if err != nil {
		t.Fatalf("prepare: %v", err)
	}
	wire := 0
	if !p.Delta.Empty() {
		for _, part := range p.Delta.Split(pager.DefaultBatchSize) {
			b, err := part.Encode()
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range h.replicas {
				wire += len(b)
				d, err := pager.DecodeDelta(b)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := r.Apply(d); err != nil {
					t.Fatalf("apply: %v", err)
				}
			}
		}
	}
	if err := h.tr.Commit(p); err != nil {
		t.Fatal(err)
	}
	return p.Delta, wire
}

// restore rebuilds a frame from replica i.
func (h *harness) restore(t rapid.TB, i int) *frame {
	t.Helper()
	tr, err := pager.NewTracker(reflect.TypeFor[frame]())
	if err != nil {
		t.Fatal(err)
	}
	var st frame
	if err := tr.Restore(&st, h.replicas[i].Stamp(), h.replicas[i].Pages()); err != nil {
		t.Fatalf("restore: %v", err)
	}
	return &st
}

// tablesEqual reports how a and b differ: schema (names, types, metadata),
// rows, values.
func tablesEqual(a, b *Table) error {
	if !a.Schema().Equal(b.Schema()) {
		return fmt.Errorf("schema %s != %s", a.Schema(), b.Schema())
	}
	if fmt.Sprint(a.Schema().Metadata()) != fmt.Sprint(b.Schema().Metadata()) {
		return fmt.Errorf("metadata %v != %v", a.Schema().Metadata(), b.Schema().Metadata())
	}
	if a.NumRows() != b.NumRows() {
		return fmt.Errorf("rows %d != %d", a.NumRows(), b.NumRows())
	}
	for i := range a.NumCols() {
		if !array.Equal(a.Column(i), b.Column(i)) {
			return fmt.Errorf("column %d differs", i)
		}
	}
	return nil
}

func pageKeys(d pager.Delta) []string {
	var ks []string
	for _, p := range d.Pages {
		ks = append(ks, p.Key)
	}
	sort.Strings(ks)
	return ks
}

func sorted(s []string) []string { s = slices.Clone(s); sort.Strings(s); return s }
