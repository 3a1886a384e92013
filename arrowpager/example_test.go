package arrowpager_test

import (
	"fmt"
	"reflect"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/casty-go/casty/arrowpager"
	"github.com/casty-go/casty/pager"
)

// Telemetry is an actor's state: a paged table and an integral counter.
type Telemetry struct {
	Readings arrowpager.Table
	Revision int
}

func Example() {
	// 40,000 rows of one float64 column: 3 blocks of 16,384 rows.
	b := array.NewFloat64Builder(memory.DefaultAllocator)
	for i := range 40_000 {
		b.Append(float64(i))
	}
	col := b.NewArray()
	var st Telemetry
	if err := st.Readings.SetColumn(arrow.Field{Name: "temp", Type: arrow.PrimitiveTypes.Float64}, col); err != nil {
		panic(err)
	}
	col.Release()

	tr, err := pager.NewTracker(reflect.TypeFor[Telemetry]())
	if err != nil {
		panic(err)
	}
	replica := pager.NewStore()
	commit := func(wall int64) {
		p, err := tr.Prepare(&st, pager.Stamp{Wall: wall})
		if err != nil {
			panic(err)
		}
		var keys []string
		for _, pg := range p.Delta.Pages {
			keys = append(keys, pg.Key)
		}
		fmt.Println(keys)
		if _, err := replica.Apply(p.Delta); err != nil {
			panic(err)
		}
		_ = tr.Commit(p)
	}
	commit(1)

	// A write in place into the values: no buffer moves, one block ships.
	temp, _ := st.Readings.ColumnByName("temp")
	temp.(*array.Float64).Float64Values()[20_000] = -1
	st.Revision++
	commit(2)

	e, err := pager.Explain(reflect.TypeFor[Telemetry]())
	if err != nil {
		panic(err)
	}
	fmt.Print(e)
	// Output:
	// [Readings/schema Readings/temp/0 Readings/temp/1 Readings/temp/2]
	// [Readings/temp/1 Revision]
	// FIELD     KEY       TYPE              REGIME    PAGES
	// Readings  Readings  arrowpager.Table  paged     schema + 1 page per column per 16384-row block, hash-verified (Readings/...)
	// Revision  Revision  int               integral  1 page, compared by value, re-encoded when changed
}
