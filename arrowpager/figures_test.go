package arrowpager

import (
	"hash/maphash"
	"os"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/vmihailenco/msgpack/v5"
	"pgregory.net/rapid"

	"github.com/casty-go/casty/pager"
)

// The published Arrow figure: an owner and two replica stores, a table of
// 2,500,000 rows x 5 float64 columns (100 MB, "96 MB" in MiB), one cell
// edited in place. Bar: 258 KB (KiB) to 2 replicas; an integral field
// would ship the whole table to each (192 MB).

const (
	figureRows = 2_500_000
	figureCols = 5
	figureBar  = 258 << 10
)

// editOneCell writes one value in place, the hardest path to detect.
func editOneCell(st *frame, v float64) {
	col, _ := st.Readings.ColumnByName("c2")
	col.(*array.Float64).Float64Values()[1_234_567%st.Readings.NumRows()] = v
}

func oneCellFigure(t rapid.TB, rows int) (wire, integral int, prepare time.Duration) {
	st := &frame{Readings: floatTable(t, rows, figureCols)}
	h := newHarness(t)
	h.commit(t, st)
	editOneCell(st, -1)
	start := time.Now()
	p, err := h.tr.Prepare(st, pager.Stamp{Wall: h.clock + 1, Node: [16]byte{3}})
	prepare = time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.tr.Rollback(p); err != nil {
		t.Fatal(err)
	}
	d, wire := h.commit(t, st)
	if len(d.Pages) != 1 {
		t.Fatalf("one cell edit shipped %d pages: %v", len(d.Pages), pageKeys(d))
	}
	checkCell(t, h, st)
	b, err := msgpack.Marshal(&st.Readings)
	if err != nil {
		t.Fatal(err)
	}
	if d, w := h.commit(t, st); !d.Empty() || w != 0 {
		t.Fatalf("no-op after the edit shipped %d B", w)
	}
	return wire, 2 * len(b), prepare
}

func checkCell(t rapid.TB, h *harness, st *frame) {
	want, _ := st.Readings.ColumnByName("c2")
	for i := range h.replicas {
		pages := h.replicas[i].Pages()
		if len(pages) == 0 {
			t.Fatal("empty replica")
		}
	}
	got := h.restore(t, 1)
	col, _ := got.Readings.ColumnByName("c2")
	r := 1_234_567 % st.Readings.NumRows()
	if col.(*array.Float64).Value(r) != want.(*array.Float64).Value(r) {
		t.Fatalf("replica holds %v at row %d, want %v", col.(*array.Float64).Value(r), r, want.(*array.Float64).Value(r))
	}
}

// TestFigureOneCellEdit runs the Arrow figure at a tenth of its size by
// default (the bytes of a one-cell edit do not depend on the row count:
// one 16,384-row block) and at full size with CASTY_FIGURES=1.
func TestFigureOneCellEdit(t *testing.T) {
	rows := figureRows / 10
	if os.Getenv("CASTY_FIGURES") != "" {
		rows = figureRows
	}
	wire, integral, prep := oneCellFigure(t, rows)
	t.Logf("%d x %d float64, one cell edited in place: %d B to 2 replicas (bar %d B), integral %d B, delta computed in %v",
		rows, figureCols, wire, figureBar, integral, prep)
	if wire > figureBar {
		t.Fatalf("%d B to 2 replicas, over the %d B bar", wire, figureBar)
	}
}

// BenchmarkFigureArrowOneCell times one full commit (in-place edit, delta,
// encode, apply on 2 replicas) on the full-size table, next to two floors
// measured in the same run: one maphash pass over the table's bytes (the
// content check every commit pays) and the integral encode.
func BenchmarkFigureArrowOneCell(b *testing.B) {
	st := &frame{Readings: floatTable(b, figureRows, figureCols)}
	h := newHarness(b)
	h.commit(b, st)
	wire := 0
	b.Run("paged", func(b *testing.B) {
		v := 0.0
		for b.Loop() {
			v++
			editOneCell(st, v)
			_, wire = h.commit(b, st)
		}
		b.ReportMetric(float64(wire), "wire-B")
	})
	b.Run("delta", func(b *testing.B) {
		v := -1e9
		for b.Loop() {
			v--
			editOneCell(st, v)
			p, err := h.tr.Prepare(st, pager.Stamp{Wall: h.clock + 1})
			if err != nil {
				b.Fatal(err)
			}
			if len(p.Delta.Pages) != 1 {
				b.Fatalf("%d pages", len(p.Delta.Pages))
			}
			_ = h.tr.Rollback(p)
		}
	})
	b.Run("hash-floor", func(b *testing.B) {
		seed := maphash.MakeSeed()
		for b.Loop() {
			for i := range st.Readings.NumCols() {
				vals := st.Readings.Column(i).(*array.Float64).Float64Values()
				_ = maphash.Bytes(seed, arrow.Float64Traits.CastToBytes(vals))
			}
		}
	})
	b.Run("integral-floor", func(b *testing.B) {
		for b.Loop() {
			out, err := msgpack.Marshal(&st.Readings)
			if err != nil {
				b.Fatal(err)
			}
			wire = 2 * len(out)
		}
		b.ReportMetric(float64(wire), "wire-B")
	})
}
