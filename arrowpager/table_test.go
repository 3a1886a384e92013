package arrowpager

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/casty-go/casty/pager"
)

const testBlock = 16 // rows per block in the small tests

func smallFrame(t *testing.T, rows, cols int) *frame {
	t.Helper()
	st := &frame{Readings: floatTable(t, rows, cols)}
	if err := st.Readings.SetConfig(Config{BlockRows: testBlock}); err != nil {
		t.Fatal(err)
	}
	return st
}

func checkReplicas(t *testing.T, h *harness, st *frame) {
	t.Helper()
	for i := range h.replicas {
		got := h.restore(t, i)
		if err := tablesEqual(&got.Readings, &st.Readings); err != nil {
			t.Fatalf("replica %d: %v", i, err)
		}
		if got.Revision != st.Revision {
			t.Fatalf("replica %d: revision %d, want %d", i, got.Revision, st.Revision)
		}
	}
}

func TestFirstCommitPagesEveryBlockOnce(t *testing.T) {
	st := smallFrame(t, 40, 2) // 3 blocks per column
	h := newHarness(t)
	d, _ := h.commit(t, st)
	want := []string{"Readings/c0/0", "Readings/c0/1", "Readings/c0/2", "Readings/c1/0", "Readings/c1/1", "Readings/c1/2", "Readings/schema"}
	if got := pageKeys(d); !slices.Equal(got, want) {
		t.Fatalf("pages %v, want %v", got, want)
	}
	checkReplicas(t, h, st)
	if d, wire := h.commit(t, st); !d.Empty() || wire != 0 {
		t.Fatalf("no-op handler shipped %v (%d B)", pageKeys(d), wire)
	}
}

// TestInPlaceWriteIsReplicated writes into a column's values slice: no
// buffer is replaced, and the write must still reach the replicas.
func TestInPlaceWriteIsReplicated(t *testing.T) {
	st := smallFrame(t, 40, 2)
	h := newHarness(t)
	h.commit(t, st)

	col, _ := st.Readings.ColumnByName("c1")
	col.(*array.Float64).Float64Values()[20] = -42.5 // block 1 of c1
	d, _ := h.commit(t, st)
	if got := pageKeys(d); !slices.Equal(got, []string{"Readings/c1/1"}) {
		t.Fatalf("pages %v, want the one block written in place", got)
	}
	checkReplicas(t, h, st)
	got := h.restore(t, 0)
	c, _ := got.Readings.ColumnByName("c1")
	if v := c.(*array.Float64).Value(20); v != -42.5 {
		t.Fatalf("replica holds %v, want -42.5", v)
	}
}

// TestTrustBuffersTradeOff documents the opt-in fast mode: replaced buffers
// are still proof of a write, but an in-place write is not seen.
func TestTrustBuffersTradeOff(t *testing.T) {
	st := smallFrame(t, 40, 1)
	_ = st.Readings.SetConfig(Config{BlockRows: testBlock, TrustBuffers: true})
	h := newHarness(t)
	h.commit(t, st)
	col, _ := st.Readings.ColumnByName("c0")
	col.(*array.Float64).Float64Values()[3] = 7
	if d, _ := h.commit(t, st); !d.Empty() {
		t.Fatalf("TrustBuffers hashed an unreplaced block: %v", pageKeys(d))
	}
	vals := slices.Clone(col.(*array.Float64).Float64Values())
	vals[35] = 8
	arr := floatColumn(vals)
	defer arr.Release()
	_ = st.Readings.SetColumn(arrow.Field{Name: "c0", Type: arrow.PrimitiveTypes.Float64}, arr)
	d, _ := h.commit(t, st)
	// The replaced buffer is hashed: only the blocks whose bytes differ
	// from the committed hashes ship (block 0 carries the missed write).
	if got := pageKeys(d); !slices.Equal(got, []string{"Readings/c0/0", "Readings/c0/2"}) {
		t.Fatalf("pages %v", got)
	}
}

func TestReplacedColumnShipsOnlyChangedBlocks(t *testing.T) {
	st := smallFrame(t, 40, 2)
	h := newHarness(t)
	h.commit(t, st)
	col, _ := st.Readings.ColumnByName("c0")
	vals := slices.Clone(col.(*array.Float64).Float64Values())
	vals[39] = 1
	arr := floatColumn(vals)
	defer arr.Release()
	if err := st.Readings.SetColumn(arrow.Field{Name: "c0", Type: arrow.PrimitiveTypes.Float64}, arr); err != nil {
		t.Fatal(err)
	}
	st.Revision++
	d, _ := h.commit(t, st)
	if got := pageKeys(d); !slices.Equal(got, []string{"Readings/c0/2", "Revision"}) {
		t.Fatalf("pages %v", got)
	}
	checkReplicas(t, h, st)
}

func TestAddAndDropColumnMoveOnlyThatColumn(t *testing.T) {
	st := smallFrame(t, 40, 2)
	h := newHarness(t)
	h.commit(t, st)

	b := array.NewStringBuilder(memory.DefaultAllocator)
	for i := range 40 {
		if i%7 == 0 {
			b.AppendNull()
		} else {
			b.Append(fmt.Sprint("s", i))
		}
	}
	strs := b.NewArray()
	defer strs.Release()
	if err := st.Readings.SetColumn(arrow.Field{Name: "label", Type: arrow.BinaryTypes.String, Nullable: true}, strs); err != nil {
		t.Fatal(err)
	}
	d, _ := h.commit(t, st)
	if got := pageKeys(d); !slices.Equal(got, []string{"Readings/label/0", "Readings/label/1", "Readings/label/2", "Readings/schema"}) {
		t.Fatalf("add column shipped %v", got)
	}
	checkReplicas(t, h, st)

	st.Readings.DropColumn("c0")
	d, _ = h.commit(t, st)
	if got := pageKeys(d); !slices.Equal(got, []string{"Readings/schema"}) {
		t.Fatalf("drop column shipped %v", got)
	}
	if got := sorted(d.Dropped); !slices.Equal(got, []string{"Readings/c0/0", "Readings/c0/1", "Readings/c0/2"}) {
		t.Fatalf("drop column dropped %v", got)
	}
	checkReplicas(t, h, st)
}

func TestAppendRePagesOnlyTouchedBlocks(t *testing.T) {
	st := smallFrame(t, 40, 2) // blocks 0,1 full, block 2 holds 8 rows
	h := newHarness(t)
	h.commit(t, st)
	more := floatTable(t, 20, 2) // rows 40..59: fill block 2, start block 3
	rec := more.Record()
	defer rec.Release()
	if err := st.Readings.Append(rec); err != nil {
		t.Fatal(err)
	}
	d, _ := h.commit(t, st)
	want := []string{"Readings/c0/2", "Readings/c0/3", "Readings/c1/2", "Readings/c1/3", "Readings/schema"}
	if got := pageKeys(d); !slices.Equal(got, want) {
		t.Fatalf("append shipped %v, want %v", got, want)
	}
	checkReplicas(t, h, st)
}

// TestTypesAndNamesSurviveRoundTrip covers fixed-width, nullable, boolean,
// variable-width and nested columns and schema metadata.
func TestTypesAndNamesSurviveRoundTrip(t *testing.T) {
	mem := memory.DefaultAllocator
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "ok", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "name/with slash", Type: arrow.BinaryTypes.String},
		{Name: "at", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}},
		{Name: "tags", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64)},
	}, func() *arrow.Metadata { m := arrow.NewMetadata([]string{"source"}, []string{"sensor-7"}); return &m }())
	rb := array.NewRecordBuilder(mem, sch)
	defer rb.Release()
	for i := range 37 {
		if i%5 == 0 {
			rb.Field(0).AppendNull()
		} else {
			rb.Field(0).(*array.Int32Builder).Append(int32(i))
		}
		rb.Field(1).(*array.BooleanBuilder).Append(i%3 == 0)
		rb.Field(2).(*array.StringBuilder).Append(fmt.Sprint("n", i))
		rb.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(1700000000000 + i))
		lb := rb.Field(4).(*array.ListBuilder)
		lb.Append(true)
		for j := range i % 4 {
			lb.ValueBuilder().(*array.Int64Builder).Append(int64(j))
		}
	}
	rec := rb.NewRecordBatch()
	defer rec.Release()
	tbl, err := FromRecord(rec)
	if err != nil {
		t.Fatal(err)
	}
	_ = tbl.SetConfig(Config{BlockRows: 8})
	st := &frame{Readings: tbl}
	h := newHarness(t)
	h.commit(t, st)
	checkReplicas(t, h, st)

	// In-place writes into an int32 value, the boolean bitmap and a
	// string's bytes: no buffer is replaced, each must still ship.
	ids, _ := st.Readings.ColumnByName("id")
	ids.(*array.Int32).Int32Values()[9] = 900
	ok, _ := st.Readings.ColumnByName("ok")
	bits := ok.Data().Buffers()[1].Bytes()
	bits[(ok.Data().Offset()+20)/8] ^= 1 << ((ok.Data().Offset() + 20) % 8) // row 20: block 2
	names, _ := st.Readings.ColumnByName("name/with slash")
	sa := names.(*array.String)
	if sa.Value(30) != "n30" {
		t.Fatalf("row 30 holds %q", sa.Value(30))
	}
	sa.Data().Buffers()[2].Bytes()[sa.ValueOffset(30)] = 'N' // "n30" -> "N30", block 3
	d, _ := h.commit(t, st)
	if got := pageKeys(d); len(got) != 3 || !slices.Contains(got, "Readings/id/1") {
		t.Fatalf("pages %v, want one block of each of the three columns written in place", got)
	}
	checkReplicas(t, h, st)
	got := h.restore(t, 0)
	gok, _ := got.Readings.ColumnByName("ok")
	gnames, _ := got.Readings.ColumnByName("name/with slash")
	if gok.(*array.Boolean).Value(20) != (20%3 != 0) || gnames.(*array.String).Value(30) != "N30" {
		t.Fatalf("replica: ok[20]=%v name[30]=%q", gok.(*array.Boolean).Value(20), gnames.(*array.String).Value(30))
	}
}

func TestZeroTableHasNoPages(t *testing.T) {
	st := &frame{}
	h := newHarness(t)
	if d, _ := h.commit(t, st); !d.Empty() {
		t.Fatalf("zero table shipped %v", pageKeys(d))
	}
	st.Readings = floatTable(t, 3, 1)
	h.commit(t, st)
	st.Readings.Release()
	d, _ := h.commit(t, st)
	if len(d.Pages) != 0 || !slices.Equal(sorted(d.Dropped), []string{"Readings/c0/0", "Readings/schema"}) {
		t.Fatalf("emptying the table: pages %v dropped %v", pageKeys(d), d.Dropped)
	}
	if h.replicas[0].Len() != 0 {
		t.Fatalf("replica still holds %d pages", h.replicas[0].Len())
	}
}

func TestShapeErrors(t *testing.T) {
	tbl := floatTable(t, 4, 1)
	short := floatColumn([]float64{1})
	defer short.Release()
	if err := tbl.SetColumn(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Float64}, short); err == nil {
		t.Error("a column of another length was accepted")
	}
	if err := tbl.SetColumn(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int64}, short); err == nil {
		t.Error("a field type that is not the array's was accepted")
	}
	if err := tbl.SetColumn(arrow.Field{Type: arrow.PrimitiveTypes.Float64}, short); err == nil {
		t.Error("an empty name was accepted")
	}
	other := floatTable(t, 2, 2)
	rec := other.Record()
	defer rec.Release()
	if err := tbl.Append(rec); err == nil {
		t.Error("appending another schema was accepted")
	}
	if err := (&Config{BlockRows: -1}).Validate(); err == nil {
		t.Error("negative block size accepted")
	}
}

func TestMsgpackEncodesWholeTable(t *testing.T) {
	tbl := floatTable(t, 50, 3)
	cp, err := tbl.Clone()
	if err != nil {
		t.Fatal(err)
	}
	var buf []byte
	{
		st := frame{Readings: tbl, Revision: 2}
		b, err := encodeFrame(&st)
		if err != nil {
			t.Fatal(err)
		}
		buf = b
	}
	got, err := decodeFrame(buf)
	if err != nil {
		t.Fatal(err)
	}
	if err := tablesEqual(&got.Readings, &cp); err != nil || got.Revision != 2 {
		t.Fatalf("msgpack round trip: %v", err)
	}
}

func TestPointerTableField(t *testing.T) {
	type byPointer struct{ T *Table }
	tr, err := pager.NewTracker(reflect.TypeFor[byPointer]())
	if err != nil {
		t.Fatal(err)
	}
	var st byPointer
	p, err := tr.Prepare(&st, pager.Stamp{Wall: 1})
	if err != nil || !p.Delta.Empty() {
		t.Fatalf("nil table: %v %v", err, p.Delta)
	}
	_ = tr.Commit(p)
	tbl := floatTable(t, 5, 2)
	st.T = &tbl
	p, err = tr.Prepare(&st, pager.Stamp{Wall: 2})
	if err != nil || len(p.Delta.Pages) != 3 {
		t.Fatalf("pages %v, %v", pageKeys(p.Delta), err)
	}
	_ = tr.Commit(p)
	var back byPointer
	if err := tr.Restore(&back, pager.Stamp{Wall: 2}, p.Delta.Pages); err != nil {
		t.Fatal(err)
	}
	if back.T == nil || tablesEqual(back.T, st.T) != nil {
		t.Fatal("pointer table did not round-trip")
	}
	st.T = nil
	p, _ = tr.Prepare(&st, pager.Stamp{Wall: 3})
	if len(p.Delta.Pages) != 0 || len(p.Delta.Dropped) != 3 {
		t.Fatalf("nil again: pages %v dropped %v", pageKeys(p.Delta), p.Delta.Dropped)
	}
}

func TestBlockOverThePageCapKeepsPreviousValue(t *testing.T) {
	s, err := pager.NewSchema(reflect.TypeFor[frame]())
	if err != nil {
		t.Fatal(err)
	}
	tr, err := s.NewTracker(&pager.Config{MaxPageSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	st := &frame{Readings: floatTable(t, 100, 1)} // 800 B per block
	p, err := tr.Prepare(st, pager.Stamp{Wall: 1})
	if err != nil {
		t.Fatal(err)
	}
	_ = tr.Commit(p)
	big := floatTable(t, 1000, 1) // one 8 KB block
	st.Readings = big
	_, err = tr.Prepare(st, pager.Stamp{Wall: 2})
	if !errors.Is(err, pager.ErrPageTooLarge) {
		t.Fatalf("got %v, want ErrPageTooLarge", err)
	}
	if tr.Stamp() != (pager.Stamp{Wall: 1}) {
		t.Fatal("the refused commit moved the stamp")
	}
	_ = st.Readings.SetConfig(Config{BlockRows: 256})
	if _, err := tr.Prepare(st, pager.Stamp{Wall: 3}); err != nil {
		t.Fatalf("smaller blocks still refused: %v", err)
	}
}
