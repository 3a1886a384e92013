package arrowpager

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/vmihailenco/msgpack/v5"
	"pgregory.net/rapid"

	"github.com/casty-go/casty/pager"
)

// validPages returns the sub-pages of a small mixed table: float64, a
// nullable string column and a list column.
func validPages(t rapid.TB) []pager.SubPage {
	tbl := floatTable(t, 20, 1)
	_ = tbl.SetConfig(Config{BlockRows: 8})
	sb := array.NewStringBuilder(memory.DefaultAllocator)
	lb := array.NewListBuilder(memory.DefaultAllocator, arrow.PrimitiveTypes.Int64)
	for i := range 20 {
		if i%3 == 0 {
			sb.AppendNull()
		} else {
			sb.Append("v")
		}
		lb.Append(true)
		lb.ValueBuilder().(*array.Int64Builder).Append(int64(i))
	}
	for _, c := range []struct {
		name string
		arr  arrow.Array
	}{{"s", sb.NewArray()}, {"l", lb.NewArray()}} {
		if err := tbl.SetColumn(arrow.Field{Name: c.name, Type: c.arr.DataType(), Nullable: true}, c.arr); err != nil {
			t.Fatal(err)
		}
		c.arr.Release()
	}
	d, err := tbl.PageDiff(nil)
	if err != nil {
		t.Fatal(err)
	}
	return d.Pages
}

// FuzzBlockPage decodes arbitrary bytes as one block page of an otherwise
// valid table, and as its schema page: errors are expected, panics are not.
func FuzzBlockPage(f *testing.F) {
	pages := validPages(f)
	for _, p := range pages {
		f.Add(p.Key, p.Data)
	}
	f.Add("c0/0", []byte{pageStream, 0xff, 0xff, 0xff, 0xff, 0x10, 0, 0, 0})
	f.Add("schema", []byte{0x83})
	f.Add("c1/2", []byte{pageBatch})
	f.Fuzz(func(t *testing.T, key string, data []byte) {
		in := make([]pager.SubPage, 0, len(pages))
		replaced := false
		for _, p := range pages {
			if p.Key == key {
				p.Data, replaced = data, true
			}
			in = append(in, p)
		}
		if !replaced {
			in = append(in, pager.SubPage{Key: key, Data: data})
		}
		var tbl Table
		mark, err := tbl.PageLoad(in)
		if err != nil {
			if tbl.NumCols() != 0 {
				t.Fatalf("failed load left %d columns", tbl.NumCols())
			}
			return
		}
		// Whatever loaded must page again without panicking.
		if _, err := tbl.PageDiff(mark); err != nil {
			t.Fatalf("diff of a loaded table: %v", err)
		}
	})
}

// FuzzDecodeTable decodes arbitrary bytes as a whole table encoded as an
// integral msgpack value (Table.DecodeMsgpack).
func FuzzDecodeTable(f *testing.F) {
	tbl := floatTable(f, 10, 2)
	b, err := msgpack.Marshal(&tbl)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte{0xc4, 0x08, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		var tbl Table
		if err := msgpack.Unmarshal(b, &tbl); err != nil {
			return
		}
		if _, err := tbl.PageDiff(nil); err != nil {
			t.Fatalf("diff of a decoded table: %v", err)
		}
	})
}
